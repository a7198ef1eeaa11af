#!/usr/bin/env bash
# The speed benchmark of issue 12: Onyx against ONNX Runtime (inference) and
# ORT Training 1.19.2 and PyTorch (a training step) on the CPU, in one run,
# printing the ratio tables (bench/speed/README.md). Makes or finds the
# benchmark's venvs first (bench/speed/setup.sh; its first run downloads
# about 4 GB from PyPI), then runs bench/speed/compare.py with the arguments
# given. Needs a build with bin/onyx (scripts/build.sh).
#   scripts/bench.sh [--quick] [--only inference|training] [--build DIR] ...
#   ONYX_SPEED_SETUP_ARGS: arguments for setup.sh (e.g. "--train-venv DIR")
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck disable=SC2086  # ONYX_SPEED_SETUP_ARGS is a list of arguments
"$repo/bench/speed/setup.sh" ${ONYX_SPEED_SETUP_ARGS:-}
exec "${ONYX_PYTHON:-/usr/bin/python3}" "$repo/bench/speed/compare.py" "$@"
