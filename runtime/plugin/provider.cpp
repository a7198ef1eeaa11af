#include "plugin/provider.h"

#include <algorithm>
#include <filesystem>
#include <set>


#include "core/abi_status.h"
#include "plugin/host_api.h"
#include "plugin/search_dirs.h"

namespace onyx::runtime {
namespace fs = std::filesystem;

std::string abi_version_string(uint32_t v) {
  return std::to_string(ONYX_ABI_VERSION_GET_MAJOR(v)) + "." +
         std::to_string(ONYX_ABI_VERSION_GET_MINOR(v));
}

namespace {

std::string range_string(uint32_t lo, uint32_t hi) {
  return lo == hi ? abi_version_string(lo) : abi_version_string(lo) + " to " + abi_version_string(hi);
}

// Functions every 1.0 plugin must provide (the rest are OPTIONAL).
Status check_required_functions(const OnyxProviderApi& a, const std::string& who) {
  if (a.struct_size < offsetof(OnyxProviderApi, query_extension))
    return incompatible(who + ": provider table is " + std::to_string(a.struct_size) +
                        " bytes, smaller than ABI 1.0's");
  struct Required {
    const char* name;
    bool present;
  } required[] = {
      {"plugin_destroy", a.plugin_destroy != nullptr},
      {"plugin_availability", a.plugin_availability != nullptr},
      {"device_count", a.device_count != nullptr},
      {"device_properties", a.device_properties != nullptr},
      {"device_open", a.device_open != nullptr},
      {"device_close", a.device_close != nullptr},
      {"memory_alloc", a.memory_alloc != nullptr},
      {"memory_free", a.memory_free != nullptr},
      {"memory_copy", a.memory_copy != nullptr},
      {"get_capability", a.get_capability != nullptr},
      {"kernel_create", a.kernel_create != nullptr},
      {"kernel_destroy", a.kernel_destroy != nullptr},
      {"kernel_compute", a.kernel_compute != nullptr},
  };
  for (const Required& r : required)
    if (!r.present) return incompatible(who + ": required function " + r.name + " is NULL");
  return Status();
}

}  // namespace

StatusOr<std::shared_ptr<Provider>> Provider::load(const std::string& path) {
  std::shared_ptr<Provider> p(new Provider());
  p->path_ = fs::absolute(path).lexically_normal().string();
  const std::string& where = p->path_;
  if (!fs::exists(where)) return not_found("provider plugin " + where + ": no such file");
  try {
    // RTLD_NOW: unresolved symbols fail here, not in the middle of a run.
    p->library_.load(where, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    // The message carries dlerror(), which names a missing dependency.
    return unavailable("cannot load provider plugin " + where + ": " + e.what());
  }
  if (!p->library_.has(ONYX_PLUGIN_ENTRY_SYMBOL))
    return incompatible(where + " is not an Onyx provider plugin: it does not export " +
                        ONYX_PLUGIN_ENTRY_SYMBOL);
  auto entry_fn = p->library_.get<const OnyxPluginEntry*()>(ONYX_PLUGIN_ENTRY_SYMBOL);
  const OnyxPluginEntry* entry = entry_fn();
  if (!entry || entry->magic != ONYX_PLUGIN_MAGIC)
    return incompatible(where + " is not an Onyx provider plugin (bad entry magic)");
  if (entry->struct_size < offsetof(OnyxPluginEntry, create) + sizeof(entry->create) ||
      !entry->create)
    return incompatible(where + ": plugin entry is truncated (struct_size " +
                        std::to_string(entry->struct_size) + ")");
  p->name_ = entry->name ? entry->name : "";
  p->version_ = entry->version ? entry->version : "";
  p->min_abi_ = entry->min_abi_version;
  p->max_abi_ = entry->max_abi_version;
  const std::string who = "provider '" + p->name_ + "' (" + where + ")";
  uint32_t lo = std::max(kHostMinAbi, p->min_abi_);
  uint32_t hi = std::min(kHostMaxAbi, p->max_abi_);
  if (p->min_abi_ > p->max_abi_ || lo > hi)
    return incompatible(who + " speaks provider ABI " + range_string(p->min_abi_, p->max_abi_) +
                        ", but this Onyx host speaks " + range_string(kHostMinAbi, kHostMaxAbi));
  p->abi_version_ = hi;

  p->host_ = *host_api();
  p->host_.abi_version = p->abi_version_;
  OnyxPluginCreateArgs args{};
  args.struct_size = sizeof args;
  args.abi_version = p->abi_version_;
  args.host = &p->host_;
  args.plugin_path = p->path_.c_str();
  Status created = take_status(entry->create(&args, &p->plugin_, &p->api_));
  if (!created.ok()) return created.with_context(who + ": create failed");
  if (!p->plugin_ || !p->api_) return internal_error(who + ": create returned no plugin");
  Status required = check_required_functions(*p->api_, who);
  if (!required.ok()) {
    if (p->api_->plugin_destroy) p->api_->plugin_destroy(p->plugin_);
    p->plugin_ = nullptr;
    return required;
  }
  return p;
}

Provider::~Provider() {
  if (plugin_ && api_ && api_->plugin_destroy) api_->plugin_destroy(plugin_);
}

Status Provider::availability() const {
  return take_status(api_->plugin_availability(plugin_));
}

size_t Provider::device_count() const { return api_->device_count(plugin_); }

StatusOr<OnyxDeviceProperties> Provider::device_properties(size_t index) const {
  OnyxDeviceProperties props{};
  props.struct_size = sizeof props;
  ONYX_RETURN_IF_ERROR(take_status(api_->device_properties(plugin_, index, &props)));
  return props;
}

// --- ProviderRegistry -------------------------------------------------------

ProviderRegistry::~ProviderRegistry() {
  LogRoute route(logger_.get());  // plugin_destroy may log
  loaded_.clear();
}

void ProviderRegistry::add_search_dir(const std::string& dir) {
  std::lock_guard lock(mutex_);
  extra_dirs_.push_back(dir);
}

std::vector<std::string> ProviderRegistry::search_dirs() const {
  std::vector<std::string> dirs;
  {
    std::lock_guard lock(mutex_);
    dirs = extra_dirs_;
  }
  return plugin_search_dirs(std::move(dirs), "ONYX_PROVIDER_PATH", "providers");
}

StatusOr<std::shared_ptr<Provider>> ProviderRegistry::load_locked(const std::string& path) {
  std::string key = fs::absolute(path).lexically_normal().string();
  for (auto& [p, provider] : loaded_)
    if (p == key) return provider;
  ONYX_ASSIGN_OR_RETURN(std::shared_ptr<Provider> provider, Provider::load(key));
  loaded_.emplace_back(key, provider);
  return provider;
}

StatusOr<std::shared_ptr<Provider>> ProviderRegistry::get(const std::string& name_or_path) {
  if (name_or_path.empty()) return invalid_argument("empty provider name");
  LogRoute route(logger_.get());  // create may log
  if (name_or_path.find('/') != std::string::npos) {
    std::lock_guard lock(mutex_);
    return load_locked(name_or_path);
  }
  std::string file = "libonyx_provider_" + name_or_path + ".so";
  std::vector<std::string> dirs = search_dirs();
  std::lock_guard lock(mutex_);
  for (const std::string& dir : dirs) {
    fs::path candidate = fs::path(dir) / file;
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec)) return load_locked(candidate.string());
  }
  std::string searched;
  for (const std::string& dir : dirs) searched += "\n  " + dir;
  return not_found("provider '" + name_or_path + "' not found: no " + file + " in" + searched);
}

std::vector<ProviderRegistry::Discovered> ProviderRegistry::discover() {
  LogRoute route(logger_.get());
  std::vector<Discovered> found;
  std::set<std::string> names;
  for (const std::string& dir : search_dirs()) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    std::vector<fs::path> files;
    for (const auto& item : fs::directory_iterator(dir, ec)) {
      std::string f = item.path().filename().string();
      if (f.starts_with("libonyx_provider_") && f.ends_with(".so")) files.push_back(item.path());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) {
      std::string f = file.filename().string();
      std::string name = f.substr(17, f.size() - 17 - 3);
      if (!names.insert(name).second) continue;
      std::lock_guard lock(mutex_);
      auto loaded = load_locked(file.string());
      found.push_back({file.string(), loaded.ok() ? loaded.value() : nullptr, loaded.status()});
    }
  }
  return found;
}

}  // namespace onyx::runtime
