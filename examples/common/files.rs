//! What the file-driven examples share: `--flag value` arguments, absolute paths for the roles,
//! atomic output files, and the "submit, wait until the output is complete, kill" loop.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The value after `flag` in `args`.
pub fn arg(args: &[String], flag: &str) -> Option<String> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

/// A positive integer argument, or `default`.
pub fn count_arg(args: &[String], flag: &str, default: u32) -> Result<u32, String> {
    match arg(args, flag) {
        None => Ok(default),
        Some(v) => match v.parse::<u32>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(format!("{flag} must be a positive integer, not {v:?}")),
        },
    }
}

/// `args` with the values of `path_flags` made absolute (the roles run elsewhere).
pub fn absolute_paths(args: &[String], path_flags: &[&str]) -> Vec<String> {
    let mut out = args.to_vec();
    for (i, a) in args.iter().enumerate() {
        if path_flags.contains(&a.as_str()) {
            if let Some(p) = args.get(i + 1) {
                let abs = std::path::absolute(p).unwrap_or_else(|_| PathBuf::from(p));
                out[i + 1] = abs.display().to_string();
            }
        }
    }
    out
}

/// Writes `text` to `path` atomically (a reader never sees half of it).
pub fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

/// Submits this binary with `role_args`, waits (at most `limit`) until `complete()` says the
/// output is whole, kills the topology; the process exit code.
pub fn run_until(role_args: &[String], limit: Duration, complete: impl Fn() -> bool) -> i32 {
    let topology = match heron::LocalTopology::submit_self(role_args) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("submit failed: {e}");
            return 1;
        }
    };
    println!(
        "running {} in {}",
        topology.name(),
        topology.working_dir().display()
    );
    let start = Instant::now();
    while !complete() && start.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(50));
    }
    let done = complete();
    if let Err(e) = topology.kill() {
        eprintln!("kill failed: {e}");
        return 1;
    }
    if !done {
        eprintln!("the output was not complete within {limit:?}");
        return 1;
    }
    println!("complete after {:.1}s", start.elapsed().as_secs_f64());
    0
}
