// block_cache.h: the device memory a run allocates while it runs (kernels'
// scratch, values of run-time shapes, omitted outputs), kept by the session
// when the run lets it go, for later allocations to reuse.
//
// Why: freed to the provider after every call, a kernel's few hundred KB of
// scratch made glibc shrink its heap and grow it again a few runs later, and
// each page of the regrown heap faulted on its first touch (the test CNN at
// batch 64: 56 page faults per run, its p50 0.65 ms against a best of 0.56).
//
// take() hands out the smallest idle block of `bytes` to 2 x `bytes`, else
// allocates; give_back() keeps the block idle while the device's idle bytes
// stay within kMaxIdleBytes, else frees it. Memory a device stream may still
// use reaches give_back() only once the stream has passed it (RunStreams).
// Owned by the Session, destroyed while its devices are open. Thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "session/device.h"

namespace onyx::runtime {

class BlockCache {
 public:
  static constexpr size_t kMaxIdleBytes = size_t(64) << 20;  // per device

  explicit BlockCache(const DeviceList& devices) : devices_(devices), per_device_(devices.size()) {}
  ~BlockCache();  // frees the idle blocks; every taken block must be back
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  // At least `bytes` (> 0) of `device`'s memory, aligned as Device::allocate's;
  // its contents are unspecified. The caller owns it until give_back().
  Status take(int device, size_t bytes, void** out);
  // Returns a block from take() on the same device; nullptr is ignored.
  void give_back(int device, void* block);

  // Bytes held idle on `device` (for tests).
  size_t idle_bytes(int device) const;

 private:
  struct PerDevice {
    std::unordered_map<void*, size_t> taken;  // block -> its size
    std::multimap<size_t, void*> idle;        // size -> block
    size_t idle_bytes = 0;
  };
  const DeviceList& devices_;
  mutable std::mutex mutex_;
  std::vector<PerDevice> per_device_;
};

}  // namespace onyx::runtime
