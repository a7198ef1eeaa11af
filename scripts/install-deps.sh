#!/usr/bin/env bash
# Installs the Debian packages Onyx builds and tests with. Idempotent.
set -euo pipefail
packages=(
  build-essential cmake ccache pkg-config
  libonnx-dev libprotobuf-dev protobuf-compiler   # ONNX import
  libboost-dev libboost-filesystem-dev            # Boost.DLL plugin loading
  libdnnl-dev ocl-icd-opencl-dev                  # oneDNN (provider, GEMM baseline)
  hipcc libamdhip64-dev                           # ROCm provider (HIP 5.2; CUDA is preinstalled)
  libgtest-dev libgmock-dev                       # unit tests
  libonnx-testdata                                # conformance corpus fallback
  chromium-headless-shell                         # renders the conformance HTML report in its test
  dataset-fashion-mnist                           # the README's main job
  zlib1g-dev                                      # reads the dataset's .gz files
  python3-numpy
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
