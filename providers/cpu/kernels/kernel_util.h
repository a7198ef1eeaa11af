// kernel_util.h: small helpers shared by the element-wise, reduction and
// shape kernel files (error messages, axes, integer inputs, type dispatch).
// Private to the CPU provider.
#pragma once

#include <onyx/plugin_sdk.hpp>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace onyx::cpu::util {

// Elements per parallel_for chunk for cheap element-wise work: large enough
// that a chunk outweighs the cost of handing it to a thread.
constexpr size_t kGrain = 16384;

// dst = src (bytes apart from each other), threads taking equal ranges: the
// range an element-wise kernel before or after gives each thread, so that the
// bytes stay in its core's cache (a one-thread copy of Swin-T's 1.2 MB q made
// the kernels around it pull their data from the other core).
void parallel_copy(sdk::ComputeContext& ctx, void* dst, const void* src, size_t bytes);

// "Add node 'add_3'": the prefix of every error message of a kernel.
std::string node_label(const sdk::NodeInfo& node);

// An INVALID_ARGUMENT status "<label>: <message>".
[[gnu::format(printf, 2, 3)]] OnyxStatus* fail(const std::string& label, const char* fmt, ...);

// Formats dims as "[2,3,4]" for messages.
std::string dims_str(std::span<const int64_t> dims);

// Maps axis in [-rank, rank) to [0, rank); false when out of range.
bool normalize_axis(int64_t axis, int64_t rank, int64_t* out);

// Reads an int32/int64 tensor (shapes, axes, pads, ...) as int64 values.
// False when the tensor has another type.
bool read_ints(const sdk::Tensor& t, std::vector<int64_t>* out);
bool read_ints(const sdk::ConstantTensor& t, std::vector<int64_t>* out);

// Reads element 0 of a numeric tensor as double (scalar parameters such as
// Clip's min/max, Pad's constant value); false for non-numeric types.
bool read_scalar(int32_t dtype, const void* data, double* out);

// Sets of element types for compile-time dispatch (visit<Set>, the kTypes of
// element-wise ops), combined with |. Bit d stands for ONYX_DTYPE d, as in
// sdk::DTypeSet, the sets of kernel definitions (dtype_set converts).
constexpr unsigned type_bit(int32_t dtype) {
  return dtype > 0 && dtype < 32 ? 1u << unsigned(dtype) : 0u;
}
enum TypeSet : unsigned {
  kFloat = type_bit(ONYX_DTYPE_FLOAT32) | type_bit(ONYX_DTYPE_FLOAT64),
  kSigned = type_bit(ONYX_DTYPE_INT8) | type_bit(ONYX_DTYPE_INT16) | type_bit(ONYX_DTYPE_INT32) |
            type_bit(ONYX_DTYPE_INT64),
  kUnsigned = type_bit(ONYX_DTYPE_UINT8) | type_bit(ONYX_DTYPE_UINT16) |
              type_bit(ONYX_DTYPE_UINT32) | type_bit(ONYX_DTYPE_UINT64),
  kBool = type_bit(ONYX_DTYPE_BOOL),
  // float16, bfloat16: kernels that list it compute in float32
  kHalf = type_bit(ONYX_DTYPE_FLOAT16) | type_bit(ONYX_DTYPE_BFLOAT16),
  kInt = kSigned | kUnsigned,
  kNumeric = kFloat | kInt,
};

// float16 / bfloat16 <-> float32 (round to nearest even; NaN stays NaN).
float half_to_float(uint16_t bits);
uint16_t float_to_half(float value);
inline float bfloat16_to_float(uint16_t bits) {
  uint32_t x = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}
uint16_t float_to_bfloat16(float value);
inline bool is_half(int32_t dtype) {
  return dtype == ONYX_DTYPE_FLOAT16 || dtype == ONYX_DTYPE_BFLOAT16;
}
inline float half_value(int32_t dtype, uint16_t bits) {
  return dtype == ONYX_DTYPE_FLOAT16 ? half_to_float(bits) : bfloat16_to_float(bits);
}
inline uint16_t half_bits(int32_t dtype, float value) {
  return dtype == ONYX_DTYPE_FLOAT16 ? float_to_half(value) : float_to_bfloat16(value);
}
// Converts n 16-bit floats of `dtype` to float32 and back.
void halves_to_floats(int32_t dtype, const uint16_t* in, float* out, size_t n);
void floats_to_halves(int32_t dtype, const float* in, uint16_t* out, size_t n);

// A float32 stand-in for a float16/bfloat16 tensor, for kernels without
// 16-bit arithmetic: they widen the inputs, compute in float32 and round
// each result once (narrow_to). `tensor` views `values`: keep the Widened
// alive (and unmoved-from) while it is used.
struct Widened {
  std::vector<float> values;
  sdk::Tensor tensor;
};
// The values of `t` (copy_values) or uninitialized space of its shape.
Widened widen(const sdk::Tensor& t, bool copy_values = true);
// Rounds w's values into `out` (of out.dtype, float16 or bfloat16).
void narrow_to(const Widened& w, const sdk::Tensor& out);

inline bool in_set(int32_t dtype, unsigned set) { return (set & type_bit(dtype)) != 0; }

// The SDK's DTypeSet of `set`, for the type constraints of kernel
// definitions (sdk::KernelDefBuilder).
constexpr sdk::DTypeSet dtype_set(unsigned set) {
  sdk::DTypeSet s;
  for (int32_t t = 0; t < 32; ++t)
    if (set & type_bit(t)) s = s | sdk::DTypeSet{t};
  return s;
}

// Calls fn(T{}) for the C++ type T of `dtype` when dtype is in Set; returns
// false (without calling) otherwise. bool maps to bool (one byte, 0 or 1).
template <unsigned Set, typename Fn>
bool visit(int32_t dtype, Fn&& fn) {
  switch (dtype) {
#define ONYX_VISIT_CASE(DTYPE, TYPE)           \
  case DTYPE:                                  \
    if constexpr ((Set & type_bit(DTYPE)) != 0) { \
      fn(TYPE{});                              \
      return true;                             \
    }                                          \
    break;
    ONYX_VISIT_CASE(ONYX_DTYPE_FLOAT32, float)
    ONYX_VISIT_CASE(ONYX_DTYPE_FLOAT64, double)
    ONYX_VISIT_CASE(ONYX_DTYPE_INT8, int8_t)
    ONYX_VISIT_CASE(ONYX_DTYPE_INT16, int16_t)
    ONYX_VISIT_CASE(ONYX_DTYPE_INT32, int32_t)
    ONYX_VISIT_CASE(ONYX_DTYPE_INT64, int64_t)
    ONYX_VISIT_CASE(ONYX_DTYPE_UINT8, uint8_t)
    ONYX_VISIT_CASE(ONYX_DTYPE_UINT16, uint16_t)
    ONYX_VISIT_CASE(ONYX_DTYPE_UINT32, uint32_t)
    ONYX_VISIT_CASE(ONYX_DTYPE_UINT64, uint64_t)
    ONYX_VISIT_CASE(ONYX_DTYPE_BOOL, bool)
#undef ONYX_VISIT_CASE
    default:
      break;
  }
  return false;
}

// The ONNX element type of a C++ type.
template <typename T>
constexpr int32_t dtype_of() {
  if constexpr (std::is_same_v<T, float>) return ONYX_DTYPE_FLOAT32;
  else if constexpr (std::is_same_v<T, double>) return ONYX_DTYPE_FLOAT64;
  else if constexpr (std::is_same_v<T, int8_t>) return ONYX_DTYPE_INT8;
  else if constexpr (std::is_same_v<T, int16_t>) return ONYX_DTYPE_INT16;
  else if constexpr (std::is_same_v<T, int32_t>) return ONYX_DTYPE_INT32;
  else if constexpr (std::is_same_v<T, int64_t>) return ONYX_DTYPE_INT64;
  else if constexpr (std::is_same_v<T, uint8_t>) return ONYX_DTYPE_UINT8;
  else if constexpr (std::is_same_v<T, uint16_t>) return ONYX_DTYPE_UINT16;
  else if constexpr (std::is_same_v<T, uint32_t>) return ONYX_DTYPE_UINT32;
  else if constexpr (std::is_same_v<T, uint64_t>) return ONYX_DTYPE_UINT64;
  else if constexpr (std::is_same_v<T, bool>) return ONYX_DTYPE_BOOL;
  else static_assert(sizeof(T) == 0, "no ONNX element type for this C++ type");
}

// The type integer arithmetic on T is done in so that it wraps around like
// numpy's instead of overflowing (UB for signed types; small types promote
// to int): unsigned, at least 32 bits. Floating-point types stay as they are.
template <typename T, bool = std::is_integral_v<T>>
struct Wrapping {
  using type = T;
};
template <typename T>
struct Wrapping<T, true> {
  using type = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;
};
template <typename T>
using wrapping_t = typename Wrapping<T>::type;

// Declares that output 0 may share the buffer of input `input`: for kernels
// that read each input element before writing the output element at the
// same index and never read the input after writing it.
inline void output0_may_overwrite_input(std::span<OnyxOutputMemoryInfo> out, int32_t input = 0) {
  if (out.empty()) return;
  out[0].kind = ONYX_OUTPUT_MAY_OVERWRITE_INPUT;
  out[0].input_index = input;
}

// Row-major strides (in elements) of `dims`.
std::vector<int64_t> strides_of(std::span<const int64_t> dims);

// Splits dims at `axis` into the sizes before it, of it and after it.
void split_at(std::span<const int64_t> dims, int64_t axis, int64_t* outer, int64_t* n,
              int64_t* inner);

// Row-major index of position `pos` in `dims`.
int64_t row_major_index(const std::vector<int64_t>& pos, const std::vector<int64_t>& dims);

// Advances `pos` through `dims` in row-major order; false after the last.
bool next_row_major(std::vector<int64_t>& pos, const std::vector<int64_t>& dims);

}  // namespace onyx::cpu::util
