#include "session/arena_pool.h"

#include <algorithm>
#include <utility>

namespace onyx::runtime {

ArenaLease::ArenaLease(ArenaLease&& other) noexcept
    : pool_(std::exchange(other.pool_, nullptr)), arenas_(std::move(other.arenas_)) {}

ArenaLease& ArenaLease::operator=(ArenaLease&& other) noexcept {
  if (this != &other) {
    if (pool_) pool_->give_back(arenas_);
    pool_ = std::exchange(other.pool_, nullptr);
    arenas_ = std::move(other.arenas_);
  }
  return *this;
}

ArenaLease::~ArenaLease() {
  if (pool_) pool_->give_back(arenas_);
}

ArenaPool::~ArenaPool() {
  for (size_t d = 0; d < free_.size(); ++d)
    for (const ArenaLease::Arena& arena : free_[d]) devices_[d]->free(arena.data);
}

StatusOr<ArenaLease> ArenaPool::lease(const std::vector<size_t>& bytes) {
  ArenaLease lease;
  lease.pool_ = this;
  lease.arenas_.resize(devices_.size());
  for (size_t d = 0; d < devices_.size(); ++d) {
    if (d >= bytes.size() || bytes[d] == 0) continue;
    std::vector<ArenaLease::Arena> stale;
    {
      std::lock_guard lock(mutex_);
      std::vector<ArenaLease::Arena>& pool = free_[d];
      // The smallest free arena that fits.
      auto best = pool.end();
      for (auto it = pool.begin(); it != pool.end(); ++it)
        if (it->bytes >= bytes[d] && (best == pool.end() || it->bytes < best->bytes)) best = it;
      if (best != pool.end()) {
        lease.arenas_[d] = *best;
        pool.erase(best);
        continue;
      }
      // None fits: the plans grew, so the smaller ones are not worth keeping.
      stale = std::move(pool);
      pool.clear();
    }
    for (const ArenaLease::Arena& arena : stale) devices_[d]->free(arena.data);
    ArenaLease::Arena arena{nullptr, bytes[d]};
    if (devices_[d]->host_readable() && bytes[d] > limit_.bytes)
      return Status(ONYX_STATUS_OUT_OF_MEMORY,
                    "this run's memory plan needs " + std::to_string(bytes[d]) + " bytes on " + devices_[d]->label +
                        ", more than " + limit_.describe() + " (the input shapes make some value that large)");
    Status st = devices_[d]->allocate(bytes[d], &arena.data);
    if (!st.ok()) return st.with_context("arena of " + std::to_string(bytes[d]) + " bytes on " +
                                         devices_[d]->label);  // the lease returns the others
    lease.arenas_[d] = arena;
  }
  return lease;
}

void ArenaPool::give_back(std::vector<ArenaLease::Arena>& arenas) {
  std::lock_guard lock(mutex_);
  for (size_t d = 0; d < arenas.size(); ++d)
    if (arenas[d].data) free_[d].push_back(arenas[d]);
  arenas.clear();
}

}  // namespace onyx::runtime
