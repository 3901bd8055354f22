//! The instance process's own CPU time, memory and restarts, written with its counters so
//! that the tracker's page can show them per task.
//!
//! Lines (docs/internals.md): `__cpu-time-ms N` (cumulative; the stream manager publishes
//! the delta per interval), and the gauges `gauge:__memory-rss-kb N`, `gauge:__restarts N`
//! and `gauge:__uptime-secs N` (published as they are). `starts N` counts the processes that
//! have written this instance's counters file, read back when a restarted process begins.

use std::fmt::Write;
use std::path::Path;
use std::time::Instant;

/// Clock ticks per second of `/proc/<pid>/stat` times (`sysconf(_SC_CLK_TCK)`; 100 on Linux).
const CLK_TCK: u64 = 100;
/// Bytes per page of `/proc/<pid>/statm`.
const PAGE_KB: u64 = 4;

/// User plus system CPU time in ms from the text of `/proc/<pid>/stat`.
///
/// ```
/// let stat = "42 (my (odd) name) S 1 2 3 4 5 6 7 8 9 10 150 50 0 0";
/// assert_eq!(heron_instance::process_stats::cpu_ms(stat), Some(2000));
/// ```
pub fn cpu_ms(stat: &str) -> Option<u64> {
    // the command name may hold spaces and parentheses: fields start after the last ')'
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    // after the name: state(3) ppid pgrp session tty tpgid flags minflt cminflt majflt
    // cmajflt utime(14) stime(15)
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some((utime + stime) * 1000 / CLK_TCK)
}

/// Resident memory in KiB from the text of `/proc/<pid>/statm`.
///
/// ```
/// assert_eq!(heron_instance::process_stats::rss_kb("1000 250 30 1 0 100 0"), Some(1000));
/// ```
pub fn rss_kb(statm: &str) -> Option<u64> {
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * PAGE_KB)
}

/// The `starts N` line of a counters file (0 when absent).
pub fn starts_in(counters: &str) -> u64 {
    counters
        .lines()
        .find_map(|l| l.strip_prefix("starts ")?.trim().parse().ok())
        .unwrap_or(0)
}

/// This process's statistics for its counters file.
#[derive(Debug)]
pub struct ProcessStats {
    started: Instant,
    starts: u64,
}

impl ProcessStats {
    /// Starts counting; `previous` is the counters file an earlier process of the same
    /// instance left (if any), whose `starts` line this one increments.
    pub fn new(previous: Option<&Path>) -> ProcessStats {
        let before = previous
            .and_then(|p| std::fs::read_to_string(p).ok())
            .map_or(0, |t| starts_in(&t));
        ProcessStats {
            started: Instant::now(),
            starts: before + 1,
        }
    }

    /// Appends this process's lines to `out` (what `/proc` cannot tell is left out).
    pub fn lines(&self, out: &mut String) {
        if let Some(ms) = std::fs::read_to_string("/proc/self/stat")
            .ok()
            .and_then(|s| cpu_ms(&s))
        {
            let _ = writeln!(out, "__cpu-time-ms {ms}");
        }
        if let Some(kb) = std::fs::read_to_string("/proc/self/statm")
            .ok()
            .and_then(|s| rss_kb(&s))
        {
            let _ = writeln!(out, "gauge:__memory-rss-kb {kb}");
        }
        let _ = writeln!(
            out,
            "gauge:__restarts {}\ngauge:__uptime-secs {}\nstarts {}",
            self.starts - 1,
            self.started.elapsed().as_secs(),
            self.starts
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_restarted_process_counts_one_more_start() {
        let dir = std::env::temp_dir().join(format!("heron-ps-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("x");
        let first = ProcessStats::new(Some(&file));
        let mut text = String::new();
        first.lines(&mut text);
        assert!(text.contains("gauge:__restarts 0\n"), "{text}");
        assert!(text.contains("__cpu-time-ms "), "{text}");
        assert!(text.contains("gauge:__memory-rss-kb "), "{text}");
        std::fs::write(&file, &text).unwrap();
        let second = ProcessStats::new(Some(&file));
        let mut again = String::new();
        second.lines(&mut again);
        assert!(again.contains("gauge:__restarts 1\n"), "{again}");
        assert!(again.ends_with("starts 2\n"), "{again}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn malformed_proc_text_gives_nothing() {
        assert_eq!(cpu_ms("no parenthesis"), None);
        assert_eq!(cpu_ms("1 (x) S 1 2"), None);
        assert_eq!(rss_kb(""), None);
        assert_eq!(starts_in("emitted 3\nstarts x\n"), 0);
    }
}
