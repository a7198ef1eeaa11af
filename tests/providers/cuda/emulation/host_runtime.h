// host_runtime.h: a stand-in for the CUDA/HIP runtime, for testing only.
// With ONYX_GPU_HOST_EMULATION, gpu_vendor.h takes the gpu* names from here:
// "device memory" is host memory the provider still declares non-host-readable
// (so the session inserts and performs real copies through memory_copy),
// streams are synchronous, and kernels_host.cpp runs the kernels' math on the
// host. This lets the conformance suite check the GPU providers' op code
// (shapes, attributes, claims, broadcasting) on machines without a GPU.
#pragma once

#include <atomic>
#include <cstdint>
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

using gpuError_t = int;
using gpuStream_t = void*;
using gpuEvent_t = void*;
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
inline gpuError_t gpuFree(void* p) {
  std::free(p);
  return gpuSuccess;
}
inline gpuError_t gpuMallocHost(void** p, size_t bytes) { return gpuMalloc(p, bytes); }
inline gpuError_t gpuFreeHost(void* p) { return gpuFree(p); }
inline void count_copy(gpuMemcpyKind kind) {
  emulation_count(kind == gpuMemcpyHostToDevice   ? kCopiesHostToDevice
                  : kind == gpuMemcpyDeviceToHost ? kCopiesDeviceToHost
                                                  : kCopiesDeviceToDevice);
}
inline gpuError_t gpuMemcpy(void* dst, const void* src, size_t bytes, gpuMemcpyKind kind) {
  count_copy(kind);
  std::memmove(dst, src, bytes);
  return gpuSuccess;
}
inline gpuError_t gpuMemcpyAsync(void* dst, const void* src, size_t bytes, gpuMemcpyKind kind, gpuStream_t) {
  return gpuMemcpy(dst, src, bytes, kind);
}
inline gpuError_t gpuMemcpy2DAsync(void* dst, size_t dst_pitch, const void* src, size_t src_pitch,
                                   size_t width, size_t height, gpuMemcpyKind kind, gpuStream_t) {
  count_copy(kind);
  for (size_t r = 0; r < height; ++r)
    std::memmove(static_cast<char*>(dst) + r * dst_pitch, static_cast<const char*>(src) + r * src_pitch, width);
  return gpuSuccess;
}
inline gpuError_t gpuMemsetAsync(void* p, int value, size_t bytes, gpuStream_t) {
  std::memset(p, value, bytes);
  return gpuSuccess;
}
// Streams and events: work runs when enqueued, so there is nothing to wait for.
inline gpuError_t gpuStreamCreateWithFlags(gpuStream_t* s, unsigned) {
  static char stream_token;
  *s = &stream_token;
  return gpuSuccess;
}
inline gpuError_t gpuStreamDestroy(gpuStream_t) { return gpuSuccess; }
inline gpuError_t gpuStreamSynchronize(gpuStream_t) { return gpuSuccess; }
inline gpuError_t gpuStreamWaitEvent(gpuStream_t, gpuEvent_t, unsigned) { return gpuSuccess; }
inline gpuError_t gpuEventCreateWithFlags(gpuEvent_t* e, unsigned) {
  static char event_token;
  *e = &event_token;
  return gpuSuccess;
}
inline gpuError_t gpuEventRecord(gpuEvent_t, gpuStream_t) { return gpuSuccess; }
inline gpuError_t gpuEventSynchronize(gpuEvent_t) { return gpuSuccess; }
inline gpuError_t gpuEventDestroy(gpuEvent_t) { return gpuSuccess; }
