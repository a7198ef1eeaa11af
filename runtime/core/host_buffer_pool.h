// host_buffer_pool.h: host buffers that a session's returned outputs give
// back when their last holder lets them go, for the next run's outputs of
// the same size.
//
// Why: every run returns fresh output tensors, and fresh memory is mapped
// page by page by the kernel writing it; on two threads those page faults
// contend (the transformer block's 2 MiB output: its LayerNormalization took
// 0.95 ms a run on two threads, 0.17 ms for the same node writing planned
// memory). A buffer the caller dropped is already mapped.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

#include "core/tensor.h"

namespace onyx::runtime {

// Thread-safe. Tensors it hands out may outlive it (their buffers are then
// freed, not given back).
class HostBufferPool : public std::enable_shared_from_this<HostBufferPool> {
 public:
  // Keeps at most this many bytes of buffers nobody holds.
  static constexpr size_t kMaxIdleBytes = size_t(256) << 20;

  ~HostBufferPool();
  // A host tensor with unspecified contents (as Tensor::allocate_uninitialized),
  // in a buffer given back earlier when one of its byte size is idle.
  Tensor allocate_uninitialized(int32_t dtype, Shape shape);
  size_t idle_bytes() const;

 private:
  void give_back(void* buffer, size_t bytes);

  mutable std::mutex mutex_;
  std::multimap<size_t, void*> idle_;  // by size in bytes (a multiple of 64)
  size_t idle_bytes_ = 0;
};

}  // namespace onyx::runtime
