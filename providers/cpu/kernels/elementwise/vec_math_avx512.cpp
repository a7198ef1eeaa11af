// vec_math_avx512.cpp: the AVX-512 GELU loops of vec_math.h, the AVX2 ones
// (vec_math_avx2.cpp) on 16 lanes: the same polynomials, clamps and special
// cases, so the same accuracy. Compiled with AVX-512 flags
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

namespace onyx::cpu::vec::detail {
namespace {

__m512 set(float v) { return _mm512_set1_ps(v); }

// e^x as exp256 (Cephes expf, about 2 ulp), clamped outside [-87.3, 88.7].
__m512 exp512(__m512 x) {
  x = _mm512_min_ps(x, set(88.3762626647949f));
  x = _mm512_max_ps(x, set(-87.3365447505531f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, set(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, set(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, set(-2.12194440e-4f), r);
  __m512 p = set(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, set(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, set(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, set(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, set(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, set(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, set(1.0f)));
  // n in [-126, 128]: 2^n by the exponent field; 2^128 is split in two.
  const __m512i e = _mm512_cvtps_epi32(n);
  const __m512i half = _mm512_srai_epi32(e, 1);
  const __m512 s1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(half, _mm512_set1_epi32(127)), 23));
  const __m512 s2 = _mm512_castsi512_ps(
      _mm512_slli_epi32(_mm512_add_epi32(_mm512_sub_epi32(e, half), _mm512_set1_epi32(127)), 23));
  return _mm512_mul_ps(_mm512_mul_ps(p, s1), s2);
}

// erfc(z) for z >= 0, as erfc256 (Numerical Recipes' erfcc).
__m512 erfc512(__m512 z) {
  const __m512 t = _mm512_div_ps(set(1.0f), _mm512_fmadd_ps(set(0.5f), z, set(1.0f)));
  __m512 p = set(0.17087277f);
  p = _mm512_fmadd_ps(p, t, set(-0.82215223f));
  p = _mm512_fmadd_ps(p, t, set(1.48851587f));
  p = _mm512_fmadd_ps(p, t, set(-1.13520398f));
  p = _mm512_fmadd_ps(p, t, set(0.27886807f));
  p = _mm512_fmadd_ps(p, t, set(-0.18628806f));
  p = _mm512_fmadd_ps(p, t, set(0.09678418f));
  p = _mm512_fmadd_ps(p, t, set(0.37409196f));
  p = _mm512_fmadd_ps(p, t, set(1.00002368f));
  p = _mm512_fmadd_ps(p, t, set(-1.26551223f));
  p = _mm512_fnmadd_ps(z, z, p);  // -z^2 + poly
  return _mm512_mul_ps(t, exp512(p));
}

// GELU with erf: h = 0.5 |x| erfc(|x| / sqrt 2); x >= 0: x - h, else -h.
__m512 gelu_erf512(__m512 x) {
  const __m512 ax = _mm512_abs_ps(x);
  const __m512 c = erfc512(_mm512_mul_ps(ax, set(0.7071067811865476f)));
  __m512 h = _mm512_mul_ps(_mm512_mul_ps(set(0.5f), x), c);  // signed: 0.5 x erfc
  // x = +-inf: c = 0 and h is 0, not inf * 0.
  h = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(c, _mm512_setzero_ps(), _CMP_NEQ_UQ), h);
  const __mmask16 positive = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GE_OQ);
  return _mm512_mask_blend_ps(positive, h, _mm512_sub_ps(x, h));
}

// GELU with tanh: 0.5 x (1 + tanh(u)) = x / (1 + e^{-2u}).
__m512 gelu_tanh512(__m512 x) {
  const __m512 x3 = _mm512_mul_ps(_mm512_mul_ps(x, x), x);
  const __m512 u = _mm512_mul_ps(set(0.7978845608028654f), _mm512_fmadd_ps(set(0.044715f), x3, x));
  const __m512 e = exp512(_mm512_mul_ps(set(-2.0f), u));
  const __m512 y = _mm512_div_ps(x, _mm512_add_ps(set(1.0f), e));
  // x = -inf: u = -inf, e clamps to e^88 and y = -inf; the limit is 0.
  return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, set(-1e30f), _CMP_NLT_UQ), y);
}

template <bool kErf>
void loop(const float* x, float* y, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    _mm512_storeu_ps(y + i, kErf ? gelu_erf512(v) : gelu_tanh512(v));
  }
  if (i < n) {  // the tail with masked loads and stores
    const __mmask16 m = __mmask16((1u << (n - i)) - 1);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    _mm512_mask_storeu_ps(y + i, m, kErf ? gelu_erf512(v) : gelu_tanh512(v));
  }
}

}  // namespace

void gelu_erf_avx512(const float* x, float* y, size_t n) { loop<true>(x, y, n); }
void gelu_tanh_avx512(const float* x, float* y, size_t n) { loop<false>(x, y, n); }

}  // namespace onyx::cpu::vec::detail

#endif  // ONYX_CPU_AVX512_LOOPS
