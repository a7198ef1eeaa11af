#!/usr/bin/env bash
# setup.sh: the Python environments of the speed benchmark (issue 12), from PyPI.
# Benchmark dependencies only: nothing in Onyx's build or tests uses them.
#
#   bench/speed/setup.sh [--train-venv DIR] [--new-venv]
#
# Two venvs, recorded in $root/env.json for compare.py:
# - ONNX Runtime (inference) and PyTorch (training baseline): the int8 benchmark's venv
#   (${ONYX_INT8_DIR:-${XDG_CACHE_HOME:-~/.cache}/onyx/int8-bench}/venv: torch, onnx,
#   onnxruntime, numpy, the latest from PyPI). When it is missing, bench/int8/setup.sh makes
#   it (first run: about 4 GB of downloads, the CUDA libraries of PyPI's torch wheel
#   included, and a few minutes to write the int8 models too).
# - Onyx's Python package with onnxruntime-training 1.19.2 (the ORT Training baseline; it
#   cannot share a venv with the onnxruntime package, and it imports torch and onnx): the
#   first that has onyx, onnxruntime.training, onnx and torch of
#     --train-venv DIR (or ONYX_SPEED_TRAIN_VENV),
#     build/python-venv of this checkout (scripts/python-venv.sh makes it; ctest uses it),
#     $root/train-venv,
#   else scripts/python-venv.sh makes $root/train-venv. That compiles the whole project into
#   a wheel (build-python/ beside build/, sharing ccache; set CMAKE_BUILD_PARALLEL_LEVEL on a
#   busy machine) and relies on Debian's python3-torch and python3-onnx
#   (scripts/install-deps.sh --test). --new-venv remakes $root/train-venv even when one fits.
#
# Where: root=${ONYX_SPEED_DIR:-${XDG_CACHE_HOME:-~/.cache}/onyx/speed-bench}.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
root=${ONYX_SPEED_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/onyx/speed-bench}
int8_venv=${ONYX_INT8_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/onyx/int8-bench}/venv
train_venv=${ONYX_SPEED_TRAIN_VENV:-}
new_venv=0
while [ $# -gt 0 ]; do
  case $1 in
    --train-venv) train_venv=${2:?--train-venv needs a folder}; shift 2 ;;
    --new-venv) new_venv=1; shift ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup: unknown argument $1 (see bench/speed/setup.sh --help)" >&2; exit 2 ;;
  esac
done
mkdir -p "$root"

has() {  # has VENV MODULE...: VENV's python imports every MODULE
  local venv=$1; shift
  [ -x "$venv/bin/python" ] || return 1
  (cd /tmp && "$venv/bin/python" -c "import $(IFS=,; echo "$*")") >/dev/null 2>&1
}

# 1. ONNX Runtime and PyTorch: the int8 benchmark's venv.
if ! has "$int8_venv" torch onnx onnxruntime numpy; then
  echo "setup: no torch/onnx/onnxruntime venv at $int8_venv: bench/int8/setup.sh makes it"
  "$repo/bench/int8/setup.sh"
fi
if has "$int8_venv" onnxruntime.training; then
  echo "setup: $int8_venv has onnxruntime-training in place of onnxruntime; remake it: bench/int8/setup.sh --new-venv" >&2
  exit 1
fi

# 2. Onyx + ORT Training 1.19.2.
train_modules=(onyx onnxruntime.training onnx torch numpy)
if [ -n "$train_venv" ]; then
  has "$train_venv" "${train_modules[@]}" || {
    echo "setup: $train_venv lacks one of ${train_modules[*]} (scripts/python-venv.sh DIR makes such a venv)" >&2
    exit 1
  }
elif [ "$new_venv" = 0 ] && has "$repo/build/python-venv" "${train_modules[@]}"; then
  train_venv=$repo/build/python-venv
elif [ "$new_venv" = 0 ] && has "$root/train-venv" "${train_modules[@]}"; then
  train_venv=$root/train-venv
else
  train_venv=$root/train-venv
  echo "setup: making $train_venv with scripts/python-venv.sh (builds the onyx wheel: a long compile)"
  "$repo/scripts/python-venv.sh" "$train_venv"
  has "$train_venv" "${train_modules[@]}" || {
    echo "setup: $train_venv still lacks one of ${train_modules[*]}: torch and onnx come from Debian" \
      "(scripts/install-deps.sh --test installs python3-torch and python3-onnx)" >&2
    exit 1
  }
fi
version=$(cd /tmp && "$train_venv/bin/python" -c "import onnxruntime; print(onnxruntime.__version__)" 2>/dev/null)
[ "$version" = 1.19.2 ] || echo "setup: warning: $train_venv has onnxruntime-training $version, not 1.19.2" >&2

cat > "$root/env.json" <<EOF
{"infer_python": "$int8_venv/bin/python", "torch_python": "$int8_venv/bin/python",
 "train_python": "$train_venv/bin/python"}
EOF
echo "setup: inference and PyTorch: $int8_venv"
echo "setup: Onyx and ORT Training: $train_venv"
echo "setup: wrote $root/env.json"
