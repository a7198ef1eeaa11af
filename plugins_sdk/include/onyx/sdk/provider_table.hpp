// sdk/provider_table.hpp: ProviderTable<Impl>, the one OnyxProviderApi of
// every SDK-built provider. It generates each ABI function once as a static
// noexcept trampoline (the idea of PJRT's CreatePjrtApi and ONNX Runtime's
// `static *Impl(...) noexcept`): it checks the arguments the ABI lets a host
// get wrong, installs the plugin's host as the calling host (status.hpp),
// turns C++ exceptions into statuses, and calls the provider's hooks, plain
// C++ member functions of Impl.
//
// Hooks of Impl ([opt] = optional, with the default said):
//   std::string availability()                        [opt] "" = usable, else why not
//   size_t device_count()                             [opt] 1 when available, else 0
//   StatusOr<DeviceDescription> describe_device(size_t index)
//                                                     per device: its stable_id and free
//                                                     memory too (ABI 1.3; the table writes
//                                                     only the fields the caller's struct has)
//   using Device = ...;                               [opt] NoDeviceState
//   StatusOr<std::unique_ptr<Device>> open_device(size_t index, const DeviceOptions&)
//                                                     [opt] a default-constructed Device
//   memory: memory_alloc / memory_free / memory_copy  (HostMemory has them for host memory)
//   streams [opt, all or none]: using Stream = ...; using Event = ...;
//     stream_create, stream_synchronize, event_create, event_record,
//     stream_wait_event, event_synchronize (signatures below); destroying
//     is the Stream's and Event's destructor
//   const Registry& registry()                        a Basic KernelRegistry, used by the defaults
//   OnyxStatus* capability(Device&, const OnyxGraphView&, std::span<OnyxNodeClaim>)
//                                                     [opt] registry().claim(...): per node
//   OnyxStatus* fuse(Device&, const OnyxGraphView&, std::span<OnyxNodeClaim>)
//                                                     [opt] runs after capability: set fused_group
//   KernelResult make_kernel(Device&, const OnyxGraphView&, std::span<const uint32_t> nodes)
//                                                     [opt] registry().create_kernel for one node;
//                                                     fused groups UNIMPLEMENTED
//   OnyxStatus* compute(Device&, Kernel&, ComputeContext&) [opt] kernel.compute(ctx)
//   const void* query_extension(uint32_t type)       [opt] nullptr
//   compiled-partition cache (ABI 1.2, kernel_cache.hpp) [opt]:
//     KernelResult make_kernel_from_cache(Device&, const OnyxGraphView&,
//         std::span<const uint32_t> nodes, BlobReader&)  present: the table gets
//                                                     the three cache entries, and
//                                                     kernel_serialize calls Kernel::serialize
//     std::string cache_compatibility(Device&)        [opt] "", asked once per device_open
// Hooks run inside an ABI call, so make_status works in them. They must be
// as thread-safe as the ABI function that calls them (onyx_provider.h).
//
// Use: the plugin's one exported symbol, for a default-constructible Impl:
//   const OnyxPluginEntry kEntry = sdk::plugin_entry<MyProvider>("myname", "1.0");
//   extern "C" ONYX_DEFINE_PLUGIN_ENTRY(&kEntry)
// or, from your own entry's create (e.g. to pass constructor arguments),
//   return sdk::ProviderTable<MyProvider>::create(args, plugin, api, <MyProvider's ctor args>);
#pragma once

#include <onyx_provider.h>

#include <concepts>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "compute_context.hpp"
#include "kernel_cache.hpp"
#include "kernel_registry.hpp"
#include "status.hpp"

namespace onyx::sdk {

// What describe_device says about a device (OnyxDeviceProperties).
struct DeviceDescription {
  std::string name;
  std::string vendor;
  OnyxDeviceKind kind = ONYX_DEVICE_CPU;
  uint64_t memory_bytes = 0;                 // 0 when unknown
  bool host_can_read_device_memory = true;   // device memory is plain host memory
  bool asynchronous = false;                 // kernels run on streams
  uint32_t memory_alignment = 64;
  // ABI 1.3, written only where the caller's struct_size covers them:
  std::string stable_id;           // "PCI:0000:3b:00.0", a UUID, "cpu:0"; "" = none (at most 63 bytes)
  uint64_t free_memory_bytes = 0;  // free now; 0 when unknown
};

// The options given to device_open ("threads=2"). Valid during open_device.
class DeviceOptions {
 public:
  DeviceOptions(const OnyxKeyValue* options, size_t count) : options_(options, options ? count : 0) {}
  // The value of `key` (the last one given), or nullopt.
  std::optional<std::string_view> get(std::string_view key) const {
    std::optional<std::string_view> value;
    for (const OnyxKeyValue& kv : options_)
      if (kv.key && key == kv.key) value = kv.value ? kv.value : "";
    return value;
  }
  // True when `key` is "1" or "true".
  bool flag(std::string_view key) const {
    auto v = get(key);
    return v && (*v == "1" || *v == "true");
  }

 private:
  std::span<const OnyxKeyValue> options_;
};

// The Device of a provider whose opened device holds no state.
struct NoDeviceState {};

namespace detail {
template <typename Impl>
struct DeviceOf {
  using type = NoDeviceState;
};
template <typename Impl>
  requires requires { typename Impl::Device; }
struct DeviceOf<Impl> {
  using type = typename Impl::Device;
};
template <typename Impl>
concept HasStreams = requires {
  typename Impl::Stream;
  typename Impl::Event;
};
template <typename Impl>
struct StreamOf {
  using type = void;
  using event = void;
};
template <HasStreams Impl>
struct StreamOf<Impl> {
  using type = typename Impl::Stream;
  using event = typename Impl::Event;
};
}  // namespace detail

template <typename Impl>
class ProviderTable {
 public:
  using Device = typename detail::DeviceOf<Impl>::type;
  using Stream = typename detail::StreamOf<Impl>::type;  // void without streams
  using Event = typename detail::StreamOf<Impl>::event;
  static constexpr bool kHasStreams = detail::HasStreams<Impl>;
  static constexpr bool kCachesKernels =
      requires(Impl& impl, Device& device, const OnyxGraphView& graph, std::span<const uint32_t> nodes,
               BlobReader& blob) {
        { impl.make_kernel_from_cache(device, graph, nodes, blob) } -> std::convertible_to<KernelResult>;
      };

  // Creates the plugin: an Impl built from `impl_args` inside a plugin object
  // that keeps a copy of the host's table, and the table of this provider.
  // Invalid arguments get a status; only without a host table (args or
  // args->host NULL) nothing can be reported: *plugin and *api stay NULL and
  // the host sees that no plugin was created.
  template <typename... ImplArgs>
  static OnyxStatus* create(const OnyxPluginCreateArgs* args, OnyxPlugin** plugin,
                            const OnyxProviderApi** api, ImplArgs&&... impl_args) noexcept {
    if (plugin) *plugin = nullptr;
    if (api) *api = nullptr;
    if (!args || !args->host || !args->host->status_create) return nullptr;
    CallingHostScope scope(args->host);
    if (!plugin || !api) return make_status(ONYX_STATUS_INVALID_ARGUMENT, "create: plugin or api is NULL");
    return guard([&]() -> OnyxStatus* {
      auto box = std::make_unique<PluginBox>(*args->host, std::forward<ImplArgs>(impl_args)...);
      *plugin = reinterpret_cast<OnyxPlugin*>(box.release());
      *api = &table();
      return nullptr;
    });
  }

  // The provider's stream behind a handle the host passes back
  // (ComputeContext::stream()); nullptr for NULL.
  static Stream* stream_of(OnyxStream* s)
    requires kHasStreams
  {
    return s ? reinterpret_cast<StreamBox*>(s)->stream.get() : nullptr;
  }

  static const OnyxProviderApi& table() {
    static const OnyxProviderApi api = [] {
      OnyxProviderApi a{};
      a.struct_size = sizeof(OnyxProviderApi);
      a.plugin_destroy = plugin_destroy;
      a.plugin_availability = plugin_availability;
      a.device_count = device_count;
      a.device_properties = device_properties;
      a.device_open = device_open;
      a.device_close = device_close;
      a.memory_alloc = memory_alloc;
      a.memory_free = memory_free;
      a.memory_copy = memory_copy;
      if constexpr (kHasStreams) {
        a.stream_create = stream_create;
        a.stream_destroy = stream_destroy;
        a.stream_synchronize = stream_synchronize;
        a.event_create = event_create;
        a.event_destroy = event_destroy;
        a.event_record = event_record;
        a.stream_wait_event = stream_wait_event;
        a.event_synchronize = event_synchronize;
      }
      a.get_capability = get_capability;
      a.kernel_create = kernel_create;
      a.kernel_destroy = kernel_destroy;
      a.kernel_output_memory = kernel_output_memory;
      a.kernel_compute = kernel_compute;
      a.query_extension = query_extension;
      if constexpr (kCachesKernels) {
        a.device_cache_compatibility = device_cache_compatibility;
        a.kernel_serialize = kernel_serialize;
        a.kernel_create_from_cache = kernel_create_from_cache;
      }
      return a;
    }();
    return api;
  }

 private:
  struct PluginBox {
    template <typename... A>
    explicit PluginBox(const OnyxHostApi& h, A&&... a) : host(copy_host_table(h)), impl(std::forward<A>(a)...) {}
    OnyxHostApi host;  // declared before impl: alive while impl is destroyed
    Impl impl;
  };
  struct DeviceBox {
    PluginBox* plugin;
    std::unique_ptr<Device> device;
    std::string cache_compatibility;  // device_cache_compatibility's answer, fixed at device_open
  };
  struct StreamBox {
    DeviceBox* device;
    std::unique_ptr<std::conditional_t<kHasStreams, Stream, int>> stream;
  };
  struct EventBox {
    DeviceBox* device;
    std::unique_ptr<std::conditional_t<kHasStreams, Event, int>> event;
  };
  struct KernelBox {
    DeviceBox* device;
    std::unique_ptr<Kernel> kernel;
  };

  static PluginBox* as_plugin(OnyxPlugin* p) { return reinterpret_cast<PluginBox*>(p); }
  static DeviceBox* as_device(OnyxDevice* d) { return reinterpret_cast<DeviceBox*>(d); }
  static StreamBox* as_stream(OnyxStream* s) { return reinterpret_cast<StreamBox*>(s); }
  static EventBox* as_event(OnyxEvent* e) { return reinterpret_cast<EventBox*>(e); }
  static KernelBox* as_kernel(OnyxKernel* k) { return reinterpret_cast<KernelBox*>(k); }

  // Runs `fn` with the plugin's host as the calling host, exceptions turned
  // into statuses.
  template <typename Fn>
  static OnyxStatus* call(const PluginBox* plugin, Fn&& fn) noexcept {
    CallingHostScope scope(&plugin->host);
    return guard(std::forward<Fn>(fn));
  }

  static std::string availability_of(Impl& impl) {
    if constexpr (requires { impl.availability(); }) return impl.availability();
    else return {};
  }
  static size_t count_of(Impl& impl) {
    if constexpr (requires { impl.device_count(); }) return impl.device_count();
    else return availability_of(impl).empty() ? 1 : 0;
  }

  // --- plugin and devices ------------------------------------------------

  static void plugin_destroy(OnyxPlugin* p) noexcept {
    if (!p) return;
    CallingHostScope scope(&as_plugin(p)->host);
    delete as_plugin(p);
  }
  static OnyxStatus* plugin_availability(OnyxPlugin* p) noexcept {
    return call(as_plugin(p), [&]() -> OnyxStatus* {
      std::string why = availability_of(as_plugin(p)->impl);
      return why.empty() ? nullptr : make_status(ONYX_STATUS_UNAVAILABLE, "%s", why.c_str());
    });
  }
  static size_t device_count(OnyxPlugin* p) noexcept {
    CallingHostScope scope(&as_plugin(p)->host);
    try {
      return count_of(as_plugin(p)->impl);
    } catch (...) {
      return 0;  // a probe that throws finds no device
    }
  }
  static OnyxStatus* device_properties(OnyxPlugin* p, size_t index, OnyxDeviceProperties* out) noexcept {
    return call(as_plugin(p), [&]() -> OnyxStatus* {
      Impl& impl = as_plugin(p)->impl;
      if (!out) return make_status(ONYX_STATUS_INVALID_ARGUMENT, "device_properties: out is NULL");
      size_t count = count_of(impl);
      if (index >= count)
        return make_status(ONYX_STATUS_INVALID_ARGUMENT, "device index %zu out of range (%zu devices)", index,
                           count);
      // A 1.0 struct ends at memory_alignment; an older host's is never
      // smaller than what 1.0 fills unconditionally (name..asynchronous).
      size_t size = out->struct_size;
      if (size < ONYX_STRUCT_SIZE(OnyxDeviceProperties, asynchronous))
        return make_status(ONYX_STATUS_INVALID_ARGUMENT,
                           "device_properties: struct_size %zu is smaller than any ABI version's", size);
      StatusOr<DeviceDescription> d = impl.describe_device(index);
      if (!d.ok()) return d.release_status();
      std::memset(out, 0, size);
      out->struct_size = size;
      std::snprintf(out->name, sizeof out->name, "%s", d.value().name.c_str());
      std::snprintf(out->vendor, sizeof out->vendor, "%s", d.value().vendor.c_str());
      out->kind = d.value().kind;
      out->memory_bytes = d.value().memory_bytes;
      out->host_can_read_device_memory = d.value().host_can_read_device_memory;
      out->asynchronous = d.value().asynchronous;
      if (ONYX_HAS_FIELD(out, OnyxDeviceProperties, memory_alignment))
        out->memory_alignment = d.value().memory_alignment;
      if (ONYX_HAS_FIELD(out, OnyxDeviceProperties, stable_id))
        std::snprintf(out->stable_id, sizeof out->stable_id, "%s", d.value().stable_id.c_str());
      if (ONYX_HAS_FIELD(out, OnyxDeviceProperties, free_memory_bytes))
        out->free_memory_bytes = d.value().free_memory_bytes;
      return nullptr;
    });
  }
  static OnyxStatus* device_open(OnyxPlugin* p, size_t index, const OnyxKeyValue* options, size_t option_count,
                                 const OnyxExtension*, OnyxDevice** out) noexcept {
    return call(as_plugin(p), [&]() -> OnyxStatus* {
      Impl& impl = as_plugin(p)->impl;
      if (!out) return make_status(ONYX_STATUS_INVALID_ARGUMENT, "device_open: out is NULL");
      *out = nullptr;
      std::string why = availability_of(impl);
      if (!why.empty()) return make_status(ONYX_STATUS_UNAVAILABLE, "%s", why.c_str());
      size_t count = count_of(impl);
      if (index >= count)
        return make_status(ONYX_STATUS_INVALID_ARGUMENT, "device index %zu out of range (%zu devices)", index,
                           count);
      auto box = std::make_unique<DeviceBox>();
      box->plugin = as_plugin(p);
      if constexpr (requires { impl.open_device(index, std::declval<const DeviceOptions&>()); }) {
        StatusOr<std::unique_ptr<Device>> device = impl.open_device(index, DeviceOptions(options, option_count));
        if (!device.ok()) return device.release_status();
        box->device = std::move(device.value());
        if (!box->device) return make_status(ONYX_STATUS_INTERNAL, "device_open: the provider opened no device");
      } else {
        box->device = std::make_unique<Device>();
      }
      if constexpr (requires { impl.cache_compatibility(*box->device); })
        box->cache_compatibility = impl.cache_compatibility(*box->device);
      *out = reinterpret_cast<OnyxDevice*>(box.release());
      return nullptr;
    });
  }
  static void device_close(OnyxDevice* d) noexcept {
    if (!d) return;
    CallingHostScope scope(&as_device(d)->plugin->host);
    delete as_device(d);
  }

  // --- memory ---------------------------------------------------------------

  static OnyxStatus* memory_alloc(OnyxDevice* d, int32_t kind, size_t bytes, size_t alignment, void** out) noexcept {
    return call(as_device(d)->plugin, [&]() -> OnyxStatus* {
      if (!out) return make_status(ONYX_STATUS_INVALID_ARGUMENT, "memory_alloc: out is NULL");
      *out = nullptr;
      if (alignment == 0 || (alignment & (alignment - 1)))
        return make_status(ONYX_STATUS_INVALID_ARGUMENT, "memory_alloc: alignment %zu is not a power of two",
                           alignment);
      if (bytes == 0) return nullptr;
      return as_device(d)->plugin->impl.memory_alloc(*as_device(d)->device, kind, bytes, alignment, out);
    });
  }
  static void memory_free(OnyxDevice* d, int32_t kind, void* ptr) noexcept {
    if (!ptr) return;
    CallingHostScope scope(&as_device(d)->plugin->host);
    try {
      as_device(d)->plugin->impl.memory_free(*as_device(d)->device, kind, ptr);
    } catch (...) {
      // A release function cannot report; there is nothing left to undo.
    }
  }
  static OnyxStatus* memory_copy(OnyxDevice* d, OnyxStream* s, int32_t direction, void* dst, const void* src,
                                 size_t bytes) noexcept {
    return call(as_device(d)->plugin, [&]() -> OnyxStatus* {
      if (direction < ONYX_COPY_HOST_TO_DEVICE || direction > ONYX_COPY_DEVICE_TO_DEVICE)
        return make_status(ONYX_STATUS_INVALID_ARGUMENT, "memory_copy: bad direction %d", direction);
      if (bytes == 0) return nullptr;
      if (!dst || !src) return make_status(ONYX_STATUS_INVALID_ARGUMENT, "memory_copy: NULL buffer");
      Impl& impl = as_device(d)->plugin->impl;
      if constexpr (kHasStreams) return impl.memory_copy(*as_device(d)->device, stream_of(s), direction, dst, src, bytes);
      else return impl.memory_copy(*as_device(d)->device, static_cast<void*>(s), direction, dst, src, bytes);
    });
  }

  // --- streams and events (only when Impl has them) ------------------------

  static OnyxStatus* stream_create(OnyxDevice* d, OnyxStream** out) noexcept {
    return call(as_device(d)->plugin, [&]() -> OnyxStatus* {
      if (!out) return make_status(ONYX_STATUS_INVALID_ARGUMENT, "stream_create: out is NULL");
      *out = nullptr;
      auto made = as_device(d)->plugin->impl.stream_create(*as_device(d)->device);
      if (!made.ok()) return made.release_status();
      *out = reinterpret_cast<OnyxStream*>(new StreamBox{as_device(d), std::move(made.value())});
      return nullptr;
    });
  }
  static void stream_destroy(OnyxStream* s) noexcept {
    if (!s) return;
    CallingHostScope scope(&as_stream(s)->device->plugin->host);
    delete as_stream(s);
  }
  static OnyxStatus* stream_synchronize(OnyxStream* s) noexcept {
    if (!s) return nullptr;  // no stream: nothing is queued
    return call(as_stream(s)->device->plugin, [&]() -> OnyxStatus* {
      return as_stream(s)->device->plugin->impl.stream_synchronize(*as_stream(s)->stream);
    });
  }
  static OnyxStatus* event_create(OnyxDevice* d, OnyxEvent** out) noexcept {
    return call(as_device(d)->plugin, [&]() -> OnyxStatus* {
      if (!out) return make_status(ONYX_STATUS_INVALID_ARGUMENT, "event_create: out is NULL");
      *out = nullptr;
      auto made = as_device(d)->plugin->impl.event_create(*as_device(d)->device);
      if (!made.ok()) return made.release_status();
      *out = reinterpret_cast<OnyxEvent*>(new EventBox{as_device(d), std::move(made.value())});
      return nullptr;
    });
  }
  static void event_destroy(OnyxEvent* e) noexcept {
    if (!e) return;
    CallingHostScope scope(&as_event(e)->device->plugin->host);
    delete as_event(e);
  }
  static OnyxStatus* event_record(OnyxEvent* e, OnyxStream* s) noexcept {
    if (!e) return s ? call(as_stream(s)->device->plugin, null_event) : nullptr;
    return call(as_event(e)->device->plugin, [&]() -> OnyxStatus* {
      return as_event(e)->device->plugin->impl.event_record(*as_event(e)->event, stream_of(s));
    });
  }
  static OnyxStatus* stream_wait_event(OnyxStream* s, OnyxEvent* e) noexcept {
    if (!s || !e) return s ? call(as_stream(s)->device->plugin, null_event) : nullptr;
    return call(as_stream(s)->device->plugin, [&]() -> OnyxStatus* {
      return as_stream(s)->device->plugin->impl.stream_wait_event(*as_stream(s)->stream, *as_event(e)->event);
    });
  }
  // A NULL handle is reported through the other handle's host; with no
  // handle at all there is no host to report through.
  static OnyxStatus* null_event() { return make_status(ONYX_STATUS_INVALID_ARGUMENT, "event is NULL"); }
  static OnyxStatus* event_synchronize(OnyxEvent* e) noexcept {
    if (!e) return nullptr;
    return call(as_event(e)->device->plugin, [&]() -> OnyxStatus* {
      return as_event(e)->device->plugin->impl.event_synchronize(*as_event(e)->event);
    });
  }

  // --- capability and kernels -----------------------------------------------

  static OnyxStatus* get_capability(OnyxDevice* d, const OnyxGraphView* graph, OnyxNodeClaim* claims) noexcept {
    return call(as_device(d)->plugin, [&]() -> OnyxStatus* {
      if (!graph || (!claims && graph->node_count))
        return make_status(ONYX_STATUS_INVALID_ARGUMENT, "get_capability: NULL argument");
      Impl& impl = as_device(d)->plugin->impl;
      Device& device = *as_device(d)->device;
      std::span<OnyxNodeClaim> out(claims, graph->node_count);
      if constexpr (requires { impl.capability(device, *graph, out); }) {
        ONYX_SDK_RETURN_IF_ERROR(impl.capability(device, *graph, out));
      } else {
        impl.registry().claim(*graph, out);
      }
      if constexpr (requires { impl.fuse(device, *graph, out); }) ONYX_SDK_RETURN_IF_ERROR(impl.fuse(device, *graph, out));
      return nullptr;
    });
  }
  static OnyxStatus* kernel_create(OnyxDevice* d, const OnyxGraphView* graph, const uint32_t* nodes, size_t count,
                                   OnyxKernel** out) noexcept {
    return call(as_device(d)->plugin, [&]() -> OnyxStatus* {
      if (!graph || !nodes || !out || count == 0)
        return make_status(ONYX_STATUS_INVALID_ARGUMENT, "kernel_create: NULL or empty argument");
      *out = nullptr;
      for (size_t k = 0; k < count; ++k)
        if (nodes[k] >= graph->node_count)
          return make_status(ONYX_STATUS_INVALID_ARGUMENT, "kernel_create: node %u out of range", nodes[k]);
      Impl& impl = as_device(d)->plugin->impl;
      Device& device = *as_device(d)->device;
      std::span<const uint32_t> group(nodes, count);
      KernelResult made = nullptr;
      if constexpr (requires { impl.make_kernel(device, *graph, group); }) {
        made = impl.make_kernel(device, *graph, group);
      } else {
        if (count != 1) return make_status(ONYX_STATUS_UNIMPLEMENTED, "this provider has no fused kernels");
        if constexpr (std::is_void_v<typename std::decay_t<decltype(impl.registry())>::DeviceArg>)
          made = impl.registry().create_kernel(*graph, nodes[0]);
        else
          made = impl.registry().create_kernel(*graph, nodes[0], device);
      }
      if (!made.ok()) return made.release_status();
      if (!made.value())
        return make_status(ONYX_STATUS_INTERNAL,
                           "node '%s': kernel creation failed (the factory returned no kernel and no status)",
                           graph->nodes[nodes[0]].name ? graph->nodes[nodes[0]].name : "");
      *out = reinterpret_cast<OnyxKernel*>(new KernelBox{as_device(d), std::move(made.value())});
      return nullptr;
    });
  }
  static void kernel_destroy(OnyxKernel* k) noexcept {
    if (!k) return;
    CallingHostScope scope(&as_kernel(k)->device->plugin->host);
    delete as_kernel(k);
  }
  static OnyxStatus* kernel_output_memory(OnyxKernel* k, OnyxOutputMemoryInfo* out, size_t count) noexcept {
    return call(as_kernel(k)->device->plugin, [&]() -> OnyxStatus* {
      if (!out && count) return make_status(ONYX_STATUS_INVALID_ARGUMENT, "kernel_output_memory: out is NULL");
      as_kernel(k)->kernel->output_memory({out, count});
      return nullptr;
    });
  }
  static OnyxStatus* kernel_compute(OnyxKernel* k, OnyxComputeContext* raw) noexcept {
    KernelBox* box = as_kernel(k);
    return call(box->device->plugin, [&]() -> OnyxStatus* {
      ComputeContext ctx(box->device->plugin->host, raw);
      Impl& impl = box->device->plugin->impl;
      if constexpr (requires { impl.compute(*box->device->device, *box->kernel, ctx); })
        return impl.compute(*box->device->device, *box->kernel, ctx);
      else
        return box->kernel->compute(ctx);
    });
  }
  // --- compiled-partition cache (only when Impl has make_kernel_from_cache) ---

  static const char* device_cache_compatibility(OnyxDevice* d) noexcept {
    return d ? as_device(d)->cache_compatibility.c_str() : "";
  }
  static OnyxStatus* kernel_serialize(OnyxKernel* k, OnyxBlobWriteFn write, void* writer) noexcept {
    return call(as_kernel(k)->device->plugin, [&]() -> OnyxStatus* {
      if (!write) return make_status(ONYX_STATUS_INVALID_ARGUMENT, "kernel_serialize: write is NULL");
      BlobWriter out(write, writer);
      return as_kernel(k)->kernel->serialize(out);
    });
  }
  static OnyxStatus* kernel_create_from_cache(OnyxDevice* d, const OnyxGraphView* graph, const uint32_t* nodes,
                                              size_t count, const void* blob, size_t blob_size,
                                              OnyxKernel** out) noexcept {
    return call(as_device(d)->plugin, [&]() -> OnyxStatus* {
      if (!graph || !nodes || !out || count == 0 || (!blob && blob_size))
        return make_status(ONYX_STATUS_INVALID_ARGUMENT, "kernel_create_from_cache: NULL or empty argument");
      *out = nullptr;
      for (size_t k = 0; k < count; ++k)
        if (nodes[k] >= graph->node_count)
          return make_status(ONYX_STATUS_INVALID_ARGUMENT, "kernel_create_from_cache: node %u out of range",
                             nodes[k]);
      BlobReader reader({static_cast<const std::byte*>(blob), blob_size});
      KernelResult made =
          as_device(d)->plugin->impl.make_kernel_from_cache(*as_device(d)->device, *graph, {nodes, count}, reader);
      if (!made.ok()) return made.release_status();
      if (!made.value())
        return make_status(ONYX_STATUS_INTERNAL, "kernel_create_from_cache: the provider made no kernel and no status");
      *out = reinterpret_cast<OnyxKernel*>(new KernelBox{as_device(d), std::move(made.value())});
      return nullptr;
    });
  }

  static const void* query_extension(OnyxPlugin* p, uint32_t type) noexcept {
    if constexpr (requires(Impl& impl) { impl.query_extension(type); }) {
      CallingHostScope scope(&as_plugin(p)->host);
      try {
        return as_plugin(p)->impl.query_extension(type);
      } catch (...) {
        return nullptr;
      }
    } else {
      (void)p;
      (void)type;
      return nullptr;
    }
  }
};

// The static entry of a plugin whose provider is a default-constructible
// Impl: magic and struct size (so any host can read it), the ABI range this
// plugin speaks (1.0 up to the headers it was built with), its name (what
// applications ask for) and version, and ProviderTable<Impl>'s create.
template <typename Impl>
constexpr OnyxPluginEntry plugin_entry(const char* name, const char* version) {
  return OnyxPluginEntry{ONYX_PLUGIN_MAGIC,
                         sizeof(OnyxPluginEntry),
                         ONYX_ABI_VERSION(1, 0),
                         ONYX_ABI_VERSION(ONYX_ABI_VERSION_MAJOR, ONYX_ABI_VERSION_MINOR),
                         name,
                         version,
                         &ProviderTable<Impl>::template create<>};
}

}  // namespace onyx::sdk
