// host_runtime.h: a stand-in for the CUDA/HIP runtime, for testing only.
// With ONYX_GPU_HOST_EMULATION, gpu_vendor.h takes the gpu* names from here:
// "device memory" is host memory the provider still declares non-host-readable
// (so the session inserts and performs real copies through memory_copy), and
// kernels_host.cpp runs the kernels' math on the host. This lets the
// conformance suite check the GPU providers' op code (shapes, attributes,
// claims, broadcasting) on machines without a GPU.
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

// What the emulated device did, read by tests through onyx_gpuemu_stats
// (stats.cpp), in this order.
enum EmulationCounter {
  kCopiesHostToDevice, kCopiesDeviceToHost, kCopiesDeviceToDevice,
  kKernelsOnStream, kKernelsWithoutStream, kStreamSyncs, kEventSyncs, kStreamsCreated, kDeviceSyncs,
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
constexpr gpuError_t gpuErrorMemoryAllocation = 2;
struct gpuDeviceProp {
  char name[256];
  size_t totalGlobalMem;
};
enum gpuMemcpyKind { gpuMemcpyHostToDevice, gpuMemcpyDeviceToHost, gpuMemcpyDeviceToDevice };
constexpr unsigned gpuStreamNonBlocking = 1, gpuEventDisableTiming = 2;

inline gpuError_t gpuGetDeviceCount(int* count) {
  *count = 1;
  return gpuSuccess;
}
inline gpuError_t gpuGetDeviceProperties(gpuDeviceProp* prop, int) {
  std::strcpy(prop->name, "host emulation");
  prop->totalGlobalMem = 0;
  return gpuSuccess;
}
inline const char* gpuGetErrorString(gpuError_t e) { return e ? "emulated error" : "no error"; }
inline const char* gpuGetErrorName(gpuError_t e) { return e ? "gpuErrorEmulated" : "gpuSuccess"; }
inline gpuError_t gpuGetLastError() { return gpuSuccess; }
inline gpuError_t gpuSetDevice(int) { return gpuSuccess; }
inline gpuError_t gpuMalloc(void** p, size_t bytes) {
  *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  return *p ? gpuSuccess : gpuErrorMemoryAllocation;
}
// Runs `work` now (null stream) or when the stream is waited for.
void emulation_enqueue(gpuStream_t stream, std::function<void()> work);
// A kernel launch: counted by stream, then enqueue.
inline gpuError_t emulation_launch(gpuStream_t stream, std::function<void()> work) {
  emulation_count(stream ? kKernelsOnStream : kKernelsWithoutStream);
  emulation_enqueue(stream, std::move(work));
  return gpuSuccess;
}

gpuError_t gpuFree(void* p);
inline gpuError_t gpuMallocHost(void** p, size_t bytes) { return gpuMalloc(p, bytes); }
inline gpuError_t gpuFreeHost(void* p) { return gpuFree(p); }
inline void count_copy(gpuMemcpyKind kind) {
  emulation_count(kind == gpuMemcpyHostToDevice   ? kCopiesHostToDevice
        : kind == gpuMemcpyDeviceToHost ? kCopiesDeviceToHost
                                        : kCopiesDeviceToDevice);
}
inline gpuError_t gpuMemcpyAsync(void* dst, const void* src, size_t bytes, gpuMemcpyKind kind, gpuStream_t stream) {
  count_copy(kind);
  emulation_enqueue(stream, [=] { std::memmove(dst, src, bytes); });
  return gpuSuccess;
}
inline gpuError_t gpuMemcpy(void* dst, const void* src, size_t bytes, gpuMemcpyKind kind) {
  return gpuMemcpyAsync(dst, src, bytes, kind, nullptr);
}
inline gpuError_t gpuMemcpy2DAsync(void* dst, size_t dst_pitch, const void* src, size_t src_pitch,
                                   size_t width, size_t height, gpuMemcpyKind kind, gpuStream_t stream) {
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
