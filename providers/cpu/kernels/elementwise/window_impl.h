// window_impl.h: a depthwise convolution window over a flat plane, written
// once over a vector type V (vec_math_avx2.cpp and vec_math_avx512.cpp
// instantiate it; V as in gelu_impl.h). Calls no standard-library inline
// function, like gelu_impl.h.
//
// y[o] = bias + sum_t src[o + offsets[t]] * taps[t], clamped to [lo, hi]:
// four vectors of outputs at a time in independent sums, so that the
// multiply-adds' latency overlaps, then one vector, then the tail under a
// mask.
#pragma once

#include <cstddef>
#include <cstdint>

namespace onyx::cpu::vec::window_impl {

template <class V>
void sums(float* y, const float* src, const int64_t* offsets, const float* taps, int64_t tap_count, size_t count,
          float bias, float lo, float hi) {
  using Reg = typename V::reg;
  constexpr size_t kLanes = V::kLanes;
  const Reg vlo = V::set(lo), vhi = V::set(hi);
  // max and min return their second operand when one is NaN: a NaN sum stays.
  auto clamp = [&](Reg s) { return V::min(vhi, V::max(vlo, s)); };
  size_t o = 0;
  for (; o + 4 * kLanes <= count; o += 4 * kLanes) {
    Reg s0 = V::set(bias), s1 = s0, s2 = s0, s3 = s0;
    for (int64_t t = 0; t < tap_count; ++t) {
      const float* x = src + o + offsets[t];
      const Reg w = V::set(taps[t]);
      s0 = V::fmadd(V::loadu(x), w, s0);
      s1 = V::fmadd(V::loadu(x + kLanes), w, s1);
      s2 = V::fmadd(V::loadu(x + 2 * kLanes), w, s2);
      s3 = V::fmadd(V::loadu(x + 3 * kLanes), w, s3);
    }
    V::storeu(y + o, clamp(s0));
    V::storeu(y + o + kLanes, clamp(s1));
    V::storeu(y + o + 2 * kLanes, clamp(s2));
    V::storeu(y + o + 3 * kLanes, clamp(s3));
  }
  for (; o < count; o += kLanes) {
    const size_t n = count - o < kLanes ? count - o : kLanes;
    Reg s = V::set(bias);
    for (int64_t t = 0; t < tap_count; ++t) s = V::fmadd(V::load_first(src + o + offsets[t], n), V::set(taps[t]), s);
    V::store_first(y + o, clamp(s), n);
  }
}

}  // namespace onyx::cpu::vec::window_impl
