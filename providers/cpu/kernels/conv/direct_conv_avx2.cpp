// direct_conv_avx2.cpp: the direct convolution (direct_conv_impl.h) on AVX2
// + FMA registers: 8 lanes, blocks of 4 channels x 3 vectors (12
// accumulators, 3 input vectors and a broadcast weight: all 16 registers).
#include "kernels/conv/direct_conv_impl.h"

#if defined(ONYX_CPU_AVX2_LOOPS)
#include <immintrin.h>

namespace onyx::cpu::direct_conv {
namespace {

struct Avx2 {
  using reg = __m256;
  static constexpr int kLanes = 8, kVectors = 3;
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
  static void store_first(float* p, reg v, int64_t n) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    _mm256_maskstore_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(int(n)), lane), v);
  }
};

}  // namespace

void detail::run_avx2(const Work& w, int64_t block_lo, int64_t block_hi) {
  impl::run<Avx2>(w, block_lo, block_hi);
}

}  // namespace onyx::cpu::direct_conv

#endif  // ONYX_CPU_AVX2_LOOPS
