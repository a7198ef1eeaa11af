// sdk/host_memory_provider.hpp: HostMemoryProvider, a complete
// OnyxProviderApi for synchronous devices whose memory is host memory
// (CPU-like), driven by a KernelRegistry.
#pragma once

#include <onyx_provider.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>

#include "kernel_registry.hpp"
#include "node_info.hpp"
#include "status.hpp"

namespace onyx::sdk {

// ---------------------------------------------------------------------------
// HostMemoryProvider: a full provider table for synchronous host-memory devices
// ---------------------------------------------------------------------------

struct HostMemoryProviderConfig {
  const char* device_name = "host";
  const char* vendor = "";
  // Probe for the device: "" when usable, else the reason it is unavailable.
  std::function<std::string()> availability;
  // Fills the registry at plugin creation.
  std::function<void(KernelRegistry&)> register_kernels;
};

namespace detail {

struct Plugin {
  HostMemoryProviderConfig config;
  KernelRegistry registry;
};
struct Device {
  Plugin* plugin;
};
struct KernelBox {
  std::unique_ptr<Kernel> kernel;
};

inline Plugin* as_plugin(OnyxPlugin* p) { return reinterpret_cast<Plugin*>(p); }
inline Device* as_device(OnyxDevice* d) { return reinterpret_cast<Device*>(d); }

inline const OnyxProviderApi& host_memory_api() {
  static const OnyxProviderApi api = [] {
    OnyxProviderApi a{};
    a.struct_size = sizeof(OnyxProviderApi);
    a.plugin_destroy = [](OnyxPlugin* p) { delete as_plugin(p); };
    a.plugin_availability = [](OnyxPlugin* p) -> OnyxStatus* {
      return guard([&]() -> OnyxStatus* {
        auto& probe = as_plugin(p)->config.availability;
        std::string why = probe ? probe() : std::string();
        return why.empty() ? nullptr : make_status(ONYX_STATUS_UNAVAILABLE, "%s", why.c_str());
      });
    };
    a.device_count = [](OnyxPlugin* p) -> size_t {
      auto& probe = as_plugin(p)->config.availability;
      try {
        return probe && !probe().empty() ? 0 : 1;
      } catch (...) {
        return 0;
      }
    };
    a.device_properties = [](OnyxPlugin* p, size_t index, OnyxDeviceProperties* out) {
      return guard([&]() -> OnyxStatus* {
        if (!out || index != 0)
          return make_status(ONYX_STATUS_INVALID_ARGUMENT, "device index %zu out of range", index);
        size_t size = out->struct_size;
        std::memset(out, 0, size);
        out->struct_size = size;
        const auto& c = as_plugin(p)->config;
        std::snprintf(out->name, sizeof out->name, "%s", c.device_name);
        std::snprintf(out->vendor, sizeof out->vendor, "%s", c.vendor);
        out->kind = ONYX_DEVICE_CPU;
        out->host_can_read_device_memory = true;
        out->asynchronous = false;
        if (ONYX_HAS_FIELD(out, OnyxDeviceProperties, memory_alignment)) out->memory_alignment = 64;
        return nullptr;
      });
    };
    a.device_open = [](OnyxPlugin* p, size_t index, const OnyxKeyValue*, size_t,
                       const OnyxExtension*, OnyxDevice** out) {
      return guard([&]() -> OnyxStatus* {
        if (!out) return make_status(ONYX_STATUS_INVALID_ARGUMENT, "device_open: out is NULL");
        if (index != 0)
          return make_status(ONYX_STATUS_INVALID_ARGUMENT, "device index %zu out of range", index);
        *out = reinterpret_cast<OnyxDevice*>(new Device{as_plugin(p)});
        return nullptr;
      });
    };
    a.device_close = [](OnyxDevice* d) { delete as_device(d); };
    a.memory_alloc = [](OnyxDevice*, int32_t, size_t bytes, size_t alignment, void** out) {
      return guard([&]() -> OnyxStatus* {
        if (!out) return make_status(ONYX_STATUS_INVALID_ARGUMENT, "memory_alloc: out is NULL");
        if (alignment == 0 || (alignment & (alignment - 1)))
          return make_status(ONYX_STATUS_INVALID_ARGUMENT,
                             "memory_alloc: alignment %zu is not a power of two", alignment);
        *out = nullptr;
        if (bytes == 0) return nullptr;
        alignment = std::max<size_t>(alignment, 64);
        size_t rounded = (bytes + alignment - 1) / alignment * alignment;
        *out = std::aligned_alloc(alignment, rounded);
        return *out ? nullptr
                    : make_status(ONYX_STATUS_OUT_OF_MEMORY, "cannot allocate %zu bytes", bytes);
      });
    };
    a.memory_free = [](OnyxDevice*, int32_t, void* ptr) { std::free(ptr); };
    a.memory_copy = [](OnyxDevice*, OnyxStream*, int32_t direction, void* dst, const void* src,
                       size_t bytes) -> OnyxStatus* {
      return guard([&]() -> OnyxStatus* {
        if (direction < ONYX_COPY_HOST_TO_DEVICE || direction > ONYX_COPY_DEVICE_TO_DEVICE)
          return make_status(ONYX_STATUS_INVALID_ARGUMENT, "memory_copy: bad direction %d",
                             direction);
        if (bytes && (!dst || !src))
          return make_status(ONYX_STATUS_INVALID_ARGUMENT, "memory_copy: NULL buffer");
        if (bytes) std::memmove(dst, src, bytes);
        return nullptr;
      });
    };
    a.get_capability = [](OnyxDevice* d, const OnyxGraphView* graph, OnyxNodeClaim* claims) {
      return guard([&]() -> OnyxStatus* {
        if (!graph || !claims)
          return make_status(ONYX_STATUS_INVALID_ARGUMENT, "get_capability: NULL argument");
        for (size_t k = 0; k < graph->node_count; ++k) {
          NodeInfo node(*graph, uint32_t(k), Constants::kBorrow);
          std::string reason;
          claims[k].claimed = as_device(d)->plugin->registry.find(node, &reason) != nullptr;
          claims[k].fused_group = 0;
          std::snprintf(claims[k].reason, sizeof claims[k].reason, "%s", reason.c_str());
        }
        return nullptr;
      });
    };
    a.kernel_create = [](OnyxDevice* d, const OnyxGraphView* graph, const uint32_t* nodes,
                         size_t node_count, OnyxKernel** out) {
      return guard([&]() -> OnyxStatus* {
        if (!graph || !nodes || !out)
          return make_status(ONYX_STATUS_INVALID_ARGUMENT, "kernel_create: NULL argument");
        if (node_count != 1)
          return make_status(ONYX_STATUS_UNIMPLEMENTED, "this provider has no fused kernels");
        if (nodes[0] >= graph->node_count)
          return make_status(ONYX_STATUS_INVALID_ARGUMENT, "kernel_create: node %u out of range",
                             nodes[0]);
        NodeInfo node(*graph, nodes[0]);
        std::string reason;
        const KernelDef* def = as_device(d)->plugin->registry.find(node, &reason);
        if (!def)
          return make_status(ONYX_STATUS_UNIMPLEMENTED, "node '%s': %s", node.name.c_str(),
                             reason.c_str());
        KernelResult kernel = def->create(node);
        if (!kernel.ok()) return kernel.release_status();
        if (!kernel.value())
          return make_status(ONYX_STATUS_INTERNAL,
                             "node '%s': kernel creation failed (the factory returned no kernel and no status)",
                             node.name.c_str());
        *out = reinterpret_cast<OnyxKernel*>(new KernelBox{std::move(kernel.value())});
        return nullptr;
      });
    };
    a.kernel_destroy = [](OnyxKernel* k) { delete reinterpret_cast<KernelBox*>(k); };
    a.kernel_output_memory = [](OnyxKernel* k, OnyxOutputMemoryInfo* out, size_t count) {
      return guard([&]() -> OnyxStatus* {
        reinterpret_cast<KernelBox*>(k)->kernel->output_memory({out, count});
        return nullptr;
      });
    };
    a.kernel_compute = [](OnyxKernel* k, OnyxComputeContext* raw) {
      return guard([&]() -> OnyxStatus* {
        ComputeContext ctx(raw);
        return reinterpret_cast<KernelBox*>(k)->kernel->compute(ctx);
      });
    };
    a.query_extension = [](OnyxPlugin*, uint32_t) -> const void* { return nullptr; };
    return a;
  }();
  return api;
}

}  // namespace detail

// Creates a plugin from a config; use in the OnyxPluginEntry's create.
inline OnyxStatus* create_host_memory_provider(const OnyxPluginCreateArgs* args,
                                               HostMemoryProviderConfig config,
                                               OnyxPlugin** plugin, const OnyxProviderApi** api) {
  if (!args || !args->host || !plugin || !api) return nullptr;  // cannot even report
  set_host(args->host);
  return guard([&]() -> OnyxStatus* {
    auto p = std::make_unique<detail::Plugin>();
    p->config = std::move(config);
    if (p->config.register_kernels) p->config.register_kernels(p->registry);
    *plugin = reinterpret_cast<OnyxPlugin*>(p.release());
    *api = &detail::host_memory_api();
    return nullptr;
  });
}

}  // namespace onyx::sdk
