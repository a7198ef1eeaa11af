// direct_conv_avx2.cpp: the direct convolution (direct_conv_impl.h) on AVX2
// + FMA registers: 8 lanes, blocks of 4 channels x 3 vectors (12
// accumulators, 3 input vectors and a broadcast weight: all 16 registers).
#include "kernels/conv/direct_conv_impl.h"

#if defined(ONYX_CPU_AVX2_LOOPS)
#include <immintrin.h>

#include "gemm/avx2_registers.h"

namespace onyx::cpu::direct_conv {
namespace {

struct Avx2 {
  using reg = __m256;
  static constexpr int kLanes = 8, kVectors = 3;
  // 4 x 2 accumulators, 4 dY vectors and an X vector: 13 of the 16 registers.
  static constexpr int kWeightPairs = 2;
  static reg zero() { return _mm256_setzero_ps(); }
  static reg loadu(const float* p) { return _mm256_loadu_ps(p); }
  static reg bcast(const float* p) { return _mm256_broadcast_ss(p); }
  static reg fma(reg a, reg b, reg c) { return _mm256_fmadd_ps(a, b, c); }
  static reg add(reg a, reg b) { return _mm256_add_ps(a, b); }
  static reg mul(reg a, reg b) { return _mm256_mul_ps(a, b); }
  static reg max(reg a, reg b) { return _mm256_max_ps(a, b); }
  static reg min(reg a, reg b) { return _mm256_min_ps(a, b); }
  static reg select_negative(reg v, reg if_negative) {
    return _mm256_blendv_ps(v, if_negative, _mm256_cmp_ps(v, zero(), _CMP_LT_OQ));
  }
  static void store(float* p, reg v) { _mm256_storeu_ps(p, v); }
  static __m256i first(int64_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static void store_first(float* p, reg v, int64_t n) { avx2::store_first(p, v, n); }
  static reg load_first(const float* p, int64_t n) { return _mm256_maskload_ps(p, first(n)); }
  static void transpose(reg r[8]) { avx2::transpose8(r); }
  static float sum(reg v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
  }
};

}  // namespace

void detail::run_avx2(const Work& w, int64_t block_lo, int64_t block_hi) {
  impl::run<Avx2>(w, block_lo, block_hi);
}

void detail::run_lanes_avx2(const LaneWork& w, int64_t p_lo, int64_t p_hi) { impl::run_lanes<Avx2>(w, p_lo, p_hi); }

void detail::weight_gradient_avx2(const Work& w, int64_t block_lo, int64_t block_hi) {
  impl::weight_gradient<Avx2>(w, block_lo, block_hi);
}

}  // namespace onyx::cpu::direct_conv

#endif  // ONYX_CPU_AVX2_LOOPS
