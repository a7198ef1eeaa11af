// claims_suite.h: the claims suite. A provider's capability answers must be
// honest. For every node test model, asked directly through the ABI:
//  - each node is claimed or declined the same way when asked about the
//    whole graph, about the node alone, and when asked twice;
//  - a claimed node of a single-node model must get a kernel (kernel_create
//    succeeds) that computes every data set within the tolerance table;
//  - a declined node carries a reason, and is reported (unsupported) with it.
#pragma once

#include <string>

#include "node_suite.h"
#include "results.h"

namespace onyx::conformance {

// Runs one case on the plugin file `path` (loaded once per process).
RunResult run_claims_case(const std::string& path, const NodeCase& c);

}  // namespace onyx::conformance
