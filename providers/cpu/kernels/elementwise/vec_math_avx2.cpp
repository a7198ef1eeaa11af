// vec_math_avx2.cpp: the AVX2+FMA loops of vec_math.h. Compiled with
// -mavx2 -mfma (providers/cpu/CMakeLists.txt) and called only on CPUs that
// have both. Free of standard-library templates and inline functions shared
// with other files, so that no AVX2 code is merged into code every CPU runs.
#include "kernels/elementwise/vec_math.h"

#if defined(ONYX_CPU_AVX2_LOOPS)
#include <immintrin.h>

namespace onyx::cpu::vec::detail {
namespace {

// e^x to about 2 ulp for x in [-87.3, 88.7] (Cephes expf: x = n ln2 + r,
// |r| <= ln2 / 2, degree-5 polynomial for e^r, times 2^n); clamped outside.
__m256 exp256(__m256 x) {
  x = _mm256_min_ps(x, _mm256_set1_ps(88.3762626647949f));
  x = _mm256_max_ps(x, _mm256_set1_ps(-87.3365447505531f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  // n in [-126, 128]: 2^n by the exponent field; 2^128 is split in two.
  const __m256i e = _mm256_cvtps_epi32(n);
  const __m256i half = _mm256_srai_epi32(e, 1);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half, _mm256_set1_epi32(127)), 23));
  const __m256 s2 = _mm256_castsi256_ps(
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(e, half), _mm256_set1_epi32(127)), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

// erfc(z) for z >= 0 with relative error below 1.2e-7 in exact arithmetic
// (Numerical Recipes' erfcc, a Chebyshev fit of erfc(z) e^{z^2}): accurate in
// the tail, where 1 - erf(z) would cancel.
__m256 erfc256(__m256 z) {
  const __m256 t = _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_fmadd_ps(_mm256_set1_ps(0.5f), z, _mm256_set1_ps(1.0f)));
  __m256 p = _mm256_set1_ps(0.17087277f);
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.82215223f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.48851587f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.13520398f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.27886807f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.18628806f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.09678418f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.37409196f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.00002368f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.26551223f));
  p = _mm256_fnmadd_ps(z, z, p);  // -z^2 + poly
  return _mm256_mul_ps(t, exp256(p));
}

// GELU with erf: h = 0.5 |x| erfc(|x| / sqrt 2); x >= 0: x - h, else -h.
__m256 gelu_erf256(__m256 x) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 ax = _mm256_andnot_ps(sign, x);
  const __m256 c = erfc256(_mm256_mul_ps(ax, _mm256_set1_ps(0.7071067811865476f)));
  __m256 h = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), c);  // signed: 0.5 x erfc
  h = _mm256_andnot_ps(_mm256_cmp_ps(c, _mm256_setzero_ps(), _CMP_EQ_OQ), h);  // x = +-inf: 0, not inf * 0
  const __m256 positive = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GE_OQ);
  return _mm256_blendv_ps(h, _mm256_sub_ps(x, h), positive);
}

// GELU with tanh: 0.5 x (1 + tanh(u)) = x / (1 + e^{-2u}).
__m256 gelu_tanh256(__m256 x) {
  const __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
  const __m256 u = _mm256_mul_ps(_mm256_set1_ps(0.7978845608028654f), _mm256_fmadd_ps(_mm256_set1_ps(0.044715f), x3, x));
  const __m256 e = exp256(_mm256_mul_ps(_mm256_set1_ps(-2.0f), u));
  const __m256 y = _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
  // x = -inf: u = -inf, e clamps to e^88 and y = -inf; the limit is 0.
  return _mm256_andnot_ps(_mm256_cmp_ps(x, _mm256_set1_ps(-1e30f), _CMP_LT_OQ), y);
}

template <bool kErf>
__m256 gelu256(__m256 x) {
  return kErf ? gelu_erf256(x) : gelu_tanh256(x);
}

template <bool kErf>
void loop(const float* x, float* y, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, gelu256<kErf>(_mm256_loadu_ps(x + i)));
  if (i < n) {  // the tail through a padded block
    float in[8] = {0, 0, 0, 0, 0, 0, 0, 0}, out[8];
    for (size_t k = 0; k < n - i; ++k) in[k] = x[i + k];
    _mm256_storeu_ps(out, gelu256<kErf>(_mm256_loadu_ps(in)));
    for (size_t k = 0; k < n - i; ++k) y[i + k] = out[k];
  }
}

// `tap > best ? tap : best` per lane, the generic loop's comparison
// (_mm256_max_ps returns its second operand when either is NaN).
__m256 take_greater(__m256 tap, __m256 best) { return _mm256_max_ps(tap, best); }

}  // namespace

void max_pool_2x2_avx2(const float* x, float* y, int64_t h, int64_t w, int64_t oh, int64_t ow) {
  (void)h;
  // The last (ow % 8) outputs of a row read their 2 x (ow % 8) inputs with
  // masked loads (no read past the row) and write with a masked store.
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const int64_t tail = ow % 8;
  const __m256i in_lo = _mm256_cmpgt_epi32(_mm256_set1_epi32(int(2 * tail)), lane);
  const __m256i in_hi = _mm256_cmpgt_epi32(_mm256_set1_epi32(int(2 * tail - 8)), lane);
  const __m256i out = _mm256_cmpgt_epi32(_mm256_set1_epi32(int(tail)), lane);
  auto pool8 = [](__m256 a0, __m256 b0, __m256 a1, __m256 b1) {
    // 16 inputs of each row; shuffle_ps picks evens (0x88) and odds (0xDD)
    // within 128-bit lanes, permute4x64 puts the lanes back in order.
    const __m256 e0 = _mm256_shuffle_ps(a0, b0, 0x88), o0 = _mm256_shuffle_ps(a0, b0, 0xDD);
    const __m256 e1 = _mm256_shuffle_ps(a1, b1, 0x88), o1 = _mm256_shuffle_ps(a1, b1, 0xDD);
    __m256 best = take_greater(o0, e0);
    best = take_greater(e1, best);
    best = take_greater(o1, best);
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(best), 0xD8));
  };
  for (int64_t i = 0; i < oh; ++i, y += ow) {
    const float* r0 = x + 2 * i * w;
    const float* r1 = r0 + w;
    int64_t j = 0;
    for (; j + 8 <= ow; j += 8)
      _mm256_storeu_ps(y + j, pool8(_mm256_loadu_ps(r0 + 2 * j), _mm256_loadu_ps(r0 + 2 * j + 8),
                                    _mm256_loadu_ps(r1 + 2 * j), _mm256_loadu_ps(r1 + 2 * j + 8)));
    if (tail)
      _mm256_maskstore_ps(y + j, out,
                          pool8(_mm256_maskload_ps(r0 + 2 * j, in_lo), _mm256_maskload_ps(r0 + 2 * j + 8, in_hi),
                                _mm256_maskload_ps(r1 + 2 * j, in_lo), _mm256_maskload_ps(r1 + 2 * j + 8, in_hi)));
  }
}

void gelu_erf_avx2(const float* x, float* y, size_t n) { loop<true>(x, y, n); }
void gelu_tanh_avx2(const float* x, float* y, size_t n) { loop<false>(x, y, n); }

}  // namespace onyx::cpu::vec::detail
#endif  // ONYX_CPU_AVX2_LOOPS
