// provider.h: one loaded provider plugin and the search for plugins on disk.
//
// Lifetime: a Provider keeps its shared library loaded until the last
// shared_ptr to it goes; every device, kernel and buffer created from it holds
// such a pointer, so the code they need is never unloaded under them.
#pragma once

#include <onyx_provider.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/log.h"
#include "core/status.h"
#include "plugin/plugin_library.h"

namespace onyx::runtime {

// The ABI range this host speaks.
inline constexpr uint32_t kHostMinAbi = ONYX_ABI_VERSION(1, 0);
inline constexpr uint32_t kHostMaxAbi = ONYX_ABI_VERSION(ONYX_ABI_VERSION_MAJOR, ONYX_ABI_VERSION_MINOR);

// Provider plugins as plugin_library.h finds and opens them.
extern const PluginKind kProviderPluginKind;

class Provider {
 public:
  // Loads the plugin at `path`, negotiates the ABI version and creates it.
  // Errors name the path and the reason (missing dependency, not an Onyx
  // plugin, incompatible versions with both ranges).
  static StatusOr<std::shared_ptr<Provider>> load(const std::string& path);
  ~Provider();
  Provider(const Provider&) = delete;
  Provider& operator=(const Provider&) = delete;

  const std::string& name() const { return library_.name(); }
  const std::string& version() const { return library_.version(); }
  const std::string& path() const { return library_.path(); }
  uint32_t abi_version() const { return library_.abi_version(); }
  uint32_t plugin_min_abi() const { return library_.plugin_min_abi(); }
  uint32_t plugin_max_abi() const { return library_.plugin_max_abi(); }
  const OnyxProviderApi& api() const { return *api_; }
  OnyxPlugin* plugin() const { return plugin_; }

  // Whether the host may use the compiled-partition cache functions (ABI
  // 1.2): negotiated at 1.2 or later, and the table has all three.
  bool caches_kernels() const;

  // OK when usable; UNAVAILABLE with the plugin's reason otherwise.
  Status availability() const;
  size_t device_count() const;
  // The plugin's answer with name, vendor and stable_id NUL-terminated
  // (stable_id and free_memory_bytes zero for a plugin below ABI 1.3, and
  // stable_id "" unless printable ASCII without spaces); a
  // memory_alignment that is not a power of two, or past
  // kMaxMemoryAlignment, is refused (INCOMPATIBLE).
  StatusOr<OnyxDeviceProperties> device_properties(size_t index) const;

  // More devices than any machine has: the plugin's count is not believed.
  static constexpr size_t kMaxDevices = 4096;
  // A huge page: no device needs its buffers aligned further, and each
  // tensor of a run is padded to the alignment.
  static constexpr uint32_t kMaxMemoryAlignment = uint32_t(1) << 21;

 private:
  explicit Provider(PluginLibrary library) : library_(std::move(library)) {}
  PluginLibrary library_;  // destroyed last: unloads the code
  OnyxHostApi host_{};     // this plugin's copy (negotiated version)
  OnyxPlugin* plugin_ = nullptr;
  const OnyxProviderApi* api_ = nullptr;
};

// Finds plugins by name (libonyx_provider_<name>.so) in, in order: folders
// added with add_search_dir, the ONYX_PROVIDER_PATH variable (':'-separated),
// the running executable's folder, and <exe>/../lib/onyx/providers. A name
// containing '/' is a path and is loaded directly. Loaded plugins are cached.
// The registry is what the C API calls an environment: it owns the logger
// that its sessions and the plugins it loads report to (core/log.h).
// Thread-safe.
class ProviderRegistry {
 public:
  ProviderRegistry() = default;
  ~ProviderRegistry();  // destroys the plugins no session holds any more
  ProviderRegistry(const ProviderRegistry&) = delete;
  ProviderRegistry& operator=(const ProviderRegistry&) = delete;

  void add_search_dir(const std::string& dir);
  StatusOr<std::shared_ptr<Provider>> get(const std::string& name_or_path);

  struct Discovered {
    std::string path;
    std::shared_ptr<Provider> provider;  // null when loading failed
    Status load_status;
  };
  // Every plugin file found in the search folders (first one wins per name).
  std::vector<Discovered> discover();
  std::vector<std::string> search_dirs() const;
  // Shared with the sessions created from this registry.
  const std::shared_ptr<Logger>& logger() const { return logger_; }

 private:
  std::shared_ptr<Logger> logger_ = std::make_shared<Logger>();
  mutable std::mutex mutex_;
  std::vector<std::string> extra_dirs_;
  std::vector<std::pair<std::string, std::shared_ptr<Provider>>> loaded_;  // by path
  StatusOr<std::shared_ptr<Provider>> load_locked(const std::string& path);
};

}  // namespace onyx::runtime
