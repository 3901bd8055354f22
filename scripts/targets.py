#!/usr/bin/env python3
"""Issue 19's throughput and latency targets, judged in one command: every target measured in
interleaved rounds on one machine in one hour, each as its medians and a verdict.

Usage (after `cargo build --release --example bench --bin heron`):

    python3 scripts/targets.py [--rounds 3] [--vocabulary 32 --vocabulary 10000] [--json]

Each round runs, per vocabulary, three bench invocations back to back (12 s each unless
`--duration` says otherwise):

1. `--topology word-count --peer timely`: our ATMOST_ONCE rate S and ours over timely's
   2-process word count in the same invocation; its flat-out end-to-end p99, peak RSS per role
   and `heron submit` to the first tuple counted.
2. `--reliability atleast --conf heron-rs.local.cpu.pinning=core`: our ATLEAST_ONCE rate at
   the default `topology.max.spout.pending` over S of the same round, and its failed count.
3. `--peer timely --rate R` with R half of S (in sentences per second): our end-to-end p99
   over timely's at the same cap.

The targets (issue 19): ATMOST_ONCE >= 1.0 x timely; ATLEAST_ONCE >= 0.5 x ATMOST_ONCE with 0
failed; half-rate p99 <= 1.5 x timely's; flat-out p99 <= 50 ms; peak RSS stream manager <= 32
MB, instance <= 16 MB, tmaster <= 32 MB; submit to first tuple < 1 s. The criterion
micro-benchmarks are judged apart (`cargo bench -- --save-baseline` / `--baseline`).

The machine's speed drifts by 10 % and more between hours, and the two throughput ratios pull
against each other (a faster ATMOST_ONCE lifts the first and lowers the second), so a verdict
holds for the hour it was measured in: report the table with its date.
"""

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import bench  # noqa: E402  (one way to run the bench and read its JSON)

WORDS_PER_SENTENCE = 8
PINNED = ["--conf", "heron-rs.local.cpu.pinning=core"]
RSS_LIMITS_MB = {"stmgr": 32.0, "instance": 16.0, "tmaster": 32.0}


def one_round(path, vocabulary, duration):
    """The three invocations of one round for one vocabulary: the figures the targets read."""
    common = ["--topology", "word-count", "--vocabulary", str(vocabulary), "--duration", duration]
    flat = bench(path, common + ["--peer", "timely"])
    acked = bench(path, common + ["--reliability", "atleast"] + PINNED)
    rate = max(1, round(flat["words_per_sec"] / WORDS_PER_SENTENCE / 2))
    half = bench(path, common + ["--peer", "timely", "--rate", str(rate)])
    rss = {role: max(r["roles"][role]["peak_rss_mb"] for r in (flat, acked))
           for role in RSS_LIMITS_MB}
    return {
        "atmost_words_per_sec": flat["words_per_sec"],
        "timely_words_per_sec": flat["timely_words_per_sec"],
        "atmost_over_timely": flat["ratio"],
        "flat_p99_ms": flat["latency_p99_us"] / 1e3,
        "atleast_words_per_sec": acked["words_per_sec"],
        "atleast_over_atmost": acked["words_per_sec"] / flat["words_per_sec"],
        "atleast_failed": acked["failed"],
        "atleast_complete_p99_ms": acked["latency_p99_us"] / 1e3,
        "half_rate_sentences_per_sec": rate,
        "half_p99_ms": half["latency_p99_us"] / 1e3,
        "half_timely_p99_ms": half["timely_latency_p99_us"] / 1e3,
        "half_p99_over_timely": half["latency_p99_us"] / half["timely_latency_p99_us"],
        "peak_rss_mb": rss,
        "submit_to_first_tuple_s": flat["submit_to_first_tuple_s"],
    }


def verdicts(rounds):
    """(target, per-round values, median, met) for one vocabulary's rounds."""
    def col(key):
        return [r[key] for r in rounds]

    def row(name, values, ok, fmt="{:.3f}"):
        med = statistics.median(values)
        return (name, ", ".join(fmt.format(v) for v in values), fmt.format(med), ok(med))

    rows = [
        row("ATMOST_ONCE / timely >= 1.0", col("atmost_over_timely"), lambda m: m >= 1.0),
        row("ATLEAST_ONCE / ATMOST_ONCE >= 0.5, 0 failed", col("atleast_over_atmost"),
            lambda m: m >= 0.5 and all(f == 0 for f in col("atleast_failed"))),
        row("half-rate p99 / timely's <= 1.5", col("half_p99_over_timely"), lambda m: m <= 1.5),
        row("flat-out p99 <= 50 ms", col("flat_p99_ms"), lambda m: m <= 50.0, "{:.1f}"),
        row("submit to first tuple < 1 s", col("submit_to_first_tuple_s"), lambda m: m < 1.0),
    ]
    for role, limit in RSS_LIMITS_MB.items():
        values = [r["peak_rss_mb"][role] for r in rounds]
        rows.append(row(f"peak RSS {role} <= {limit:.0f} MB", values,
                        lambda m, limit=limit: m <= limit, "{:.1f}"))
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=3, help="rounds per vocabulary (default 3)")
    p.add_argument("--vocabulary", type=int, action="append",
                   help="vocabulary size, repeatable (default: the bench's 32 words)")
    p.add_argument("--duration", default="12s", help="each invocation's duration (default 12s)")
    p.add_argument("--bench", default="target/release/examples/bench")
    p.add_argument("--json", action="store_true", help="print the rounds and verdicts as JSON")
    a = p.parse_args()
    if a.rounds < 1:
        sys.exit("--rounds must be at least 1")
    vocabularies = a.vocabulary or [32]
    if any(v < 1 for v in vocabularies):
        sys.exit("--vocabulary must be at least 1")

    results = {v: [] for v in vocabularies}
    for i in range(a.rounds):
        # interleaved: every vocabulary in each round, so a slow hour touches them alike
        for v in vocabularies:
            r = one_round(a.bench, v, a.duration)
            results[v].append(r)
            if not a.json:
                print(f"round {i + 1}, {v} words: ATMOST_ONCE "
                      f"{r['atmost_words_per_sec'] / 1e6:.2f} M words/s "
                      f"({r['atmost_over_timely']:.3f} x timely), ATLEAST_ONCE "
                      f"{r['atleast_words_per_sec'] / 1e6:.2f} M "
                      f"({r['atleast_over_atmost']:.3f} x, failed {r['atleast_failed']}), "
                      f"half-rate p99 {r['half_p99_ms']:.2f} ms against timely's "
                      f"{r['half_timely_p99_ms']:.2f} ({r['half_p99_over_timely']:.3f})",
                      flush=True)

    if a.json:
        print(json.dumps({str(v): {"rounds": results[v],
                                   "verdicts": [dict(zip(("target", "rounds", "median", "met"),
                                                         row)) for row in verdicts(results[v])]}
                          for v in vocabularies}, indent=1))
        return
    for v in vocabularies:
        print(f"\n{v} words, {a.rounds} round(s):\n")
        print("| target | per round | median | met |")
        print("|---|---|---|---|")
        for name, values, med, ok in verdicts(results[v]):
            print(f"| {name} | {values} | {med} | {'yes' if ok else '**no**'} |")


if __name__ == "__main__":
    main()
