// vec_math_avx512.cpp: the AVX-512 GELU loops of vec_math.h: gelu_impl.h on
// 16 lanes, as vec_math_avx2.cpp runs it on 8. Compiled with AVX-512 flags
// (providers/cpu/CMakeLists.txt) and called only on CPUs that have them; free
// of standard-library inline functions, as the AVX2 file.
#include "kernels/elementwise/vec_math.h"

#if defined(ONYX_CPU_AVX512_LOOPS)
// GCC 12's AVX-512 headers pass _mm512_undefined_ps() to builtins, which
// -W(maybe-)uninitialized flags once inlined (GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include "kernels/elementwise/exp_log_impl.h"
#include "kernels/elementwise/gelu_impl.h"
#include "kernels/elementwise/logistic_impl.h"
#include "kernels/elementwise/softmax_impl.h"
#include "kernels/elementwise/window_impl.h"

namespace onyx::cpu::vec::detail {
namespace {

// The AVX-512 registers for gelu_impl.h.
struct Avx512 {
  using reg = __m512;
  using ireg = __m512i;
  static constexpr size_t kLanes = 16;
  static reg set(float v) { return _mm512_set1_ps(v); }
  static reg min(reg a, reg b) { return _mm512_min_ps(a, b); }
  static reg max(reg a, reg b) { return _mm512_max_ps(a, b); }
  static reg add(reg a, reg b) { return _mm512_add_ps(a, b); }
  static reg sub(reg a, reg b) { return _mm512_sub_ps(a, b); }
  static reg mul(reg a, reg b) { return _mm512_mul_ps(a, b); }
  static reg div(reg a, reg b) { return _mm512_div_ps(a, b); }
  // 1 / d for d >= 1 (0 for +inf, NaN for NaN): the rcp14 estimate
  // (relative error 2^-14) and one Newton step; no division, whose
  // throughput bounds the erf-GELU loop.
  static reg rcp(reg d) {
    const reg r = _mm512_rcp14_ps(d);
    const reg refined = _mm512_fmadd_ps(r, _mm512_fnmadd_ps(d, r, _mm512_set1_ps(1.0f)), r);
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(r, _mm512_setzero_ps(), _CMP_NEQ_UQ), refined);  // inf: 0, not NaN
  }
  static reg fmadd(reg a, reg b, reg c) { return _mm512_fmadd_ps(a, b, c); }
  static reg fnmadd(reg a, reg b, reg c) { return _mm512_fnmadd_ps(a, b, c); }
  static reg round(reg x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // p 2^n, exactly (n integral): one vscalefps, where building 2^n from the
  // exponent field takes nine instructions (a tenth of the GELU loop).
  static reg scale_pow2(reg p, reg n) { return _mm512_scalef_ps(p, n); }
  static reg scale_pow2_normal(reg p, reg n) { return _mm512_scalef_ps(p, n); }
  static reg abs(reg x) { return _mm512_abs_ps(x); }
  // x = mantissa(x) 2^exponent(x), the mantissa in [0.5, 1), for a positive normal x.
  static reg mantissa(reg x) { return _mm512_getmant_ps(x, _MM_MANT_NORM_p5_1, _MM_MANT_SIGN_src); }
  static reg exponent(reg x) { return _mm512_add_ps(_mm512_getexp_ps(x), _mm512_set1_ps(1.0f)); }
  static reg zero_where_zero(reg c, reg v) {  // NEQ_UQ: NaN lanes keep v
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(c, _mm512_setzero_ps(), _CMP_NEQ_UQ), v);
  }
  static reg select_nonnegative(reg x, reg a, reg b) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GE_OQ), b, a);
  }
  static reg zero_below(reg x, reg limit, reg v) { return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, limit, _CMP_NLT_UQ), v); }
  static reg select_below(reg x, reg limit, reg a, reg b) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, limit, _CMP_LT_OQ), b, a);
  }
  static reg loadu(const float* p) { return _mm512_loadu_ps(p); }
  static void storeu(float* p, reg v) { _mm512_storeu_ps(p, v); }
  static reg load_first(const float* p, size_t n) { return _mm512_maskz_loadu_ps(__mmask16((1u << n) - 1), p); }
  static void store_first(float* p, reg v, size_t n) { _mm512_mask_storeu_ps(p, __mmask16((1u << n) - 1), v); }
  static float reduce_max(reg v) {
    const __m256 h = _mm256_max_ps(_mm512_castps512_ps256(v),
                                   _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
  }
  static double reduce_add_double(reg v) {
    const __m512d d = _mm512_add_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(v)),
                                    _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
    const __m256d q = _mm256_add_pd(_mm512_castpd512_pd256(d), _mm512_extractf64x4_pd(d, 1));
    const __m128d h = _mm_add_pd(_mm256_castpd256_pd128(q), _mm256_extractf128_pd(q, 1));
    return _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
  }
  static bool any_nonzero(reg v) { return _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_NEQ_UQ) != 0; }
};

}  // namespace

void gelu_erf_avx512(const float* x, float* y, size_t n) { gelu_impl::loop<Avx512, true>(x, y, n); }
void gelu_tanh_avx512(const float* x, float* y, size_t n) { gelu_impl::loop<Avx512, false>(x, y, n); }
void sigmoid_avx512(const float* x, float* y, size_t n) {
  logistic_impl::loop<Avx512>(x, y, n, logistic_impl::Sigmoid{});
}
void swish_avx512(const float* x, float* y, size_t n, float alpha) {
  if (alpha == 1.0f) return logistic_impl::loop<Avx512>(x, y, n, logistic_impl::Swish<false>{alpha});
  logistic_impl::loop<Avx512>(x, y, n, logistic_impl::Swish<true>{alpha});
}
void tanh_avx512(const float* x, float* y, size_t n) { logistic_impl::loop<Avx512>(x, y, n, logistic_impl::Tanh{}); }
void exp_avx512(const float* x, float* y, size_t n) { logistic_impl::loop<Avx512>(x, y, n, exp_log_impl::Exp{}); }
void erf_avx512(const float* x, float* y, size_t n) { logistic_impl::loop<Avx512>(x, y, n, exp_log_impl::Erf{}); }
void log_avx512(const float* x, float* y, size_t n) { logistic_impl::loop<Avx512>(x, y, n, exp_log_impl::Log{}); }
void softmax_row_avx512(const float* x, float* y, size_t n) { softmax_impl::row<Avx512>(x, y, n); }
void window_rows_avx512(float* y, int64_t ldy, const float* src, int64_t lds, int64_t rows, int64_t cols,
                        const int64_t* offsets, const float* taps, int64_t tap_count, float bias, float lo, float hi) {
  window_impl::rows<Avx512>(y, ldy, src, lds, rows, cols, offsets, taps, tap_count, bias, lo, hi);
}

}  // namespace onyx::cpu::vec::detail

#endif  // ONYX_CPU_AVX512_LOOPS
