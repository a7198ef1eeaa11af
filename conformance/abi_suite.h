// abi_suite.h: the abi suite, which checks a plugin against the ABI's rules
// through the runner's own host (abi_host.h): loading and entry fields,
// version negotiation, the provider table, struct sizes smaller and larger
// than the plugin's, null and invalid arguments, error objects, allocator and
// data transfer round trips, concurrent use of the thread-safe functions,
// and load/unload/reload without leaks.
#pragma once

#include <string>
#include <vector>

#include "results.h"

namespace onyx::conformance {

// The suite's case names, in order.
std::vector<std::string> abi_case_names();

// Runs case `name` on the plugin file `path` in this process.
RunResult run_abi_case(const std::string& name, const std::string& path);

}  // namespace onyx::conformance
