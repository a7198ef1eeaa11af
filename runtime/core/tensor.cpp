#include "core/tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace onyx::runtime {

size_t dtype_size(int32_t dtype) {
  switch (dtype) {
    case ONYX_DTYPE_FLOAT32: case ONYX_DTYPE_INT32: case ONYX_DTYPE_UINT32: return 4;
    case ONYX_DTYPE_FLOAT64: case ONYX_DTYPE_INT64: case ONYX_DTYPE_UINT64:
    case ONYX_DTYPE_COMPLEX64: return 8;
    case ONYX_DTYPE_COMPLEX128: return 16;
    case ONYX_DTYPE_FLOAT16: case ONYX_DTYPE_BFLOAT16: case ONYX_DTYPE_INT16:
    case ONYX_DTYPE_UINT16: return 2;
    case ONYX_DTYPE_UINT8: case ONYX_DTYPE_INT8: case ONYX_DTYPE_BOOL:
    case ONYX_DTYPE_FLOAT8E4M3FN: case ONYX_DTYPE_FLOAT8E4M3FNUZ:
    case ONYX_DTYPE_FLOAT8E5M2: case ONYX_DTYPE_FLOAT8E5M2FNUZ: return 1;
    default: return 0;
  }
}

size_t storage_bytes(int32_t dtype, int64_t count) {
  if (count <= 0) return 0;
  if (dtype == ONYX_DTYPE_INT4 || dtype == ONYX_DTYPE_UINT4 || dtype == ONYX_DTYPE_FLOAT4E2M1)
    return size_t(count + 1) / 2;
  return size_t(count) * dtype_size(dtype);
}

const char* dtype_name(int32_t dtype) {
  static const char* names[] = {"undefined", "float32", "uint8", "int8", "uint16", "int16",
                                "int32", "int64", "string", "bool", "float16", "float64",
                                "uint32", "uint64", "complex64", "complex128", "bfloat16",
                                "float8e4m3fn", "float8e4m3fnuz", "float8e5m2",
                                "float8e5m2fnuz", "uint4", "int4", "float4e2m1"};
  return dtype >= 0 && dtype < int32_t(std::size(names)) ? names[dtype] : "unknown";
}

int64_t element_count(std::span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
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
  size_t bytes = t.bytes();
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
