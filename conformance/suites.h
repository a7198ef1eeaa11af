// suites.h: the suites the runner knows, behind one entry point.
//   abi        the plugin ABI itself (abi_suite.cpp)
//   onnx-node  the ONNX backend node tests through the C API (node_suite.cpp)
//   claims     honesty of get_capability answers (claims_suite.cpp)
#pragma once

#include <regex>
#include <string>
#include <vector>

#include "expectations.h"
#include "isolation.h"
#include "report.h"
#include "results.h"

namespace onyx::conformance {

struct SuiteOptions {
  const std::regex* filter = nullptr;  // cases whose names match
  std::vector<std::string> corpora;    // node test folders
  IsolationOptions isolation;
  bool verbose = false;  // print every case, not only the ones that fail
  // onnx-node: a decline the expectation list does not name is a failure
  // (for a reference provider, which should run every case it does not list).
  bool strict_declines = false;
};

// Runs `suite` on `provider` (a name or a plugin path) and judges the
// results against `expectations` (may be null). Throws std::runtime_error
// when the suite cannot start at all (no corpus, no such provider).
std::vector<CaseResult> run_suite(const std::string& suite, const std::string& provider,
                                  const SuiteOptions& options, const ExpectationFile* expectations);

// Loads the plugin in this process to describe it for the report (call
// after the suites: no worker is forked afterwards). Never throws.
ProviderInfo describe_provider(const std::string& provider);

// Prints one finished case: failures always, others when verbose.
void print_case(const CaseResult& r, bool verbose);

}  // namespace onyx::conformance
