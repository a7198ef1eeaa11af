// host_runtime.h: a stand-in for the CUDA/HIP runtime, for testing only.
// With ONYX_GPU_HOST_EMULATION, gpu_vendor.h takes the gpu* names from here:
// "device memory" is host memory the provider still declares non-host-readable
// (so the session inserts and performs real copies through memory_copy), and
// kernels_host.cpp runs the kernels' math on the host. This lets the
// conformance suite check the GPU providers' op code (shapes, attributes,
// claims, broadcasting) on machines without a GPU.
//
// Two devices ("EMU:0", "EMU:1"), each with its own memory accounting
// (kEmulatedDeviceMemory bytes), so sessions on two devices of one provider
// run here. Device memory is tracked per device (memory.cpp): a copy given a
// device pointer the current device did not allocate, or a host pointer that
// is some device's memory, is refused (gpuErrorInvalidDevicePointer), as a
// real GPU would fault; that is how copies between devices done by the wrong
// device are caught on a machine without a GPU.
//
// Streams are asynchronous in the strictest way (stream.cpp): work enqueued
// on a stream is deferred until something waits for it (a stream or event
// synchronization, a stream waiting for an event of this one, a free), so a
// host that reads a copy's result or frees a buffer before synchronizing
// sees stale bytes deterministically instead of by chance. Work on the null
// stream runs at once. gpuFree waits for every stream first, as cudaFree
// does (implicitly synchronizing the device), and counts a device sync.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <cstdlib>
#include <cstring>

#define ONYX_GPU_PROVIDER_NAME "gpuemu"
#define ONYX_GPU_VENDOR "Onyx (GPU kernels emulated on the host, for tests)"
#define ONYX_GPU_RUNTIME_NAME "emulated GPU"
#define ONYX_GPU_DEVICE_COUNT_CALL "gpuGetDeviceCount"
#define ONYX_GPU_STABLE_ID_PREFIX ""  // gpuDeviceGetPCIBusId gives "EMU:<n>"

// What the emulated device did, read by tests through onyx_gpuemu_stats
// (stats.cpp), in this order.
enum EmulationCounter {
  kCopiesHostToDevice, kCopiesDeviceToHost, kCopiesDeviceToDevice,
  kKernelsOnStream, kKernelsWithoutStream, kStreamSyncs, kEventSyncs, kStreamsCreated, kDeviceSyncs,
  kKernelsOnDevice0, kKernelsOnDevice1,  // kernel launches by the current device
  kEmulationCounters
};
inline std::atomic<uint64_t> g_emulation_stats[kEmulationCounters];
inline void emulation_count(EmulationCounter c) { g_emulation_stats[c].fetch_add(1, std::memory_order_relaxed); }

struct EmulatedStream;  // stream.cpp
struct EmulatedEvent;
using gpuError_t = int;
using gpuStream_t = EmulatedStream*;
using gpuEvent_t = EmulatedEvent*;
constexpr gpuError_t gpuSuccess = 0;
constexpr gpuError_t gpuErrorInvalidDevice = 1;
constexpr gpuError_t gpuErrorMemoryAllocation = 2;
constexpr gpuError_t gpuErrorInvalidDevicePointer = 3;
constexpr gpuError_t gpuErrorInvalidValue = 4;
struct gpuDeviceProp {
  char name[256];
  size_t totalGlobalMem;
};
enum gpuMemcpyKind { gpuMemcpyHostToDevice, gpuMemcpyDeviceToHost, gpuMemcpyDeviceToDevice };
constexpr unsigned gpuStreamNonBlocking = 1, gpuEventDisableTiming = 2;

constexpr int kEmulatedDevices = 2;
constexpr size_t kEmulatedDeviceMemory = size_t(8) << 30;  // per device

inline gpuError_t gpuGetDeviceCount(int* count) {
  *count = kEmulatedDevices;
  return gpuSuccess;
}
inline gpuError_t gpuGetDeviceProperties(gpuDeviceProp* prop, int device) {
  if (device < 0 || device >= kEmulatedDevices) return gpuErrorInvalidDevice;
  std::strcpy(prop->name, "host emulation");
  prop->totalGlobalMem = kEmulatedDeviceMemory;
  return gpuSuccess;
}
inline const char* gpuGetErrorString(gpuError_t e) {
  switch (e) {
    case gpuSuccess: return "no error";
    case gpuErrorInvalidDevice: return "invalid device ordinal";
    case gpuErrorMemoryAllocation: return "out of memory";
    case gpuErrorInvalidDevicePointer:
      return "a device pointer of the copy is not memory of the current device (or a host pointer is device "
             "memory)";
    default: return "emulated error";
  }
}
inline const char* gpuGetErrorName(gpuError_t e) {
  return e == gpuSuccess ? "gpuSuccess" : e == gpuErrorInvalidDevicePointer ? "gpuErrorInvalidDevicePointer"
                                                                             : "gpuErrorEmulated";
}
inline gpuError_t gpuGetLastError() { return gpuSuccess; }
// The calling thread's current device, as the CUDA runtime keeps it.
inline thread_local int g_emulated_current_device = 0;
inline gpuError_t gpuSetDevice(int device) {
  if (device < 0 || device >= kEmulatedDevices) return gpuErrorInvalidDevice;
  g_emulated_current_device = device;
  return gpuSuccess;
}
// memory.cpp: allocations on the current device, counted against its memory.
gpuError_t gpuMalloc(void** p, size_t bytes);
void emulation_forget(void* p);  // gpuFree's bookkeeping: the block is no device's any more
gpuError_t gpuMemGetInfo(size_t* free, size_t* total);
gpuError_t gpuDeviceGetPCIBusId(char* id, int length, int device);
// Whether [p, p + bytes) lies in one allocation of the current device
// (device side of a copy), or in no device's memory (host side).
bool emulation_device_memory(const void* p, size_t bytes);
bool emulation_host_memory(const void* p);
inline bool emulation_side_allowed(const void* p, size_t extent, bool device_side) {
  return extent == 0 || (device_side ? emulation_device_memory(p, extent) : emulation_host_memory(p));
}
// The pointers of a copy of `kind`, `dst_extent` and `src_extent` bytes from them.
inline bool emulation_copy_allowed(void* dst, size_t dst_extent, const void* src, size_t src_extent,
                                   gpuMemcpyKind kind) {
  return emulation_side_allowed(dst, dst_extent, kind != gpuMemcpyDeviceToHost) &&
         emulation_side_allowed(src, src_extent, kind != gpuMemcpyHostToDevice);
}
// Runs `work` now (null stream) or when the stream is waited for.
void emulation_enqueue(gpuStream_t stream, std::function<void()> work);
// A kernel launch: counted by stream and by device, then enqueue.
inline gpuError_t emulation_launch(gpuStream_t stream, std::function<void()> work) {
  emulation_count(stream ? kKernelsOnStream : kKernelsWithoutStream);
  emulation_count(EmulationCounter(kKernelsOnDevice0 + g_emulated_current_device));
  emulation_enqueue(stream, std::move(work));
  return gpuSuccess;
}

gpuError_t gpuFree(void* p);
// Pinned host memory is host memory: not counted, not a device's.
inline gpuError_t gpuMallocHost(void** p, size_t bytes) {
  *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  return *p ? gpuSuccess : gpuErrorMemoryAllocation;
}
inline gpuError_t gpuFreeHost(void* p) {
  std::free(p);
  return gpuSuccess;
}
inline void count_copy(gpuMemcpyKind kind) {
  emulation_count(kind == gpuMemcpyHostToDevice   ? kCopiesHostToDevice
        : kind == gpuMemcpyDeviceToHost ? kCopiesDeviceToHost
                                        : kCopiesDeviceToDevice);
}
inline gpuError_t gpuMemcpyAsync(void* dst, const void* src, size_t bytes, gpuMemcpyKind kind, gpuStream_t stream) {
  if (!emulation_copy_allowed(dst, bytes, src, bytes, kind)) return gpuErrorInvalidDevicePointer;
  count_copy(kind);
  emulation_enqueue(stream, [=] { std::memmove(dst, src, bytes); });
  return gpuSuccess;
}
inline gpuError_t gpuMemcpy(void* dst, const void* src, size_t bytes, gpuMemcpyKind kind) {
  return gpuMemcpyAsync(dst, src, bytes, kind, nullptr);
}
inline gpuError_t gpuMemcpy2DAsync(void* dst, size_t dst_pitch, const void* src, size_t src_pitch,
                                   size_t width, size_t height, gpuMemcpyKind kind, gpuStream_t stream) {
  if (height > 0 && !emulation_copy_allowed(dst, (height - 1) * dst_pitch + width, src,
                                            (height - 1) * src_pitch + width, kind))
    return gpuErrorInvalidDevicePointer;
  count_copy(kind);
  emulation_enqueue(stream, [=] {
    for (size_t r = 0; r < height; ++r)
      std::memmove(static_cast<char*>(dst) + r * dst_pitch, static_cast<const char*>(src) + r * src_pitch, width);
  });
  return gpuSuccess;
}
inline gpuError_t gpuMemsetAsync(void* p, int value, size_t bytes, gpuStream_t stream) {
  emulation_enqueue(stream, [=] { std::memset(p, value, bytes); });
  return gpuSuccess;
}
gpuError_t gpuStreamCreateWithFlags(gpuStream_t* s, unsigned flags);
gpuError_t gpuStreamDestroy(gpuStream_t s);
gpuError_t gpuStreamSynchronize(gpuStream_t s);
gpuError_t gpuStreamWaitEvent(gpuStream_t s, gpuEvent_t e, unsigned flags);
gpuError_t gpuEventCreateWithFlags(gpuEvent_t* e, unsigned flags);
gpuError_t gpuEventRecord(gpuEvent_t e, gpuStream_t s);
gpuError_t gpuEventSynchronize(gpuEvent_t e);
gpuError_t gpuEventDestroy(gpuEvent_t e);
