// qlinear_common.h: what the quantized kernels share: checking scales and
// zero points (QuantizeLinear, DequantizeLinear and the com.microsoft
// QLinear* ops) and rounding a real value to an 8-bit code.
//
// Rounding is half to even with saturation, as QuantizeLinear's:
//   q = clamp(round_half_even(real / scale) + zero_point, lo, hi)
#pragma once

#include <onyx/plugin_sdk.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

namespace onyx::cpu::quant {

// "" when every element of `scale` (float32/float64/float16/bfloat16) is a
// usable quantization step, else the problem, naming `what`: a zero step
// divides by zero when quantizing and erases the value when dequantizing;
// negative, NaN and infinite steps have no meaning as a step.
std::string scale_problem(const sdk::Tensor& scale, const char* what);

// One per-tensor quantization: real = (q - zero) * scale.
struct QParam {
  double scale = 1;
  int32_t zero = 0;
};

// Where a QLinear op's per-tensor scale and zero point are, and their names
// in the op's schema (for messages). zero_index SIZE_MAX: the op has none.
struct QParamSpec {
  size_t scale_index;
  size_t zero_index;
  const char* scale_name;
  const char* zero_name;
};

// Reads a per-tensor scale and optional zero point (absent: 0) for a tensor
// of type `dtype` (named `tensor`): "" or the problem (not one element, a bad
// scale, a zero point of another type than the tensor).
std::string read_qparam(const sdk::ComputeContext& ctx, const QParamSpec& spec, int32_t dtype, const char* tensor,
                        QParam* out);

template <typename T>
inline constexpr float kLowest = std::is_signed_v<T> ? -128.0f : 0.0f;
template <typename T>
inline constexpr float kHighest = std::is_signed_v<T> ? 127.0f : 255.0f;

// v rounded half to even and saturated to T, for any finite v, without a
// libm call (tables, one code per pooling window, the rare absurd scale
// ratio): after the clamp to T's range, adding and subtracting 1.5 * 2^52
// leaves the nearest integer (ties to even, the default rounding mode).
// Clamping before rounding gives the same result as after, the bounds being
// integers.
template <typename T>
inline T saturate_round(double v) {
  constexpr double kMagic = 6755399441055744.0;
  v = v < double(kLowest<T>) ? double(kLowest<T>) : v;
  v = v > double(kHighest<T>) ? double(kHighest<T>) : v;
  return T(int32_t((v + kMagic) - kMagic));
}

// v (|v| < 2^51) rounded half to even, the same way, for a value to which
// an integer zero point is added after rounding.
inline double round_half_even(double v) {
  constexpr double kMagic = 6755399441055744.0;
  return (v + kMagic) - kMagic;
}

// round_half_even(v) as an int32, for |v| < 2^31, and saturated to T's
// range: for loops that must vectorize. GCC keeps double clamps and
// conversions to int as branches (no vectorization), but in v + 1.5 * 2^52
// the low 32 bits of the mantissa are the rounded integer in two's
// complement, and integer clamps vectorize.
template <typename T>
inline T saturate_round_small(double v) {
  const double t = v + 6755399441055744.0;
  uint64_t bits;
  std::memcpy(&bits, &t, sizeof bits);
  int32_t r = int32_t(uint32_t(bits));
  r = r < int32_t(kLowest<T>) ? int32_t(kLowest<T>) : r;
  r = r > int32_t(kHighest<T>) ? int32_t(kHighest<T>) : r;
  return T(r);
}

// Calls fn(T{}) for uint8 or int8; false for any other type.
template <typename Fn>
bool visit_8bit(int32_t dtype, Fn&& fn) {
  if (dtype == ONYX_DTYPE_UINT8) return fn(uint8_t{}), true;
  if (dtype == ONYX_DTYPE_INT8) return fn(int8_t{}), true;
  return false;
}

// Declines a node whose `required` inputs are missing (optional zero points
// may sit between them, so min_inputs cannot say it).
std::string missing_input(const sdk::NodeInfo& node, std::initializer_list<size_t> required);

}  // namespace onyx::cpu::quant
