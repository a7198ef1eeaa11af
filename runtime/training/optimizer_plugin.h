// optimizer_plugin.h: an optimizer plugin loaded from disk
// (provider_api/onyx_optimizer.h) and what the host reads from it.
//
// Plugins are found and opened by plugin/plugin_library.h, by name
// (libonyx_optimizer_<name>.so) in, in order: the folders given by the
// caller, ONYX_OPTIMIZER_PATH (':'-separated), the running executable's
// folder and <exe>/../lib/onyx/optimizers. A name containing '/' is a path.
// Lifetime: the plugin's data is copied on load, so nothing refers to the
// library afterwards; it is unloaded before load_optimizer_plugin returns.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace onyx::runtime::training {

struct OptimizerSlotInfo {
  std::string name;
  float initial_value = 0;
};

struct OptimizerHyperparameterInfo {
  std::string name;
  float default_value = 0;
  std::string help;
};

// Everything the host needs from a plugin, copied out of its static data.
struct OptimizerDescription {
  std::string name, version, path;
  std::vector<OptimizerSlotInfo> slots;
  std::vector<OptimizerHyperparameterInfo> hyperparameters;
  std::string update_function;  // ONNX text (see onyx_optimizer.h)
  std::string fused_op_domain, fused_op_type;  // empty: none
};

// Loads, checks and copies one plugin. Errors name the file and the problem
// (not found with the folders searched, not an optimizer plugin, a truncated
// entry, ABI ranges that do not overlap, with both ranges, a malformed
// slot/hyperparameter list).
StatusOr<OptimizerDescription> load_optimizer_plugin(const std::string& name_or_path,
                                                     const std::vector<std::string>& extra_dirs = {});

// The folders searched for plugins, in order.
std::vector<std::string> optimizer_search_dirs(const std::vector<std::string>& extra_dirs);

}  // namespace onyx::runtime::training
