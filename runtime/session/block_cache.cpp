#include "session/block_cache.h"

namespace onyx::runtime {

BlockCache::~BlockCache() {
  for (size_t d = 0; d < per_device_.size(); ++d)
    for (const auto& [bytes, block] : per_device_[d].idle) devices_[d]->free(block);
}

Status BlockCache::take(int device, size_t bytes, void** out) {
  PerDevice& p = per_device_[size_t(device)];
  {
    std::lock_guard lock(mutex_);
    auto it = p.idle.lower_bound(bytes);
    if (it != p.idle.end() && it->first / 2 <= bytes) {
      *out = it->second;
      p.taken.emplace(it->second, it->first);
      p.idle_bytes -= it->first;
      p.idle.erase(it);
      return Status();
    }
  }
  ONYX_RETURN_IF_ERROR(devices_[size_t(device)]->allocate(bytes, out));
  std::lock_guard lock(mutex_);
  p.taken.emplace(*out, bytes);
  return Status();
}

void BlockCache::give_back(int device, void* block) {
  if (!block) return;
  PerDevice& p = per_device_[size_t(device)];
  bool keep = false;
  {
    std::lock_guard lock(mutex_);
    auto it = p.taken.find(block);
    if (it != p.taken.end()) {  // else not take()'s: freed as it is
      const size_t bytes = it->second;
      p.taken.erase(it);
      keep = p.idle_bytes + bytes <= kMaxIdleBytes;
      if (keep) {
        p.idle.emplace(bytes, block);
        p.idle_bytes += bytes;
      }
    }
  }
  if (!keep) devices_[size_t(device)]->free(block);
}

size_t BlockCache::idle_bytes(int device) const {
  std::lock_guard lock(mutex_);
  return per_device_[size_t(device)].idle_bytes;
}

}  // namespace onyx::runtime
