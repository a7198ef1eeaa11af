#include "core/host_buffer_pool.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>

namespace onyx::runtime {

HostBufferPool::~HostBufferPool() {
  for (auto& [bytes, buffer] : idle_) std::free(buffer);
}

Tensor HostBufferPool::allocate_uninitialized(int32_t dtype, Shape shape) {
  std::optional<size_t> checked = checked_storage_bytes(dtype, shape);
  if (!checked || *checked > SIZE_MAX - 64)
    throw std::length_error(std::string("a ") + dtype_name(dtype) + " tensor of shape " + shape_string(shape) +
                            " has no valid size (a negative dim, or its element count or bytes overflow)");
  const size_t bytes = std::max<size_t>((*checked + 63) / 64 * 64, 64);
  void* buffer = nullptr;
  {
    std::lock_guard lock(mutex_);
    if (auto it = idle_.find(bytes); it != idle_.end()) {
      buffer = it->second;
      idle_.erase(it);
      idle_bytes_ -= bytes;
    }
  }
  if (!buffer) buffer = std::aligned_alloc(64, bytes);
  if (!buffer) throw std::bad_alloc();
  std::weak_ptr<HostBufferPool> pool = weak_from_this();
  std::shared_ptr<void> owner(buffer, [pool, bytes](void* p) {
    if (std::shared_ptr<HostBufferPool> alive = pool.lock())
      alive->give_back(p, bytes);
    else
      std::free(p);
  });
  return Tensor::wrap(dtype, std::move(shape), buffer, std::move(owner));
}

size_t HostBufferPool::idle_bytes() const {
  std::lock_guard lock(mutex_);
  return idle_bytes_;
}

void HostBufferPool::give_back(void* buffer, size_t bytes) {
  {
    std::lock_guard lock(mutex_);
    if (idle_bytes_ + bytes <= kMaxIdleBytes) {
      idle_.emplace(bytes, buffer);
      idle_bytes_ += bytes;
      return;
    }
  }
  std::free(buffer);
}

}  // namespace onyx::runtime
