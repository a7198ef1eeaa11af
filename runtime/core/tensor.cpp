#include "core/tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

namespace onyx::runtime {

int64_t element_count(std::span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::optional<int64_t> checked_element_count(std::span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return std::nullopt;
  return n;
}

std::optional<size_t> checked_storage_bytes(int32_t dtype, std::span<const int64_t> dims) {
  std::optional<int64_t> count = checked_element_count(dims);
  if (!count) return std::nullopt;
  size_t per = dtype_size(dtype), bytes = 0;
  if (per == 0) return storage_bytes(dtype, *count);  // sub-byte types pack: no larger than the count
  if (__builtin_mul_overflow(size_t(*count), per, &bytes)) return std::nullopt;
  return bytes;
}

std::string shape_string(std::span<const int64_t> dims) {
  std::string s = "[";
  for (size_t k = 0; k < dims.size(); ++k) {
    if (k) s += ", ";
    s += dims[k] < 0 ? std::string("?") : std::to_string(dims[k]);
  }
  return s + "]";
}

Tensor Tensor::allocate(int32_t dtype, Shape shape) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  std::optional<size_t> checked = checked_storage_bytes(dtype, t.shape_);
  if (!checked || *checked > SIZE_MAX - 64)
    throw std::length_error(std::string("a ") + dtype_name(dtype) + " tensor of shape " + shape_string(t.shape_) +
                            " has no valid size (a negative dim, or its element count or bytes overflow)");
  size_t bytes = *checked;
  size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded == 0) rounded = 64;
  void* p = std::aligned_alloc(64, rounded);
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, rounded);
  t.owner_ = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  t.data_ = p;
  return t;
}

Tensor Tensor::wrap(int32_t dtype, Shape shape, void* data, std::shared_ptr<void> owner) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.data_ = data;
  t.owner_ = std::move(owner);
  return t;
}

Tensor Tensor::clone() const {
  Tensor t = allocate(dtype_, shape_);
  if (bytes()) std::memcpy(t.data_, data_, bytes());
  return t;
}

OnyxTensorView Tensor::view() const {
  OnyxTensorView v{};
  v.struct_size = sizeof v;
  v.dtype = dtype_;
  v.memory_kind = ONYX_MEMORY_HOST;
  v.rank = shape_.size();
  v.dims = shape_.empty() ? nullptr : shape_.data();
  v.data = data_;
  return v;
}

}  // namespace onyx::runtime
