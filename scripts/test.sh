#!/usr/bin/env bash
# The README's test command: install dependencies, build, run every test.
# Its output ends with ctest's summary.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
cd "${ONYX_BUILD_DIR:-build}"
ctest --output-on-failure -j"${ONYX_JOBS:-$(nproc)}" --timeout 1200
