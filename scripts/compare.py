#!/usr/bin/env python3
"""Two bench configurations (or two builds) run in interleaved pairs: per-pair ratios and
their median, the way issue targets are judged on a machine whose speed drifts between runs.

Usage (after `cargo build --release --example bench --bin heron`):

    python3 scripts/compare.py --runs 5 \
        --a "--topology word-count" --b "--topology streamlet-word-count"
    python3 scripts/compare.py --runs 3 \
        --a "--topology word-count" --b "--topology word-count --reliability atleast"
    python3 scripts/compare.py --runs 5 --bench-a /tmp/bench-before --a "--topology word-count"
    python3 scripts/compare.py --runs 4 --a "--topology word-count --peer relay" \
        --b "--topology word-count --reliability atleast --conf heron-rs.local.cpu.pinning=core \
             --peer relay"

Each pair runs A then B (`bench ... --duration 12s --json` unless the arguments say
otherwise); the ratio of a pair is B's words/s over A's. Identical builds differ by 10 % or
more between runs here, so only ratios within a pair mean much: a single run of each says
little. Prints one line per run and a summary (medians of words/s, latency p50/p99 and of
the pair ratios); `--json` prints the same as one object. With `--peer` in both, also each
side over its peer and B's peer over A (the last example: the acked relay floor over our
ATMOST_ONCE, the most B/A could be in our layout).
"""

import argparse
import json
import shlex
import statistics
import subprocess
import sys


def bench(path, args):
    """One bench run: its JSON result."""
    cmd = [path, *args]
    if "--duration" not in args:
        cmd += ["--duration", "12s"]
    if "--json" not in args:
        cmd.append("--json")
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr[-2000:]}")
    return json.loads(out.stdout)


def figures(r):
    f = {
        "words_per_sec": r.get("words_per_sec") or r.get("tuples_per_sec") or 0.0,
        "p50_ms": r.get("latency_p50_us", 0.0) / 1e3,
        "p99_ms": r.get("latency_p99_us", 0.0) / 1e3,
        "latency": r.get("latency_kind"),
        "failed": r.get("failed", 0),
    }
    # a run with --peer: the peer's rate and ours over it, from the same run
    for peer in ("relay", "timely"):
        if f"{peer}_words_per_sec" in r:
            f.update(peer=peer, peer_words_per_sec=r[f"{peer}_words_per_sec"],
                     ours_over_peer=r.get("ratio", 0.0))
    return f


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=3, help="pairs to run (default 3)")
    p.add_argument("--a", default="--topology word-count", help="bench arguments of A")
    p.add_argument("--b", default=None, help="bench arguments of B (default: A's)")
    p.add_argument("--bench-a", default="target/release/examples/bench")
    p.add_argument("--bench-b", default="target/release/examples/bench")
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    args_a = shlex.split(a.a)
    args_b = shlex.split(a.b) if a.b is not None else args_a
    bench_b = a.bench_b
    if a.runs < 1:
        sys.exit("--runs must be at least 1")

    pairs = []
    for i in range(a.runs):
        fa = figures(bench(a.bench_a, args_a))
        fb = figures(bench(bench_b, args_b))
        ratio = fb["words_per_sec"] / fa["words_per_sec"] if fa["words_per_sec"] else 0.0
        pairs.append((fa, fb, ratio))
        if not a.json:
            for name, f in (("A", fa), ("B", fb)):
                peer = (f", {f['peer']} {f['peer_words_per_sec'] / 1e6:.3f} M words/s "
                        f"(ours/{f['peer']} {f['ours_over_peer']:.3f})" if "peer" in f else "")
                print(f"pair {i + 1} {name}: {f['words_per_sec'] / 1e6:.3f} M words/s, "
                      f"{f['latency']} p50 {f['p50_ms']:.2f} ms, p99 {f['p99_ms']:.2f} ms, "
                      f"failed {f['failed']}{peer}")
            if "peer" in fb and fa["words_per_sec"]:
                print(f"pair {i + 1} B's {fb['peer']}/A: "
                      f"{fb['peer_words_per_sec'] / fa['words_per_sec']:.3f}")
            print(f"pair {i + 1} B/A: {ratio:.3f}", flush=True)

    def med(side, key):
        return statistics.median(p[side][key] for p in pairs)

    summary = {
        "a": {"bench": a.bench_a, "args": args_a},
        "b": {"bench": bench_b, "args": args_b},
        "ratios": [p[2] for p in pairs],
        "median_ratio": statistics.median(p[2] for p in pairs),
    }
    for side, name in ((0, "a"), (1, "b")):
        summary[name].update({k: med(side, k) for k in ("words_per_sec", "p50_ms", "p99_ms")})
        if all("peer" in p[side] for p in pairs):
            summary[name].update({k: med(side, k)
                                  for k in ("peer_words_per_sec", "ours_over_peer")})
        summary[name]["runs"] = [p[side] for p in pairs]
    if all("peer" in p[1] and p[0]["words_per_sec"] for p in pairs):
        # e.g. the acked relay floor over our unacked rate: how much of B/A the floor allows
        summary["b_peer_over_a"] = statistics.median(
            p[1]["peer_words_per_sec"] / p[0]["words_per_sec"] for p in pairs)
    if a.json:
        print(json.dumps(summary, indent=1))
        return
    print(f"\nA ({a.bench_a} {a.a}): median {summary['a']['words_per_sec'] / 1e6:.3f} M words/s, "
          f"p50 {summary['a']['p50_ms']:.2f} ms, p99 {summary['a']['p99_ms']:.2f} ms")
    print(f"B ({bench_b} {' '.join(args_b)}): median {summary['b']['words_per_sec'] / 1e6:.3f} M "
          f"words/s, p50 {summary['b']['p50_ms']:.2f} ms, p99 {summary['b']['p99_ms']:.2f} ms")
    print("B/A per pair: " + ", ".join(f"{r:.3f}" for r in summary["ratios"])
          + f"; median {summary['median_ratio']:.3f}")
    for name in ("a", "b"):
        if "ours_over_peer" in summary[name]:
            print(f"{name.upper()} over its peer: median {summary[name]['ours_over_peer']:.3f}")
    if "b_peer_over_a" in summary:
        print(f"B's peer over A: median {summary['b_peer_over_a']:.3f}")


if __name__ == "__main__":
    main()
