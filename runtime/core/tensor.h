// tensor.h: element types and the core's host tensor.
#pragma once

#include <onyx_provider.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace onyx::runtime {

using Shape = std::vector<int64_t>;

// The ABI's dtype table (onyx_dtype.h) under the names the core uses.
// Bytes per element; 0 for sub-byte types and strings.
inline size_t dtype_size(int32_t dtype) { return onyx_dtype_size(dtype); }
// Bytes that `count` elements occupy (sub-byte types packed, rounded up).
inline size_t storage_bytes(int32_t dtype, int64_t count) { return onyx_dtype_storage_bytes(dtype, count); }
// "float32", "int64", ...; "unknown" for codes the ABI does not define.
inline const char* dtype_name(int32_t dtype) {
  const char* name = onyx_dtype_name(dtype);
  return name ? name : "unknown";
}
int64_t element_count(std::span<const int64_t> dims);
// The checked forms, for sizes that come from files and models: nullopt when
// a dim is negative or the count (int64) or the bytes (size_t) overflow, so a
// wrapped size never reaches an allocation or a kernel.
std::optional<int64_t> checked_element_count(std::span<const int64_t> dims);
std::optional<size_t> checked_storage_bytes(int32_t dtype, std::span<const int64_t> dims);
// "[2, 3, ?]" (negative dims print as ?)
std::string shape_string(std::span<const int64_t> dims);

// A dense tensor in host memory. Copies share storage (like a shared_ptr);
// use clone() for a deep copy. Storage is 64-byte aligned when allocated
// here, or borrowed from an owner (a memory-mapped file, a caller's buffer).
// Thread-safety: distinct Tensors may be used concurrently; concurrent writes
// to shared storage need external synchronization.
class Tensor {
 public:
  Tensor() = default;
  // Zero-filled host tensor.
  static Tensor allocate(int32_t dtype, Shape shape);
  // Wraps memory kept alive by `owner` (may be empty for caller-managed memory).
  static Tensor wrap(int32_t dtype, Shape shape, void* data, std::shared_ptr<void> owner);

  bool empty() const { return dtype_ == ONYX_DTYPE_UNDEFINED; }
  int32_t dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t size() const { return element_count(shape_); }
  size_t bytes() const { return storage_bytes(dtype_, size()); }
  void* data() const { return data_; }
  template <typename T>
  T* data_as() const { return static_cast<T*>(data_); }
  Tensor clone() const;
  // How many Tensors share this one's storage (0 for caller-managed memory):
  // 1 means writing into it in place is seen by no one else.
  long storage_users() const { return owner_.use_count(); }
  // A borrowed ABI view; valid while this Tensor (and its shape) lives.
  OnyxTensorView view() const;

 private:
  int32_t dtype_ = ONYX_DTYPE_UNDEFINED;
  Shape shape_;
  void* data_ = nullptr;
  std::shared_ptr<void> owner_;
};

}  // namespace onyx::runtime
