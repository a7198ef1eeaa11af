// gpu_provider.cpp: the provider shared by the CUDA and ROCm plugins, as
// hooks of the SDK's ProviderTable: availability probe, devices, device
// memory, streams, events and kernel creation. Vendor differences stay in
// gpu_vendor.h and in the vendor folder's VendorLibraries.
#include "gpu_provider.h"

#include <onyx/sdk/provider_table.hpp>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace onyx::gpu {

using sdk::make_status;

namespace {

// For destructors and release functions, which have no way to report.
void set_device_quietly(int index) { (void)gpuSetDevice(index); }

OnyxStatus* set_device(int index) {
  gpuError_t e = gpuSetDevice(index);
  return e == gpuSuccess ? nullptr : gpu_status(e, "selecting the device");
}

// Device memory the runtime freed, kept for its next allocation of the same
// size class: cudaMalloc costs tens of microseconds and cudaFree waits for
// the whole device, while a run allocates scratch (cuDNN workspaces) and
// outputs the plan could not place every time. The runtime frees a block
// only after every stream that used it has passed it (provider_api), so a
// cached block is idle. Emptied when an allocation fails and at close.
class BlockCache {
 public:
  // Sizes rounded up so that near sizes share blocks: to 512 bytes below
  // 1 MiB, to 1 MiB above (at most 1/2 of a small block and 1 MiB wasted).
  static size_t size_class(size_t bytes) {
    const size_t step = bytes < (size_t(1) << 20) ? 512 : (size_t(1) << 20);
    return (std::max<size_t>(bytes, 1) + step - 1) / step * step;
  }
  void* take(size_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(size);
    if (it == free_.end()) return nullptr;
    void* p = it->second;
    free_.erase(it);
    in_use_[p] = size;
    return p;
  }
  void track(void* p, size_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    in_use_[p] = size;
  }
  // Keeps `p` if this cache handed it out; false if it is not one of its.
  bool give_back(void* p) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = in_use_.find(p);
    if (it == in_use_.end()) return false;
    free_.emplace(it->second, p);
    in_use_.erase(it);
    return true;
  }
  // Frees every idle block (the caller selected the device).
  void release_idle() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [size, p] : free_) (void)gpuFree(p);
    free_.clear();
  }

 private:
  std::mutex mutex_;
  std::unordered_multimap<size_t, void*> free_;
  std::unordered_map<void*, size_t> in_use_;
};

// An opened device: its vendor libraries, its block cache, and the buffers
// aligned beyond the runtime's 256 bytes (aligned pointer -> the runtime's
// pointer, which memory_free must release).
struct OpenDevice {
  GpuDevice gpu;
  BlockCache blocks;
  // Device option exclude_ops=Op1,Op2: op types this device declines (as
  // ONNX Runtime's TensorRT provider's trt_op_types_to_exclude), to keep
  // an op on another device or the CPU, e.g. one slow or wrong on this GPU.
  std::set<std::string, std::less<>> excluded_ops;
  std::mutex over_aligned_mutex;
  std::unordered_map<void*, void*> over_aligned;
  ~OpenDevice() {
    set_device_quietly(gpu.index);
    blocks.release_idle();
    vendor_close(gpu.libs);
  }
};

// A stream, and the bad-input checks its kernels left for its next
// synchronization (launch_checked): each kernel's device flag is copied on
// the stream into a slot of pinned host memory, read once the stream is
// synchronized, so that a run does not wait for the device in mid-run.
struct GpuStream {
  GpuStream(int device_index, gpuStream_t s) : device(device_index), stream(s) {}
  int device;
  gpuStream_t stream;
  struct Check {
    int* slot;            // pinned host memory the flag lands in
    std::string message;  // the error when it was raised
  };
  std::mutex mutex;  // kernels of one run may launch from several threads
  std::vector<Check> pending;
  std::vector<int*> slots;  // pinned blocks of kSlotsPerBlock flags, kept for later runs
  static constexpr size_t kSlotsPerBlock = 256;

  ~GpuStream() {
    set_device_quietly(device);
    (void)gpuStreamDestroy(stream);
    for (int* block : slots) (void)gpuFreeHost(block);
  }
  // The slot for the next pending check (guarded by mutex).
  OnyxStatus* next_slot(int** out) {
    const size_t k = pending.size();
    if (k / kSlotsPerBlock >= slots.size()) {
      void* block = nullptr;
      gpuError_t e = gpuMallocHost(&block, kSlotsPerBlock * sizeof(int));
      if (e != gpuSuccess) return gpu_status(e, "allocating pinned memory for kernels' input checks");
      slots.push_back(static_cast<int*>(block));
    }
    *out = slots[k / kSlotsPerBlock] + k % kSlotsPerBlock;
    return nullptr;
  }
  // After a synchronization: the first raised check's message ("" when
  // none was raised); none pending after.
  std::string take_checks() {
    std::lock_guard<std::mutex> lock(mutex);
    std::string failed;
    for (const Check& c : pending)
      if (failed.empty() && *c.slot != 0) failed = c.message;
    pending.clear();
    return failed;
  }
};

struct GpuEvent {
  int device;
  gpuEvent_t event;
  ~GpuEvent() {
    set_device_quietly(device);
    (void)gpuEventDestroy(event);
  }
};

class GpuProvider {
 public:
  using Device = OpenDevice;
  using Stream = GpuStream;
  using Event = GpuEvent;

  GpuProvider() {
    probe();
    register_elementwise_kernels(registry_);
    register_nn_kernels(registry_);
    register_linalg_kernels(registry_);
    register_cnn_kernels(registry_);
    register_shape_kernels(registry_);
    register_scatter_kernels(registry_);
    register_training_kernels(registry_);
  }

  std::string availability() const { return unavailable_reason_; }
  size_t device_count() const { return size_t(device_count_); }

  sdk::StatusOr<sdk::DeviceDescription> describe_device(size_t index) const {
    gpuDeviceProp prop{};
    gpuError_t e = gpuGetDeviceProperties(&prop, int(index));
    if (e != gpuSuccess) return gpu_status(e, "reading device properties");
    sdk::DeviceDescription d;
    d.name = prop.name;
    d.vendor = ONYX_GPU_VENDOR;
    d.kind = ONYX_DEVICE_GPU;
    d.memory_bytes = prop.totalGlobalMem;
    d.host_can_read_device_memory = false;
    d.asynchronous = true;
    d.memory_alignment = 256;
    // The PCI bus id names the board whatever the enumeration order
    // (CUDA_VISIBLE_DEVICES, a GPU added). Without it the device has no
    // stable id ("") rather than a wrong one; likewise free memory is 0
    // (unknown) when the runtime cannot say.
    char bus_id[32] = {};
    if (gpuDeviceGetPCIBusId(bus_id, int(sizeof bus_id), int(index)) == gpuSuccess)
      d.stable_id = std::string(ONYX_GPU_STABLE_ID_PREFIX) + bus_id;
    else
      (void)gpuGetLastError();
    d.free_memory_bytes = free_memory(int(index));
    return d;
  }

  sdk::StatusOr<std::unique_ptr<Device>> open_device(size_t index, const sdk::DeviceOptions& options) const {
    ONYX_SDK_RETURN_IF_ERROR(set_device(int(index)));
    auto device = std::make_unique<Device>();
    device->gpu.index = int(index);
    if (auto ops = options.get("exclude_ops"))
      for (size_t start = 0; start <= ops->size();) {
        const size_t comma = std::min(ops->find(',', start), ops->size());
        if (comma > start) device->excluded_ops.emplace(ops->substr(start, comma - start));
        start = comma + 1;
      }
    std::string error = vendor_open(&device->gpu.libs);
    if (!error.empty()) return make_status(ONYX_STATUS_UNAVAILABLE, "%s", error.c_str());
    return device;
  }

  OnyxStatus* memory_alloc(Device& device, int32_t kind, size_t bytes, size_t alignment, void** out) const {
    ONYX_SDK_RETURN_IF_ERROR(set_device(device.gpu.index));
    // The runtime's allocations are 256-byte aligned; larger alignments get
    // padding and are remembered for memory_free.
    size_t padding = alignment > 256 ? alignment : 0;
    gpuError_t e = gpuSuccess;
    switch (kind) {
      case ONYX_MEMORY_DEVICE:
        if (!padding) {
          const size_t size = BlockCache::size_class(bytes);
          if ((*out = device.blocks.take(size))) return nullptr;
          e = gpuMalloc(out, size);
          if (e != gpuSuccess) {  // idle cached blocks may be what is missing
            (void)gpuGetLastError();
            device.blocks.release_idle();
            e = gpuMalloc(out, size);
          }
          if (e == gpuSuccess) device.blocks.track(*out, size);
        } else {
          e = gpuMalloc(out, bytes + padding);
        }
        break;
      case ONYX_MEMORY_HOST_PINNED: e = gpuMallocHost(out, bytes + padding); break;
      case ONYX_MEMORY_HOST: {
        size_t a = std::max<size_t>(alignment, 64);
        *out = std::aligned_alloc(a, (bytes + a - 1) / a * a);
        return *out ? nullptr : make_status(ONYX_STATUS_OUT_OF_MEMORY, "cannot allocate %zu host bytes", bytes);
      }
      default:
        return make_status(ONYX_STATUS_INVALID_ARGUMENT, "memory_alloc: unknown memory kind %d", kind);
    }
    if (e != gpuSuccess) {
      *out = nullptr;
      (void)gpuGetLastError();
      return make_status(ONYX_STATUS_OUT_OF_MEMORY, "cannot allocate %zu bytes of %s memory: %s", bytes,
                         kind == ONYX_MEMORY_DEVICE ? "device" : "pinned", gpuGetErrorString(e));
    }
    if (padding) {
      void* base = *out;
      *out = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(base) + alignment - 1) & ~(alignment - 1));
      std::lock_guard<std::mutex> lock(device.over_aligned_mutex);
      device.over_aligned[*out] = base;
    }
    return nullptr;
  }

  void memory_free(Device& device, int32_t kind, void* ptr) const {
    set_device_quietly(device.gpu.index);
    if (kind != ONYX_MEMORY_HOST) {
      std::lock_guard<std::mutex> lock(device.over_aligned_mutex);
      if (auto it = device.over_aligned.find(ptr); it != device.over_aligned.end()) {
        ptr = it->second;
        device.over_aligned.erase(it);
      }
    }
    // A failed free leaves nothing to undo.
    if (kind == ONYX_MEMORY_DEVICE && device.blocks.give_back(ptr)) return;
    if (kind == ONYX_MEMORY_DEVICE) (void)gpuFree(ptr);
    else if (kind == ONYX_MEMORY_HOST_PINNED) (void)gpuFreeHost(ptr);
    else std::free(ptr);
  }

  OnyxStatus* memory_copy(Device& device, Stream* stream, int32_t direction, void* dst, const void* src,
                          size_t bytes) const {
    auto kind = direction == ONYX_COPY_HOST_TO_DEVICE   ? gpuMemcpyHostToDevice
                : direction == ONYX_COPY_DEVICE_TO_HOST ? gpuMemcpyDeviceToHost
                                                        : gpuMemcpyDeviceToDevice;
    ONYX_SDK_RETURN_IF_ERROR(set_device(device.gpu.index));
    gpuError_t e = stream ? gpuMemcpyAsync(dst, src, bytes, kind, stream->stream) : gpuMemcpy(dst, src, bytes, kind);
    // Without a stream the copy must be complete on return, but cudaMemcpy
    // may return before the DMA of a pageable host-to-device or a
    // device-to-device copy is done, and the kernels' non-blocking streams
    // are not ordered after the default stream that ran it.
    if (e == gpuSuccess && !stream) e = gpuStreamSynchronize(nullptr);
    if (e == gpuSuccess) return nullptr;
    const std::string what = std::string("copying ") + std::to_string(bytes) + " bytes " +
                             (kind == gpuMemcpyHostToDevice   ? "host-to-device"
                              : kind == gpuMemcpyDeviceToHost ? "device-to-host"
                                                              : "device-to-device") +
                             " on device " + std::to_string(device.gpu.index);
    return gpu_status(e, what.c_str());
  }

  sdk::StatusOr<std::unique_ptr<Stream>> stream_create(Device& device) const {
    ONYX_SDK_RETURN_IF_ERROR(set_device(device.gpu.index));
    gpuStream_t stream = nullptr;
    gpuError_t e = gpuStreamCreateWithFlags(&stream, gpuStreamNonBlocking);
    if (e != gpuSuccess) return gpu_status(e, "creating a stream");
    return std::unique_ptr<Stream>(new Stream(device.gpu.index, stream));
  }
  OnyxStatus* stream_synchronize(Stream& s) const {
    gpuError_t e = gpuStreamSynchronize(s.stream);
    const std::string bad_input = s.take_checks();  // cleared even when the sync failed
    if (e != gpuSuccess) return gpu_status(e, "synchronizing a stream");
    return bad_input.empty() ? nullptr : make_status(ONYX_STATUS_INVALID_ARGUMENT, "%s", bad_input.c_str());
  }
  sdk::StatusOr<std::unique_ptr<Event>> event_create(Device& device) const {
    ONYX_SDK_RETURN_IF_ERROR(set_device(device.gpu.index));
    gpuEvent_t event = nullptr;
    gpuError_t e = gpuEventCreateWithFlags(&event, gpuEventDisableTiming);
    if (e != gpuSuccess) return gpu_status(e, "creating an event");
    return std::unique_ptr<Event>(new Event{device.gpu.index, event});
  }
  OnyxStatus* event_record(Event& ev, Stream* s) const {
    gpuError_t e = gpuEventRecord(ev.event, s ? s->stream : nullptr);
    return e == gpuSuccess ? nullptr : gpu_status(e, "recording an event");
  }
  OnyxStatus* stream_wait_event(Stream& s, Event& ev) const {
    gpuError_t e = gpuStreamWaitEvent(s.stream, ev.event, 0);
    return e == gpuSuccess ? nullptr : gpu_status(e, "making a stream wait for an event");
  }
  OnyxStatus* event_synchronize(Event& ev) const {
    gpuError_t e = gpuEventSynchronize(ev.event);
    return e == gpuSuccess ? nullptr : gpu_status(e, "waiting for an event");
  }

  const sdk::KernelRegistry& registry() const { return registry_; }

  // The registry's claims, less the op types the device was told to exclude.
  OnyxStatus* capability(Device& device, const OnyxGraphView& graph, std::span<OnyxNodeClaim> claims) const {
    registry_.claim(graph, claims);
    for (size_t k = 0; k < claims.size() && !device.excluded_ops.empty(); ++k) {
      const char* op = graph.nodes[k].op_type ? graph.nodes[k].op_type : "";
      if (!claims[k].claimed || !device.excluded_ops.count(std::string_view(op))) continue;
      claims[k].claimed = false;
      std::snprintf(claims[k].reason, sizeof claims[k].reason, "%s is excluded by the device option exclude_ops",
                    op);
    }
    return nullptr;
  }

  // The registry's kernel, told which device it runs on.
  sdk::KernelResult make_kernel(Device& device, const OnyxGraphView& graph, std::span<const uint32_t> nodes) const {
    if (nodes.size() != 1) return make_status(ONYX_STATUS_UNIMPLEMENTED, "this provider has no fused kernels");
    sdk::KernelResult made = registry_.create_kernel(graph, nodes[0]);
    if (!made.ok()) return made;
    auto* gpu_kernel = dynamic_cast<GpuKernel*>(made.value().get());
    if (!gpu_kernel)
      return make_status(ONYX_STATUS_INTERNAL, "node '%s': the factory made no GPU kernel",
                         graph.nodes[nodes[0]].name ? graph.nodes[nodes[0]].name : "");
    gpu_kernel->device = &device.gpu;
    return made;
  }

  // The current device is per host thread; runs may come from any thread.
  OnyxStatus* compute(Device& device, sdk::Kernel& kernel, sdk::ComputeContext& ctx) const {
    ONYX_SDK_RETURN_IF_ERROR(set_device(device.gpu.index));
    return kernel.compute(ctx);
  }

 private:
  // Free bytes of device `index` now; 0 when unknown. Asking selects the
  // device on this thread, as every hook does before its work.
  static uint64_t free_memory(int index) {
    size_t free = 0, total = 0;
    if (gpuSetDevice(index) != gpuSuccess || gpuMemGetInfo(&free, &total) != gpuSuccess) {
      (void)gpuGetLastError();
      return 0;
    }
    return free;
  }

  // Asks the runtime for devices. Without a driver or a GPU the runtime
  // answers with an error (e.g. CUDA 35, HIP 100); that error is the reason
  // we report.
  void probe() {
    int count = 0;
    gpuError_t e = gpuGetDeviceCount(&count);
    if (e != gpuSuccess) {
      unavailable_reason_ = std::string("no usable " ONYX_GPU_RUNTIME_NAME " device: " ONYX_GPU_DEVICE_COUNT_CALL
                                        " returned ") +
                            std::to_string(int(e)) + " (" + gpuGetErrorName(e) + "): " + gpuGetErrorString(e);
      (void)gpuGetLastError();  // clear the error state
      return;
    }
    if (count == 0) {
      unavailable_reason_ = "no " ONYX_GPU_RUNTIME_NAME " device found";
      return;
    }
    std::string libs = vendor_probe();
    if (!libs.empty()) {
      unavailable_reason_ = libs;
      return;
    }
    device_count_ = count;
  }

  sdk::KernelRegistry registry_;
  std::string unavailable_reason_;  // "" when usable; probed once at creation
  int device_count_ = 0;
};

using Table = sdk::ProviderTable<GpuProvider>;

}  // namespace

gpuStream_t kernel_stream(sdk::ComputeContext& ctx) {
  GpuStream* s = Table::stream_of(ctx.stream());
  return s ? s->stream : nullptr;
}

OnyxStatus* launch_checked(sdk::ComputeContext& ctx, const std::function<gpuError_t(gpuStream_t, int*)>& launch,
                           const char* what, std::string bad_input) {
  GpuStream* s = Table::stream_of(ctx.stream());
  gpuStream_t stream = s ? s->stream : nullptr;
  void* flag = nullptr;
  ONYX_SDK_RETURN_IF_ERROR(ctx.scratch(sizeof(int), &flag));
  gpuError_t e = gpuMemsetAsync(flag, 0, sizeof(int), stream);
  if (e == gpuSuccess) e = launch(stream, static_cast<int*>(flag));
  if (e != gpuSuccess) return gpu_status(e, what);
  if (s) {  // read when the run synchronizes the stream
    std::lock_guard<std::mutex> lock(s->mutex);
    int* slot = nullptr;
    ONYX_SDK_RETURN_IF_ERROR(s->next_slot(&slot));
    e = gpuMemcpyAsync(slot, flag, sizeof(int), gpuMemcpyDeviceToHost, stream);
    if (e != gpuSuccess) return gpu_status(e, what);
    s->pending.push_back({slot, std::move(bad_input)});
    return nullptr;
  }
  int value = 0;  // no stream: the device runs synchronously
  e = gpuMemcpy(&value, flag, sizeof value, gpuMemcpyDeviceToHost);
  if (e != gpuSuccess) return gpu_status(e, what);
  return value ? make_status(ONYX_STATUS_INVALID_ARGUMENT, "%s", bad_input.c_str()) : nullptr;
}

OnyxStatus* create_gpu_plugin(const OnyxPluginCreateArgs* args, OnyxPlugin** plugin, const OnyxProviderApi** api) {
  return Table::create(args, plugin, api);
}

}  // namespace onyx::gpu
