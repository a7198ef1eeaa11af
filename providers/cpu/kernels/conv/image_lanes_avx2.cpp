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

}  // namespace onyx::cpu::image_lanes

#endif  // ONYX_CPU_AVX2_LOOPS
