// onnx_cases.h: the ONNX backend node tests of an op family on the current
// provider, straight through the conformance ABI host
// (conformance/kernel_case.h). The conformance suites already run every case
// as given at the tolerance table's bounds; here each case runs twice, as
// given and then with 3 threads, outputs in the inputs' buffers wherever the
// kernel allows it and the shapes hidden at kernel creation (as for a model
// without shape information), and on the reference provider at the ONNX
// runner's own tolerance (rtol 1e-3, atol 1e-7), tighter than the table's
// rows for sums.
#pragma once

#include <set>
#include <string>

namespace onyx::test {

struct OnnxFamilyOptions {
  // The reference provider's absolute tolerance (rtol stays 1e-3).
  double reference_atol = 1e-7;
};

// Runs every single-node case whose op is in `ops` (of the shared corpus, or
// $ONYX_ONNX_NODE_TESTS; skipped without one). A failure fails the test.
// The reference provider's conformance list (providers/cpu/conformance.txt)
// is the one list of exceptions: its `unsupported` cases (random numbers)
// run nowhere, and the reference may decline only the cases it lists (its
// known gaps). Another provider's declines are counted, and a provider that
// declines every case skips the test with its first reason.
void run_onnx_family(const std::string& family, const std::set<std::string>& ops,
                     const OnnxFamilyOptions& options = {});

}  // namespace onyx::test
