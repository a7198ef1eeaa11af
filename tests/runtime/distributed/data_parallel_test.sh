#!/usr/bin/env bash
# Data-parallel training of the test MLP (AdamW, clipping, global batch 8,
# 50 steps) over real Open MPI processes equals one process:
#  - np 1, 2 and 4 against the loopback run, within 1e-6 + 1e-5*|ref| for
#    every step's loss, the final weights and the optimizer state;
#  - gradient buckets of 1 KiB and unlimited against the default (25 MiB):
#    bitwise identical at np 2;
#  - ranks that start from different weights are refused at start-up, within
#    5 s, with an error saying so.
#   data_parallel_test.sh MPIRUN DATA_PARALLEL_CHECK
set -u
mpirun=$1 check=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "data_parallel_test: FAILED: $*"; exit 1; }
run() { timeout -s KILL 300 "$@" || fail "$* exited with status $?"; }

run "$check" loopback "$dir/reference.txt"
for np in 1 2 4; do
  run "$mpirun" -np $np "$check" mpi "$dir/np$np.txt"
  run "$check" --compare "$dir/reference.txt" "$dir/np$np.txt"
done
for bytes in 1024 0; do
  run "$mpirun" -np 2 "$check" mpi "$dir/np2-bucket$bytes.txt" --bucket-bytes $bytes
  cmp -s "$dir/np2.txt" "$dir/np2-bucket$bytes.txt" || fail "buckets of $bytes bytes change the result"
  echo "buckets of $bytes bytes: bitwise identical to 25 MiB buckets"
done

start=$SECONDS
timeout -s KILL 60 "$mpirun" -np 2 "$check" mpi "$dir/refused.txt" --different-models 1 >"$dir/refused.log" 2>&1
rc=$?
cat "$dir/refused.log"
[ $rc -ne 0 ] || fail "ranks with different weights trained"
[ $((SECONDS - start)) -le 5 ] || fail "the refusal took $((SECONDS - start)) s (bound: 5 s)"
grep -q "holds other parameters or another optimizer than some other rank" "$dir/refused.log" ||
  fail "the refusal does not say why"
echo "data_parallel_test: passed"
