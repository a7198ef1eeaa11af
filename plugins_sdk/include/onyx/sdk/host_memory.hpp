// sdk/host_memory.hpp: providers whose device memory is host memory.
//
//   HostMemory: the memory hooks of ProviderTable for such a device (aligned
//     host allocations, copies by memmove); derive your provider from it.
//   HostMemoryProvider: a whole provider of that kind configured by value (a
//     name, an availability probe, a function filling the registry), for a
//     device that needs no code beyond its kernels; create_host_memory_provider
//     makes one.
#pragma once

#include <onyx_provider.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>

#include "host_meminfo.hpp"
#include "kernel_registry.hpp"
#include "provider_table.hpp"
#include "status.hpp"

namespace onyx::sdk {

struct HostMemory {
  // Every buffer is aligned to at least this (a cache line, and AVX-512).
  static constexpr size_t kAlignment = 64;

  // A synchronous CPU-like device whose memory the host reads directly: the
  // host's one memory, so its stable id is "cpu:0" and its free memory the
  // host's MemAvailable (host_meminfo.hpp).
  static DeviceDescription host_device(std::string name, std::string vendor) {
    DeviceDescription d;
    d.name = std::move(name);
    d.vendor = std::move(vendor);
    d.kind = ONYX_DEVICE_CPU;
    d.host_can_read_device_memory = true;
    d.asynchronous = false;
    d.memory_alignment = kAlignment;
    d.stable_id = "cpu:0";
    d.free_memory_bytes = available_host_memory_bytes();
    return d;
  }

  // Every memory kind is host memory here. ProviderTable has checked the
  // arguments (alignment a power of two, bytes > 0).
  template <typename Device>
  OnyxStatus* memory_alloc(Device&, int32_t, size_t bytes, size_t alignment, void** out) {
    alignment = std::max(alignment, kAlignment);
    *out = std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
    return *out ? nullptr : make_status(ONYX_STATUS_OUT_OF_MEMORY, "cannot allocate %zu bytes", bytes);
  }
  template <typename Device>
  void memory_free(Device&, int32_t, void* ptr) {
    std::free(ptr);
  }
  // Synchronous: a stream, if any, is ignored and the copy is done on return.
  template <typename Device, typename Stream>
  OnyxStatus* memory_copy(Device&, Stream*, int32_t, void* dst, const void* src, size_t bytes) {
    std::memmove(dst, src, bytes);
    return nullptr;
  }
};

struct HostMemoryProviderConfig {
  std::string device_name = "host";
  std::string vendor;
  // Probe for the device: "" when usable, else the reason it is unavailable.
  std::function<std::string()> availability;
  // Fills the registry at plugin creation.
  std::function<void(KernelRegistry&)> register_kernels;
};

class HostMemoryProvider : public HostMemory {
 public:
  explicit HostMemoryProvider(HostMemoryProviderConfig config) : config_(std::move(config)) {
    if (config_.register_kernels) config_.register_kernels(registry_);
  }
  std::string availability() const { return config_.availability ? config_.availability() : std::string(); }
  StatusOr<DeviceDescription> describe_device(size_t) const {
    return host_device(config_.device_name, config_.vendor);
  }
  const KernelRegistry& registry() const { return registry_; }

 private:
  HostMemoryProviderConfig config_;
  KernelRegistry registry_;
};

// The OnyxPluginEntry's create of a HostMemoryProvider.
inline OnyxStatus* create_host_memory_provider(const OnyxPluginCreateArgs* args, HostMemoryProviderConfig config,
                                               OnyxPlugin** plugin, const OnyxProviderApi** api) {
  return ProviderTable<HostMemoryProvider>::create(args, plugin, api, std::move(config));
}

}  // namespace onyx::sdk
