#!/usr/bin/env bash
# Sharded checkpoints written during data-parallel training, resumed at other
# world sizes (Fashion-MNIST, the MLP of tests/models, ZeRO stage 1, 20 steps
# of global batch 64, cosine schedule, clipping):
#  - np 2 writes shards at steps 10 and 20 (--checkpoint-every 10) and a
#    `latest` pointer; offline aggregation of the step-20 shards equals the
#    run's final (gathered) checkpoint bit for bit;
#  - resuming the step-10 shards at np 1, 2 and 4, and np 4's shards at np 2,
#    gives steps 11-20 of the uninterrupted run within 1e-6 + 1e-5*|loss|,
#    and bit for bit at the same world size.
#   cli_checkpoint_resume_test.sh MPIRUN ONYX MAKE_TEST_MODELS
set -u
mpirun=$1 onyx=$2 make_models=$3
data=/usr/share/datasets/fashion-mnist
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "cli_checkpoint_resume_test: FAILED: $*"; exit 1; }
run() { timeout -s KILL 300 "$@" >"$dir/last.log" 2>&1 || { cat "$dir/last.log"; fail "$* exited with status $?"; }; }
"$make_models" "$dir/models" >/dev/null || fail "cannot write the test models"
train=(train "$dir/models/mlp.onnx" --data "$data" --max-steps 20 --batch-size 64 --max-grad-norm 1 --threads 1
       --lr-schedule cosine)
zero=(--distributed mpi --zero 1)

run "$onyx" "${train[@]}" --out "$dir/one"
run "$mpirun" -np 2 "$onyx" "${train[@]}" "${zero[@]}" --checkpoint-every 10 --out "$dir/np2"
run "$mpirun" -np 4 "$onyx" "${train[@]}" "${zero[@]}" --checkpoint-every 10 --out "$dir/np4"
[ "$(cat "$dir/np2/checkpoints/latest")" = step-20 ] || fail "latest does not point at step-20"
[ -f "$dir/np2/checkpoints/step-10/rank-1-of-2.ckpt" ] || fail "no shard of rank 1 at step 10"
run "$onyx" checkpoint aggregate "$dir"/np2/checkpoints/step-20/*.ckpt -o "$dir/aggregated.ckpt"
run "$onyx" checkpoint diff "$dir/aggregated.ckpt" "$dir/np2/checkpoint.ckpt"
echo "offline aggregation of np 2's shards equals its final checkpoint bit for bit"

steps_11_to_20() { tail -n +12 "$1" | cut -d, -f1,3; }   # step,loss of the uninterrupted run
resumed() { tail -n +2 "$1" | cut -d, -f1,3; }
close() {  # two step,loss lists within 1e-6 + 1e-5*|loss|
  paste -d, "$1" "$2" | awk -F, '{ d = $2 - $4; if (d < 0) d = -d; a = $2 < 0 ? -$2 : $2; n++
                                   if ($1 != $3 || d > 1e-6 + 1e-5 * a) { print; bad = 1 } }
                                 END { if (n != 10) { print n " steps"; bad = 1 } exit bad }'
}
steps_11_to_20 "$dir/one/loss.csv" >"$dir/one.txt"
for case in "np2:1" "np2:2" "np2:4" "np4:2"; do
  from=${case%%:*} np=${case#*:}
  if [ "$np" = 1 ]; then
    run "$onyx" "${train[@]}" --resume "$dir/$from/checkpoints/step-10" --out "$dir/r-$case"
  else
    run "$mpirun" -np "$np" "$onyx" "${train[@]}" "${zero[@]}" --resume "$dir/$from/checkpoints/step-10" --out "$dir/r-$case"
  fi
  resumed "$dir/r-$case/loss.csv" >"$dir/r-$case.txt"
  close "$dir/one.txt" "$dir/r-$case.txt" || fail "resuming $from's step-10 shards at np $np departs from the uninterrupted run"
  if [ "np$np" = "$from" ]; then
    steps_11_to_20 "$dir/$from/loss.csv" >"$dir/$from.txt"
    cmp -s "$dir/$from.txt" "$dir/r-$case.txt" || fail "a same-size resume at np $np is not bit for bit"
  fi
  echo "$from's step-10 shards resumed at np $np: steps 11-20 match"
done
echo "cli_checkpoint_resume_test: passed"
