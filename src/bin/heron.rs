//! The `heron` CLI: `heron submit`, `heron kill`, `heron version` (see `heron --help`).

fn main() {
    std::process::exit(heron_runtime::cli_main());
}
