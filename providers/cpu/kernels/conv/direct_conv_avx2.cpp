// direct_conv_avx2.cpp: the direct convolution (direct_conv_impl.h) on AVX2
// + FMA registers: 8 lanes, blocks of 4 channels x 3 vectors (12
// accumulators, 3 input vectors and a broadcast weight: all 16 registers).
#include "kernels/conv/direct_conv_impl.h"

#if defined(ONYX_CPU_AVX2_LOOPS)
#include <immintrin.h>

#include "gemm/avx2_registers.h"

namespace onyx::cpu::direct_conv {
namespace {

struct Avx2 : avx2::Vec {
  static constexpr int kVectors = 3;
  // 4 x 2 accumulators, 4 dY vectors and an X vector: 13 of the 16 registers.
  static constexpr int kWeightPairs = 2;
};

}  // namespace

void detail::run_avx2(const Work& w, int64_t block_lo, int64_t block_hi) {
  impl::run<Avx2>(w, block_lo, block_hi);
}

void detail::run_lanes_avx2(const LaneWork& w, int64_t p_lo, int64_t p_hi) { impl::run_lanes<Avx2>(w, p_lo, p_hi); }

void detail::run_flat_avx2(const LaneWork& w, int64_t row_lo, int64_t row_hi) { impl::run_flat<Avx2>(w, row_lo, row_hi); }

void detail::weight_gradient_avx2(const Work& w, int64_t block_lo, int64_t block_hi) {
  impl::weight_gradient<Avx2>(w, block_lo, block_hi);
}

void detail::weight_gradient_lanes_avx2(const Work& w, int64_t pair_lo, int64_t pair_hi) {
  impl::weight_gradient_lanes<Avx2>(w, pair_lo, pair_hi);
}

void detail::transpose_planes_avx2(const float* src, int64_t planes, int64_t size, float* dst) {
  const int64_t full = size / 8 * 8;
  for (int64_t c0 = 0; c0 < planes; c0 += 8) {
    for (int64_t p0 = 0; p0 < full; p0 += 8) {
      __m256 r[8];
      for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + (c0 + i) * size + p0);
      avx2::transpose8(r);
      for (int i = 0; i < 8; ++i) _mm256_storeu_ps(dst + (p0 + i) * planes + c0, r[i]);
    }
    for (int64_t p = full; p < size; ++p)
      for (int64_t i = 0; i < 8; ++i) dst[p * planes + c0 + i] = src[(c0 + i) * size + p];
  }
}

}  // namespace onyx::cpu::direct_conv

#endif  // ONYX_CPU_AVX2_LOOPS
