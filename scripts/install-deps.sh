#!/usr/bin/env bash
# Installs the Debian packages Onyx builds with. Idempotent; as root or with sudo.
#   install-deps.sh         what the README's demo needs (scripts/run-demo.sh)
#   install-deps.sh --test  and what the tests and benchmarks add (scripts/test.sh)
set -euo pipefail
main_packages=(
  build-essential cmake ccache pkg-config
  libonnx-dev libprotobuf-dev protobuf-compiler   # ONNX import
  libboost-dev libboost-filesystem-dev            # Boost.DLL plugin loading
  dataset-fashion-mnist                           # the demo's data
  zlib1g-dev                                      # reads the dataset's .gz files
  libre2-dev                                      # RegexFullMatch's regular expressions (RE2 syntax)
)
test_packages=(
  libdnnl-dev ocl-icd-opencl-dev                  # oneDNN (provider, GEMM baseline)
  hipcc libamdhip64-dev                           # ROCm provider (HIP 5.2; CUDA is preinstalled)
  libgtest-dev libgmock-dev                       # unit tests
  libonnx-testdata                                # conformance corpus fallback
  chromium-headless-shell                         # renders the conformance HTML report in its test
  python3-numpy
  python3-dev python3-venv python3-pytest         # the Python package (pip builds it in a venv) and its tests
  libopenmpi-dev openmpi-bin                      # the mpi collectives plugin and its multi-process tests
  valgrind                                        # int8 kernels on a CPU without AVX-512 (valgrind's), memcheck
)
# Installed without their recommended packages (python3-torch's would add
# libtorch-dev and a toolchain): the oracle and data of the transformer tests.
reference_packages=(
  python3-torch python3-onnx                      # PyTorch reference and torch.onnx.export; ONNX model scripts
  libopenblas0-pthread                            # an optimized BLAS for PyTorch (the default libblas.so.3 is the reference one)
  python3-sentencepiece wordnet-base              # examples/bert_mlm: BPE tokenizer, English text
)
case "${1:-}" in
  "") with_tests=0 ;;
  --test) with_tests=1 ;;
  *) echo "usage: install-deps.sh [--test]" >&2; exit 2 ;;
esac
missing() {  # prints the arguments that are not installed
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}
mapfile -t missing_main < <(missing "${main_packages[@]}")
missing_test=()
missing_reference=()
if [ "$with_tests" = 1 ]; then
  mapfile -t missing_test < <(missing "${test_packages[@]}")
  mapfile -t missing_reference < <(missing "${reference_packages[@]}")
fi
if [ ${#missing_main[@]} -eq 0 ] && [ ${#missing_test[@]} -eq 0 ] && [ ${#missing_reference[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
apt_install() { DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@"; }
echo "install-deps: installing ${missing_main[*]} ${missing_test[*]} ${missing_reference[*]}"
$SUDO apt-get update -qq
# The demo's packages without their recommended ones (documentation, other
# toolchains): the build uses none of them, and they would double the download.
[ ${#missing_main[@]} -eq 0 ] || apt_install --no-install-recommends "${missing_main[@]}"
[ ${#missing_test[@]} -eq 0 ] || apt_install "${missing_test[@]}"
[ ${#missing_reference[@]} -eq 0 ] || apt_install --no-install-recommends "${missing_reference[@]}"
