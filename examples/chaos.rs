//! A chaos run: an ATLEAST_ONCE word count whose spouts keep a ledger of message ids, while a
//! random role process (tmaster, stream manager or instance) is killed with SIGKILL every few
//! seconds; then the kills stop, the topology drains, and the run reports what happened.
//!
//! ```sh
//! cargo run --release --example chaos -- --duration 2m --kill-every 5s
//! ```
//!
//! Options: `--duration 2m` (how long processes are killed), `--kill-every 5s`, `--rate 1000`
//! (new ids a second per spout task; the run owns `2 × rate × duration` ids), `--containers 2`,
//! `--seed N`, `--drain 3m` (how long the ids may take to be acked once the kills stop),
//! `--json FILE`. The roles are killed in turn (from a random one), a random process of each.
//!
//! It prints the ids emitted (replays included), acked, replayed after a fail, re-emitted by a
//! restarted spout, and lost (never acked: must be 0); per role the kills and the recovery time
//! (from the kill until the role has as many processes again, a new one among them: p50 and
//! max); and the daemon panics found in the topology's logs (must be 0). It exits 1 when an id
//! was lost or a process panicked.

#[path = "../tests/topologies/args.rs"]
mod args;
#[allow(dead_code)] // only the duration parser is used here
mod common;
#[path = "common/ledger.rs"]
mod ledger;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rand::{RngExt, SeedableRng};

/// The roles killed (an ATLEAST_ONCE topology has no checkpoint manager).
const ROLES: [&str; 3] = ["tmaster", "stmgr", "instance"];

struct Options {
    duration: Duration,
    kill_every: Duration,
    rate: u64,
    containers: u32,
    seed: u64,
    drain: Duration,
    json: Option<PathBuf>,
}

fn parse(argv: &[String]) -> Result<Options, String> {
    let mut o = Options {
        duration: Duration::from_secs(120),
        kill_every: Duration::from_secs(5),
        rate: 1_000,
        containers: 2,
        seed: rand::random(),
        drain: Duration::from_secs(180),
        json: None,
    };
    args::each_pair(argv, |k, v| {
        match k {
            "--duration" => o.duration = common::parse_duration(v)?,
            "--kill-every" => o.kill_every = common::parse_duration(v)?,
            "--rate" => o.rate = args::number(k, v)?.max(1),
            "--containers" => o.containers = args::number(k, v)?.max(1) as u32,
            "--seed" => o.seed = args::number(k, v)?,
            "--drain" => o.drain = common::parse_duration(v)?,
            "--json" => o.json = Some(PathBuf::from(v)),
            _ => return args::unknown(k),
        }
        Ok(())
    })?;
    if o.kill_every.is_zero() {
        return Err("--kill-every must be more than 0".into());
    }
    Ok(o)
}

/// The processes of role `role` of the topology with id `topology_id`.
fn role_pids(topology_id: &str, role: &str) -> Vec<i32> {
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let args: Vec<&[u8]> = cmd.split(|b| *b == 0).collect();
        let is_role = args
            .windows(2)
            .any(|w| w[0] == b"heron-role" && w[1] == role.as_bytes());
        let ours = args.contains(&topology_id.as_bytes());
        let zombie = std::fs::read_to_string(e.path().join("stat"))
            .map(|s| {
                s.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            })
            .unwrap_or(true);
        if is_role && ours && !zombie {
            pids.push(pid);
        }
    }
    pids.sort_unstable();
    pids
}

/// What the spouts' stats files say, summed over the tasks.
#[derive(Debug, Default)]
struct Ledger {
    emitted: u64,
    acked: u64,
    failed: u64,
    replayed: u64,
    opens: u64,
    done: bool,
}

fn ledger(out: &Path) -> Ledger {
    let mut l = Ledger {
        done: true,
        ..Ledger::default()
    };
    let mut files = 0;
    for e in std::fs::read_dir(out).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !(name.starts_with("spout-") && name.ends_with(".json")) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(e.path()) else {
            continue;
        };
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        files += 1;
        let n = |k: &str| v[k].as_u64().unwrap_or(0);
        l.emitted += n("emitted");
        l.acked += n("acked");
        l.failed += n("failed");
        l.replayed += n("replayed");
        l.opens += n("opens");
        l.done &= v["done"].as_bool().unwrap_or(false);
    }
    l.done &= files > 0;
    l
}

/// The ids acked, from the spouts' ledgers.
fn acked_ids(out: &Path) -> HashSet<u64> {
    let mut ids = HashSet::new();
    for e in std::fs::read_dir(out).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("acked-") {
            let text = std::fs::read_to_string(e.path()).unwrap_or_default();
            ids.extend(text.lines().filter_map(|l| l.parse::<u64>().ok()));
        }
    }
    ids
}

/// Lines of the topology's logs that report a panic, by file.
fn panics(log_dir: &Path) -> BTreeMap<String, usize> {
    let mut found = BTreeMap::new();
    for e in std::fs::read_dir(log_dir).into_iter().flatten().flatten() {
        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
        let n = text.matches("panicked at").count();
        if n > 0 {
            found.insert(e.file_name().to_string_lossy().into_owned(), n);
        }
    }
    found
}

/// Kills one process of `role`; how long until the role was whole again (`None`: it had no
/// process to kill, or did not recover within `limit`).
fn kill_one(
    topology_id: &str,
    role: &str,
    rng: &mut impl rand::Rng,
    limit: Duration,
) -> Option<Duration> {
    let before = role_pids(topology_id, role);
    if before.is_empty() {
        return None;
    }
    let pid = before[rng.random_range(0..before.len())];
    // SAFETY: kill(2) on a pid read from /proc a moment ago; at worst it is gone already
    if unsafe { libc::kill(pid, libc::SIGKILL) } != 0 {
        return None;
    }
    let killed = Instant::now();
    while killed.elapsed() < limit {
        let now = role_pids(topology_id, role);
        if now.len() >= before.len() && !now.contains(&pid) {
            return Some(killed.elapsed());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn run(o: &Options) -> Result<bool, String> {
    let out = std::env::temp_dir().join(format!("heronrs-chaos-{}", std::process::id()));
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let ids = 2 * o.rate * o.duration.as_secs().max(1);
    let role_args: Vec<String> = [
        "--out-dir",
        &out.display().to_string(),
        "--ids",
        &ids.to_string(),
        "--rate",
        &o.rate.to_string(),
        "--containers",
        &o.containers.to_string(),
        "--timeout-secs",
        "5",
        "--max-pending",
        "500",
        "--shape",
        "word-count",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let topology =
        heron::LocalTopology::submit_self(&role_args).map_err(|e| format!("submit failed: {e}"))?;
    let id = topology.id().to_owned();
    println!(
        "chaos: {ids} ids at {} a second per spout task, a kill every {:?} for {:?} (seed {}); \
         logs in {}",
        o.rate,
        o.kill_every,
        o.duration,
        o.seed,
        topology.log_dir().display()
    );
    let mut rng = rand::rngs::StdRng::seed_from_u64(o.seed);
    let first = rng.random_range(0..ROLES.len());
    let mut recovery: BTreeMap<&str, Vec<Duration>> = BTreeMap::new();
    let mut unrecovered: BTreeMap<&str, u32> = BTreeMap::new();
    let started = Instant::now();
    let mut turn = 0;
    while started.elapsed() + o.kill_every <= o.duration {
        let next = started + o.kill_every * (turn as u32 + 1);
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
        let role = ROLES[(first + turn) % ROLES.len()];
        turn += 1;
        match kill_one(&id, role, &mut rng, Duration::from_secs(60)) {
            Some(d) => recovery.entry(role).or_default().push(d),
            None => *unrecovered.entry(role).or_default() += 1,
        }
        let l = ledger(&out);
        println!(
            "[{:>5.1}s] killed a {role}; ids emitted {} acked {} replayed {}",
            started.elapsed().as_secs_f64(),
            l.emitted,
            l.acked,
            l.replayed
        );
    }
    println!("kills stop; draining (at most {:?})", o.drain);
    let drain_start = Instant::now();
    while !ledger(&out).done && drain_start.elapsed() < o.drain {
        std::thread::sleep(Duration::from_millis(200));
    }
    let drained = drain_start.elapsed();
    let panicked = panics(&topology.log_dir());
    let l = ledger(&out);
    let acked = acked_ids(&out);
    let lost = (0..ids).filter(|i| !acked.contains(i)).count() as u64;
    let reemitted = l.emitted.saturating_sub(ids + l.replayed);
    topology.kill().map_err(|e| format!("kill failed: {e}"))?;
    println!(
        "ids {ids}: emitted {} (replays included), acked {}, replayed after a fail {}, \
         re-emitted after a spout restart {reemitted}, lost {lost}; drained in {:.1}s",
        l.emitted,
        acked.len(),
        l.replayed,
        drained.as_secs_f64()
    );
    let mut roles = serde_json::Map::new();
    for role in ROLES {
        let mut times = recovery.get(role).cloned().unwrap_or_default();
        times.sort_unstable();
        let (p50, max) = (percentile(&times, 0.5), percentile(&times, 1.0));
        let missed = unrecovered.get(role).copied().unwrap_or(0);
        println!(
            "  {role:<8} kills {:>3}, recovery p50 {:>6.0} ms, max {:>6.0} ms{}",
            times.len(),
            p50.as_secs_f64() * 1e3,
            max.as_secs_f64() * 1e3,
            if missed > 0 {
                format!(", {missed} without a process to kill or not back within 60 s")
            } else {
                String::new()
            }
        );
        roles.insert(
            role.into(),
            serde_json::json!({
                "kills": times.len(),
                "recovery_p50_ms": p50.as_secs_f64() * 1e3,
                "recovery_max_ms": max.as_secs_f64() * 1e3,
                "missed": missed,
            }),
        );
    }
    println!(
        "daemon panics: {} {panicked:?}",
        panicked.values().sum::<usize>()
    );
    if let Some(path) = &o.json {
        let report = serde_json::json!({
            "ids": ids, "emitted": l.emitted, "acked": acked.len(), "replayed": l.replayed,
            "reemitted": reemitted, "lost": lost, "drain_s": drained.as_secs_f64(),
            "roles": roles, "panics": panicked,
        });
        std::fs::write(path, report.to_string()).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let _ = std::fs::remove_dir_all(&out);
    Ok(lost == 0 && panicked.is_empty())
}

fn main() {
    heron::run_role_if_requested(ledger::topology);
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let code = match parse(&argv).and_then(|o| run(&o)) {
        Ok(true) => 0,
        Ok(false) => {
            eprintln!("chaos: ids were lost or a process panicked");
            1
        }
        Err(e) => {
            eprintln!("chaos: {e}");
            2
        }
    };
    std::process::exit(code);
}
