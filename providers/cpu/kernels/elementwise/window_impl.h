// window_impl.h: a depthwise convolution window over the rows of a flat
// plane, written once over a vector type V (vec_math_avx2.cpp and
// vec_math_avx512.cpp instantiate it; V as in gelu_impl.h). Calls no
// standard-library inline function, like gelu_impl.h.
//
// y[r * ldy + o] = clamp(bias + sum_t src[r * lds + o + offsets[t]] * taps[t])
// for rows r and columns o (vec_math.h's window_rows). A block of R rows x
// NV vectors is summed in R * NV independent registers (about 8: enough to
// cover the multiply-adds' latency however narrow the rows, 7 on
// MobileNet's last layers), written straight to its rows, the last vector
// of a row under a store of its first lanes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace onyx::cpu::vec::window_impl {

template <class V>
struct Window {
  using Reg = typename V::reg;
  const int64_t* offsets;
  const float* taps;
  int64_t tap_count;
  Reg bias, lo, hi;
  // max and min return their second operand when one is NaN: a NaN sum stays.
  Reg clamp(Reg s) const { return V::min(hi, V::max(lo, s)); }
};

// R rows x NV vectors from column 0; the last vector's first `last` lanes are stored.
template <class V, int R, int NV>
inline __attribute__((always_inline)) void block(const Window<V>& w, float* y, int64_t ldy, const float* src,
                                                 int64_t lds, size_t last) {
  using Reg = typename V::reg;
  constexpr int64_t L = int64_t(V::kLanes);
  Reg s[R][NV];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) s[r][v] = w.bias;
  for (int64_t t = 0; t < w.tap_count; ++t) {
    const float* x = src + w.offsets[t];
    const Reg tap = V::set(w.taps[t]);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) s[r][v] = V::fmadd(V::loadu(x + r * lds + v * L), tap, s[r][v]);
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v + 1 < NV; ++v) V::storeu(y + r * ldy + v * L, w.clamp(s[r][v]));
    if (last == V::kLanes)
      V::storeu(y + r * ldy + (NV - 1) * L, w.clamp(s[r][NV - 1]));
    else
      V::store_first(y + r * ldy + (NV - 1) * L, w.clamp(s[r][NV - 1]), last);
  }
}

// All `rows` rows, R at a time, then the rest in halving blocks.
template <class V, int R, int NV>
void row_blocks(const Window<V>& w, float* y, int64_t ldy, const float* src, int64_t lds, int64_t rows, size_t last) {
  int64_t r = 0;
  for (; r + R <= rows; r += R) block<V, R, NV>(w, y + r * ldy, ldy, src + r * lds, lds, last);
  if constexpr (R > 1)
    if (r < rows) row_blocks<V, R / 2, NV>(w, y + r * ldy, ldy, src + r * lds, lds, rows - r, last);
}

template <class V>
void rows(float* y, int64_t ldy, const float* src, int64_t lds, int64_t rows, int64_t cols, const int64_t* offsets,
          const float* taps, int64_t tap_count, float bias, float lo, float hi) {
  const Window<V> w{offsets, taps, tap_count, V::set(bias), V::set(lo), V::set(hi)};
  constexpr int64_t L = int64_t(V::kLanes);
  for (int64_t c0 = 0; c0 < cols; c0 += 4 * L) {
    const int64_t vectors = (cols - c0 + L - 1) / L;
    const auto last = size_t(cols - c0 - (vectors < 4 ? vectors - 1 : 3) * L);
    float* yc = y + c0;
    const float* sc = src + c0;
    switch (vectors) {
      case 1:
        row_blocks<V, 8, 1>(w, yc, ldy, sc, lds, rows, last);
        break;
      case 2:
        row_blocks<V, 4, 2>(w, yc, ldy, sc, lds, rows, last);
        break;
      case 3:
        row_blocks<V, 3, 3>(w, yc, ldy, sc, lds, rows, last);
        break;
      default:
        row_blocks<V, 2, 4>(w, yc, ldy, sc, lds, rows, last < size_t(L) ? last : size_t(L));
        break;
    }
  }
}

}  // namespace onyx::cpu::vec::window_impl
