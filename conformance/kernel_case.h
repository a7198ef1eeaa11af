// kernel_case.h: one single-node case of a node-test corpus run straight
// through the runner's ABI host (abi_host.h): get_capability on the node,
// kernel_create, kernel_compute on every data set, outputs compared under a
// tolerance. The claims suite runs claimed nodes this way; the provider op
// tests (tests/providers/ops) run every case of an op family this way on
// each provider, also with threads, outputs in place and shapes hidden.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "abi_host.h"
#include "compare.h"
#include "graph_view.h"
#include "node_suite.h"
#include "results.h"

namespace onyx::conformance {

struct KernelCaseOptions {
  KernelRunOptions run;
  // The graph's inputs and outputs say "rank unknown", as in a model
  // without shape information (constants keep theirs).
  bool hide_shapes = false;
  // The tolerance of an output of `op` with element type `dtype`; unset:
  // the tolerance table (tolerance_for).
  std::function<Tolerance(const std::string& op, int32_t dtype)> tolerance;
};

// Computes the single node of `model` (already claimed; `graph` built from
// it) on every data set of `c` and compares the outputs. Throws CaseError
// naming the first problem ("false claim: ..." when kernel_create fails);
// raises result.max_error.
void run_claimed_node(const LoadedPlugin& plugin, const OpenDevice& device, const OwnedGraph& graph,
                      const onnx::ModelProto& model, const NodeCase& c, const std::string& op,
                      const KernelCaseOptions& options, RunResult& result);

// The whole case: a model of several nodes, or with values the ABI host
// cannot carry (sequences, strings), is kUnsupported; a declined node is
// kDeclined with the plugin's reason; a claimed one runs as above.
RunResult run_kernel_case(const LoadedPlugin& plugin, const OpenDevice& device, const NodeCase& c,
                          const KernelCaseOptions& options = {});

// Whether the ABI host can carry a value of this type (a numeric tensor).
bool carried(const onnx::TypeProto& type);
// The model of a case; throws CaseError when it cannot be read.
onnx::ModelProto read_case_model(const NodeCase& c);
// The model's opset per domain ("" for ai.onnx), for OwnedGraph::from_onnx.
std::map<std::string, int64_t> opsets_of(const onnx::ModelProto& model);

}  // namespace onyx::conformance
