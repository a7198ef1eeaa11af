#!/usr/bin/env bash
# `onyx train --distributed mpi` on Fashion-MNIST (the MLP of tests/models,
# 30 steps of global batch 64, AdamW, clipping) equals one process: every
# step's loss in loss.csv within 1e-6 + 1e-5*|loss|, for plain data
# parallelism and for ZeRO stage 1 with 2 accumulated micro-batches per rank.
#   cli_data_parallel_test.sh MPIRUN ONYX MAKE_TEST_MODELS
set -u
mpirun=$1 onyx=$2 make_models=$3
data=/usr/share/datasets/fashion-mnist
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "cli_data_parallel_test: FAILED: $*"; exit 1; }
[ -d "$data" ] || { echo "cli_data_parallel_test: no dataset at $data"; exit 1; }
"$make_models" "$dir/models" >/dev/null || fail "cannot write the test models"
train=(train "$dir/models/mlp.onnx" --data "$data" --max-steps 30 --batch-size 64 --max-grad-norm 1 --threads 1)
timeout -s KILL 300 "$onyx" "${train[@]}" --out "$dir/np1" >/dev/null 2>&1 || fail "one process did not train"
compare() {  # loss.csv of a run against one process's
  awk -F, 'NR == FNR { if (FNR > 1) ref[$1] = $3; next }
           FNR > 1 { n++; d = $3 - ref[$1]; if (d < 0) d = -d; a = ref[$1] < 0 ? -ref[$1] : ref[$1];
                     if (!($1 in ref) || d > 1e-6 + 1e-5 * a) { print "step " $1 ": " $3 " vs " ref[$1]; bad = 1 } }
           END { if (n != 30) { print n " steps"; bad = 1 } exit bad }' "$dir/np1/loss.csv" "$1/loss.csv"
}
for run in "dp:" "zero1-accum2:--zero 1 --grad-accum 2"; do
  name=${run%%:*} flags=${run#*:}
  # shellcheck disable=SC2086
  timeout -s KILL 300 "$mpirun" -np 2 "$onyx" "${train[@]}" --distributed mpi $flags --verbose --out "$dir/$name" \
    >"$dir/$name.log" 2>&1 || { cat "$dir/$name.log"; fail "$name: mpirun exited with status $?"; }
  grep "rank [01] of 2:" "$dir/$name.log"
  compare "$dir/$name" || fail "$name: the loss curve differs from one process's"
  [ -f "$dir/$name/checkpoint.ckpt" ] && [ -f "$dir/$name/model.onnx" ] || fail "$name: no checkpoint or model"
  echo "$name at np 2: 30 losses equal one process's within 1e-6 + 1e-5*|loss|"
done
echo "cli_data_parallel_test: passed"
