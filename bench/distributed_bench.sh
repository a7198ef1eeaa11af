#!/usr/bin/env bash
# distributed_bench.sh: data-parallel training throughput, np 2 against np 1
# measured in the same run, on the test MLP and CNN (tests/models) and
# Fashion-MNIST, one thread per rank, with the share of a step each rank
# spends waiting for its collectives.
#
#   bench/distributed_bench.sh [BUILD_DIR] [STEPS]     (default build, 300)
#
# Each case runs `onyx train --max-steps STEPS --batch-size 64 --threads 1`:
# once as one process, then under `mpirun -np 2 ... --distributed mpi` plain
# and with --zero 1. Prints samples/s, the ratio np 2 / np 1, and per rank
# the seconds waited in collectives over the training time.
set -euo pipefail
build=${1:-build}
steps=${2:-300}
onyx=$build/bin/onyx
data=/usr/share/datasets/fashion-mnist
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$build/bin/onyx_make_test_models" "$dir/models" >/dev/null

rate() { sed -n 's/^trained .* in \([0-9:]*\), \([0-9]*\) samples\/s$/\2/p' "$1"; }
seconds() { sed -n 's/^trained .* in \([0-9]*\):\([0-9]*\), .*/\1 \2/p' "$1" | awk '{print $1 * 60 + $2}'; }

printf "%-5s %-10s %12s %8s  %s\n" model run samples/s "vs np1" "per rank: waited in collectives / training time"
for model in mlp cnn; do
  common=(train "$dir/models/$model.onnx" --data "$data" --max-steps "$steps" --batch-size 64 --threads 1)
  "$onyx" "${common[@]}" --out "$dir/$model-np1" >"$dir/$model-np1.log" 2>&1
  base=$(rate "$dir/$model-np1.log")
  printf "%-5s %-10s %12s %8s\n" "$model" "np 1" "$base" "1.00x"
  for run in "np2:" "np2-zero1:--zero 1"; do
    name=${run%%:*} flags=${run#*:}
    # shellcheck disable=SC2086
    mpirun -np 2 "$onyx" "${common[@]}" --distributed mpi $flags --verbose --out "$dir/$model-$name" \
      >"$dir/$model-$name.log" 2>&1
    r=$(rate "$dir/$model-$name.log")
    t=$(awk -v s="$steps" -v r="$r" 'BEGIN { printf "%.1f", s * 64 / r }')
    waits=$(sed -n 's/^rank \([0-9]\) of 2: .*waited \([0-9.]*\) s$/rank \1: \2 s/p' "$dir/$model-$name.log" | sort |
            awk -v t="$t" '{ printf "%s%s %s s / %s s (%.0f%%)", sep, $1 " " $2, $3, t, 100 * $3 / t; sep = ", " }')
    printf "%-5s %-10s %12s %7.2fx  %s\n" "$model" "${name/np2/np 2}" "$r" "$(awk -v a="$r" -v b="$base" 'BEGIN{print a/b}')" "$waits"
  done
done
