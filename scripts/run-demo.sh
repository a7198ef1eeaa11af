#!/usr/bin/env bash
# The README's main command: install dependencies, build, and run real models
# end to end on the CPU provider (an MLP and a CNN written as ONNX files).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
build=${ONYX_BUILD_DIR:-build}
models="$build/models"
mkdir -p "$models"
"$build/bin/onyx_make_test_models" "$models"
"$build/bin/onyx" providers
"$build/bin/onyx" info "$models/cnn.onnx" --memory
"$build/bin/onyx" run "$models/cnn.onnx" --provider cpu --output-dir "$build/demo-out"
"$build/bin/onyx" bench "$models/mlp.onnx" --threads 1
