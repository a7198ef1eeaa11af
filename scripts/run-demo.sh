#!/usr/bin/env bash
# The README's main command: install dependencies, build, then train an MLP
# and a small CNN on Fashion-MNIST (Debian's dataset-fashion-mnist) with
# `onyx train` on the CPU provider, and evaluate each exported inference model
# on the 10,000 test images with `onyx eval`, printing accuracy.
# Each run writes a loss curve (loss.csv, loss.svg), a checkpoint and
# model.onnx into $build/train-mlp and $build/train-cnn.
# It installs and builds only what it runs (no tests, benchmarks, oneDNN, GPU
# providers or conformance runner: scripts/test.sh adds those).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
build=${ONYX_BUILD_DIR:-build}
onyx="$build/bin/onyx"
data=/usr/share/datasets/fashion-mnist
threads=${ONYX_THREADS:-2}
models="$build/models"
mkdir -p "$models"
"$build/bin/onyx_make_test_models" "$models"   # mlp.onnx, cnn.onnx with He-initialized weights
"$onyx" providers

# MLP 784-256-128-10, AdamW, cosine schedule, 10 epochs.
SECONDS=0
"$onyx" train "$models/mlp.onnx" --data "$data" --epochs 10 --batch-size 64 --optimizer adamw \
  --lr 1e-3 --lr-schedule cosine --threads "$threads" --out "$build/train-mlp"
"$onyx" eval "$build/train-mlp/model.onnx" --data "$data" --threads "$threads"
echo "mlp: trained and evaluated in ${SECONDS}s"

# CNN: 2x (Conv 3x3 + BatchNorm + Relu + MaxPool) + 2 Gemm. BatchNorm keeps its
# running statistics (frozen parameters); its scale and bias train.
SECONDS=0
"$onyx" train "$models/cnn.onnx" --data "$data" --epochs 10 --batch-size 64 --optimizer adamw \
  --lr 2e-3 --lr-schedule cosine --threads "$threads" --out "$build/train-cnn" \
  --frozen bn1.mean --frozen bn1.var --frozen bn2.mean --frozen bn2.var
"$onyx" eval "$build/train-cnn/model.onnx" --data "$data" --threads "$threads"
echo "cnn: trained and evaluated in ${SECONDS}s"
echo "loss curves: $build/train-mlp/loss.svg $build/train-cnn/loss.svg"
