#!/usr/bin/env bash
# A rank that dies (SIGKILL before its third all_reduce) ends the job: the
# other ranks exit, mpirun exits non-zero naming the dead rank and its
# signal, within 60 s; nobody hangs.
#   killed_rank_test.sh MPIRUN COLLECTIVES_CHECK
set -u
mpirun=$1 check=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$SECONDS
timeout -s KILL 80 "$mpirun" -np 3 "$check" mpi --kill-rank 1 --timeout-ms 30000 >"$out" 2>&1
rc=$?
elapsed=$((SECONDS - start))
cat "$out"
fail() { echo "killed_rank_test: FAILED: $*"; exit 1; }
[ $rc -ne 0 ] || fail "mpirun exited 0"
# (mpirun's own status is 128 + the dead rank's signal: 137 is no hang by itself.)
[ $elapsed -le 60 ] || fail "the job took ${elapsed} s to end (bound: 60 s)"
grep -q "rank 1 .*signal 9" "$out" || fail "no message naming the dead rank and its signal"
echo "killed_rank_test: the job ended in ${elapsed} s with exit status $rc"
