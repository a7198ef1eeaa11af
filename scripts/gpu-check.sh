#!/usr/bin/env bash
# gpu-check.sh: the CUDA provider's checks on a machine with an NVIDIA GPU.
#
#   scripts/gpu-check.sh --stage [DIR]    here (no GPU needed): build what the checks
#                                          need, stage it into DIR (default build-gpu-stage)
#   scripts/gpu-check.sh --staged [DIR]   on the GPU machine: run the checks from DIR
#   scripts/gpu-check.sh                  both, on a GPU machine that has the build's packages
#
# The GPU machines lent to sessions reach no package registry, so the build is
# made here and carried: stripped binaries and plugins in the build tree's
# layout (bin/, lib/onyx/...) and the non-system shared libraries they link
# (protobuf, onnx, re2), all in programs.tar.xz, the ONNX node tests (a
# .tar.xz) and Fashion-MNIST.
# cuBLAS, cuDNN and NCCL are not carried: the machine's CUDA toolkit and
# Python (PyTorch's nvidia-* wheels) have them; their folders are found and
# put on LD_LIBRARY_PATH.
#
# The checks, each logged; a failure is reported and the next check runs:
#   1. providers: the cuda provider loads and reports its device available;
#   2. tests: the kernels' host-side math, the provider test (plugin load,
#      CUDA vs CPU results, device I/O, streams), which must not skip for want
#      of the GPU, and every op test (tests/providers/ops) on the cuda plugin;
#   3. conformance: abi, claims and the ONNX node tests on the CUDA plugin, 0
#      failures on the nodes it claims (claimed_nodes_conformance.sh);
#   4. NCCL: the collectives plugin runs every collective on one rank;
#   5. training: the Fashion-MNIST MLP and CNN trained on the GPU (the README's
#      settings), with validation accuracy;
#   6. speed: MatMul/Conv against cuBLAS/cuDNN (bench/gpu_baselines.py), the
#      MLP, CNN and transformer block against the CPU provider at batch 64 and
#      512 (onyx_provider_bench), host against device-bound I/O per run
#      (onyx_device_io_bench), training samples per second on cuda and cpu.
# Logs and numbers go to ${OUT:-DIR/report} (at most 8 files: the device
# tool brings back only that many). Exit status: the number of failed checks.
set -uo pipefail
cd "$(dirname "$0")/.."
mode=${1:-all}
stage_dir=${2:-build-gpu-stage}
build_dir=${ONYX_BUILD_DIR:-build}
targets=(onyx_cli onyx_provider_cpu onyx_provider_cuda onyx_gpu_math_test onyx_cuda_provider_test
         onyx_make_test_models onyx_conformance onyx_collectives_check onyx_provider_bench onyx_gpu_op_bench
         onyx_device_io_bench onyx_op_tests onyx_train_bench)

stage() {
  set -e
  if [ ! -f "$build_dir/CMakeCache.txt" ]; then scripts/build.sh --test; fi
  export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/onyx-ccache}
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
  if ! cmake --build "$build_dir" --target help | grep -c onyx_provider_cuda >/dev/null; then
    echo "gpu-check: the CUDA provider is not configured in $build_dir (no nvcc or cudnn.h? see cmake's output)" >&2
    exit 2
  fi
  cmake --build "$build_dir" -j"$(nproc)" --target "${targets[@]}"
  rm -rf "$stage_dir"
  mkdir -p "$stage_dir"/{bin,lib/onyx/providers,lib/onyx/optimizers,lib/onyx/collectives,syslib,data}
  local b=$build_dir/bin l=$build_dir/lib
  for f in onyx onyx-conformance onyx_gpu_math_test onyx_cuda_provider_test onyx_make_test_models \
           onyx_collectives_check onyx_provider_bench onyx_gpu_op_bench onyx_device_io_bench onyx_op_tests onyx_train_bench; do
    strip -o "$stage_dir/bin/$f" "$b/$f"
  done
  strip -o "$stage_dir/lib/libonyx.so.0" "$l/libonyx.so.0"
  for f in providers/libonyx_provider_cpu.so providers/libonyx_provider_cuda.so collectives/libonyx_collectives_nccl.so \
           optimizers/libonyx_optimizer_{sgd,adamw,adamw_hf,lamb}.so; do
    strip -o "$stage_dir/lib/onyx/$f" "$l/onyx/$f"
  done
  # Shared libraries from this machine's packages (not glibc, libstdc++ or the
  # CUDA libraries, which the GPU machine has in newer versions).
  ldd "$stage_dir"/bin/* "$stage_dir"/lib/libonyx.so.0 "$stage_dir"/lib/onyx/*/*.so 2>/dev/null |
    awk '/=> \// { print $3 }' | sort -u |
    grep -vE '/(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|libz|libnccl|libcuda|libcudart)\.so' |
    grep -v "$PWD/$build_dir" | while read -r lib; do cp -L "$lib" "$stage_dir/syslib/"; done
  local corpus=../shared/onnx-backend-tests/node
  [ -d "$corpus" ] || corpus=/usr/share/libonnx-testdata/data/node
  tar -C "$(dirname "$corpus")" -cJf "$stage_dir/data/node.tar.xz" "$(basename "$corpus")"
  cp -r /usr/share/datasets/fashion-mnist "$stage_dir/data/"
  # The device tool carries 64 MiB with the working tree: the programs travel
  # compressed (18 -> 6 MB) and are unpacked there.
  tar -C "$stage_dir" -cJf "$stage_dir/programs.tar.xz" bin lib syslib
  rm -rf "$stage_dir"/{bin,lib,syslib}
  du -sh "$stage_dir"
  echo "gpu-check: staged into $stage_dir; on the GPU machine: scripts/gpu-check.sh --staged $stage_dir"
}

# Adds to LD_LIBRARY_PATH the folders of the CUDA libraries the plugins load.
find_cuda_libraries() {
  local dirs=() lib found
  for lib in libcublas.so.13 libcudnn.so.9 libnccl.so.2; do
    found=$(find /usr/local/cuda/lib64 /usr/local/cuda*/lib* /usr/lib/x86_64-linux-gnu /opt /usr/local/lib \
              -name "$lib" 2>/dev/null | head -1)
    if [ -n "$found" ]; then
      dirs+=("$(dirname "$found")")
      echo "  $lib: $found"
    else
      echo "  $lib: not found"
    fi
  done
  local joined
  joined=$(printf '%s:' "${dirs[@]}")
  export LD_LIBRARY_PATH="$PWD/$stage_dir/lib:$PWD/$stage_dir/syslib:${joined}${LD_LIBRARY_PATH:-}"
}

failures=0
report=""
# check NAME TIMEOUT CMD...: runs CMD, logs it to $report/NAME.log, counts a failure.
check() {
  local name=$1 limit=$2
  shift 2
  echo "== $name"
  local start=$SECONDS
  timeout "$limit" "$@" 2>&1 | tee "$report/$name.log"
  local rc=${PIPESTATUS[0]}
  if [ "$rc" -ne 0 ]; then
    failures=$((failures + 1))
    echo "gpu-check: FAILED $name (exit $rc, ${limit}s limit)" | tee -a "$report/summary.txt"
  else
    echo "gpu-check: passed $name ($((SECONDS - start)) s)" | tee -a "$report/summary.txt"
  fi
}

# The provider test must pass, and no test may skip for want of the GPU (the
# skips left: the refusal of an absent GPU, two-device cases on one GPU,
# counts that only the emulated device keeps).
provider_test() {
  "$bin/onyx_cuda_provider_test" 2>&1 | tee "$data/provider_test.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || return 1
  if grep -A1 ": Skipped$" "$data/provider_test.txt" | grep -i "unavailable"; then
    echo "gpu-check: a provider test skipped as if no GPU were present" >&2
    return 1
  fi
}

# Every op test (tests/providers/ops) on the cuda plugin, against the same
# float64 references as on the CPU.
op_tests() {
  local plugins=$PWD/$stage_dir/lib/onyx/providers
  ONYX_TEST_PROVIDER_PLUGINS="cpu=$plugins/libonyx_provider_cpu.so,cuda=$plugins/libonyx_provider_cuda.so" \
    ONYX_TEST_PROVIDERS=cuda ONYX_ONNX_NODE_TESTS="$data/node" \
    "$bin/onyx_op_tests" --gtest_filter='*/cuda:*/cuda_*' --gtest_brief=1 2>&1 | tee "$data/op_tests.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || return 1
  # gtest's summary (--gtest_brief prints no test names): some must have passed.
  local passed skipped
  passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\{0,1\}\.$/\1/p' "$data/op_tests.txt")
  skipped=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) tests\{0,1\}\.$/\1/p' "$data/op_tests.txt")
  [ "${passed:-0}" -gt 0 ] || { echo "gpu-check: no op test passed on cuda" >&2; return 1; }
  echo "op tests on cuda: $passed passed, ${skipped:-0} skipped (declined), 0 failed"
}

conformance() {
  ONYX_CONFORMANCE_CORPUS="$data/node" tests/providers/cuda/claimed_nodes_conformance.sh \
    "$bin/onyx-conformance" "$PWD/$stage_dir/lib/onyx/providers/libonyx_provider_cuda.so"
}

# Training samples/s of `onyx train` on one provider: 500 steps, the first
# one's set-up included (a GPU's is ~0.1 s: over 100 steps it had hidden a
# 0.5 ms step; onyx_train_bench above times steady steps alone).
train_throughput() {
  local model=$1 batch=$2 providers=(--provider "$3") frozen=()
  [ "$3" = cpu ] || providers+=(--provider cpu --fallback allow)
  [ "$model" = cnn ] && frozen=(--frozen bn1.mean --frozen bn1.var --frozen bn2.mean --frozen bn2.var)
  "$bin/onyx" train "$data/models/$model.onnx" --data "$data/fashion-mnist" --batch-size "$batch" --max-steps 500 \
    --valid-split none "${providers[@]}" --out "$data/throughput" "${frozen[@]}" 2>/dev/null |
    sed -n 's/^trained .* \([0-9.]*\) samples\/s$/\1/p'
}

speed() {
  "$bin/onyx_gpu_op_bench" --iterations 50 >"$data/ops.txt" || return 1
  LD_LIBRARY_PATH=$system_library_path python3 bench/gpu_baselines.py "$data/ops.txt" --iterations 50 || return 1
  "$bin/onyx_provider_bench" --provider cuda --batch 64 --batch 512 --iterations 50 || return 1
  # Per-run cost of host I/O against device-bound I/O (which copies nothing).
  "$bin/onyx_device_io_bench" --provider cuda --iterations 200 || return 1
  "$bin/onyx_make_test_models" "$data/models" >/dev/null || return 1
  # Where a training step's time goes on the GPU (runs, launches, copies).
  "$bin/onyx_train_bench" --provider cuda --steps 50 --batch 64 --profile 4 || return 1
  local model batch cpu cuda
  for model in mlp cnn; do
    for batch in 64 512; do
      cpu=$(train_throughput "$model" "$batch" cpu)
      cuda=$(train_throughput "$model" "$batch" cuda)
      [ -n "$cpu" ] && [ -n "$cuda" ] || return 1
      awk -v m="$model" -v b="$batch" -v c="$cpu" -v g="$cuda" 'BEGIN {
        printf "training %s batch %d: cpu %.0f samples/s, cuda %.0f samples/s, cuda/cpu %.2fx\n", m, b, c, g, g / c }'
    done
  done
}

train() {
  local models=$data/models epochs=${ONYX_GPU_CHECK_EPOCHS:-10}
  "$bin/onyx_make_test_models" "$models" >/dev/null || return 1
  "$bin/onyx" train "$models/mlp.onnx" --data "$data/fashion-mnist" --epochs "$epochs" --batch-size 64 \
    --optimizer adamw --lr 1e-3 --lr-schedule cosine --provider cuda --provider cpu --fallback warn \
    --out "$data/train-mlp" || return 1
  "$bin/onyx" eval "$data/train-mlp/model.onnx" --data "$data/fashion-mnist" --provider cuda --provider cpu \
    --fallback warn || return 1
  "$bin/onyx" train "$models/cnn.onnx" --data "$data/fashion-mnist" --epochs "$epochs" --batch-size 64 \
    --optimizer adamw --lr 2e-3 --lr-schedule cosine --provider cuda --provider cpu --fallback warn \
    --out "$data/train-cnn" --frozen bn1.mean --frozen bn1.var --frozen bn2.mean --frozen bn2.var || return 1
  "$bin/onyx" eval "$data/train-cnn/model.onnx" --data "$data/fashion-mnist" --provider cuda --provider cpu \
    --fallback warn
}

run_checks() {
  if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "gpu-check: no NVIDIA GPU visible (nvidia-smi -L failed); the checks need one" >&2
    exit 2
  fi
  bin=$PWD/$stage_dir/bin
  data=$PWD/$stage_dir/data
  report=${OUT:-$stage_dir/report}
  mkdir -p "$report"
  : >"$report/summary.txt"
  {
    nvidia-smi -L
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
    echo "CUDA libraries:"
    find_cuda_libraries
  } | tee "$report/summary.txt"
  saved_library_path=${LD_LIBRARY_PATH:-}
  find_cuda_libraries >/dev/null
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  [ -d "$bin" ] || tar -C "$stage_dir" -xJf "$stage_dir/programs.tar.xz"
  [ -d "$data/node" ] || tar -C "$data" -xJf "$data/node.tar.xz"
  system_library_path=$saved_library_path
  export bin data stage_dir system_library_path
  export -f provider_test op_tests conformance speed train train_throughput
  check setup 90 bash -c "'$bin/onyx' providers | tee /dev/stderr | grep -E '^cuda ' | grep ' available' >/dev/null &&
                          '$bin/onyx_gpu_math_test' --gtest_brief=1"
  check provider_test 120 bash -c provider_test
  check op_tests 300 bash -c op_tests
  check conformance 180 bash -c conformance
  check nccl 60 "$bin/onyx_collectives_check" nccl
  check train 300 bash -c train
  check speed 240 bash -c speed
  echo "gpu-check: $failures failed check(s); summary:"
  cat "$report/summary.txt"
  return "$failures"
}

case $mode in
  --stage) stage ;;
  --staged) run_checks ;;
  all) (stage) && run_checks ;;
  *) echo "usage: scripts/gpu-check.sh [--stage [DIR] | --staged [DIR]]" >&2; exit 2 ;;
esac
