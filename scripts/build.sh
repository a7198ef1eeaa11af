#!/usr/bin/env bash
# Configures and builds Onyx into ${ONYX_BUILD_DIR:-build} with ccache.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${ONYX_BUILD_DIR:-build}
jobs=${ONYX_JOBS:-$(nproc)}
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/onyx-ccache}
# Share cache hits between build folders and clones (paths relative to the source).
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=${ONYX_BUILD_TYPE:-RelWithDebInfo} >/dev/null
cmake --build "$build_dir" -j"$jobs"
