// direct_conv_avx512.cpp: the direct convolution (direct_conv_impl.h) on
// AVX-512 registers: 16 lanes, blocks of 4 channels x 4 vectors.
#include "kernels/conv/direct_conv_impl.h"

#if defined(ONYX_CPU_AVX512_LOOPS)
// GCC 12's AVX-512 headers pass _mm512_undefined_ps() to the max/min
// builtins, which -W(maybe-)uninitialized flags once inlined (GCC bug
// 105593); the warning points into the header, so silencing it there suffices.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

namespace onyx::cpu::direct_conv {
namespace {

struct Avx512 {
  using reg = __m512;
  static constexpr int kLanes = 16, kVectors = 4;
  // 4 x 6 accumulators, 4 dY vectors and an X vector: 29 of the 32 registers.
  static constexpr int kWeightPairs = 6;
  static reg zero() { return _mm512_setzero_ps(); }
  static reg loadu(const float* p) { return _mm512_loadu_ps(p); }
  static reg bcast(const float* p) { return _mm512_set1_ps(*p); }
  static reg fma(reg a, reg b, reg c) { return _mm512_fmadd_ps(a, b, c); }
  static reg add(reg a, reg b) { return _mm512_add_ps(a, b); }
  static reg mul(reg a, reg b) { return _mm512_mul_ps(a, b); }
  static reg max(reg a, reg b) { return _mm512_max_ps(a, b); }
  static reg min(reg a, reg b) { return _mm512_min_ps(a, b); }
  static reg select_negative(reg v, reg if_negative) {
    return _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, zero(), _CMP_LT_OQ), if_negative);
  }
  static void store(float* p, reg v) { _mm512_storeu_ps(p, v); }
  static void store_first(float* p, reg v, int64_t n) {
    _mm512_mask_storeu_ps(p, __mmask16((1u << n) - 1), v);
  }
  static reg load_first(const float* p, int64_t n) { return _mm512_maskz_loadu_ps(__mmask16((1u << n) - 1), p); }
  static float sum(reg v) { return _mm512_reduce_add_ps(v); }
};

}  // namespace

void detail::run_avx512(const Work& w, int64_t block_lo, int64_t block_hi) {
  impl::run<Avx512>(w, block_lo, block_hi);
}

void detail::weight_gradient_avx512(const Work& w, int64_t block_lo, int64_t block_hi) {
  impl::weight_gradient<Avx512>(w, block_lo, block_hi);
}

void detail::weight_gradient_lanes_avx512(const Work& w, int64_t pair_lo, int64_t pair_hi) {
  impl::weight_gradient_lanes<Avx512>(w, pair_lo, pair_hi);
}

}  // namespace onyx::cpu::direct_conv

#endif  // ONYX_CPU_AVX512_LOOPS
