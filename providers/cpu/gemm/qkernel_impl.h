// qkernel_impl.h: the plain loops of the 8-bit kernel sets, included by each
// kernel file so that the compiler vectorizes them for that file's ISA. In an
// anonymous namespace, with no standard-library templates, so that no copy
// built with one ISA's flags can be merged into another's (see pack_impl.h).
#pragma once

#include <cstdint>

#include "qkernel_set.h"

namespace onyx::cpu::qgemm_detail {
namespace {

inline double clamp_double(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

void range_impl(const float* x, int64_t count, float* lo, float* hi) {
  float l = *lo, h = *hi;
  for (int64_t i = 0; i < count; ++i) {
    l = x[i] < l ? x[i] : l;
    h = x[i] > h ? x[i] : h;
  }
  *lo = l, *hi = h;
}

// The same float32 steps as the QuantizeLinear kernel's fast path: a true
// division, the magic-number round (ties to even), the zero point, saturation.
void quantize_u8_impl(const float* x, int64_t count, float s, float z, uint8_t* y) {
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23
  for (int64_t i = 0; i < count; ++i) {
    float v = x[i] / s;
    v = v > -1.0e6f ? (v < 1.0e6f ? v : 1.0e6f) : -1.0e6f;
    v = (v + kMagic) - kMagic + z;
    y[i] = uint8_t(v < 0.0f ? 0.0f : v > 255.0f ? 255.0f : v);
  }
}

template <typename T>
void pack_pair_impl(const T* r0, const T* r1, int64_t count, const int16_t* zero, int16_t* dst) {
  if (r1)
    for (int64_t j = 0; j < count; ++j) {
      dst[2 * j] = int16_t(int16_t(r0[j]) - zero[j]);
      dst[2 * j + 1] = int16_t(int16_t(r1[j]) - zero[j]);
    }
  else
    for (int64_t j = 0; j < count; ++j) {
      dst[2 * j] = int16_t(int16_t(r0[j]) - zero[j]);
      dst[2 * j + 1] = 0;
    }
  for (int64_t j = count; j < kNR; ++j) dst[2 * j] = dst[2 * j + 1] = 0;
}

// Rounds half to even without a libm call, so that the loop vectorizes:
// adding and subtracting 1.5 * 2^52 leaves the nearest integer (ties to even,
// in the default rounding mode) for |v| < 2^51, which the first clamp, far
// wider than any 8-bit result, guarantees.
template <typename T>
void requant_impl(const int32_t* acc, int64_t count, const QuantOut& q, T* y) {
  constexpr double kMagic = 6755399441055744.0;
  const QuantOut p = q;  // locals: y (bytes) may alias q as far as the compiler knows
  for (int64_t i = 0; i < count; ++i) {
    double v = clamp_double((double(acc[i]) + p.bias) * p.multiplier, -1.0e9, 1.0e9);
    v = (v + kMagic) - kMagic;
    y[i] = T(int32_t(clamp_double(v + p.zero, p.lo, p.hi)));
  }
}

[[maybe_unused]] void pack_pair_u8(const uint8_t* r0, const uint8_t* r1, int64_t count, const int16_t* zero, int16_t* dst) {
  pack_pair_impl(r0, r1, count, zero, dst);
}
[[maybe_unused]] void pack_pair_s8(const int8_t* r0, const int8_t* r1, int64_t count, const int16_t* zero, int16_t* dst) {
  pack_pair_impl(r0, r1, count, zero, dst);
}
[[maybe_unused]] void requant_u8(const int32_t* acc, int64_t count, const QuantOut& q, uint8_t* y) { requant_impl(acc, count, q, y); }
[[maybe_unused]] void requant_s8(const int32_t* acc, int64_t count, const QuantOut& q, int8_t* y) { requant_impl(acc, count, q, y); }

}  // namespace
}  // namespace onyx::cpu::qgemm_detail
