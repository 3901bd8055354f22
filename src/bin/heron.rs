//! The `heron` CLI: `submit`, `kill`, `activate`, `deactivate`, `restart`, `update`, `list`,
//! `version` (see `heron --help`). It also hosts Flux topologies: `heron submit local
//! topology.yaml` submits this binary, whose roles build the topology from the Flux file.

fn main() {
    heron_runtime::run_role_if_requested(heron_runtime::build_flux_topology);
    std::process::exit(heron_runtime::cli_main());
}
