// memory.cpp: the emulated devices' memory (host_runtime.h): every
// allocation remembers its device, each device counts what it holds against
// kEmulatedDeviceMemory, and copies check their pointers against it.
#include <cstdio>
#include <map>
#include <mutex>

#include "host_runtime.h"

namespace {

struct Allocation {
  size_t bytes;    // the block's size (256 for a 0-byte request, which still gets a unique address)
  size_t counted;  // what it counts against its device's memory
  int device;
};

std::mutex g_mutex;
size_t g_used[kEmulatedDevices];
// By start address. Never destroyed: a device closed during static
// destruction (a test's cached session) still frees its cached blocks.
std::map<uintptr_t, Allocation>& allocations() {
  static auto* by_start = new std::map<uintptr_t, Allocation>;
  return *by_start;
}

// The allocation holding address `p` (caller holds g_mutex), or end().
std::map<uintptr_t, Allocation>::const_iterator containing(uintptr_t p) {
  auto& all = allocations();
  auto it = all.upper_bound(p);
  if (it == all.begin()) return all.end();
  --it;
  return p < it->first + it->second.bytes ? it : all.end();
}

}  // namespace

gpuError_t gpuMalloc(void** p, size_t bytes) {
  const int device = g_emulated_current_device;
  const size_t rounded = (bytes + 255) / 256 * 256;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (rounded > kEmulatedDeviceMemory - g_used[device]) {
    *p = nullptr;
    return gpuErrorMemoryAllocation;
  }
  *p = std::aligned_alloc(256, rounded ? rounded : 256);
  if (!*p) return gpuErrorMemoryAllocation;
  allocations()[reinterpret_cast<uintptr_t>(*p)] = {rounded ? rounded : 256, rounded, device};
  g_used[device] += rounded;
  return gpuSuccess;
}

void emulation_forget(void* p) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = allocations().find(reinterpret_cast<uintptr_t>(p));
  if (it == allocations().end()) return;
  g_used[it->second.device] -= it->second.counted;
  allocations().erase(it);
}

gpuError_t gpuMemGetInfo(size_t* free, size_t* total) {
  std::lock_guard<std::mutex> lock(g_mutex);
  *total = kEmulatedDeviceMemory;
  *free = kEmulatedDeviceMemory - g_used[g_emulated_current_device];
  return gpuSuccess;
}

gpuError_t gpuDeviceGetPCIBusId(char* id, int length, int device) {
  if (device < 0 || device >= kEmulatedDevices) return gpuErrorInvalidDevice;
  if (length <= 0 || std::snprintf(id, size_t(length), "EMU:%d", device) >= length) return gpuErrorInvalidValue;
  return gpuSuccess;
}

bool emulation_device_memory(const void* p, size_t bytes) {
  const uintptr_t start = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = containing(start);
  return it != allocations().end() && it->second.device == g_emulated_current_device &&
         bytes <= it->first + it->second.bytes - start;
}

bool emulation_host_memory(const void* p) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return containing(reinterpret_cast<uintptr_t>(p)) == allocations().end();
}
