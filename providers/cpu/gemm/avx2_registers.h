// avx2_registers.h: small AVX2 register routines shared by the CPU
// provider's AVX2 files (gemm/kernel_avx2.cpp, kernels/*_avx2.cpp). For
// files compiled with -mavx2 only; static, so that no copy of this AVX2 code
// is merged into code every CPU runs.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace onyx::cpu::avx2 {

// p[0, n) = the first n lanes of v, for 0 <= n <= 8; writes nothing else.
// Not _mm256_maskstore_ps, which AMD's Zen cores run as microcode (tens of
// cycles a store: the 6 lanes at the end of each 14-wide row cost the test
// CNN's convolution a quarter of its time).
[[gnu::always_inline]] static inline void store_first(float* p, __m256 v, int64_t n) {
  __m128 part = _mm256_castps256_ps128(v);
  if (n >= 4) {
    _mm_storeu_ps(p, part);
    if (n == 8) {
      _mm_storeu_ps(p + 4, _mm256_extractf128_ps(v, 1));
      return;
    }
    p += 4, n -= 4, part = _mm256_extractf128_ps(v, 1);
  }
  if (n >= 2) {
    _mm_storel_pi(reinterpret_cast<__m64*>(p), part);
    p += 2, n -= 2, part = _mm_movehl_ps(part, part);
  }
  if (n == 1) _mm_store_ss(p, part);
}

// kRows (<= 8) rows of 8 floats at src, ld floats apart, and zeros for
// the rest, transposed: r[c] = column c. Each row's two halves are loaded straight into the 128-bit lanes (row i
// and row i + 4 share a register), so only in-lane shuffles remain: 16, not
// transpose8's 24, and no cross-lane ones. Every register is a named local:
// through arrays indexed in loops GCC at -O2 kept both r and the
// intermediates on the stack (packing a transposed 784 x 256 B took 90 us,
// this takes 31).
template <int kRows = 8>
[[gnu::always_inline]] static inline void load_transposed8(const float* src, int64_t ld, __m256 r[8]) {
  static_assert(kRows >= 4 && kRows <= 8);
  auto rows = [&](int i, int k) {  // row i's floats k..k+3 | row i + 4's
    const __m256 low = _mm256_zextps128_ps256(_mm_loadu_ps(src + i * ld + k));
    return i + 4 < kRows ? _mm256_insertf128_ps(low, _mm_loadu_ps(src + (i + 4) * ld + k), 1) : low;
  };
#pragma GCC unroll 2  // r in registers (a loop over its halves would index it)
  for (int h = 0; h < 2; ++h) {  // h = 1: columns 4..7
    const __m256 a0 = rows(0, 4 * h), a1 = rows(1, 4 * h), a2 = rows(2, 4 * h), a3 = rows(3, 4 * h);
    const __m256 t0 = _mm256_unpacklo_ps(a0, a1), t1 = _mm256_unpackhi_ps(a0, a1);
    const __m256 t2 = _mm256_unpacklo_ps(a2, a3), t3 = _mm256_unpackhi_ps(a2, a3);
    r[4 * h + 0] = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
    r[4 * h + 1] = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
    r[4 * h + 2] = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
    r[4 * h + 3] = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  }
}

// In-register 8 x 8 transpose: afterwards r[c] holds what was column c.
[[gnu::always_inline]] static inline void transpose8(__m256 r[8]) {
  __m256 u[8];
  for (int g = 0; g < 2; ++g) {  // rows 4g .. 4g+3
    const __m256 t0 = _mm256_unpacklo_ps(r[4 * g], r[4 * g + 1]);
    const __m256 t1 = _mm256_unpackhi_ps(r[4 * g], r[4 * g + 1]);
    const __m256 t2 = _mm256_unpacklo_ps(r[4 * g + 2], r[4 * g + 3]);
    const __m256 t3 = _mm256_unpackhi_ps(r[4 * g + 2], r[4 * g + 3]);
    // u[4g + e], 128-bit lane l: column 4l + e of rows 4g .. 4g+3
    u[4 * g + 0] = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * g + 1] = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
    u[4 * g + 2] = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * g + 3] = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int e = 0; e < 4; ++e) {
    r[e] = _mm256_permute2f128_ps(u[e], u[4 + e], 0x20);
    r[4 + e] = _mm256_permute2f128_ps(u[e], u[4 + e], 0x31);
  }
}

// One AVX2 + FMA vector of 8 floats, as the loops written once over a
// vector type take it (kernels/conv/direct_conv_impl.h, winograd_avx2.cpp).
struct Vec {
  using reg = __m256;
  static constexpr int kLanes = 8;
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

}  // namespace onyx::cpu::avx2
