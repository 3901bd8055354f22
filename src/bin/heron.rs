//! The `heron` CLI: `submit`, `kill`, `activate`, `deactivate`, `restart`, `update`, `version`
//! (see `heron --help`).

fn main() {
    std::process::exit(heron_runtime::cli_main());
}
