#!/usr/bin/env python3
"""Two builds' criterion micro-benchmarks, run alternately: issue 19's "no regression" check.

Usage:
    # the build to compare against, in its own worktree and target directory
    git worktree add /tmp/base <commit>
    (cd /tmp/base && CARGO_TARGET_DIR=/tmp/base-target cargo bench --no-run --workspace)
    cargo bench --no-run --workspace
    python3 scripts/criterion_ab.py --a-target /tmp/base-target --b-target target [--rounds 2]

For every bench binary both target directories hold (`tuple_set`, `framing`, `routing`, `xor`,
...; the newest of each name in `release/deps`), it runs A, B, A, B, ... (`--rounds` each),
`--measurement-time 2 --warm-up-time 1`, and prints, for every bench both builds have, the
median over rounds of criterion's estimate of each, and B/A. Benches only one build has are
listed apart. Runs minutes apart on this machine differ by several per cent, so only the
alternation makes the two comparable; judge a change by the ratio, not by either figure.
"""

import argparse
import glob
import os
import re
import statistics
import subprocess
import sys

TIME = re.compile(r"^(\S.*?)\s+time:\s+\[\S+ \S+ (\S+) (\S+) \S+ \S+\]", re.M)
UNITS = {"ps": 1e-3, "ns": 1.0, "µs": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9}


def binaries(target):
    """{bench name: newest executable} under `target/release/deps`."""
    out = {}
    for path in glob.glob(os.path.join(target, "release", "deps", "*-*")):
        name, ext = os.path.basename(path).rsplit("-", 1)[0], os.path.splitext(path)[1]
        if ext or not os.access(path, os.X_OK) or not os.path.isfile(path):
            continue
        if name in ("tuple_set", "framing", "routing", "xor", "element"):
            if name not in out or os.path.getmtime(path) > os.path.getmtime(out[name]):
                out[name] = path
    return out


def run(binary, filt):
    """{bench id: ns} of one run of a criterion binary."""
    args = [binary, "--bench", "--measurement-time", "2", "--warm-up-time", "1", "--noplot"]
    if filt:
        args.append(filt)
    text = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    # criterion prints a long id on its own line and the time on the next
    text = re.sub(r"^(\S[^\n]*)\n\s+time:", r"\1 time:", text, flags=re.M)
    return {m[1].strip(): float(m[2]) * UNITS[m[3]] for m in TIME.finditer(text)}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--a-target", required=True, help="target directory of build A (before)")
    p.add_argument("--b-target", default="target", help="target directory of build B (after)")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--filter", default="", help="a criterion filter (regex over bench ids)")
    a = p.parse_args()
    bins_a, bins_b = binaries(a.a_target), binaries(a.b_target)
    common = sorted(set(bins_a) & set(bins_b))
    if not common:
        sys.exit(f"no bench binary in both {a.a_target} and {a.b_target}")
    print("| bench | A (ns) | B (ns) | B/A |\n|---|---|---|---|")
    only = []
    for name in common:
        ta, tb = {}, {}
        for _ in range(a.rounds):
            for times, binary in ((ta, bins_a[name]), (tb, bins_b[name])):
                for k, v in run(binary, a.filter).items():
                    times.setdefault(k, []).append(v)
        for k in sorted(set(ta) | set(tb)):
            if k not in ta or k not in tb:
                only.append((k, "A" if k in ta else "B"))
                continue
            ma, mb = statistics.median(ta[k]), statistics.median(tb[k])
            print(f"| {k} | {ma:.1f} | {mb:.1f} | {mb / ma:.3f} |", flush=True)
    for k, side in only:
        print(f"only in {side}: {k}")


if __name__ == "__main__":
    main()
