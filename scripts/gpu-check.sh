#!/usr/bin/env bash
# gpu-check.sh: on a machine with an NVIDIA GPU, builds the CUDA provider and
# runs, in one command:
#   1. its tests: the kernels' host-side math, and the provider test (plugin
#      load, CUDA vs CPU results, mixed cuda+cpu session), which must not skip;
#   2. the conformance suites on it: abi, the ONNX node tests (onnx-node) and,
#      where the runner has it, the gradient suite;
#   3. its benchmarks: `onyx bench` of the MLP and CNN on cuda vs cpu, with the
#      cpu/cuda latency ratio measured in the same run.
# Exits non-zero on the first failure. Build folder: ${ONYX_BUILD_DIR:-build-gpu-check}.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${ONYX_BUILD_DIR:-build-gpu-check}
jobs=${ONYX_JOBS:-$(nproc)}
report_dir=${ONYX_GPU_REPORT_DIR:-$build_dir/gpu-check}

if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu-check: no NVIDIA GPU visible (nvidia-smi -L failed); this script needs one" >&2
  exit 2
fi
nvidia-smi -L

scripts/install-deps.sh --test
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/onyx-ccache}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release >/dev/null
if ! cmake --build "$build_dir" --target help | grep -q onyx_provider_cuda; then
  echo "gpu-check: the CUDA provider is not configured (no nvcc? see the cmake output)" >&2
  exit 2
fi
targets=(onyx_cli onyx_provider_cpu onyx_provider_cuda onyx_gpu_math_test onyx_cuda_provider_test
         onyx_make_test_models)
has_conformance=0
if cmake --build "$build_dir" --target help | grep -q "onyx-conformance\|onyx_conformance"; then
  has_conformance=1
  targets+=("$(cmake --build "$build_dir" --target help | grep -o 'onyx[-_]conformance' | head -1)")
fi
cmake --build "$build_dir" -j"$jobs" --target "${targets[@]}"
bin=$build_dir/bin
mkdir -p "$report_dir"

echo "== availability"
"$bin/onyx" providers | tee "$report_dir/providers.txt"
if ! grep -E "^cuda " "$report_dir/providers.txt" | grep -q " available"; then
  echo "gpu-check: the cuda provider is not available on this machine (reason above)" >&2
  exit 1
fi

echo "== tests"
"$bin/onyx_gpu_math_test"
# No test may skip here: a skip would mean the GPU was not used.
"$bin/onyx_cuda_provider_test" | tee "$report_dir/provider_test.txt"
if grep -q "\[  SKIPPED \]" "$report_dir/provider_test.txt"; then
  echo "gpu-check: provider tests skipped although a GPU is present" >&2
  exit 1
fi

echo "== conformance"
if [ "$has_conformance" = 1 ]; then
  conformance=$bin/onyx-conformance
  # abi, claims and the ONNX node tests: 0 failures on claimed nodes.
  tests/providers/cuda/claimed_nodes_conformance.sh "$conformance" \
    "$build_dir/lib/onyx/providers/libonyx_provider_cuda.so" | tee "$report_dir/conformance.txt"
  if "$conformance" --help 2>&1 | grep -q "gradient"; then
    "$conformance" --provider cuda --suite gradient --report "$report_dir/gradient"
  else
    echo "gpu-check: this onyx-conformance has no gradient suite yet"
  fi
else
  echo "gpu-check: onyx-conformance is not part of this build; conformance not run" >&2
  exit 1
fi

echo "== benchmarks (cpu vs cuda, same run)"
models=$build_dir/test_models
"$bin/onyx_make_test_models" "$models" >/dev/null
for model in mlp cnn; do
  cpu_ms=$("$bin/onyx" bench "$models/$model.onnx" --provider cpu --iterations 200 |
           sed -n 's/.*p50 \([0-9.]*\).*/\1/p')
  # Nodes the CUDA provider declines run on the CPU (the copies are part of the cost).
  cuda_ms=$("$bin/onyx" bench "$models/$model.onnx" --provider cuda --provider cpu --fallback allow \
              --iterations 200 |
            sed -n 's/.*p50 \([0-9.]*\).*/\1/p')
  awk -v m="$model" -v c="$cpu_ms" -v g="$cuda_ms" \
    'BEGIN { printf "%s: p50 cpu %.3f ms, cuda %.3f ms, cpu/cuda %.2fx\n", m, c, g, c / g }' |
    tee -a "$report_dir/bench.txt"
done
echo "gpu-check: all passed; reports in $report_dir"
