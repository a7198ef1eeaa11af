// arena_pool.h: the device arenas that runs place planned tensors in.
//
// A run leases one arena per device, at least as big as its plan asks, and
// returns them when it ends; the next run (whatever its input shapes) reuses
// them. When no free arena is big enough a new one is allocated and the free
// ones too small for it are freed, so a pool holds at most as many arenas
// per device as runs were ever concurrent, each as big as the largest plan
// it served. Owned by the Session, which destroys it before closing devices.
// Thread-safe.
#pragma once

#include <mutex>
#include <vector>

#include "core/status.h"
#include "session/device.h"

namespace onyx::runtime {

class ArenaPool;

// The arenas of one run, one per device (nullptr where the plan needs none);
// returned to the pool on destruction.
class ArenaLease {
 public:
  ArenaLease() = default;
  ArenaLease(ArenaLease&& other) noexcept;
  ArenaLease& operator=(ArenaLease&& other) noexcept;
  ~ArenaLease();
  void* base(int device) const { return arenas_[size_t(device)].data; }

 private:
  friend class ArenaPool;
  struct Arena {
    void* data = nullptr;
    size_t bytes = 0;
  };
  ArenaPool* pool_ = nullptr;
  std::vector<Arena> arenas_;
};

class ArenaPool {
 public:
  // Arenas in host-readable memory past `limit` are refused.
  ArenaPool(const DeviceList& devices, HostMemoryLimit limit)
      : devices_(devices), limit_(limit), free_(devices.size()) {}
  ~ArenaPool();
  ArenaPool(const ArenaPool&) = delete;
  ArenaPool& operator=(const ArenaPool&) = delete;

  // Arenas of at least bytes[d] for each device d.
  StatusOr<ArenaLease> lease(const std::vector<size_t>& bytes);

 private:
  friend class ArenaLease;
  void give_back(std::vector<ArenaLease::Arena>& arenas);

  const DeviceList& devices_;
  const HostMemoryLimit limit_;
  std::mutex mutex_;
  std::vector<std::vector<ArenaLease::Arena>> free_;  // per device
};

}  // namespace onyx::runtime
