#!/usr/bin/env bash
# Makes a fresh virtualenv (default build/python-venv) and installs the onyx
# package into it with the documented command, `pip install ./python`, then
# the Python tests' oracles: ONNX Runtime Training 1.19.2 (which carries ONNX
# Runtime's InferenceSession too) and pytest. Debian's numpy, torch 1.13 and
# onnx 1.12 (scripts/install-deps.sh --test) are seen through
# --system-site-packages. The tests (tests/python) run in it via ctest.
#
#   scripts/python-venv.sh [VENV_DIR]     ONYX_PIP_ARGS: extra `pip install` arguments
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
venv=$(realpath -m "${1:-$repo/build/python-venv}")  # absolute: the last step runs from /tmp
python=${ONYX_PYTHON:-/usr/bin/python3}

rm -rf "$venv"
"$python" -m venv --system-site-packages "$venv"
# The package's CMake build shares ccache with the tests' build (python/pyproject.toml).
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/onyx-ccache}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$repo} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
export CC=${CC:-cc} CXX=${CXX:-c++}
# shellcheck disable=SC2086  # ONYX_PIP_ARGS is a list of arguments
"$venv/bin/pip" install --quiet --disable-pip-version-check ${ONYX_PIP_ARGS:-} "$repo/python"
"$venv/bin/pip" install --quiet --disable-pip-version-check "onnxruntime-training==1.19.2"
"$venv/bin/python" -c "import pytest" 2>/dev/null ||
  "$venv/bin/pip" install --quiet --disable-pip-version-check pytest
cd /tmp && "$venv/bin/python" -c "import onyx; print('onyx', onyx.__version__, 'providers', onyx.get_available_providers())"
