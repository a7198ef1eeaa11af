// abi_host.h: a minimal host of the provider ABI, written from the header
// alone (provider_api/onyx_provider.h), as a vendor's own host would be. The
// abi and claims suites drive plugins through it, independently of libonyx:
// loading, version negotiation, the host function table (statuses, logging,
// compute contexts) and running one kernel on device memory.
#pragma once

#include <onyx_provider.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "values.h"

namespace onyx::conformance {

// The ABI range this host speaks.
constexpr uint32_t kHostMinAbi = ONYX_ABI_VERSION(1, 0);
constexpr uint32_t kHostMaxAbi = ONYX_ABI_VERSION(ONYX_ABI_VERSION_MAJOR, ONYX_ABI_VERSION_MINOR);

// The newest ABI version this host offers (default kHostMaxAbi). Set to 1.0
// (onyx-conformance --host-abi 1.0) before any plugin loads, the host
// negotiates at most 1.0 and hands plugins a table of 1.0's size: how a newer
// plugin must behave under an older host. Not thread-safe; set it first.
void set_host_max_abi(uint32_t version);
uint32_t host_max_abi();

// The host's function table for host_max_abi() (static: it outlives every plugin).
const OnyxHostApi* host_api();

// Statuses created by the host table and not yet released (leak checks),
// and whether `status` is one of them (a plugin must return only those).
long live_status_count();
bool is_host_status(const OnyxStatus* status);
int32_t status_code_of(const OnyxStatus* status);
std::string status_message_of(const OnyxStatus* status);
void release_status(OnyxStatus* status);
// Throws CaseError("<what>: <message>") when status is non-NULL (released).
void check_status(OnyxStatus* status, const std::string& what);

// The plugin file for a provider name, searched like the C API does
// (ONYX_PROVIDER_PATH, the executable's folder, <exe>/../lib/onyx/providers);
// a value with a '/' is a path already. Throws CaseError when not found.
std::string resolve_plugin_path(const std::string& name_or_path);

// "1.0"
std::string version_string(uint32_t version);

// A loaded, created plugin. Destroying it destroys the plugin and unloads
// the library.
class LoadedPlugin {
 public:
  // dlopen, entry checks, negotiation, create. `args_size` / `host` let the
  // abi suite pass larger structs (simulating a newer host).
  static std::unique_ptr<LoadedPlugin> load(const std::string& path, size_t args_size = 0,
                                            const OnyxHostApi* host = nullptr);
  ~LoadedPlugin();
  LoadedPlugin(const LoadedPlugin&) = delete;
  LoadedPlugin& operator=(const LoadedPlugin&) = delete;

  const OnyxPluginEntry* entry() const { return entry_; }
  OnyxPlugin* plugin() const { return plugin_; }
  const OnyxProviderApi* api() const { return api_; }
  uint32_t abi_version() const { return abi_version_; }
  // True when the table covers `field` and it is non-NULL.
  template <typename F>
  bool has(F OnyxProviderApi::*field, size_t offset) const {
    return api_->struct_size >= offset + sizeof(F) && api_->*field != nullptr;
  }

 private:
  LoadedPlugin() = default;
  void* library_ = nullptr;
  const OnyxPluginEntry* entry_ = nullptr;
  OnyxPlugin* plugin_ = nullptr;
  const OnyxProviderApi* api_ = nullptr;
  uint32_t abi_version_ = 0;
};

#define ONYX_API_HAS(loaded, field) \
  (loaded).has(&OnyxProviderApi::field, offsetof(OnyxProviderApi, field))

// Names of required provider-table functions the plugin's table lacks
// (not covered by struct_size, or NULL). Empty when complete.
std::vector<std::string> missing_required_functions(const LoadedPlugin& p, bool asynchronous);

// The plugin reports itself unavailable or has no device: cases that need a
// device are reported unsupported with this reason, not failed.
struct DeviceUnavailable : CaseError {
  using CaseError::CaseError;
};

// An opened device of a loaded plugin (device 0), closed on destruction.
// Throws DeviceUnavailable when the plugin is unavailable or has no device.
class OpenDevice {
 public:
  explicit OpenDevice(const LoadedPlugin& p, size_t index = 0);
  ~OpenDevice();
  OpenDevice(const OpenDevice&) = delete;
  OpenDevice& operator=(const OpenDevice&) = delete;
  OnyxDevice* get() const { return device_; }
  const OnyxDeviceProperties& properties() const { return props_; }

 private:
  const LoadedPlugin& plugin_;
  OnyxDevice* device_ = nullptr;
  OnyxDeviceProperties props_{};
};

// Runs an already created kernel once: copies `inputs` to device memory,
// computes (synchronising the stream on asynchronous devices), copies the
// outputs back. The host honours the kernel's output memory declarations
// (kernel_output_memory) as the runtime does: an output declared
// ONYX_OUTPUT_ALIASES_INPUT gets its input's buffer, and the bytes must come
// back unchanged; one declared ONYX_OUTPUT_MAY_OVERWRITE_INPUT gets its
// input's buffer when `outputs_in_place` is set (never a constant's, never
// one buffer twice); every other output gets a fresh buffer filled with 0xCD
// bytes, so that elements the kernel forgets to write show. An input with
// `present == false` is omitted. Outputs the kernel did not request come
// back with dtype 0. Throws CaseError naming the step that failed.
struct KernelInput {
  bool present = true;
  HostTensor tensor;
  bool constant = false;  // an initializer: its buffer is never an output's
};
struct KernelRunOptions {
  size_t threads = 1;             // ctx_thread_count; above 1, ctx_parallel_for runs on that many threads
  bool outputs_in_place = false;  // honour ONYX_OUTPUT_MAY_OVERWRITE_INPUT
};
struct KernelRun {
  std::vector<HostTensor> outputs;
  std::vector<OnyxOutputMemoryInfo> output_memory;  // as declared (FRESH where the plugin says nothing)
  std::vector<bool> shared_with_input;              // the output was computed in an input's buffer
};
KernelRun run_kernel(const LoadedPlugin& p, const OpenDevice& device, OnyxKernel* kernel,
                     const std::vector<KernelInput>& inputs, size_t output_count, const KernelRunOptions& options);
// The same with the default options, for the outputs alone.
std::vector<HostTensor> run_kernel(const LoadedPlugin& p, const OpenDevice& device, OnyxKernel* kernel,
                                   const std::vector<KernelInput>& inputs, size_t output_count);

}  // namespace onyx::conformance
