#include "plugin/provider.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "core/abi_status.h"
#include "core/step_observer.h"
#include "plugin/host_api.h"
#include "plugin/search_dirs.h"
#include "plugin/write_guard.h"

namespace onyx::runtime {
namespace fs = std::filesystem;

const PluginKind kProviderPluginKind = {
    .noun = "provider",
    .file_prefix = "libonyx_provider_",
    .path_variable = "ONYX_PROVIDER_PATH",
    .folder = "providers",
    .entry_symbol = ONYX_PLUGIN_ENTRY_SYMBOL,
    .magic = ONYX_PLUGIN_MAGIC,
    .min_entry_size = ONYX_PLUGIN_ENTRY_SIZE_1_0,
    .host_min_abi = kHostMinAbi,
    .host_max_abi = kHostMaxAbi,
    .call_entry = call_entry<OnyxPluginEntry>,
};

namespace {

// Functions every 1.0 plugin must provide (the rest are OPTIONAL).
Status check_required_functions(const OnyxProviderApi& a, const std::string& who) {
  if (a.struct_size < ONYX_PROVIDER_API_SIZE_1_0)
    return incompatible(who + ": provider table is " + std::to_string(a.struct_size) +
                        " bytes, smaller than ABI 1.0's " + std::to_string(ONYX_PROVIDER_API_SIZE_1_0));
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
  ProviderActivity activity(fs::path(path).filename().string(), "loading its plugin");
  ONYX_ASSIGN_OR_RETURN(PluginLibrary library, PluginLibrary::open(kProviderPluginKind, path));
  std::shared_ptr<Provider> p(new Provider(std::move(library)));
  const OnyxPluginEntry& entry = p->library_.entry<OnyxPluginEntry>();
  const std::string who = p->library_.describe();
  if (!entry.create) return incompatible(who + ": the entry's create function is NULL");

  p->host_ = *host_api();
  p->host_.abi_version = p->abi_version();
  OnyxPluginCreateArgs args{};
  args.struct_size = sizeof args;
  args.abi_version = p->abi_version();
  args.host = &p->host_;
  args.plugin_path = p->path().c_str();
  Status created = take_status(entry.create(&args, &p->plugin_, &p->api_));
  if (!created.ok()) return created.with_context(who + ": create failed");
  if (!p->plugin_ || !p->api_) return internal_error(who + ": create returned no plugin");
  Status required = check_required_functions(*p->api_, who);
  if (!required.ok()) {
    if (ONYX_HAS_FIELD(p->api_, OnyxProviderApi, plugin_destroy) && p->api_->plugin_destroy)
      p->api_->plugin_destroy(p->plugin_);
    p->plugin_ = nullptr;
    return required;
  }
  return p;
}

Provider::~Provider() {
  if (plugin_ && api_ && api_->plugin_destroy) api_->plugin_destroy(plugin_);
}

bool Provider::caches_kernels() const {
  return abi_version() >= ONYX_ABI_VERSION(1, 2) && api_->struct_size >= ONYX_PROVIDER_API_SIZE_1_2 &&
         api_->device_cache_compatibility && api_->kernel_serialize && api_->kernel_create_from_cache;
}

Status Provider::availability() const {
  ONYX_RETURN_IF_ERROR(take_status(api_->plugin_availability(plugin_)));
  const size_t count = api_->device_count(plugin_);
  if (count > kMaxDevices)
    return incompatible(library_.describe() + " reports " + std::to_string(count) + " devices; no machine has more than " +
                        std::to_string(kMaxDevices) + ", so the plugin is refused");
  return Status();
}

// Bounded: a count past any machine (SIZE_MAX) is a broken plugin, whose
// devices the host would otherwise enumerate for hours (availability() says so).
size_t Provider::device_count() const {
  const size_t count = api_->device_count(plugin_);
  return count > kMaxDevices ? 0 : count;
}

StatusOr<OnyxDeviceProperties> Provider::device_properties(size_t index) const {
  WriteGuarded<OnyxDeviceProperties> filled;
  filled[0].struct_size = sizeof(OnyxDeviceProperties);
  ONYX_RETURN_IF_ERROR(take_status(api_->device_properties(plugin_, index, filled.data())));
  ONYX_RETURN_IF_ERROR(filled.check(library_.describe(), "device_properties' OnyxDeviceProperties"));
  OnyxDeviceProperties props = filled[0];
  // The strings are read as C strings everywhere after this: a plugin that
  // filled a whole array leaves no NUL, so one is put in its last byte.
  props.name[sizeof props.name - 1] = '\0';
  props.vendor[sizeof props.vendor - 1] = '\0';
  // ABI 1.3 fields: only a plugin that speaks 1.3 knows them; an id that is
  // not printable ASCII without spaces could not be named on a command line,
  // so it reads as none.
  props.stable_id[sizeof props.stable_id - 1] = '\0';
  if (library_.abi_version() < ONYX_ABI_VERSION(1, 3)) {
    props.stable_id[0] = '\0';
    props.free_memory_bytes = 0;
  }
  for (const char* c = props.stable_id; *c; ++c)
    if (*c <= ' ' || *c > '~') {
      props.stable_id[0] = '\0';
      break;
    }
  // Every buffer of the device is aligned to this, and memory_alloc's
  // alignment must be a power of two (0: the device asks for none).
  if ((props.memory_alignment & (props.memory_alignment - 1)) || props.memory_alignment > kMaxMemoryAlignment)
    return incompatible(library_.describe() + ": device " + std::to_string(index) + " reports memory_alignment " +
                        std::to_string(props.memory_alignment) + ", which is not a power of two up to " +
                        std::to_string(kMaxMemoryAlignment) + " (every tensor and scratch buffer is aligned to it)");
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
  return plugin_search_dirs(std::move(dirs), kProviderPluginKind.path_variable, kProviderPluginKind.folder);
}

StatusOr<std::shared_ptr<Provider>> ProviderRegistry::load_locked(const std::string& path) {
  const std::string key = fs::absolute(path).lexically_normal().string();
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
  std::vector<std::string> extra;
  {
    std::lock_guard lock(mutex_);
    extra = extra_dirs_;
  }
  ONYX_ASSIGN_OR_RETURN(std::string file, find_plugin_file(kProviderPluginKind, name_or_path, extra));
  std::lock_guard lock(mutex_);
  return load_locked(file);
}

std::vector<ProviderRegistry::Discovered> ProviderRegistry::discover() {
  LogRoute route(logger_.get());
  std::vector<Discovered> found;
  std::set<std::string> names;
  for (const std::string& dir : search_dirs()) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    const std::string prefix = kProviderPluginKind.file_prefix, suffix = ".so";
    std::vector<fs::path> files;
    for (const auto& item : fs::directory_iterator(dir, ec)) {
      std::string f = item.path().filename().string();
      if (f.starts_with(prefix) && f.ends_with(suffix)) files.push_back(item.path());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) {
      std::string f = file.filename().string();
      std::string name = f.substr(prefix.size(), f.size() - prefix.size() - suffix.size());
      if (!names.insert(name).second) continue;
      std::lock_guard lock(mutex_);
      auto loaded = load_locked(file.string());
      found.push_back({file.string(), loaded.ok() ? loaded.value() : nullptr, loaded.status()});
    }
  }
  return found;
}

}  // namespace onyx::runtime
