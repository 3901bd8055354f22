//! `heron-tracker`: the Heron Tracker REST API and web page (default port 8888).
//!
//! ```text
//! heron-tracker [--host 127.0.0.1] [--port 8888] [--statemgr NAME=SPEC]... [--heron-cli PATH]
//! ```
//! The page's controls (activate, deactivate, restart, update, kill) run the `heron` CLI:
//! `--heron-cli`, by default the `heron` installed beside `heron-tracker`.
//! Each `--statemgr` adds a cluster: `local=local:/home/u/.herondata/repository/state/local`,
//! `prod=zk://127.0.0.1:2181/heron`. Without any, it serves the `local` cluster on Heron's
//! local state root.

use clap::Parser;
use heron_statemgr::StateManagerSpec;
use heron_tracker::Cluster;
use std::net::{IpAddr, SocketAddr};

#[derive(Parser)]
#[command(name = "heron-tracker", about = "Heron Tracker REST API and web page")]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    host: IpAddr,
    /// Port to listen on.
    #[arg(long, default_value_t = heron_tracker::DEFAULT_PORT)]
    port: u16,
    /// A cluster and its state manager, as NAME=SPEC (repeatable).
    #[arg(long = "statemgr", value_name = "NAME=SPEC")]
    statemgrs: Vec<String>,
    /// The `heron` CLI the page's controls run (default: `heron` beside this binary).
    #[arg(long = "heron-cli", value_name = "PATH")]
    heron_cli: Option<std::path::PathBuf>,
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let mut clusters = Vec::new();
    for s in &args.statemgrs {
        let (name, spec) = s
            .split_once('=')
            .ok_or_else(|| anyhow::anyhow!("--statemgr {s:?}: expected NAME=SPEC"))?;
        let spec: StateManagerSpec = spec
            .parse()
            .map_err(|e| anyhow::anyhow!("--statemgr {s:?}: {e}"))?;
        clusters.push(Cluster::new(name, spec));
    }
    if clusters.is_empty() {
        clusters = heron_tracker::default_clusters();
    }
    let cli = match args.heron_cli {
        Some(binary) if binary.is_file() => Some(heron_tracker::controls::Cli {
            binary,
            env: vec![],
        }),
        Some(binary) => anyhow::bail!("--heron-cli {}: no such file", binary.display()),
        None => heron_tracker::controls::Cli::beside_current_exe(),
    };
    if cli.is_none() {
        eprintln!("no heron CLI beside heron-tracker: the page's controls are off (--heron-cli)");
    }
    let clusters = clusters
        .into_iter()
        .map(|c| match &cli {
            Some(cli) => c.with_cli(cli.clone()),
            None => c,
        })
        .collect();
    let addr = SocketAddr::new(args.host, args.port);
    eprintln!("heron-tracker serving http://{addr}/");
    heron_tracker::run(addr, clusters)?;
    Ok(())
}
