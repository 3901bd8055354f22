//! The benchmark harness: runs a real multi-process topology through the local scheduler and
//! reports its steady-state throughput, latency and per-role resource use.
//!
//! ```text
//! cargo run --release --example bench -- --topology word-count --reliability atmost \
//!     --duration 20s --json [--peer timely] [--rate N] [--max-spout-pending N]
//! ```
//!
//! Topologies: `const-null` (constant spout → null bolt), `const-id-null` (constant spout →
//! identity bolt → null bolt) and `word-count` (sentence spout → split, shuffle → count,
//! fields on word; the workload of `examples/word_count.rs`). `--peer timely` then runs the
//! same word count on timely dataflow (two processes over loopback; this binary is its
//! worker) and reports both; with `--rate` timely gets the same cap and its end-to-end
//! latency is reported next to ours. See `args.rs` for every option.
//!
//! Modules: `args` (command line), `topology` (spouts, bolts), `rate` (token bucket),
//! `record` (what tasks record and the driver reads), `driver` (submit, measure, kill),
//! `procs` (per-role RSS and CPU), `report` (JSON and summary), `children` (a peer's
//! processes), `timely_peer`, `relay_peer`
//! (`--peer relay`: the floor of our process layout), `relay_acked` (its acked variant, with
//! `--reliability atleast`), `hop_cost` (`bench hop-cost`: what one
//! hop between two processes costs, over TCP, a Unix socket or shared memory).

#[allow(dead_code)] // the examples' shared launcher; the bench uses its parts
#[path = "../common/mod.rs"]
mod common;

mod args;
mod children;
mod driver;
mod hop_cost;
mod procs;
mod rate;
mod record;
mod relay_acked;
mod relay_peer;
mod report;
mod streamlet;
mod timely_peer;
mod topology;

use std::sync::atomic::Ordering;

fn main() {
    // Started as `<bench> heron-role ...`: be that process of the topology.
    heron::run_role_if_requested(topology::build);
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some(timely_peer::WORKER_COMMAND) => {
            std::process::exit(timely_peer::worker_main(&args[1..]))
        }
        Some(relay_peer::NODE_COMMAND) => std::process::exit(relay_peer::node_main(&args[1..])),
        Some(relay_peer::RUN_COMMAND) => std::process::exit(relay_peer::run_main(&args[1..])),
        Some(hop_cost::COMMAND) => std::process::exit(hop_cost::main(&args[1..])),
        Some(hop_cost::PEER_COMMAND) => std::process::exit(hop_cost::peer_main(&args[1..])),
        _ => {}
    }
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{}", args::USAGE);
        return;
    }
    let opts = match args::Options::parse(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("bench: {e}");
            std::process::exit(2);
        }
    };
    let stop = heron::ctrl_c_flag();
    let measured = match driver::run(&opts, &args, &stop) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("bench: {e}");
            std::process::exit(1);
        }
    };
    let peer = match opts.peer {
        Some(peer) if !stop.load(Ordering::SeqCst) => {
            if !opts.json {
                println!("running the {peer:?} word count for {:?}", opts.duration);
            }
            let exe = match std::env::current_exe() {
                Ok(p) => p,
                Err(e) => {
                    eprintln!("bench: cannot find this program's binary: {e}");
                    std::process::exit(1);
                }
            };
            let result = match peer {
                args::Peer::Timely => timely_peer::run(
                    &exe,
                    opts.duration,
                    opts.warmup,
                    opts.vocabulary,
                    opts.rate.map(|r| r as f64),
                ),
                args::Peer::Relay => {
                    relay_peer::run(&exe, opts.duration, opts.warmup, opts.relay_setup())
                }
            };
            match result {
                Ok(p) => Some(p),
                Err(e) => {
                    eprintln!("bench: {e}");
                    std::process::exit(1);
                }
            }
        }
        _ => None,
    };
    if opts.json {
        println!("{}", report::to_json(&opts, &measured, peer.as_ref()));
    } else {
        report::print_human(&opts, &measured, peer.as_ref());
    }
    if measured.processes_left > 0 {
        std::process::exit(1);
    }
}
