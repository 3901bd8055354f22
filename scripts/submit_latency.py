#!/usr/bin/env python3
"""`heron submit` to the first tuple counted at the final bolt, through the real CLI.

Usage (after `cargo build --release --bin heron --example bench`):

    python3 scripts/submit_latency.py [--runs 5] [--topology word-count] [-- extra bench args]

Each run submits `target/release/examples/bench` with `heron submit local` (2 containers,
parallelism 2, under a private HOME), reads CLOCK_MONOTONIC just before starting the CLI, and
waits for a final-bolt task's bench file to name the time of its first tuple (`first-ns`, the
same clock, written by `examples/bench/record.rs`). Then it kills the topology with
`heron kill local`. It prints, per run and as medians: the seconds until the CLI returned
and until the first tuple. The bench's own `submit_to_first_tuple_s` measures the same from the
library's submit call, without the CLI's process start.
"""

import argparse
import glob
import os
import statistics
import subprocess
import sys
import tempfile
import time

FINAL = {"word-count": "count", "const-null": "null", "const-id-null": "null",
         "streamlet-word-count": "sink"}
NAMES = {"word-count": "BenchWordCount", "const-null": "BenchConstNull",
         "const-id-null": "BenchConstIdNull", "streamlet-word-count": "BenchStreamletWordCount"}


def first_ns(home, name, final):
    """The earliest `first-ns` among the final bolt's bench files, or None."""
    best = None
    pattern = os.path.join(home, ".herondata/topologies/local/*", name, "bench/*/*")
    for path in glob.glob(pattern):
        try:
            lines = open(path).read().splitlines()
        except OSError:
            continue
        fields = dict(l.split(" ", 1) for l in lines if " " in l)
        if fields.get("component") == final and "first-ns" in fields:
            ns = int(fields["first-ns"])
            best = ns if best is None else min(best, ns)
    return best


def one_run(heron, bench, topology, extra, timeout):
    home = tempfile.mkdtemp(prefix="heronrs-submit-latency-")
    env = dict(os.environ, HOME=home)
    name = NAMES[topology]
    t0 = time.monotonic_ns()
    subprocess.run([heron, "submit", "local", bench, "--topology", topology, *extra],
                   env=env, check=True, stdout=subprocess.DEVNULL)
    returned = time.monotonic_ns()
    try:
        deadline = time.monotonic() + timeout
        first = None
        while first is None and time.monotonic() < deadline:
            first = first_ns(home, name, FINAL[topology])
            if first is None:
                time.sleep(0.02)
        if first is None:
            raise SystemExit(f"no first tuple at {FINAL[topology]} within {timeout} s (HOME={home})")
        return (returned - t0) / 1e9, (first - t0) / 1e9
    finally:
        subprocess.run([heron, "kill", "local", name], env=env, check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        subprocess.run(["rm", "-rf", home], check=False)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--topology", default="word-count", choices=sorted(NAMES))
    p.add_argument("--heron", default="target/release/heron")
    p.add_argument("--bench", default="target/release/examples/bench")
    p.add_argument("--timeout", type=float, default=30.0)
    p.add_argument("extra", nargs="*")
    a = p.parse_args()
    returned, first = [], []
    for i in range(a.runs):
        r, f = one_run(os.path.abspath(a.heron), os.path.abspath(a.bench), a.topology,
                       a.extra, a.timeout)
        returned.append(r)
        first.append(f)
        print(f"run {i + 1}: submit returned after {r:.3f} s, first tuple at the final bolt "
              f"after {f:.3f} s", flush=True)
    print(f"median of {a.runs}: submit returned after {statistics.median(returned):.3f} s, "
          f"first tuple after {statistics.median(first):.3f} s")


if __name__ == "__main__":
    sys.exit(main())
