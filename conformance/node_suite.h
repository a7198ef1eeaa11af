// node_suite.h: the onnx-node suite. Every folder of the corpus holding a
// model.onnx and test_data_set_*/ (the ONNX backend test layout) is a case:
// the model runs through the public C API on the provider alone (fallback
// "fail"), inputs from input_N.pb, outputs compared with output_N.pb under
// the tolerance table. A case whose node the provider declines (session
// creation reports that no provider supports it) is reported as declined,
// with the provider's reason.
#pragma once

#include <onyx/onyx_c_api.h>

#include <regex>
#include <string>
#include <vector>

#include "isolation.h"
#include "results.h"

namespace onyx::conformance {

struct NodeCase {
  // The folder's name, e.g. "test_add_bcast"; with several corpora prefixed
  // by the corpus's last two path components ("data/pytorch-operator/test_addmm").
  std::string name;
  std::string dir;
};

// The cases under the `corpora` folders whose names match `filter`, sorted
// by name. Throws std::runtime_error when a corpus is not a folder.
std::vector<NodeCase> find_node_cases(const std::vector<std::string>& corpora, const std::regex& filter);

// The op a case tests: its single node's op_type, or for a multi-node model
// (an `_expanded` function body) the op of the case it expands.
std::string node_case_op(const NodeCase& c);

// Runs one case in this process. `env` is created by the caller.
RunResult run_node_case(OnyxEnv* env, const std::string& provider, const NodeCase& c);

}  // namespace onyx::conformance
