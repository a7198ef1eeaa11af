#!/usr/bin/env bash
# Installs the build into a temporary prefix and checks its binaries with
# one_core_check.py (what an application or a package actually ships).
set -euo pipefail
build_dir=$1 python=$2 check=$3
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build_dir" --prefix "$prefix" >/dev/null
"$python" "$check" --require "$prefix/bin/onyx" "$prefix"
