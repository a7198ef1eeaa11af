// avx2_store.h: the first n lanes of an AVX2 register stored without
// _mm256_maskstore_ps, which AMD's Zen cores run as microcode (tens of
// cycles a store: the 6 lanes at the end of each 14-wide row cost the test
// CNN's convolution a quarter of its time). For files compiled with -mavx2
// (kernels/*_avx2.cpp) only; static, so that no copy of this AVX2 code is
// merged into code every CPU runs.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace onyx::cpu::avx2 {

// p[0, n) = the first n lanes of v, for 0 <= n <= 8; writes nothing else.
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

}  // namespace onyx::cpu::avx2
