#!/usr/bin/env bash
# A 10x overloaded topology for a while, with every role's memory sampled:
#   scripts/overload.sh [SECONDS] [RATE]     (default 600 s; spouts 20000 tuples/s per task)
# The `slow_bolt` test topology's spouts emit RATE tuples a second per task while its bolt
# executes a tenth of that; back pressure must hold every process's memory. Prints the peak
# RSS per role, and the stream managers' RSS after the first minute and at the end (it must
# not grow with the length of the run). Needs `cargo build --release --examples --bins`.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS="${1:-600}"
RATE="${2:-20000}"
export HOME="$(mktemp -d "${TMPDIR:-/tmp}/heronrs-overload.XXXXXX")"
OUT="$HOME/out"
mkdir -p "$OUT"
trap 'target/release/heron kill local SlowBolt >/dev/null 2>&1 || true; rm -rf "$HOME"' EXIT
target/release/heron submit local target/release/examples/slow_bolt -- --out-dir "$OUT" \
  --rate "$RATE" --slow-rate $((RATE / 10)) --slow-secs "$SECS" --containers 2 >/dev/null
rss_of_role() { # role -> "pid rss_kb" lines
  for p in /proc/[0-9]*; do
    if { tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null | grep -q "heron-role $1 .*$HOME"; then
      echo "${p#/proc/} $(awk '/VmRSS/ {print $2}' "$p/status" 2>/dev/null)"
    fi
  done
}
declare -A peak
first_min=""
start=$(date +%s)
while [ $(( $(date +%s) - start )) -lt "$SECS" ]; do
  for role in tmaster stmgr instance executor; do
    while read -r _pid kb; do
      [ -n "${kb:-}" ] || continue
      [ "${peak[$role]:-0}" -ge "$kb" ] || peak[$role]=$kb
    done < <(rss_of_role "$role")
  done
  now=$(( $(date +%s) - start ))
  stmgr=$(rss_of_role stmgr | awk '{s = s " " $2} END {print s}')
  if [ -z "$first_min" ] && [ "$now" -ge 60 ]; then first_min="$stmgr"; fi
  echo "[${now}s] stmgr RSS (kB):$stmgr"
  sleep 10
done
last=$(rss_of_role stmgr | awk '{s = s " " $2} END {print s}')
echo "peak RSS (kB) per role: $(for r in "${!peak[@]}"; do printf '%s %s  ' "$r" "${peak[$r]}"; done)"
echo "stmgr RSS (kB) after 1 min:${first_min:- n/a}; at the end:$last"
echo "tuples per task: $(for f in "$OUT"/*.count; do printf '%s %s  ' "$(basename "$f" .count)" "$(cat "$f")"; done)"
echo "processes alive at the end: $(pgrep -fc "heron-role .*$HOME" || true)"
echo "panics in the logs: $(cat "$HOME"/.herondata/topologies/local/*/SlowBolt/log-files/*.log 2>/dev/null | grep -c 'panicked at' || true)"
