#!/usr/bin/env bash
# A rank that fails before its third all_reduce must end the job, never hang
# it: mpirun exits non-zero well within 60 s.
#   failed_rank_test.sh stall MPIRUN COLLECTIVES_CHECK
#     rank 1 stops answering (SIGSTOP): the other rank's bounded wait (3 s
#     here) fails with an error naming the collective, its step and the
#     timeout, and the communicator ends the job.
#   failed_rank_test.sh kill MPIRUN COLLECTIVES_CHECK
#     rank 1 dies (SIGKILL; 3 ranks): mpirun ends the job, naming the dead
#     rank and its signal.
set -u
mode=$1 mpirun=$2 check=$3
out=$(mktemp)
trap 'rm -f "$out"' EXIT
case "$mode" in
  stall) args=(-np 2 "$check" mpi --stall-rank 1 --timeout-ms 3000) ;;
  kill) args=(-np 3 "$check" mpi --kill-rank 1 --timeout-ms 30000) ;;
  *) echo "usage: failed_rank_test.sh stall|kill MPIRUN CHECK"; exit 2 ;;
esac
start=$SECONDS
timeout -s KILL 80 "$mpirun" "${args[@]}" >"$out" 2>&1
rc=$?
elapsed=$((SECONDS - start))
cat "$out"
fail() { echo "failed_rank_test ($mode): FAILED: $*"; exit 1; }
[ $rc -ne 0 ] || fail "mpirun exited 0"
# (mpirun's own status may be 128 + a rank's signal: only the time tells a hang.)
[ $elapsed -le 60 ] || fail "the job took ${elapsed} s to end (bound: 60 s)"
if [ "$mode" = stall ]; then
  grep -q "all_reduce of 1 float32 on rank 0 of 2 (step 3)" "$out" || fail "no error naming the collective and its step"
  grep -q "not complete after 3.0 s" "$out" || fail "no error naming the timeout"
else
  grep -q "rank 1 .*signal 9" "$out" || fail "no message naming the dead rank and its signal"
fi
echo "failed_rank_test ($mode): the job ended in ${elapsed} s with exit status $rc"
