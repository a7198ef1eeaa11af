#!/usr/bin/env bash
# Data-parallel training of the test MLP (AdamW, clipping, global batch 8,
# 50 steps) over real Open MPI processes equals one process:
#  - np 1, 2 and 4 against the loopback run, within 1e-6 + 1e-5*|ref| for
#    every step's loss, the final weights and the optimizer state;
#  - gradient buckets of 1 KiB and unlimited against the default (25 MiB):
#    bitwise identical at np 2;
#  - ZeRO stage 1 (--zero 1) at np 1, 2 and 4 against the same loopback run,
#    with one reduce-scatter and one all-gather per step (one bucket) and no
#    parameter-sized all-reduce, each rank holding at most its slice of the
#    AdamW state; 1 KiB buckets bitwise equal to 25 MiB at np 2;
#  - gradient accumulation: 2 micro-batches per rank (np 1 and 2, with and
#    without ZeRO) against the same run without accumulation;
#  - a NaN in one rank's batch makes every rank skip that step alike (np 2,
#    plain and ZeRO), as the one-process run skips it;
#  - ranks that start from different weights, or with different settings,
#    are refused at start-up, within 5 s, with an error saying which.
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

for np in 1 2 4; do
  run "$mpirun" -np $np "$check" mpi "$dir/zero$np.txt" --zero 1 >"$dir/zero$np.log" 2>&1
  cat "$dir/zero$np.log"
  run "$check" --compare "$dir/reference.txt" "$dir/zero$np.txt"
  # 50 steps: 50 reduce-scatters, 50 all-gathers plus 2 gathering the state's
  # two slots; all-reduces: 1 start-up check (32 B) + per step the 8-byte norm and the
  # test's own loss and weight-hash checks (8 + 16 bytes).
  grep -q "reduce_scatter 50 calls" "$dir/zero$np.log" || fail "np $np: not one reduce-scatter per step"
  grep -q "all_gather 52 calls" "$dir/zero$np.log" || fail "np $np: not one all-gather per step"
  grep -q "all_reduce 151 calls 1632 B" "$dir/zero$np.log" || fail "np $np: all-reduces beyond the small ones"
  # The MLP has 293 parameters; a rank's slice is checkpoint::shard_piece:
  # ceil(293 / (32 N)) * 32 elements, two AdamW slots of 4 bytes each.
  slice=$(( (293 + 32 * np - 1) / (32 * np) * 32 ))
  bound=$(( slice * 2 * 4 ))
  for bytes in $(sed -n 's/.*optimizer state \([0-9]*\) bytes.*/\1/p' "$dir/zero$np.log"); do
    [ "$bytes" -le "$bound" ] || fail "np $np: a rank holds $bytes bytes of optimizer state (bound $bound)"
  done
done
run "$mpirun" -np 2 "$check" mpi "$dir/zero2-bucket1024.txt" --zero 1 --bucket-bytes 1024
cmp -s "$dir/zero2.txt" "$dir/zero2-bucket1024.txt" || fail "ZeRO: buckets of 1 KiB change the result"
echo "ZeRO buckets of 1024 bytes: bitwise identical to 25 MiB buckets"

run "$check" loopback "$dir/accum1.txt" --grad-accum 2
run "$check" --compare "$dir/reference.txt" "$dir/accum1.txt"
for zero in 0 1; do
  run "$mpirun" -np 2 "$check" mpi "$dir/accum2-zero$zero.txt" --grad-accum 2 --zero $zero
  run "$check" --compare "$dir/reference.txt" "$dir/accum2-zero$zero.txt"
done

run "$check" loopback "$dir/poisoned.txt" --poison-step 7 --poison-rank 0
for zero in 0 1; do
  run "$mpirun" -np 2 "$check" mpi "$dir/poisoned2-zero$zero.txt" --poison-step 7 --poison-rank 1 --zero $zero \
    >"$dir/poisoned2-zero$zero.log" 2>&1
  [ "$(grep -c "skipped 1," "$dir/poisoned2-zero$zero.log")" = 2 ] || fail "zero $zero: not every rank skipped the NaN step"
  run "$check" --compare "$dir/poisoned.txt" "$dir/poisoned2-zero$zero.txt"
done
echo "a NaN on rank 1: both ranks skipped the step, plain and ZeRO, as one process does"

start=$SECONDS
timeout -s KILL 60 "$mpirun" -np 2 "$check" mpi "$dir/refused.txt" --different-models 1 >"$dir/refused.log" 2>&1
rc=$?
cat "$dir/refused.log"
[ $rc -ne 0 ] || fail "ranks with different weights trained"
[ $((SECONDS - start)) -le 5 ] || fail "the refusal took $((SECONDS - start)) s (bound: 5 s)"
grep -q "holds other parameters or another optimizer than some other rank" "$dir/refused.log" ||
  fail "the refusal does not say why"
timeout -s KILL 60 "$mpirun" -np 2 "$check" mpi "$dir/refused2.txt" --different-settings 1 >"$dir/refused2.log" 2>&1
rc=$?
cat "$dir/refused2.log"
[ $rc -ne 0 ] || fail "ranks with different settings trained"
grep -q "was given other settings than some other rank" "$dir/refused2.log" || fail "the settings refusal does not say why"
echo "data_parallel_test: passed"
