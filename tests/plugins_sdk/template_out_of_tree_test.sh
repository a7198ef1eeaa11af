#!/usr/bin/env bash
# Builds the template provider out of tree, as a vendor would: install Onyx
# into a temporary prefix, configure plugins_sdk/template (copied elsewhere)
# with find_package(OnyxPluginSDK), build it, then load it with the installed
# `onyx` CLI and run its op; then the conformance runner's abi suite and the
# node test of its one op (claims and onnx-node suites) on the plugin.
set -euo pipefail
build_dir=$1 source_dir=$2 model=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
cp -r "$source_dir/plugins_sdk/template" "$work/template"
cmake -S "$work/template" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_CXX_FLAGS="-Wall -Wextra -Werror" >/dev/null
cmake --build "$work/build" >/dev/null
plugin="$work/build/libonyx_provider_template.so"
test -f "$plugin"
# Only the entry symbol is exported.
exports=$(nm -D --defined-only "$plugin" | awk '{print $3}')
[ "$exports" = "OnyxGetPluginEntry" ] || { echo "unexpected exports: $exports"; exit 1; }

onyx="$work/prefix/bin/onyx"
export ONYX_PROVIDER_PATH="$work/build"
"$onyx" providers | tee "$work/providers.txt"
grep -E "^template .*available" "$work/providers.txt" | grep -vq unavailable
# The template claims Relu; everything else falls back to the CPU provider.
"$onyx" info "$model" --provider template --provider cpu --fallback allow | tee "$work/info.txt"
grep -Eq " Relu +template" "$work/info.txt" || { echo "Relu did not go to the template provider"; exit 1; }
"$onyx" run "$model" --provider template --provider cpu --fallback allow \
  --output-dir "$work/out" | tee "$work/run.txt"

conformance="$work/prefix/bin/onyx-conformance"
"$conformance" --provider "$plugin" --suite abi | tee "$work/abi.txt"
grep -Eq "abi: [1-9][0-9]* passed, 0 failed" "$work/abi.txt"
# Its one op: Relu's node test, through the ABI (claims) and a session (onnx-node).
"$conformance" --provider "$plugin" --suite claims,onnx-node --filter '^test_relu$' \
  --report "$work/report" | tee "$work/op.txt"
grep -q "claims: 1 passed, 0 failed" "$work/op.txt"
grep -q "onnx-node: 1 passed, 0 failed" "$work/op.txt"
echo "template provider: built out of tree, loaded and ran"
