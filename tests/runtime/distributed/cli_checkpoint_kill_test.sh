#!/usr/bin/env bash
# A rank killed (SIGKILL) while it writes its checkpoint shard leaves the
# previous checkpoint loadable (Fashion-MNIST, the MLP of tests/models, np 2,
# ZeRO stage 1, 30 steps, --checkpoint-every 10):
#  - the kill is deterministic: a test-only LD_PRELOAD library
#    (kill_during_write.c) SIGKILLs rank 1 once 64 KiB of its step-20 shard
#    are written; mpirun must exit non-zero within 60 s;
#  - afterwards `latest` still names step-10, whose shards are whole, and
#    step-20 holds rank 0's shard and rank 1's partial temporary file only;
#  - --resume OUT/checkpoints takes step-10 and trains steps 11-30 bit for bit
#    as the uninterrupted run did;
#  - --resume OUT/checkpoints/step-20 is refused, naming the missing shard.
#   cli_checkpoint_kill_test.sh MPIRUN ONYX MAKE_TEST_MODELS KILL_DURING_WRITE_LIBRARY
set -u
mpirun=$1 onyx=$2 make_models=$3 killer=$4
data=/usr/share/datasets/fashion-mnist
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "cli_checkpoint_kill_test: FAILED: $*"; exit 1; }
run() { timeout -s KILL 300 "$@" >"$dir/last.log" 2>&1 || { cat "$dir/last.log"; fail "$* exited with status $?"; }; }
"$make_models" "$dir/models" >/dev/null || fail "cannot write the test models"
one=(train "$dir/models/mlp.onnx" --data "$data" --max-steps 30 --batch-size 64 --max-grad-norm 1 --threads 1
     --lr-schedule cosine)
train=("${one[@]}" --distributed mpi --zero 1)

# The uninterrupted run.
run "$mpirun" -np 2 "$onyx" "${train[@]}" --checkpoint-every 10 --out "$dir/full"

# The same run, rank 1 killed while writing its step-20 shard. (An ASan-built
# onyx needs ASan's runtime ahead of any preloaded library.)
asan=$(ldd "$onyx" 2>/dev/null | awk '/libasan/ {print $3}')
start=$SECONDS
timeout -s KILL 120 "$mpirun" -np 2 -x LD_PRELOAD="${asan:+$asan:}$killer" \
  -x ONYX_TEST_KILL_WRITING=/checkpoints/step-20/rank-1-of-2.ckpt.tmp- -x ONYX_TEST_KILL_AFTER_BYTES=65536 \
  "$onyx" "${train[@]}" --checkpoint-every 10 --out "$dir/killed" >"$dir/killed.log" 2>&1
rc=$? elapsed=$((SECONDS - start))
grep -v '^step ' "$dir/killed.log"
[ $rc -ne 0 ] || fail "mpirun exited 0 although rank 1 was killed"
[ $elapsed -le 60 ] || fail "the killed job took ${elapsed} s to end (bound: 60 s)"
grep -q "kill_during_write: SIGKILL while writing" "$dir/killed.log" || fail "rank 1 was not killed while writing its shard"
ckpt=$dir/killed/checkpoints
partial=$(ls "$ckpt"/step-20/rank-1-of-2.ckpt.tmp-* 2>/dev/null)
[ -n "$partial" ] && [ "$(stat -c %s "$partial")" = 65536 ] || fail "no partly written (64 KiB) shard of rank 1 at step 20"
[ ! -e "$ckpt/step-20/rank-1-of-2.ckpt" ] || fail "rank 1's step-20 shard exists although its write was cut short"
[ "$(cat "$ckpt/latest")" = step-10 ] || fail "latest names '$(cat "$ckpt/latest")', not step-10"
cmp -s "$ckpt/step-10/rank-0-of-2.ckpt" "$dir/full/checkpoints/step-10/rank-0-of-2.ckpt" &&
  cmp -s "$ckpt/step-10/rank-1-of-2.ckpt" "$dir/full/checkpoints/step-10/rank-1-of-2.ckpt" ||
  fail "the step-10 shards differ from the uninterrupted run's"
echo "killed in ${elapsed} s (mpirun status $rc) while writing: latest still names step-10"

# Resuming the run's checkpoints takes step-10 and trains steps 11-30 as before.
run "$mpirun" -np 2 "$onyx" "${train[@]}" --resume "$ckpt" --out "$dir/resumed"
grep -q "resuming from $ckpt" "$dir/last.log" || fail "the resumed run does not say where it resumed from"
tail -n +12 "$dir/full/loss.csv" | cut -d, -f1,3 >"$dir/full.txt"     # steps 11-30: step,loss
tail -n +2 "$dir/resumed/loss.csv" | cut -d, -f1,3 >"$dir/resumed.txt"
[ "$(wc -l <"$dir/resumed.txt")" = 20 ] && [ "$(head -c 3 "$dir/resumed.txt")" = "11," ] ||
  fail "the resumed run did not train steps 11-30: $(head -n 1 "$dir/resumed.txt") ..."
cmp -s "$dir/full.txt" "$dir/resumed.txt" || fail "steps 11-30 after resuming differ from the uninterrupted run"
echo "resumed from step-10: steps 11-30 equal the uninterrupted run bit for bit"

# The partial folder named directly is refused, naming the missing shard.
if timeout -s KILL 300 "$onyx" "${one[@]}" --resume "$ckpt/step-20" --out "$dir/refused" >"$dir/refused.log" 2>&1; then
  fail "resuming the incomplete step-20 folder succeeded"
fi
cat "$dir/refused.log"
grep -q "onyx: error: checkpoint folder '$ckpt/step-20' is incomplete: shard rank-1-of-2.ckpt is missing" \
  "$dir/refused.log" || fail "the refusal does not name the folder and the missing shard"
echo "cli_checkpoint_kill_test: passed"
