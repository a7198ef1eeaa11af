#!/usr/bin/env bash
# thread_scaling.sh: does a second thread pay? For each test model and batch,
# `onyx bench` p50 with 1 and with 2 intra-op threads, alternating the two
# for ROUNDS rounds so that drift on a shared machine hits both, then the
# ratio of the best p50s (> 1: two threads are faster). Issue 12 asks for
# two threads never slower than one on any benchmark model.
#   bench/thread_scaling.sh [BUILD_DIR] [ROUNDS]     (defaults: build, 5)
# Optional: ONYX_BENCH_ARGS, extra arguments for onyx bench (e.g. "--optimize off").
set -euo pipefail
build=${1:-build}
rounds=${2:-5}
onyx=$build/bin/onyx
models=$build/test_models
[ -x "$onyx" ] || { echo "thread_scaling: no $onyx (build first)" >&2; exit 1; }
[ -f "$models/mlp.onnx" ] || "$build/bin/onyx_make_test_models" "$models" >/dev/null

p50() {  # p50 ms of one `onyx bench` run
  # shellcheck disable=SC2086
  "$onyx" bench "$1" --threads "$2" --shape "$3" --iterations 1000 --warmup 50 ${ONYX_BENCH_ARGS:-} 2>/dev/null |
    sed -n 's/.*p50 \([0-9.]*\).*/\1/p'
}
best() { printf '%s\n' "$@" | sort -g | head -1; }

printf '%-6s %-14s %10s %10s %8s\n' model input "1 thr ms" "2 thr ms" ratio
for spec in "mlp x=1,784" "mlp x=16,784" "mlp x=64,784" "cnn x=1,1,28,28" "cnn x=4,1,28,28" "cnn x=64,1,28,28"; do
  set -- $spec
  one=() two=()
  for _ in $(seq "$rounds"); do
    one+=("$(p50 "$models/$1.onnx" 1 "$2")")
    two+=("$(p50 "$models/$1.onnx" 2 "$2")")
  done
  a=$(best "${one[@]}") b=$(best "${two[@]}")
  printf '%-6s %-14s %10s %10s %8s\n' "$1" "$2" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2fx", a / b }')"
done
