#!/usr/bin/env bash
# A rank that fails before its third all_reduce must end the job, never hang
# it, and a surviving rank must say which collective, which step and which
# rank is missing: mpirun exits non-zero well within 60 s.
#   failed_rank_test.sh stall MPIRUN COLLECTIVES_CHECK
#     rank 1 stops answering (SIGSTOP): the other rank's bounded wait (3 s
#     here) fails with an error naming the collective, its step, the timeout
#     and rank 1 as stopped, and the communicator ends the job.
#   failed_rank_test.sh kill MPIRUN COLLECTIVES_CHECK
#     rank 1 dies (SIGKILL; 3 ranks): mpirun ends the job (SIGTERM to the
#     others, naming the dead rank and its signal), and the survivors, caught
#     waiting in step 3, first say that rank 1 did not arrive because its
#     process has exited; long before their 30 s timeout.
#   failed_rank_test.sh busy MPIRUN COLLECTIVES_CHECK
#     rank 1 sleeps outside collectives (3 ranks) while rank 0 runs a step
#     ahead: rank 0's timeout names rank 1 as not responding and rank 2 as
#     alive but not at step 4.
set -u
mode=$1 mpirun=$2 check=$3
out=$(mktemp)
trap 'rm -f "$out"' EXIT
case "$mode" in
  stall) args=(-np 2 "$check" mpi --stall-rank 1 --timeout-ms 3000) ;;
  kill) args=(-np 3 "$check" mpi --kill-rank 1 --timeout-ms 30000) ;;
  busy) args=(-np 3 "$check" mpi --busy-rank 1 --timeout-ms 3000) ;;
  *) echo "usage: failed_rank_test.sh stall|kill|busy MPIRUN CHECK"; exit 2 ;;
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
# One line from a surviving rank naming the collective, the step and the missing rank.
said() { grep -q "ends the job: $1" "$out" || fail "no error saying: $1"; }
case "$mode" in
  stall)
    said "all_reduce of 1 float32 on rank 0 of 2 (step 3): not complete after 3.0 s; rank 1 did not arrive: its process is stopped"
    ;;
  kill)
    said "all_reduce of 1 float32 on rank [02] of 3 (step 3): not complete after [0-9.]* s: mpi: this process got SIGTERM.*; rank 1 did not arrive: its process has exited"
    grep -q "rank 1 .*signal 9" "$out" || fail "no message from mpirun naming the dead rank and its signal"
    [ $elapsed -lt 30 ] || fail "the survivors waited for their timeout (${elapsed} s) instead of reporting when mpirun ended the job"
    ;;
  busy)
    said "all_reduce of 1 float32 on rank 0 of 3 (step 4): not complete after 3.0 s; rank 1 did not respond within [0-9.]* s (dead, hung, or busy outside collectives); rank 2 is alive but has not reached this collective"
    ;;
esac
echo "failed_rank_test ($mode): the job ended in ${elapsed} s with exit status $rc"
