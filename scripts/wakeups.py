#!/usr/bin/env python3
"""How many syscalls and context switches each word costs, per role: the batching of a
saturated bench run.

Usage (after `cargo build --release --example bench --bin heron`):

    python3 scripts/wakeups.py [--topology word-count] [--reliability atleast] \
        [--seconds 4] [--runs 3] [--json] [-- extra bench args]

It starts `target/release/examples/bench` (with `--topology relay`, the relay floor, acked
with `--reliability atleast`), waits for the processes (roles as `scripts/cost_table.py`
finds them), counts with `perf stat --per-thread` the syscalls that move data and wake
threads (`sendto`, `recvfrom`: std's and tokio's sockets send and receive with them; `futex`,
`epoll_wait`) and the context switches of every thread for `--seconds`, and divides by the
words the final bolt counted in the window (the steady-state rate times the window). Prints a
Markdown table (rows: roles; columns: events per 1000 words, median over runs) and words per
`sendto`.

Small batches show here first: each send is a syscall, a TCP segment over loopback and
usually a wake-up of the reader on the other end, a few microseconds of CPU on each side.
"""

import argparse
import collections
import json
import os
import re
import statistics
import subprocess

from cost_table import steady_bench, steady_relay

EVENTS = ["sendto", "recvfrom", "futex", "epoll_wait"]
COLUMNS = EVENTS + ["context-switches"]


def count(a, pids):
    """`perf stat --per-thread` of these processes for `a.seconds`: {role: {event: n}}."""
    events = [f"syscalls:sys_enter_{e}" for e in EVENTS] + ["context-switches"]
    out = subprocess.run(
        ["perf", "stat", "-x", ",", "--per-thread", "-e", ",".join(events),
         "-p", ",".join(map(str, pids)), "--", "sleep", str(a.seconds)],
        capture_output=True, text=True, check=True).stderr
    tid_pid = {}
    for pid in pids:
        try:
            tid_pid.update((int(tid), pid) for tid in os.listdir(f"/proc/{pid}/task"))
        except OSError:
            pass  # the process ended
    per_role = collections.defaultdict(collections.Counter)
    for line in out.splitlines():
        # thread-tid,count,unit,event,...
        f = line.split(",")
        if len(f) < 4 or not f[1].replace(".", "").isdigit():
            continue
        m = re.search(r"-(\d+)$", f[0])
        if not m:
            continue
        role = pids.get(tid_pid.get(int(m.group(1)), -1), "?")
        event = f[3].split(":")[-1].removeprefix("sys_enter_")
        per_role[role][event] += float(f[1])
    return per_role


def run(a):
    """One bench run: (words/s, {role: {event: per 1000 words}})."""
    steady = steady_relay if a.topology == "relay" else steady_bench
    words, per_role = steady(a, lambda pids: count(a, pids))
    window = words * a.seconds / 1000
    return words, {r: {e: n / window for e, n in c.items()} for r, c in per_role.items()}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--topology", default="word-count",
                   help="a bench topology, or relay (the relay floor; acked with "
                        "--reliability atleast)")
    p.add_argument("--reliability", default="atmost")
    p.add_argument("--seconds", type=float, default=4.0)
    p.add_argument("--runs", type=int, default=1, help="bench runs; each cell is their median")
    p.add_argument("--json", action="store_true")
    p.add_argument("--bench", default="target/release/examples/bench")
    p.add_argument("extra", nargs="*")
    a = p.parse_args()

    runs = [run(a) for _ in range(a.runs)]
    words = statistics.median(r[0] for r in runs)
    roles = sorted({role for _, t in runs for role in t})
    cell = {(r, e): statistics.median(t.get(r, {}).get(e, 0.0) for _, t in runs)
            for r in roles for e in COLUMNS}
    if a.json:
        print(json.dumps({"words_per_sec": [r[0] for r in runs],
                          "per_1000_words": {r: {e: cell[(r, e)] for e in COLUMNS}
                                             for r in roles}}, indent=1))
        return
    print(f"{a.topology} {a.reliability}: median {words / 1e6:.2f} M words/s over {a.runs} "
          f"run(s); events per 1000 words counted, {a.seconds:.0f} s per run\n")
    print("| role | " + " | ".join(COLUMNS) + " | words per send |")
    print("|---|" + "---|" * (len(COLUMNS) + 1))
    totals = collections.Counter()
    for r in roles:
        row = [cell[(r, e)] for e in COLUMNS]
        totals.update(dict(zip(COLUMNS, row)))
        sends = cell[(r, "sendto")]
        per_send = f"{1000 / sends:.0f}" if sends > 0.01 else ""
        print(f"| {r} | " + " | ".join(f"{x:.2f}" for x in row) + f" | {per_send} |")
    sends = totals["sendto"]
    print("| **all** | " + " | ".join(f"**{totals[e]:.2f}**" for e in COLUMNS)
          + (f" | **{1000 / sends:.0f}** |" if sends > 0.01 else " | |"))


if __name__ == "__main__":
    main()
