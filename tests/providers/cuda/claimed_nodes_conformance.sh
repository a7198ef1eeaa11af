#!/usr/bin/env bash
# claimed_nodes_conformance.sh CONFORMANCE PLUGIN: the conformance gate for
# a GPU provider plugin: the real CUDA/ROCm plugin on a GPU machine
# (scripts/gpu-check.sh), or the shared op code over the emulated device
# (libonyx_provider_gpuemu) everywhere else. Requires the abi and claims
# suites to pass, no failure of the ONNX node tests (suite onnx-node; a node
# the provider declines is reported as declined, not failed), and passes for
# each op family the GPU providers are meant to run. ONYX_CONFORMANCE_CORPUS
# names the node tests' folder where the runner's default does not hold them.
set -euo pipefail
conformance=$1 plugin=$2
corpus=()
if [ -n "${ONYX_CONFORMANCE_CORPUS:-}" ]; then corpus=(--corpus "$ONYX_CONFORMANCE_CORPUS"); fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The abi and claims suites (the ABI contract; every claimed node run directly
# through the ABI): each must have 0 failures.
for suite in abi claims; do
  "$conformance" --provider "$plugin" --suite "$suite" "${corpus[@]}" >"$work/$suite.txt" 2>&1 || { cat "$work/$suite.txt"; exit 1; }
  tail -1 "$work/$suite.txt"
done
status=0
"$conformance" --provider "$plugin" --suite onnx-node "${corpus[@]}" --report "$work" >"$work/log.txt" 2>&1 || status=$?
tail -3 "$work/log.txt"
if [ "$status" -ne 0 ]; then grep -E '^(fail|unexpected_pass) ' "$work/log.txt"; exit 1; fi
python3 - "$work/report.json" <<'PY'
import collections, json, sys
cases = json.load(open(sys.argv[1]))["cases"]
passed = collections.Counter(c["op"] for c in cases if c["status"] == "pass")
print("passed per op:", ", ".join(f"{op} {n}" for op, n in sorted(passed.items())))
required = ["Add", "Mul", "Div", "Pow", "Relu", "Sigmoid", "Gelu", "ReduceMax", "Softmax",
            "LogSoftmax", "LayerNormalization", "Gather", "MatMul", "Gemm", "Conv", "MaxPool",
            "AveragePool", "BatchNormalization", "Flatten", "Reshape", "Transpose", "Slice", "Concat",
            "ReduceSum", "ReduceMean", "Where", "Cast", "ScatterElements", "ScatterND"]
# Ops the corpus has cases for (Debian's older corpus lacks e.g. Gelu).
in_corpus = {c["op"] for c in cases}
missing = [op for op in required if op in in_corpus and passed[op] == 0]
if missing:
    print("no passing node test for:", ", ".join(missing))
    sys.exit(1)
print(f"GPU provider: {sum(passed.values())} node tests passed, 0 failures on claimed nodes")
PY
