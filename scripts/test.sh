#!/usr/bin/env bash
# The README's test command: install dependencies, build, run every test.
# Its output ends with ctest's summary line (repeated after ctest's list of
# skipped tests so that it is the last line).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --test
scripts/build.sh --test
cd "${ONYX_BUILD_DIR:-build}"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
ctest --output-on-failure -j"${ONYX_JOBS:-$(nproc)}" --timeout 1200 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
summary=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1 || true)
[ -n "$summary" ] && echo "$summary"
exit "$status"
