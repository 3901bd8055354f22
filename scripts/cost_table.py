#!/usr/bin/env python3
"""Where each word's CPU nanoseconds go: a per-role, per-step cost table of a saturated bench run.

Usage (after `cargo build --release --example bench --bin heron`):

    python3 scripts/cost_table.py [--topology word-count] [--reliability atmost] \
        [--seconds 10] [--freq 1999] [--runs 3] [--top N] [-- extra bench args]

It starts `target/release/examples/bench` for the profile window plus a warm-up, waits until
the topology's processes run, then samples them with `perf record -e cpu-clock` (every sample
is 1/freq s of CPU time on some thread) for `--seconds`. Every sample is put in a role (the
argument after `heron-role`, instances split by `--component-name`) and a step (by its leaf
symbol, with the patterns in STEPS). Dividing by the words the final bolt counted in the same
window (the bench's steady-state rate times the window) gives nanoseconds per word. Prints a
Markdown table (rows: steps; columns: roles) and the same as JSON with `--json`.

Re-run it after every change to the data path: the table in docs/cost.md came from it.
"""

import argparse
import collections
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time

# (step, regex over the leaf symbol); the first match wins. Kernel steps match only kernel symbols (shown as [k]).
STEPS = [
    ("kernel: futex, scheduling, epoll", r"futex|schedule|__switch_to|finish_task_switch|ep_|epoll|try_to_wake|pick_next|enqueue|dequeue|update_curr|hrtimer|native_queued|_raw_spin"),
    ("kernel: sockets, TCP", r"tcp_|sock_|skb|__sys_(send|recv)|inet_|ip_|loopback|net_rx|__dev_|napi|copy_user|_copy_to_iter|_copy_from_iter|sk_"),
    ("alloc / free", r"malloc|free|realloc|_int_|cfree|tcache|sdallocx|alloc::raw_vec|__rust_alloc|__rust_dealloc"),
    ("memcpy / memmove", r"memcpy|memmove|memset|__memcmp|memcmp"),
    ("hashing", r"[Hh]ash|sip|fxhash|ahash|Hasher"),
    ("queues, wake-ups (crossbeam, tokio)", r"crossbeam|tokio|parking|Condvar|futex|mio|park|waker|Notify"),
    ("acking (xor, pending trees)", r"[Aa]ck|xor|Xor|pending|timeout_wheel"),
    ("routing, groupings", r"route|Route|grouping|Grouping|choose_tasks|dest"),
    ("decode (tuple, protobuf, batch)", r"decode|Decode|read_varint|walk_data|Fields::read|from_utf8|from_runtime|deserialize"),
    ("clock reads", r"clock_gettime|Instant::now|now_ns"),
    ("encode (tuple, protobuf, batch)", r"encode|Encode|emit|Emit|write_|prost|BufMut|put_|varint|serialize|postcard"),
    ("decode, other reads", r"read_|parse|Buf::|get_"),
    ("user code (split, count, spout)", r"Split|FinalBolt|BenchSpout|split_whitespace|Sentences|next_sentence|execute|next_tuple|core::str|try_fold"),
]


# Seconds of steady state before sampling (the bench's own warm-up is as long).
WARM = 6.0


def role_of(pid):
    try:
        args = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
    except OSError:
        return None
    args = [a.decode(errors="replace") for a in args]
    if "heron-role" not in args:
        return None
    i = args.index("heron-role")
    role = args[i + 1] if i + 1 < len(args) else "?"
    if role == "instance" and "--component-name" in args:
        j = args.index("--component-name")
        role = f"instance {args[j + 1]}"
    return role


def topology_pids():
    """Every heron-role process on this machine but the executors (run one bench at a time)."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        role = role_of(int(name))
        if role and role != "executor":
            out[int(name)] = role
    return out


def step_of(sym, kernel):
    for step, pat in STEPS:
        if step.startswith("kernel") != kernel:
            continue
        if re.search(pat, sym):
            return step
    return "kernel: other" if kernel else "other"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--topology", default="word-count",
                   help="a bench topology, or timely (the bench's timely peer), or relay (the "
                        "relay floor: our process layout, bare frames; acked with "
                        "--reliability atleast)")
    p.add_argument("--reliability", default="atmost")
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--freq", type=int, default=1999)
    p.add_argument("--runs", type=int, default=3, help="bench runs; each cell is their median")
    p.add_argument("--json", action="store_true")
    p.add_argument("--top", type=int, default=0, help="also list each role's top N symbols")
    p.add_argument("--bench", default="target/release/examples/bench")
    p.add_argument("extra", nargs="*")
    a = p.parse_args()

    how = {"timely": profile_timely, "relay": profile_relay}.get(a.topology, profile)
    runs = [how(a) for _ in range(a.runs)]
    words = statistics.median(r[0] for r in runs)
    roles = sorted({role for _, cost, _ in runs for role, _ in cost})
    steps = [s for s, _ in STEPS] + ["kernel: other", "other"]
    # the median over runs of each cell, in ns per counted word
    cell = {(r, s): statistics.median(c.get((r, s), 0.0) for _, c, _ in runs)
            for r in roles for s in steps}
    if a.json:
        table = {r: {s: cell[(r, s)] for s in steps if cell[(r, s)]} for r in roles}
        rates = [r[0] for r in runs]
        print(json.dumps({"words_per_sec": rates, "ns_per_word": table}, indent=1))
        return
    print(f"{a.topology} {a.reliability}: median {words / 1e6:.2f} M words/s over {a.runs} "
          f"run(s) (under perf); CPU ns per word counted (median per cell), "
          f"{a.seconds:.0f} s of perf at {a.freq} Hz per run\n")
    print("| step | " + " | ".join(roles) + " | all |")
    print("|---|" + "---|" * (len(roles) + 1))
    for s in steps:
        row = [cell[(r, s)] for r in roles]
        if sum(row) < 0.05:
            continue
        print(f"| {s} | " + " | ".join(f"{x:.1f}" for x in row) + f" | {sum(row):.1f} |")
    totals = [sum(cell[(r, s)] for s in steps) for r in roles]
    print("| **total** | " + " | ".join(f"**{x:.1f}**" for x in totals)
          + f" | **{sum(totals):.1f}** |")
    if a.top:
        by_sym = runs[len(runs) // 2][2]
        for r in roles:
            top = sorted(((v, k[1]) for k, v in by_sym.items() if k[0] == r), reverse=True)
            print(f"\n{r}, top symbols (ns/word, one run):")
            for v, sym in top[:a.top]:
                step = step_of(sym.removeprefix("[k] "), sym.startswith("[k]"))
                print(f"  {v:6.1f}  {step:<38} {sym[:110]}")


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def profile_timely(a):
    """The bench's timely peer (two `bench timely-worker` processes) under perf: the same
    shape as `profile`, the role being `timely worker`."""
    duration_ms = int((WARM + a.seconds + 4) * 1000)
    addrs = ",".join(f"127.0.0.1:{free_port()}" for _ in range(2))
    workers = [subprocess.Popen(
        [a.bench, "timely-worker", "--process", str(i), "--addresses", addrs,
         "--duration-ms", str(duration_ms), "--warmup-ms", str(int(WARM * 1000))],
        stdout=subprocess.PIPE, text=True) for i in range(2)]
    time.sleep(WARM)
    data = record(a, [w.pid for w in workers])
    words = 0.0
    for w in workers:
        out, _ = w.communicate(timeout=duration_ms / 1000 + 60)
        f = out.split()
        words += float(f[f.index("words") + 1]) / float(f[f.index("secs") + 1])
    pids = {w.pid: "timely worker" for w in workers}
    return words, *samples(a, data, pids, words * a.seconds)


def relay_pids():
    """The relay floor's processes (`bench relay-node --role R ...`): {pid: 'relay R'}."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            args = open(f"/proc/{name}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        args = [x.decode(errors="replace") for x in args]
        if "relay-node" in args and "--role" in args:
            out[int(name)] = "relay " + args[args.index("--role") + 1]
    return out


def relay_args(a):
    """`relay-run`'s arguments for the bench arguments given: acked in the spouts' window with
    `--reliability atleast` (`--max-spout-pending N`, else Heron's 100), pinned with
    `--conf heron-rs.local.cpu.pinning=core`, as the bench's `--peer relay` runs."""
    out = []
    if a.reliability == "atleast":
        window = "100"
        if "--max-spout-pending" in a.extra:
            window = a.extra[a.extra.index("--max-spout-pending") + 1]
        out += ["--window", window]
    if "heron-rs.local.cpu.pinning=core" in a.extra:
        out += ["--pinned", "1"]
    if "--vocabulary" in a.extra:
        out += ["--vocabulary", a.extra[a.extra.index("--vocabulary") + 1]]
    return out


def steady_relay(a, measure):
    """Starts the relay floor (`bench relay-run`, eight processes) for `a.seconds` of steady
    state plus warm-up, waits for its processes and the warm-up, then calls
    `measure({pid: role})` and waits for the run: (words/s, what `measure` returned)."""
    duration_ms = int((WARM + a.seconds + 4) * 1000)
    run = subprocess.Popen(
        [a.bench, "relay-run", "--duration-ms", str(duration_ms),
         "--warmup-ms", str(int(WARM * 1000))] + relay_args(a),
        stdout=subprocess.PIPE, text=True)
    deadline = time.time() + 30
    pids = {}
    while time.time() < deadline and len(pids) < 8:
        time.sleep(0.2)
        pids = relay_pids()
    if len(pids) < 8:
        run.kill()
        sys.exit(f"the relay's eight processes did not appear within 30 s: {pids}")
    time.sleep(WARM)
    measured = measure(pids)
    out, _ = run.communicate(timeout=duration_ms / 1000 + 60)
    f = out.split()
    return float(f[f.index("words_per_sec") + 1]), measured


def profile_relay(a):
    """The relay floor under perf, one role per process kind."""
    words, (data, pids) = steady_relay(a, lambda pids: (record(a, list(pids)), pids))
    return words, *samples(a, data, pids, words * a.seconds)


def record(a, pids):
    """`perf record` of these processes for `a.seconds`; the data file's path."""
    data = f"/tmp/cost-table-{os.getpid()}.perf"
    subprocess.run(
        ["perf", "record", "-q", "-e", "cpu-clock", "-F", str(a.freq), "-o", data,
         "-p", ",".join(map(str, pids)), "--", "sleep", str(a.seconds)],
        check=True, stderr=subprocess.DEVNULL)
    return data


def samples(a, data, pids, window_words):
    """perf samples of `data` as ns per word: by (role, step) and by (role, symbol)."""
    script = subprocess.run(
        ["perf", "script", "-i", data, "-F", "pid,ip,sym"],
        capture_output=True, text=True, check=True).stdout
    os.unlink(data)
    per_word = 1e9 / a.freq / window_words
    cost = collections.defaultdict(float)
    by_sym = collections.defaultdict(float)
    for line in script.splitlines():
        parts = line.split(None, 2)
        if len(parts) < 2 or not parts[0].isdigit():
            continue
        role = pids.get(int(parts[0]), "?")
        sym = demangle_hint(parts[2] if len(parts) > 2 else "[unknown]")
        kernel = parts[1].startswith("ffff")
        cost[(role, step_of(sym, kernel))] += per_word
        by_sym[(role, ("[k] " if kernel else "") + sym)] += per_word
    return cost, by_sym


def steady_bench(a, measure):
    """Starts the bench for `a.seconds` of steady state plus warm-up, waits for its topology's
    processes and the warm-up, then calls `measure({pid: role})` and waits for the bench:
    (words/s, what `measure` returned)."""
    duration = int(WARM + a.seconds + 6)
    bench = subprocess.Popen(
        [a.bench, "--topology", a.topology, "--reliability", a.reliability,
         "--duration", f"{duration}s", "--warmup", f"{int(WARM)}s", "--json", *a.extra],
        stdout=subprocess.PIPE, text=True)
    deadline = time.time() + 30
    pids = {}
    while time.time() < deadline:
        pids = topology_pids()
        if any(r.startswith("instance") for r in pids.values()) and len(pids) >= 4:
            break
        time.sleep(0.2)
    if not pids:
        bench.kill()
        sys.exit("no topology processes appeared within 30 s")
    time.sleep(WARM)
    measured = measure(topology_pids())
    out, _ = bench.communicate(timeout=duration + 60)
    result = json.loads(out)
    return result.get("words_per_sec") or result.get("tuples_per_sec"), measured


def profile(a):
    """One bench run under perf: (words/s, {(role, step): ns/word}, {(role, sym): ns/word})."""
    words, (data, pids) = steady_bench(a, lambda pids: (record(a, pids), pids))
    return words, *samples(a, data, pids, words * a.seconds)

def demangle_hint(sym):
    """Rust legacy-mangled names keep their path segments readable enough for the patterns;
    strip the hash suffix."""
    return re.sub(r"17h[0-9a-f]{16}E$", "", sym)


if __name__ == "__main__":
    main()
