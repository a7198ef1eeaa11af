#!/usr/bin/env bash
# A rank that stops answering (SIGSTOP before its third all_reduce) must not
# hang the job: the other rank's bounded wait (3 s here) fails with an error
# naming the collective and its step, the communicator ends the job, and
# mpirun exits non-zero, all well within 60 s.
#   stalled_rank_test.sh MPIRUN COLLECTIVES_CHECK
set -u
mpirun=$1 check=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$SECONDS
timeout -s KILL 80 "$mpirun" -np 2 "$check" mpi --stall-rank 1 --timeout-ms 3000 >"$out" 2>&1
rc=$?
elapsed=$((SECONDS - start))
cat "$out"
fail() { echo "stalled_rank_test: FAILED: $*"; exit 1; }
[ $rc -ne 0 ] || fail "mpirun exited 0"
[ $rc -ne 137 ] || fail "the job hung until the 80 s kill"
[ $elapsed -le 60 ] || fail "the job took ${elapsed} s to end (bound: 60 s)"
grep -q "all_reduce of 1 float32 on rank 0 of 2 (step 3)" "$out" || fail "no error naming the collective and its step"
grep -q "not complete after 3.0 s" "$out" || fail "no error naming the timeout"
echo "stalled_rank_test: the job ended in ${elapsed} s with exit status $rc"
