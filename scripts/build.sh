#!/usr/bin/env bash
# Configures and builds Onyx into ${ONYX_BUILD_DIR:-build} with ccache.
#   build.sh         what the README's demo runs (scripts/run-demo.sh): libonyx,
#                    the `onyx` CLI, the CPU provider, the optimizer plugins and
#                    onyx_make_test_models; its configure needs only the packages
#                    of `install-deps.sh`. Release: debug information is a third
#                    of the compile time, and the demo is not debugged.
#   build.sh --test  everything (scripts/test.sh): also the tests, benchmarks,
#                    onyx-conformance and every provider whose toolchain is
#                    installed. RelWithDebInfo, so that a failing test can be debugged.
# Both use the same folder; ONYX_BUILD_TYPE overrides the build type.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  "") all=OFF type=Release ;;
  --test) all=ON type=RelWithDebInfo ;;
  *) echo "usage: build.sh [--test]" >&2; exit 2 ;;
esac
build_dir=${ONYX_BUILD_DIR:-build}
jobs=${ONYX_JOBS:-$(nproc)}
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/onyx-ccache}
# Share cache hits between build folders and clones (paths relative to the source).
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
# Every option is passed either way: the folder's cache keeps the last choice.
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=${ONYX_BUILD_TYPE:-$type} \
  -DONYX_BUILD_TESTS=$all -DONYX_BUILD_BENCH=$all -DONYX_BUILD_CONFORMANCE=$all \
  -DONYX_PROVIDER_ONEDNN=$all -DONYX_PROVIDER_CUDA=$all -DONYX_PROVIDER_ROCM=$all >/dev/null
cmake --build "$build_dir" -j"$jobs"
