#!/usr/bin/env bash
# The test suite under sanitizers, each in its own build folder:
#   sanitize.sh address   ASan + UBSan (build-asan): out-of-bounds, use after
#                         free, leaks, undefined behaviour (halts at the first)
#   sanitize.sh thread    TSan (build-tsan): data races
#   sanitize.sh           both, one after the other
# Each configures with the gcc the normal build uses, builds everything the
# tests need (-j${ONYX_JOBS:-2}; ONYX_SANITIZE_TARGETS="onyx_ir_test ..." builds
# only those targets) and runs ctest (${ONYX_CTEST_ARGS:-} are added, e.g.
# "-R checkpoint" or "-L checkpoint"; narrow it to what was built). Tests that only time
# things (label bench), the libFuzzer smoke run (label fuzz, which has its
# own sanitizers), the valgrind run (label valgrind: valgrind cannot run
# sanitized code) and the BERT example trainings (label long: hundreds of
# steps, past their 900 s limit under TSan) are left out. Reports: build-*/Testing/Temporary/LastTest.log;
# the exit status is ctest's.
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/onyx-ccache}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
jobs=${ONYX_JOBS:-2}
root=$PWD

run_one() {
  local kind=$1 dir flags
  case "$kind" in
    address)
      dir=build-asan
      flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
      # Plugins are dlopen'ed and closed: keep their symbols for leak reports.
      # handle_segv=0: the isolation tests' plugins segfault on purpose and
      # check that the worker dies of signal 11 (ASan would exit with 1); a
      # real segfault still fails its test.
      export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:fast_unwind_on_malloc=0:strict_string_checks=1:detect_stack_use_after_return=1:handle_segv=0}
      export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
      # use_tls=0: gcc 12's LeakSanitizer reads the dynamic-TLS slot a closed
      # plugin left behind (glibc 2.36 reuses it) as a 32 GiB range and its
      # tracer dies of signal 11 (the gpuemu tests). Without thread-local
      # storage as roots LeakSanitizer can only report more, never hide a leak.
      export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/scripts/sanitize-lsan.supp:print_suppressions=0:use_tls=0} ;;
    thread)
      dir=build-tsan
      flags="-fsanitize=thread -fno-omit-frame-pointer"
      # handle_segv=0: as for ASan above (the isolation tests' crashing plugins).
      export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:handle_segv=0:suppressions=$root/scripts/sanitize-tsan.supp} ;;
    *) echo "usage: sanitize.sh [address|thread]" >&2; exit 2 ;;
  esac
  # Sanitized code is slower: the demo's and examples' long trainings time out
  # first; the unit, e2e, checkpoint and conformance tests are what this runs.
  # -O1 -g1: cheaper to compile than -O2 -g (the suite must build on 2 cores),
  # with the line tables sanitizer reports need; asserts stay on. Warnings
  # stay warnings: gcc 12 at -O1 with the sanitizers sees false
  # maybe-uninitialized in libstdc++'s <regex> (the normal build is -Werror).
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
    -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="${flags%% -fno-*}" -DCMAKE_SHARED_LINKER_FLAGS="${flags%% -fno-*}" \
    -DCMAKE_MODULE_LINKER_FLAGS="${flags%% -fno-*}" \
    -DONYX_BUILD_TESTS=ON -DONYX_BUILD_BENCH=OFF -DONYX_BUILD_CONFORMANCE=ON -DONYX_WERROR=OFF \
    -DONYX_PROVIDER_ONEDNN=OFF -DONYX_PROVIDER_CUDA=OFF -DONYX_PROVIDER_ROCM=OFF >/dev/null
  local targets=()
  for t in ${ONYX_SANITIZE_TARGETS:-}; do targets+=(--target "$t"); done
  cmake --build "$dir" -j"$jobs" "${targets[@]}"
  # shellcheck disable=SC2086  # ONYX_CTEST_ARGS is a list of words
  (cd "$dir" && ctest --output-on-failure -j"$jobs" --timeout 3600 -LE 'bench|fuzz|valgrind|long' ${ONYX_CTEST_ARGS:-})
}

case "${1:-both}" in
  address|thread) run_one "$1" ;;
  both) status=0; run_one address || status=$?; run_one thread || status=$?; exit $status ;;
  *) echo "usage: sanitize.sh [address|thread]" >&2; exit 2 ;;
esac
