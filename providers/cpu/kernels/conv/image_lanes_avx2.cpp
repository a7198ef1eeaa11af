// image_lanes_avx2.cpp: moving 8 images' planes into and out of image lanes
// (image_lanes.h) on AVX2, 8 x 8 register transposes at a time.
//
// Like the other ISA files, nothing here calls a standard-library inline
// function: its AVX2 code must not be merged into code every CPU runs.
#include "kernels/conv/image_lanes.h"

#if defined(ONYX_CPU_AVX2_LOOPS)
#include <immintrin.h>

#include "gemm/avx2_registers.h"

namespace onyx::cpu::image_lanes {

using reg = __m256;

void interleave(const Interleave& t) {
  const int64_t row_floats = t.padded_w * 8;
  float* dst = t.dst;
  for (int64_t r = 0; r < t.padded_h; ++r, dst += row_floats) {
    const int64_t iy = r - t.top;
    if (iy < 0 || iy >= t.in_h) {
      for (int64_t j = 0; j < row_floats; ++j) dst[j] = 0.0f;
      continue;
    }
    // Input columns [0, in_w) go to padded columns [left, left + in_w), cut
    // at padded_w; the rest of the row is zero.
    const int64_t left = t.left < t.padded_w ? t.left : t.padded_w;
    const int64_t cols = t.in_w < t.padded_w - left ? t.in_w : t.padded_w - left;
    for (int64_t j = 0; j < left * 8; ++j) dst[j] = 0.0f;
    for (int64_t j = (left + cols) * 8; j < row_floats; ++j) dst[j] = 0.0f;
    float* out = dst + left * 8;
    const float* src[8];
    for (int k = 0; k < 8; ++k) src[k] = t.planes[k] + iy * t.in_w;
    int64_t c = 0;
    for (; c + 8 <= cols; c += 8) {  // 8 columns of 8 images: one 8 x 8 transpose
      reg v[8];
      for (int k = 0; k < 8; ++k) v[k] = _mm256_loadu_ps(src[k] + c);
      avx2::transpose8(v);
      for (int k = 0; k < 8; ++k) _mm256_storeu_ps(out + (c + k) * 8, v[k]);
    }
    // The last columns by one more transpose where 8 floats from there stay
    // inside every plane (all rows but a plane's last): 14-wide rows spent
    // most of their time moving their last 6 columns a float at a time.
    if (c < cols && iy * t.in_w + c + 8 <= t.in_h * t.in_w) {
      reg v[8];
      for (int k = 0; k < 8; ++k) v[k] = _mm256_loadu_ps(src[k] + c);
      avx2::transpose8(v);
      for (int64_t k = 0; k < cols - c; ++k) _mm256_storeu_ps(out + (c + k) * 8, v[k]);
      c = cols;
    }
    for (; c < cols; ++c)
      for (int k = 0; k < 8; ++k) out[c * 8 + k] = src[k][c];
  }
}

void deinterleave(const float* src, int64_t plane, float* const dst[8], int64_t count) {
  int64_t p = 0;
  for (; p + 8 <= plane; p += 8) {  // 8 positions of 8 images: one 8 x 8 transpose
    reg v[8];
    for (int k = 0; k < 8; ++k) v[k] = _mm256_loadu_ps(src + (p + k) * 8);
    avx2::transpose8(v);
    for (int k = 0; k < count; ++k) _mm256_storeu_ps(dst[k] + p, v[k]);
  }
  for (; p < plane; ++p)
    for (int k = 0; k < count; ++k) dst[k][p] = src[p * 8 + k];
}

void max_pool_2x2(float* plane, int64_t h, int64_t w) {
  // Position q of the pooled plane is written after every read of the
  // positions its window covers, and before none a later window reads
  // (those are at 2 q and beyond).
  const int64_t ph = h / 2, pw = w / 2;
  float* dst = plane;
  for (int64_t r = 0; r < ph; ++r)
    for (int64_t c = 0; c < pw; ++c, dst += 8) {
      const float* top = plane + (2 * r * w + 2 * c) * 8;
      const float* bottom = top + w * 8;
      reg best = _mm256_loadu_ps(top);
      best = _mm256_max_ps(_mm256_loadu_ps(top + 8), best);  // tap > best ? tap : best
      best = _mm256_max_ps(_mm256_loadu_ps(bottom), best);
      best = _mm256_max_ps(_mm256_loadu_ps(bottom + 8), best);
      _mm256_storeu_ps(dst, best);
    }
}

namespace {

// P output positions (of any rows: `at` are their first taps' places in
// src) summed over every tap in P registers and stored at dst.
template <int P>
[[gnu::always_inline]] inline void lane_positions(const LaneWindow& w, const int64_t* offsets, int64_t taps,
                                                  const float* const at[P], reg lo, reg hi, float* dst) {
  reg s[P];
  const reg bias = _mm256_loadu_ps(w.bias);
  for (int j = 0; j < P; ++j) s[j] = bias;
  for (int64_t t = 0; t < taps; ++t) {
    const reg tap = _mm256_loadu_ps(w.taps + t * 8);
    for (int j = 0; j < P; ++j) s[j] = _mm256_fmadd_ps(_mm256_loadu_ps(at[j] + offsets[t]), tap, s[j]);
  }
  // min and max return their second operand when one is NaN: a NaN sum stays.
  for (int j = 0; j < P; ++j) _mm256_storeu_ps(dst + j * 8, _mm256_min_ps(hi, _mm256_max_ps(lo, s[j])));
}

}  // namespace

void depthwise(const LaneWindow& w) {
  // Tap offsets from a position's first tap; 8 positions at a time (8
  // independent sums cover the multiply-adds' latency), across rows, so
  // that 7-wide outputs fill their blocks.
  int64_t offs[kMaxWindowTaps];
  const int64_t taps = w.kernel_h * w.kernel_w;
  for (int64_t ky = 0, t = 0; ky < w.kernel_h; ++ky)
    for (int64_t kx = 0; kx < w.kernel_w; ++kx, ++t)
      offs[t] = (ky * w.dilation_h * w.padded_w + kx * w.dilation_w) * 8;
  const reg lo = _mm256_set1_ps(w.lo), hi = _mm256_set1_ps(w.hi);
  const int64_t positions = w.out_h * w.out_w;
  int64_t oy = 0, ox = 0;  // of position p
  auto first_tap = [&]() {
    const float* at = w.src + (oy * w.stride_h * w.padded_w + ox * w.stride_w) * 8;
    if (++ox == w.out_w) ox = 0, ++oy;
    return at;
  };
  int64_t p = 0;
  for (; p + 8 <= positions; p += 8) {
    const float* at[8];
    for (int j = 0; j < 8; ++j) at[j] = first_tap();
    lane_positions<8>(w, offs, taps, at, lo, hi, w.dst + p * 8);
  }
  for (; p < positions; ++p) {
    const float* at[1] = {first_tap()};
    lane_positions<1>(w, offs, taps, at, lo, hi, w.dst + p * 8);
  }
}

}  // namespace onyx::cpu::image_lanes

#endif  // ONYX_CPU_AVX2_LOOPS
