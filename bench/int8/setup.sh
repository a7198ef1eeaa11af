#!/usr/bin/env bash
# setup.sh: the int8 benchmark's models (issue 19). Makes a benchmark-only
# virtualenv with torch, torchvision, onnx, onnxruntime and numpy from PyPI
# (test/benchmark dependencies only: nothing in Onyx's build or tests uses
# them), then runs make_models.py in it: ResNet-18, MobileNetV2 and a
# transformer encoder block in float32 (torch.onnx.export) and quantized by
# ONNX Runtime's quantizer (static QDQ, static operator form, dynamic).
#
#   bench/int8/setup.sh [--force] [--new-venv] [make_models.py options, e.g. --per-channel]
#     --force: remake the models (they are remade anyway when make_models.py or common.py
#     changed); --new-venv: remake the venv (e.g. for a newer onnxruntime)
#
# Where (override with ONYX_INT8_DIR): ${XDG_CACHE_HOME:-~/.cache}/onyx/int8-bench,
# with venv/ and models/ under it. ONYX_INT8_PIP_ARGS: extra `pip install`
# arguments (e.g. a local wheel folder via --find-links). PyPI's Linux torch
# wheels are CUDA builds: the first run downloads about 4 GB (CUDA libraries
# included; they are never used), later runs reuse the venv.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=${ONYX_INT8_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/onyx/int8-bench}
venv=$root/venv
python=${ONYX_PYTHON:-/usr/bin/python3}
new_venv=0
models_args=()
for arg in "$@"; do
  if [ "$arg" = --new-venv ]; then new_venv=1; else models_args+=("$arg"); fi
done

mkdir -p "$root"
if [ "$new_venv" = 1 ] || ! "$venv/bin/python" -c "import torch, torchvision, onnx, onnxruntime, numpy" 2>/dev/null; then
  echo "setup: making $venv (torch, torchvision, onnx, onnxruntime, numpy from PyPI)"
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --upgrade pip
  # shellcheck disable=SC2086  # ONYX_INT8_PIP_ARGS is a list of arguments
  "$venv/bin/pip" install --quiet --disable-pip-version-check ${ONYX_INT8_PIP_ARGS:-} \
    torch torchvision onnx onnxruntime numpy
fi
"$venv/bin/python" -c "import torch, torchvision, onnx, onnxruntime, numpy as np
print('setup: torch', torch.__version__, 'torchvision', torchvision.__version__, 'onnx', onnx.__version__,
      'onnxruntime', onnxruntime.__version__, 'numpy', np.__version__)" 2>&1 | grep -v -i warn
"$venv/bin/python" "$here/make_models.py" --out "$root/models" "${models_args[@]}"
echo "setup: venv $venv"
echo "setup: models $root/models"
