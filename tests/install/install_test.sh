#!/usr/bin/env bash
# Installs the build into a temporary prefix, builds examples/hello_onyx
# against it with find_package(Onyx), and runs it on a model. The build's own
# compile and link flags, when given, build the application too: a library
# built with sanitizers needs an application built with them.
#   install_test.sh BUILD_DIR SOURCE_DIR MODEL [CXX_FLAGS [EXE_LINKER_FLAGS]]
set -euo pipefail
build_dir=$1 source_dir=$2 model=$3 cxx_flags=${4:-} link_flags=${5:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
cmake -S "$source_dir/examples/hello_onyx" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_CXX_FLAGS="$cxx_flags" -DCMAKE_EXE_LINKER_FLAGS="$link_flags" >/dev/null
cmake --build "$work/build" >/dev/null
"$work/build/hello_onyx" "$model"
