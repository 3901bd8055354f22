//! Compiles `protos/*.proto` with protox (pure Rust; no system `protoc`) and prost-build.
fn main() {
    let files = [
        "common.proto",
        "topology.proto",
        "physical_plan.proto",
        "tuple.proto",
        "stats.proto",
        "stmgr.proto",
        "tmanager.proto",
        "packing_plan.proto",
        "execution_state.proto",
        "scheduler.proto",
        "metrics.proto",
        "ckptmgr.proto",
    ];
    let paths: Vec<String> = files.iter().map(|f| format!("protos/{f}")).collect();
    for p in &paths {
        println!("cargo:rerun-if-changed={p}");
    }
    let fds = protox::compile(&paths, ["protos"]).expect("compile .proto files");
    let mut config = prost_build::Config::new();
    config.bytes(["."]);
    config.enable_type_names();
    config.compile_fds(fds).expect("generate Rust from .proto");
}
