#include "training/optimizer_plugin.h"

#include <onyx_optimizer.h>

#include <filesystem>
#include <set>

#include <boost/dll/shared_library.hpp>

#include "plugin/search_dirs.h"

namespace onyx::runtime::training {
namespace fs = std::filesystem;

namespace {

constexpr uint32_t kHostMin = ONYX_OPTIMIZER_ABI_VERSION(1, 0);
constexpr uint32_t kHostMax =
    ONYX_OPTIMIZER_ABI_VERSION(ONYX_OPTIMIZER_ABI_VERSION_MAJOR, ONYX_OPTIMIZER_ABI_VERSION_MINOR);

std::string version_string(uint32_t v) {
  return std::to_string(v >> 16) + "." + std::to_string(v & 0xffff);
}

bool valid_identifier(const char* s) {
  if (!s || !*s) return false;
  for (; *s; ++s) {
    char c = *s;
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

StatusOr<std::string> find_plugin(const std::string& name_or_path,
                                  const std::vector<std::string>& extra_dirs) {
  if (name_or_path.find('/') != std::string::npos) {
    if (!fs::exists(name_or_path)) return not_found("optimizer plugin " + name_or_path + ": no such file");
    return fs::absolute(name_or_path).lexically_normal().string();
  }
  if (!valid_identifier(name_or_path.c_str()))
    return invalid_argument("optimizer name '" + name_or_path + "' is not a plain name ([A-Za-z0-9_])");
  std::string file = "libonyx_optimizer_" + name_or_path + ".so";
  std::string searched;
  for (const std::string& dir : optimizer_search_dirs(extra_dirs)) {
    fs::path candidate = fs::path(dir) / file;
    if (fs::exists(candidate)) return candidate.lexically_normal().string();
    searched += (searched.empty() ? "" : ", ") + dir;
  }
  return not_found("optimizer '" + name_or_path + "': " + file + " not found in " +
                   (searched.empty() ? std::string("(no folders)") : searched));
}

}  // namespace

std::vector<std::string> optimizer_search_dirs(const std::vector<std::string>& extra_dirs) {
  return plugin_search_dirs(extra_dirs, "ONYX_OPTIMIZER_PATH", "optimizers");
}

StatusOr<OptimizerDescription> load_optimizer_plugin(const std::string& name_or_path,
                                                     const std::vector<std::string>& extra_dirs) {
  ONYX_ASSIGN_OR_RETURN(std::string path, find_plugin(name_or_path, extra_dirs));
  boost::dll::shared_library library;
  try {
    library.load(path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    return unavailable("cannot load optimizer plugin " + path + ": " + e.what());
  }
  if (!library.has(ONYX_OPTIMIZER_ENTRY_SYMBOL))
    return incompatible(path + " is not an Onyx optimizer plugin: it does not export " +
                        ONYX_OPTIMIZER_ENTRY_SYMBOL);
  auto entry_fn = library.get<const OnyxOptimizerEntry*()>(ONYX_OPTIMIZER_ENTRY_SYMBOL);
  const OnyxOptimizerEntry* e = entry_fn();
  if (!e || e->magic != ONYX_OPTIMIZER_MAGIC)
    return incompatible(path + " is not an Onyx optimizer plugin (bad entry magic)");
  if (e->min_abi > kHostMax || e->max_abi < kHostMin)
    return incompatible(path + ": optimizer ABI " + version_string(e->min_abi) + " to " +
                        version_string(e->max_abi) + " does not overlap this host's " +
                        version_string(kHostMin) + " to " + version_string(kHostMax));
  if (e->struct_size < offsetof(OnyxOptimizerEntry, fused_op_domain))
    return incompatible(path + ": optimizer entry is truncated (struct_size " +
                        std::to_string(e->struct_size) + ")");
  if (!valid_identifier(e->name) || !e->update_function || (e->slot_count && !e->slots) ||
      (e->hyperparameter_count && !e->hyperparameters))
    return incompatible(path + ": optimizer entry lacks a valid name, update function or lists");

  OptimizerDescription d;
  d.name = e->name;
  d.version = e->version ? e->version : "";
  d.path = path;
  d.update_function = e->update_function;
  std::set<std::string> names = {"param", "grad", "lr", "step"};
  for (size_t i = 0; i < e->slot_count; ++i) {
    const OnyxOptimizerSlot& s = e->slots[i];
    if (!valid_identifier(s.name) || !names.insert(s.name).second)
      return incompatible(path + ": slot " + std::to_string(i) + " has a missing, invalid or repeated name");
    d.slots.push_back({s.name, s.initial_value});
  }
  for (size_t i = 0; i < e->hyperparameter_count; ++i) {
    const OnyxOptimizerHyperparameter& h = e->hyperparameters[i];
    if (!valid_identifier(h.name) || !names.insert(h.name).second)
      return incompatible(path + ": hyperparameter " + std::to_string(i) +
                          " has a missing, invalid or repeated name");
    d.hyperparameters.push_back({h.name, h.default_value, h.help ? h.help : ""});
  }
  if (e->struct_size >= offsetof(OnyxOptimizerEntry, fused_op_type) + sizeof(e->fused_op_type) &&
      e->fused_op_domain && e->fused_op_type) {
    d.fused_op_domain = e->fused_op_domain;
    d.fused_op_type = e->fused_op_type;
  }
  return d;
}

}  // namespace onyx::runtime::training
