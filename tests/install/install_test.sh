#!/usr/bin/env bash
# Installs the build into a temporary prefix, builds examples/hello_onyx
# against it with find_package(Onyx), and runs it on a model.
set -euo pipefail
build_dir=$1 source_dir=$2 model=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
cmake -S "$source_dir/examples/hello_onyx" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/build" >/dev/null
"$work/build/hello_onyx" "$model"
