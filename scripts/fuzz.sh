#!/usr/bin/env bash
# libFuzzer harnesses of tests/fuzz: the ONNX model loader, a model through a
# session and one run on the CPU provider, the checkpoint reader, the
# tensor files of `onyx run` (.npy, .pb), external data against a model
# folder of hostile files (symlinks out, a hard link, a FIFO) and the plugin
# handshake with a fake provider whose entry, tables and kernels the input
# chooses. Built with clang and
# -fsanitize=fuzzer,address,undefined in their own folder
# (${ONYX_FUZZ_BUILD_DIR:-build-fuzz}), never mixed with the gcc build.
#   fuzz.sh build                  configure and build the harnesses
#   fuzz.sh smoke                  build, then run each smoke harness for
#                                  ${ONYX_FUZZ_SMOKE_SECONDS:-3} s from its seed corpus (ctest
#                                  -L fuzz, so CI); model_run and
#                                  plugin_handshake are left out there (they
#                                  build the whole CPU provider with clang;
#                                  CI's cold-cache budget) unless
#                                  ONYX_FUZZ_SMOKE_ALL=1
#   fuzz.sh run HARNESS SECONDS    one harness, one job (-j1, nice) for SECONDS,
#                                  growing BUILD/corpus/HARNESS (seeded from
#                                  tests/fuzz/corpus/HARNESS); it stops at the first
#                                  finding (ONYX_FUZZ_FORK=1: goes on past findings in
#                                  libFuzzer's fork mode, which restarts a process per
#                                  job and is slow on a busy machine); findings (crash-*,
#                                  leak-*, oom-*, timeout-*) go to BUILD/findings/HARNESS;
#                                  the log is BUILD/logs/HARNESS.log
# HARNESS: model_loader | model_run | checkpoint_reader | tensor_file | external_data |
# plugin_handshake. ONYX_CLANG picks
# clang++ (default clang++-15), ONYX_JOBS the build's parallelism (default 2).
# Exit status: non-zero when a harness found something.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${ONYX_FUZZ_BUILD_DIR:-build-fuzz}
cxx=${ONYX_CLANG:-clang++-15}
cc=${cxx/clang++/clang}
harnesses=(model_loader model_run checkpoint_reader tensor_file external_data plugin_handshake)
smoke_harnesses=(model_loader checkpoint_reader tensor_file external_data)
[ -n "${ONYX_FUZZ_SMOKE_ALL:-}" ] && smoke_harnesses=("${harnesses[@]}")
# Inputs past these are findings: 2 GiB of memory, ${ONYX_FUZZ_TIMEOUT:-10} s
# of wall time for one input (raise it on a loaded machine, where a niced
# fuzzer waits for the CPU longer than any input takes).
limits=(-rss_limit_mb=2048 -malloc_limit_mb=2048 -timeout="${ONYX_FUZZ_TIMEOUT:-10}" -max_len=65536)

usage() { sed -n '2,/^set -e/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//' >&2; exit 2; }

# build [HARNESS ...]: the named harnesses (default: all).
build() {
  local names=("$@") targets=()
  [ ${#names[@]} -eq 0 ] && names=("${harnesses[@]}")
  for name in "${names[@]}"; do targets+=("onyx_fuzz_$name"); done
  export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/onyx-ccache}
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
  local flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
  # Another compiler than the cache's: start afresh (CMake would wipe the
  # cache itself and reconfigure without this command's -D options).
  if [ -f "$build/CMakeCache.txt" ] && ! grep -q "^CMAKE_CXX_COMPILER:[A-Z]*=.*$cxx\$" "$build/CMakeCache.txt"; then
    rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"
  fi
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="$cc" \
    -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" \
    -DONYX_BUILD_FUZZERS=ON -DONYX_BUILD_TESTS=OFF -DONYX_BUILD_BENCH=OFF -DONYX_BUILD_CONFORMANCE=OFF \
    -DONYX_PROVIDER_ONEDNN=OFF -DONYX_PROVIDER_CUDA=OFF -DONYX_PROVIDER_ROCM=OFF -DONYX_WERROR=OFF >/dev/null
  cmake --build "$build" -j"${ONYX_JOBS:-2}" --target "${targets[@]}"
}

binary() { echo "$build/bin/onyx_fuzz_$1"; }

# run HARNESS SECONDS: one job, its own growing corpus, findings kept.
run() {
  local name=$1 seconds=$2
  local corpus=$build/corpus/$name findings=$build/findings/$name
  mkdir -p "$corpus" "$findings" "$build/logs"
  cp -n "$root/tests/fuzz/corpus/$name"/* "$corpus"/ 2>/dev/null || true
  local status=0 extra=()
  # plugin_handshake loads the whole CPU provider per input: libFuzzer's
  # entropic feature weighting over its many counters took over half of each
  # run; without it the harness runs ~1.8x as many inputs per second.
  # Its inputs also leave the malloc and free counts unequal (thread
  # stacks, the loader), so libFuzzer ran a leak scan after nearly every one:
  # 2.8x the time. Leaks are still found, by LeakSanitizer when the run ends.
  [ "$name" = plugin_handshake ] && extra=(-entropic=0 -detect_leaks=0)
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ASAN_OPTIONS=detect_leaks=1 \
    nice -n 19 "$(binary "$name")" "${limits[@]}" "${extra[@]}" -max_total_time="$seconds" -print_final_stats=1 \
    ${ONYX_FUZZ_FORK:+-fork=1 -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1} \
    -artifact_prefix="$findings/" "$corpus" >"$build/logs/$name.log" 2>&1 || status=$?
  # Fork mode exits 0 past findings: the folder says what was found
  # (slow-unit-* files only note the slowest input, which a busy machine inflates).
  if ls "$findings" | grep -qv '^slow-unit-'; then
    echo "$name: findings in $findings:" >&2
    ls "$findings" >&2
    return 1
  fi
  return $status
}

case "${1:-}" in
  build) build ;;
  smoke)
    build "${smoke_harnesses[@]}"
    status=0
    for name in "${smoke_harnesses[@]}"; do
      # The seed corpus read-only, nothing written to the source tree.
      scratch=$(mktemp -d)
      if UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 "$(binary "$name")" "${limits[@]}" \
           -max_total_time="${ONYX_FUZZ_SMOKE_SECONDS:-3}" -artifact_prefix="$scratch/" \
           "$scratch" "$root/tests/fuzz/corpus/$name" >"$scratch/log" 2>&1; then
        echo "$name: $(grep -E '^(#[0-9]+\s+DONE|Done [0-9]+ runs)' "$scratch/log" | tail -1)"
      else
        echo "$name: FINDING" >&2
        tail -40 "$scratch/log" >&2
        status=1
      fi
      rm -rf "$scratch"
    done
    exit $status ;;
  run)
    [ $# -eq 3 ] || usage
    [[ " ${harnesses[*]} " == *" $2 "* ]] || usage
    # Always (incremental): a harness built before a fix fuzzes the old code
    # and finds the fixed bug again.
    build "$2"
    run "$2" "$3" ;;
  *) usage ;;
esac
