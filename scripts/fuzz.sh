#!/usr/bin/env bash
# Runs the cargo-fuzz targets of fuzz/ (libFuzzer, nightly toolchain) for SECONDS each,
# FUZZ_JOBS (default: the number of cores) at a time.
#   scripts/fuzz.sh [SECONDS] [TARGET...]      (default: 60 s, every target)
# New corpus entries go to a scratch directory (the seeds in fuzz/corpus stay as they are);
# a crash leaves its input in fuzz/artifacts/<target>/ and fails the run. Keep a fixed
# crash's input in fuzz/regressions/<target>/: `cargo test` replays it from then on.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH="${1:-60}"
shift || true
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi
TARGETS=("$@")
if [ "${#TARGETS[@]}" -eq 0 ]; then
  mapfile -t TARGETS < <(cargo fuzz list --fuzz-dir fuzz)
fi
SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/heronrs-fuzz.XXXXXX")"
trap 'rm -rf "$SCRATCH"' EXIT
cargo +nightly fuzz build --fuzz-dir fuzz --features run
# libFuzzer runs on one core: FUZZ_JOBS targets (default: one per core) run side by side,
# so every target still gets SECONDS of its own core.
JOBS="${FUZZ_JOBS:-$(nproc)}"
run_one() {
  local t=$1
  mkdir -p "$SCRATCH/$t" "fuzz/artifacts/$t"
  # -timeout: an input that takes over 10 s is a hang; -rss_limit_mb: one that grows memory
  if cargo +nightly fuzz run --fuzz-dir fuzz --features run "$t" "$SCRATCH/$t" "fuzz/corpus/$t" -- \
      -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      2>"$SCRATCH/$t.log"; then
    echo ok >"$SCRATCH/$t.status"
  else
    echo failed >"$SCRATCH/$t.status"
  fi
}
for t in "${TARGETS[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do
    wait -n || true
  done
  echo "== fuzz $t for ${SECONDS_EACH}s"
  run_one "$t" &
done
wait
status=0
for t in "${TARGETS[@]}"; do
  if [ "$(cat "$SCRATCH/$t.status" 2>/dev/null)" != ok ]; then
    status=1
    echo "fuzz target $t FAILED:"
    grep -E "ERROR|panicked|SUMMARY|Test unit written" "$SCRATCH/$t.log" | head -20 || true
    tail -40 "$SCRATCH/$t.log"
  fi
  grep -E "stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb" "$SCRATCH/$t.log" \
    | sed "s/^/  $t /" || true
done
exit $status
