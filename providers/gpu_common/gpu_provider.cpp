// gpu_provider.cpp: the provider ABI table shared by the CUDA and ROCm
// plugins: availability probe, devices, device memory, streams, events,
// capability and kernels. Vendor differences stay in gpu_vendor.h and in the
// vendor folder's VendorLibraries.
#include "gpu_provider.h"

#include <cstdlib>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace onyx::gpu {

using sdk::guard;
using sdk::make_status;

namespace {

struct Plugin {
  sdk::KernelRegistry registry;
  std::string unavailable_reason;  // "" when usable; probed once at creation
  int device_count = 0;
};

struct Device {
  Plugin* plugin;
  GpuDevice gpu;
  // Buffers aligned beyond the runtime's 256 bytes: aligned pointer -> the
  // runtime's pointer, which memory_free must release.
  std::mutex over_aligned_mutex;
  std::unordered_map<void*, void*> over_aligned;
};

struct Stream {
  int device;
  gpuStream_t stream;
};

struct Event {
  int device;
  gpuEvent_t event;
};

struct KernelBox {
  std::unique_ptr<sdk::Kernel> kernel;
  GpuDevice* device;
};

Plugin* as_plugin(OnyxPlugin* p) { return reinterpret_cast<Plugin*>(p); }
Device* as_device(OnyxDevice* d) { return reinterpret_cast<Device*>(d); }
Stream* as_stream(OnyxStream* s) { return reinterpret_cast<Stream*>(s); }
Event* as_event(OnyxEvent* e) { return reinterpret_cast<Event*>(e); }

// Asks the runtime for devices. Without a driver or a GPU the runtime answers
// with an error (e.g. CUDA 35, HIP 100); that error is the reason we report.
void probe(Plugin& p) {
  int count = 0;
  gpuError_t e = gpuGetDeviceCount(&count);
  if (e != gpuSuccess) {
    p.unavailable_reason = std::string("no usable " ONYX_GPU_RUNTIME_NAME " device: "
                                       ONYX_GPU_DEVICE_COUNT_CALL " returned ") +
                           std::to_string(int(e)) + " (" + gpuGetErrorName(e) +
                           "): " + gpuGetErrorString(e);
    (void)gpuGetLastError();  // clear the error state
    return;
  }
  if (count == 0) {
    p.unavailable_reason = "no " ONYX_GPU_RUNTIME_NAME " device found";
    return;
  }
  std::string libs = vendor_probe();
  if (!libs.empty()) {
    p.unavailable_reason = libs;
    return;
  }
  p.device_count = count;
}

// For release functions, which have no way to report an error.
void set_device_quietly(int index) { (void)gpuSetDevice(index); }

OnyxStatus* set_device(int index) {
  gpuError_t e = gpuSetDevice(index);
  return e == gpuSuccess ? nullptr : gpu_status(e, "selecting the device");
}

OnyxStatus* device_properties(OnyxPlugin* p, size_t index, OnyxDeviceProperties* out) {
  return guard([&]() -> OnyxStatus* {
    if (!out) return make_status(ONYX_STATUS_INVALID_ARGUMENT, "device_properties: out is NULL");
    if (index >= size_t(as_plugin(p)->device_count))
      return make_status(ONYX_STATUS_INVALID_ARGUMENT, "device index %zu out of range (%d devices)",
                         index, as_plugin(p)->device_count);
    gpuDeviceProp prop{};
    gpuError_t e = gpuGetDeviceProperties(&prop, int(index));
    if (e != gpuSuccess) return gpu_status(e, "reading device properties");
    size_t size = out->struct_size;
    std::memset(out, 0, size);
    out->struct_size = size;
    // Device names fit easily; truncation at 127 characters is harmless.
    std::snprintf(out->name, sizeof out->name, "%.127s", prop.name);
    std::snprintf(out->vendor, sizeof out->vendor, "%s", ONYX_GPU_VENDOR);
    out->kind = ONYX_DEVICE_GPU;
    out->memory_bytes = prop.totalGlobalMem;
    out->host_can_read_device_memory = false;
    out->asynchronous = true;
    if (ONYX_HAS_FIELD(out, OnyxDeviceProperties, memory_alignment)) out->memory_alignment = 256;
    return nullptr;
  });
}

OnyxStatus* device_open(OnyxPlugin* p, size_t index, const OnyxKeyValue*, size_t,
                        const OnyxExtension*, OnyxDevice** out) {
  return guard([&]() -> OnyxStatus* {
    if (!out) return make_status(ONYX_STATUS_INVALID_ARGUMENT, "device_open: out is NULL");
    Plugin* plugin = as_plugin(p);
    if (!plugin->unavailable_reason.empty())
      return make_status(ONYX_STATUS_UNAVAILABLE, "%s", plugin->unavailable_reason.c_str());
    if (index >= size_t(plugin->device_count))
      return make_status(ONYX_STATUS_INVALID_ARGUMENT, "device index %zu out of range", index);
    ONYX_SDK_RETURN_IF_ERROR(set_device(int(index)));
    auto device = std::make_unique<Device>();
    device->plugin = plugin;
    device->gpu.index = int(index);
    std::string error = vendor_open(&device->gpu.libs);
    if (!error.empty()) return make_status(ONYX_STATUS_UNAVAILABLE, "%s", error.c_str());
    *out = reinterpret_cast<OnyxDevice*>(device.release());
    return nullptr;
  });
}

void device_close(OnyxDevice* d) {
  if (!d) return;
  set_device_quietly(as_device(d)->gpu.index);
  vendor_close(as_device(d)->gpu.libs);
  delete as_device(d);
}

OnyxStatus* memory_alloc(OnyxDevice* d, int32_t kind, size_t bytes, size_t alignment, void** out) {
  return guard([&]() -> OnyxStatus* {
    if (!out) return make_status(ONYX_STATUS_INVALID_ARGUMENT, "memory_alloc: out is NULL");
    if (alignment == 0 || (alignment & (alignment - 1)))
      return make_status(ONYX_STATUS_INVALID_ARGUMENT,
                         "memory_alloc: alignment %zu is not a power of two", alignment);
    *out = nullptr;
    if (bytes == 0) return nullptr;
    ONYX_SDK_RETURN_IF_ERROR(set_device(as_device(d)->gpu.index));
    // The runtime's allocations are 256-byte aligned; larger alignments get
    // padding and are remembered for memory_free.
    size_t padding = alignment > 256 ? alignment : 0;
    gpuError_t e = gpuSuccess;
    switch (kind) {
      case ONYX_MEMORY_DEVICE: e = gpuMalloc(out, bytes + padding); break;
      case ONYX_MEMORY_HOST_PINNED: e = gpuMallocHost(out, bytes + padding); break;
      case ONYX_MEMORY_HOST: {
        size_t a = std::max<size_t>(alignment, 64);
        *out = std::aligned_alloc(a, (bytes + a - 1) / a * a);
        return *out ? nullptr
                    : make_status(ONYX_STATUS_OUT_OF_MEMORY, "cannot allocate %zu host bytes", bytes);
      }
      default:
        return make_status(ONYX_STATUS_INVALID_ARGUMENT, "memory_alloc: unknown memory kind %d",
                           kind);
    }
    if (e != gpuSuccess) {
      *out = nullptr;
      (void)gpuGetLastError();
      return make_status(ONYX_STATUS_OUT_OF_MEMORY, "cannot allocate %zu bytes of %s memory: %s",
                         bytes, kind == ONYX_MEMORY_DEVICE ? "device" : "pinned",
                         gpuGetErrorString(e));
    }
    if (padding) {
      void* base = *out;
      *out = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(base) + alignment - 1) & ~(alignment - 1));
      Device* device = as_device(d);
      std::lock_guard<std::mutex> lock(device->over_aligned_mutex);
      device->over_aligned[*out] = base;
    }
    return nullptr;
  });
}

void memory_free(OnyxDevice* d, int32_t kind, void* ptr) {
  if (!ptr) return;
  set_device_quietly(as_device(d)->gpu.index);
  if (kind != ONYX_MEMORY_HOST) {
    Device* device = as_device(d);
    std::lock_guard<std::mutex> lock(device->over_aligned_mutex);
    if (auto it = device->over_aligned.find(ptr); it != device->over_aligned.end()) {
      ptr = it->second;
      device->over_aligned.erase(it);
    }
  }
  // Release functions cannot report errors; a failed free leaves nothing to undo.
  if (kind == ONYX_MEMORY_DEVICE) (void)gpuFree(ptr);
  else if (kind == ONYX_MEMORY_HOST_PINNED) (void)gpuFreeHost(ptr);
  else std::free(ptr);
}

OnyxStatus* memory_copy(OnyxDevice* d, OnyxStream* s, int32_t direction, void* dst,
                        const void* src, size_t bytes) {
  return guard([&]() -> OnyxStatus* {
    if (bytes == 0) return nullptr;
    if (!dst || !src) return make_status(ONYX_STATUS_INVALID_ARGUMENT, "memory_copy: NULL buffer");
    auto kind = gpuMemcpyDeviceToDevice;
    switch (direction) {
      case ONYX_COPY_HOST_TO_DEVICE: kind = gpuMemcpyHostToDevice; break;
      case ONYX_COPY_DEVICE_TO_HOST: kind = gpuMemcpyDeviceToHost; break;
      case ONYX_COPY_DEVICE_TO_DEVICE: break;
      default:
        return make_status(ONYX_STATUS_INVALID_ARGUMENT, "memory_copy: bad direction %d", direction);
    }
    ONYX_SDK_RETURN_IF_ERROR(set_device(as_device(d)->gpu.index));
    gpuError_t e = s ? gpuMemcpyAsync(dst, src, bytes, kind, as_stream(s)->stream)
                     : gpuMemcpy(dst, src, bytes, kind);
    return e == gpuSuccess ? nullptr : gpu_status(e, "copying memory");
  });
}

OnyxStatus* stream_create(OnyxDevice* d, OnyxStream** out) {
  return guard([&]() -> OnyxStatus* {
    if (!out) return make_status(ONYX_STATUS_INVALID_ARGUMENT, "stream_create: out is NULL");
    int index = as_device(d)->gpu.index;
    ONYX_SDK_RETURN_IF_ERROR(set_device(index));
    gpuStream_t stream = nullptr;
    gpuError_t e = gpuStreamCreateWithFlags(&stream, gpuStreamNonBlocking);
    if (e != gpuSuccess) return gpu_status(e, "creating a stream");
    *out = reinterpret_cast<OnyxStream*>(new Stream{index, stream});
    return nullptr;
  });
}

void stream_destroy(OnyxStream* s) {
  if (!s) return;
  set_device_quietly(as_stream(s)->device);
  (void)gpuStreamDestroy(as_stream(s)->stream);
  delete as_stream(s);
}

OnyxStatus* stream_synchronize(OnyxStream* s) {
  gpuError_t e = gpuStreamSynchronize(as_stream(s)->stream);
  return e == gpuSuccess ? nullptr : gpu_status(e, "synchronizing a stream");
}

OnyxStatus* event_create(OnyxDevice* d, OnyxEvent** out) {
  return guard([&]() -> OnyxStatus* {
    if (!out) return make_status(ONYX_STATUS_INVALID_ARGUMENT, "event_create: out is NULL");
    int index = as_device(d)->gpu.index;
    ONYX_SDK_RETURN_IF_ERROR(set_device(index));
    gpuEvent_t event = nullptr;
    gpuError_t e = gpuEventCreateWithFlags(&event, gpuEventDisableTiming);
    if (e != gpuSuccess) return gpu_status(e, "creating an event");
    *out = reinterpret_cast<OnyxEvent*>(new Event{index, event});
    return nullptr;
  });
}

void event_destroy(OnyxEvent* ev) {
  if (!ev) return;
  set_device_quietly(as_event(ev)->device);
  (void)gpuEventDestroy(as_event(ev)->event);
  delete as_event(ev);
}

OnyxStatus* event_record(OnyxEvent* ev, OnyxStream* s) {
  gpuError_t e = gpuEventRecord(as_event(ev)->event, s ? as_stream(s)->stream : nullptr);
  return e == gpuSuccess ? nullptr : gpu_status(e, "recording an event");
}

OnyxStatus* stream_wait_event(OnyxStream* s, OnyxEvent* ev) {
  gpuError_t e = gpuStreamWaitEvent(as_stream(s)->stream, as_event(ev)->event, 0);
  return e == gpuSuccess ? nullptr : gpu_status(e, "making a stream wait for an event");
}

OnyxStatus* event_synchronize(OnyxEvent* ev) {
  gpuError_t e = gpuEventSynchronize(as_event(ev)->event);
  return e == gpuSuccess ? nullptr : gpu_status(e, "waiting for an event");
}

OnyxStatus* get_capability(OnyxDevice* d, const OnyxGraphView* graph, OnyxNodeClaim* claims) {
  return guard([&]() -> OnyxStatus* {
    if (!graph || !claims)
      return make_status(ONYX_STATUS_INVALID_ARGUMENT, "get_capability: NULL argument");
    for (size_t k = 0; k < graph->node_count; ++k) {
      sdk::NodeInfo node(*graph, uint32_t(k), sdk::Constants::kBorrow);
      std::string reason;
      claims[k].claimed = as_device(d)->plugin->registry.find(node, &reason) != nullptr;
      claims[k].fused_group = 0;
      std::snprintf(claims[k].reason, sizeof claims[k].reason, "%s", reason.c_str());
    }
    return nullptr;
  });
}

OnyxStatus* kernel_create(OnyxDevice* d, const OnyxGraphView* graph, const uint32_t* nodes,
                          size_t node_count, OnyxKernel** out) {
  return guard([&]() -> OnyxStatus* {
    if (!graph || !nodes || !out)
      return make_status(ONYX_STATUS_INVALID_ARGUMENT, "kernel_create: NULL argument");
    if (node_count != 1)
      return make_status(ONYX_STATUS_UNIMPLEMENTED, "this provider has no fused kernels");
    if (nodes[0] >= graph->node_count)
      return make_status(ONYX_STATUS_INVALID_ARGUMENT, "kernel_create: node %u out of range",
                         nodes[0]);
    sdk::NodeInfo node(*graph, nodes[0]);
    std::string reason;
    const sdk::KernelDef* def = as_device(d)->plugin->registry.find(node, &reason);
    if (!def)
      return make_status(ONYX_STATUS_UNIMPLEMENTED, "node '%s': %s", node.name.c_str(),
                         reason.c_str());
    sdk::KernelResult created = def->create(node);
    if (!created.ok()) return created.release_status();
    std::unique_ptr<sdk::Kernel> kernel = std::move(created.value());
    auto* gpu_kernel = dynamic_cast<GpuKernel*>(kernel.get());
    if (!gpu_kernel)
      return make_status(ONYX_STATUS_INTERNAL, "node '%s': the factory made no GPU kernel",
                         node.name.c_str());
    gpu_kernel->device = &as_device(d)->gpu;
    *out = reinterpret_cast<OnyxKernel*>(new KernelBox{std::move(kernel), &as_device(d)->gpu});
    return nullptr;
  });
}

OnyxStatus* kernel_compute(OnyxKernel* k, OnyxComputeContext* raw) {
  return guard([&]() -> OnyxStatus* {
    auto* box = reinterpret_cast<KernelBox*>(k);
    // The current device is per host thread; runs may come from any thread.
    ONYX_SDK_RETURN_IF_ERROR(set_device(box->device->index));
    sdk::ComputeContext ctx(raw);
    return box->kernel->compute(ctx);
  });
}

const OnyxProviderApi& provider_api() {
  static const OnyxProviderApi api = [] {
    OnyxProviderApi a{};
    a.struct_size = sizeof(OnyxProviderApi);
    a.plugin_destroy = [](OnyxPlugin* p) { delete as_plugin(p); };
    a.plugin_availability = [](OnyxPlugin* p) -> OnyxStatus* {
      const std::string& why = as_plugin(p)->unavailable_reason;
      return why.empty() ? nullptr : make_status(ONYX_STATUS_UNAVAILABLE, "%s", why.c_str());
    };
    a.device_count = [](OnyxPlugin* p) -> size_t { return size_t(as_plugin(p)->device_count); };
    a.device_properties = device_properties;
    a.device_open = device_open;
    a.device_close = device_close;
    a.memory_alloc = memory_alloc;
    a.memory_free = memory_free;
    a.memory_copy = memory_copy;
    a.stream_create = stream_create;
    a.stream_destroy = stream_destroy;
    a.stream_synchronize = stream_synchronize;
    a.event_create = event_create;
    a.event_destroy = event_destroy;
    a.event_record = event_record;
    a.stream_wait_event = stream_wait_event;
    a.event_synchronize = event_synchronize;
    a.get_capability = get_capability;
    a.kernel_create = kernel_create;
    a.kernel_destroy = [](OnyxKernel* k) { delete reinterpret_cast<KernelBox*>(k); };
    a.kernel_output_memory = [](OnyxKernel* k, OnyxOutputMemoryInfo* out, size_t count) {
      return guard([&]() -> OnyxStatus* {
        reinterpret_cast<KernelBox*>(k)->kernel->output_memory({out, count});
        return nullptr;
      });
    };
    a.kernel_compute = kernel_compute;
    a.query_extension = [](OnyxPlugin*, uint32_t) -> const void* { return nullptr; };
    return a;
  }();
  return api;
}

}  // namespace

gpuStream_t kernel_stream(sdk::ComputeContext& ctx) {
  OnyxStream* s = ctx.stream();
  return s ? as_stream(s)->stream : nullptr;
}

OnyxStatus* create_gpu_plugin(const OnyxPluginCreateArgs* args, OnyxPlugin** plugin,
                              const OnyxProviderApi** api) {
  if (!args || !args->host || !plugin || !api) return nullptr;  // cannot even report
  sdk::set_host(args->host);
  return guard([&]() -> OnyxStatus* {
    auto p = std::make_unique<Plugin>();
    probe(*p);
    register_elementwise_kernels(p->registry);
    register_nn_kernels(p->registry);
    register_linalg_kernels(p->registry);
    register_cnn_kernels(p->registry);
    register_shape_kernels(p->registry);
    register_scatter_kernels(p->registry);
    *plugin = reinterpret_cast<OnyxPlugin*>(p.release());
    *api = &provider_api();
    return nullptr;
  });
}

}  // namespace onyx::gpu
