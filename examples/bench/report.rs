//! The bench's output: one JSON object (`--json`) or a human summary.

use crate::args::{Options, Reliability, Topology};
use crate::driver::{Latency, Measured};
use crate::procs::{roles_json, round, shell_json};
use crate::timely_peer::PeerResult;
use serde_json::{json, Value};

/// The JSON object of a run (and of the peer's, if there was one).
pub fn to_json(opts: &Options, m: &Measured, peer: Option<&PeerResult>) -> Value {
    let lat = m.latency(opts.reliability);
    let mut v = json!({
        "topology": opts.topology.name(),
        "topology_name": m.topology_name,
        "reliability": opts.reliability.name(),
        "duration_s": opts.duration.as_secs_f64(),
        "warmup_s": opts.warmup.as_secs_f64(),
        "measured_s": round(m.measured_s, 3),
        "containers": opts.containers,
        "parallelism": opts.parallelism,
        "rate": opts.rate,
        "vocabulary": opts.vocabulary,
        "max_spout_pending": opts.max_spout_pending.unwrap_or(heron::config::DEFAULT_MAX_SPOUT_PENDING),
        "tuples_per_sec": round(m.tuples_per_sec, 1),
        "emitted_per_sec": round(m.emitted_per_sec, 1),
        "acked_per_sec": round(m.acked_per_sec, 1),
        "failed": m.failed,
        "failed_steady": m.failed_steady,
        "latency_kind": match opts.reliability {
            Reliability::AtLeast => "complete",
            Reliability::AtMost | Reliability::Effectively => "end-to-end",
        },
        "e2e_latency_p50_us": round(m.end_to_end.p50_us, 1),
        "e2e_latency_p99_us": round(m.end_to_end.p99_us, 1),
        "totals": {
            "emitted": m.totals.emitted,
            "executed": m.totals.executed,
            "acked": m.totals.acked,
            "failed": m.totals.failed,
        },
        "roles": roles_json(&m.processes, &m.processes_base),
        "shell": shell_json(&m.processes, &m.processes_base),
        "processes_left": m.processes_left,
        "submit_s": round(m.submit_s, 3),
        "submit_to_first_tuple_s": m.first_tuple_s.map(|s| round(s, 3)),
        "tasks_missing": m.tasks_missing,
    });
    let o = v.as_object_mut().expect("an object");
    insert_latency(o, "latency", &lat);
    if opts.topology != Topology::ConstNull && opts.topology != Topology::ConstIdNull {
        o.insert("words_per_sec".into(), json!(round(m.tuples_per_sec, 1)));
    }
    if let Some(p) = peer {
        let name = p.name;
        o.insert(
            format!("{name}_words_per_sec"),
            json!(round(p.words_per_sec, 1)),
        );
        o.insert(format!("{name}_total_words"), json!(p.total_words));
        if name == "relay" {
            // 0: unacked; else each spout's window of trees in flight
            o.insert("relay_window".into(), json!(opts.relay_setup().window));
        }
        let ratio = if p.words_per_sec > 0.0 {
            m.tuples_per_sec / p.words_per_sec
        } else {
            0.0
        };
        o.insert("ratio".into(), json!(round(ratio, 4)));
        if let Some(l) = &p.latency {
            insert_latency(o, &format!("{name}_latency"), l);
        }
    }
    v
}

/// `<prefix>_p50_us`, `_p99_us`, `_p999_us`, `_max_us` and `_samples`.
fn insert_latency(o: &mut serde_json::Map<String, Value>, prefix: &str, l: &Latency) {
    for (name, us) in [
        ("p50", l.p50_us),
        ("p99", l.p99_us),
        ("p999", l.p999_us),
        ("max", l.max_us),
    ] {
        o.insert(format!("{prefix}_{name}_us"), json!(round(us, 1)));
    }
    o.insert(format!("{prefix}_samples"), json!(l.samples));
}

fn rate(r: f64) -> String {
    if r >= 1e6 {
        format!("{:.2} M/s", r / 1e6)
    } else if r >= 1e3 {
        format!("{:.1} k/s", r / 1e3)
    } else {
        format!("{r:.0} /s")
    }
}

fn latency_line(what: &str, l: &Latency) -> String {
    if l.samples == 0 {
        return format!("{what}: no samples");
    }
    format!(
        "{what}: p50 {:.0} µs, p99 {:.0} µs, p99.9 {:.0} µs, max {:.0} µs ({} samples)",
        l.p50_us, l.p99_us, l.p999_us, l.max_us, l.samples
    )
}

/// The human summary.
pub fn print_human(opts: &Options, m: &Measured, peer: Option<&PeerResult>) {
    let v = to_json(opts, m, peer);
    println!(
        "\n{} / {} over {:.1} s of steady state ({} containers, parallelism {}{}):",
        opts.topology.name(),
        opts.reliability.name(),
        m.measured_s,
        opts.containers,
        opts.parallelism,
        opts.rate
            .map(|r| format!(", rate cap {r}/s"))
            .unwrap_or_default()
    );
    let unit = if opts.topology != Topology::ConstNull && opts.topology != Topology::ConstIdNull {
        "words"
    } else {
        "tuples"
    };
    println!("  final bolt received {unit}: {}", rate(m.tuples_per_sec));
    println!("  spouts emitted:  {}", rate(m.emitted_per_sec));
    if opts.reliability == Reliability::AtLeast {
        println!("  acked:           {}", rate(m.acked_per_sec));
    }
    println!("  failed: {} (whole run)", m.failed);
    if opts.reliability == Reliability::AtLeast {
        println!("  {}", latency_line("complete latency", &m.complete));
    }
    println!("  {}", latency_line("end-to-end latency", &m.end_to_end));
    match m.first_tuple_s {
        Some(first) => println!(
            "  submit to the final bolt's first tuple: {first:.3} s (the submit call returned after {:.3} s)",
            m.submit_s
        ),
        None => println!("  the final bolt received no tuple"),
    }
    if let Some(roles) = v["roles"].as_object() {
        for (role, r) in roles {
            let per_s = |kind: &str| {
                let n = r["switches_steady"][kind].as_u64().unwrap_or(0);
                (n as f64 / m.measured_s.max(1e-9)).round()
            };
            println!(
                "  {role:<9} {} processes, peak RSS {} MB (max), CPU {} s (sum; {} s after the warm-up), \
                 context switches after the warm-up {}/s voluntary, {}/s preempted",
                r["processes"],
                r["peak_rss_mb"],
                r["cpu_s"],
                r["cpu_s_steady"],
                per_s("voluntary"),
                per_s("involuntary")
            );
        }
    }
    if v["shell"].is_object() {
        let s = &v["shell"];
        println!(
            "  shell bolts after the warm-up: {} Python processes {} s CPU, their host instances {} s \
             (host/Python = {})",
            s["python_processes"], s["python_cpu_s"], s["host_cpu_s"], s["host_per_python"]
        );
    }
    if let Some(p) = peer {
        let relay = opts.relay_setup();
        let shape = match p.name {
            "timely" => "2 processes".to_string(),
            _ if relay.window > 0 => format!(
                "8 bare processes in our layout, acked in a window of {}",
                relay.window
            ),
            _ => "8 bare processes in our layout".to_string(),
        };
        println!(
            "  {} word count ({shape}): {}; ours/{} = {}",
            p.name,
            rate(p.words_per_sec),
            p.name,
            v["ratio"]
        );
        if let Some(l) = &p.latency {
            println!("  {} {}", p.name, latency_line("end-to-end latency", l));
        }
    }
    if m.processes_left > 0 {
        println!(
            "  WARNING: {} processes left after the kill",
            m.processes_left
        );
    } else {
        println!("  killed {}: no process left", m.topology_name);
    }
}
