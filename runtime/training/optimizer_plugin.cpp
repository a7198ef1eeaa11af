#include "training/optimizer_plugin.h"

#include <onyx_optimizer.h>

#include <set>

#include "plugin/plugin_library.h"
#include "plugin/search_dirs.h"

namespace onyx::runtime::training {

namespace {

const PluginKind kOptimizerPluginKind = {
    .noun = "optimizer",
    .file_prefix = "libonyx_optimizer_",
    .path_variable = "ONYX_OPTIMIZER_PATH",
    .folder = "optimizers",
    .entry_symbol = ONYX_OPTIMIZER_ENTRY_SYMBOL,
    .magic = ONYX_OPTIMIZER_MAGIC,
    .min_entry_size = ONYX_OPTIMIZER_ENTRY_SIZE_1_0,
    .host_min_abi = ONYX_OPTIMIZER_ABI_VERSION(1, 0),
    .host_max_abi = ONYX_OPTIMIZER_ABI_VERSION(ONYX_OPTIMIZER_ABI_VERSION_MAJOR, ONYX_OPTIMIZER_ABI_VERSION_MINOR),
    .call_entry = call_entry<OnyxOptimizerEntry>,
};

// Copies what the host needs out of a checked entry; refuses lists the host
// cannot turn into an update (missing, invalid or repeated names).
StatusOr<OptimizerDescription> describe(const PluginLibrary& library) {
  const OnyxOptimizerEntry& e = library.entry<OnyxOptimizerEntry>();
  const std::string& path = library.path();
  if (!is_plain_name(e.name) || !e.update_function || (e.slot_count && !e.slots) ||
      (e.hyperparameter_count && !e.hyperparameters))
    return incompatible(path + ": optimizer entry lacks a valid name, update function or lists");
  // The counts index static arrays the host cannot measure: bound them, and
  // check each element's struct_size, so a count past its array is refused
  // rather than read.
  constexpr size_t kMaxSlots = 16, kMaxHyperparameters = 64;
  if (e.slot_count > kMaxSlots || e.hyperparameter_count > kMaxHyperparameters)
    return incompatible(path + ": optimizer entry declares " + std::to_string(e.slot_count) + " slots and " +
                        std::to_string(e.hyperparameter_count) + " hyperparameters; at most " +
                        std::to_string(kMaxSlots) + " and " + std::to_string(kMaxHyperparameters));
  for (size_t i = 0; i < e.slot_count; ++i)
    if (e.slots[i].struct_size < sizeof(OnyxOptimizerSlot))
      return incompatible(path + ": slot " + std::to_string(i) + " has struct_size " +
                          std::to_string(e.slots[i].struct_size) + " (the slot count may exceed its array)");
  for (size_t i = 0; i < e.hyperparameter_count; ++i)
    if (e.hyperparameters[i].struct_size < sizeof(OnyxOptimizerHyperparameter))
      return incompatible(path + ": hyperparameter " + std::to_string(i) + " has struct_size " +
                          std::to_string(e.hyperparameters[i].struct_size) +
                          " (the hyperparameter count may exceed its array)");

  OptimizerDescription d;
  d.name = e.name;
  d.version = library.version();
  d.path = path;
  d.update_function = e.update_function;
  std::set<std::string> names = {"param", "grad", "lr", "step"};
  for (size_t i = 0; i < e.slot_count; ++i) {
    const OnyxOptimizerSlot& s = e.slots[i];
    if (!is_plain_name(s.name) || !names.insert(s.name).second)
      return incompatible(path + ": slot " + std::to_string(i) + " has a missing, invalid or repeated name");
    d.slots.push_back({s.name, s.initial_value});
  }
  for (size_t i = 0; i < e.hyperparameter_count; ++i) {
    const OnyxOptimizerHyperparameter& h = e.hyperparameters[i];
    if (!is_plain_name(h.name) || !names.insert(h.name).second)
      return incompatible(path + ": hyperparameter " + std::to_string(i) +
                          " has a missing, invalid or repeated name");
    d.hyperparameters.push_back({h.name, h.default_value, h.help ? h.help : ""});
  }
  if (e.fused_op_domain && e.fused_op_type) {
    d.fused_op_domain = e.fused_op_domain;
    d.fused_op_type = e.fused_op_type;
  }
  return d;
}

}  // namespace

std::vector<std::string> optimizer_search_dirs(const std::vector<std::string>& extra_dirs) {
  return plugin_search_dirs(extra_dirs, kOptimizerPluginKind.path_variable, kOptimizerPluginKind.folder);
}

StatusOr<OptimizerDescription> load_optimizer_plugin(const std::string& name_or_path,
                                                     const std::vector<std::string>& extra_dirs) {
  ONYX_ASSIGN_OR_RETURN(std::string path, find_plugin_file(kOptimizerPluginKind, name_or_path, extra_dirs));
  ONYX_ASSIGN_OR_RETURN(PluginLibrary library, PluginLibrary::open(kOptimizerPluginKind, path));
  return describe(library);  // copies everything: the library unloads on return
}

}  // namespace onyx::runtime::training
