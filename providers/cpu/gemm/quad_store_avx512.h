// quad_store_avx512.h: the end of an AVX-512 quad microkernel (VNNI's and
// AMX's), shared: 16 sums of row i, panel p of a tile get the zero-point
// terms (when fix is given) and are stored, or added to C, under the mask of
// the columns left. Include only from files built with AVX-512 F/BW/VL.
#pragma once

#include <immintrin.h>

#include "qkernel_set.h"

namespace onyx::cpu::qgemm_detail {

// False once p is past the tile's last column (the caller stops there).
inline bool store_quad_sums(__m512i v, int i, int p, int cols, int32_t* c, int64_t ldc, bool accumulate,
                            const QuadFix* fix) {
  const int lanes = cols - p * kNR;
  if (lanes <= 0) return false;
  const __mmask16 mask = lanes >= kNR ? __mmask16(0xFFFF) : __mmask16((1u << lanes) - 1);
  if (fix && fix->row_add) {
    v = _mm512_add_epi32(v, _mm512_add_epi32(_mm512_set1_epi32(fix->row_add[i]), _mm512_loadu_si512(fix->col_add + p * kNR)));
  } else if (fix) {
    const __m512i ct = _mm512_loadu_si512(fix->col_term + p * kNR);
    const __m512i cz = _mm512_loadu_si512(fix->col_zero + p * kNR);
    const __m512i rz = _mm512_set1_epi32(fix->row_zero[i]), rs = _mm512_set1_epi32(fix->row_sum[i]);
    v = _mm512_sub_epi32(v, _mm512_add_epi32(_mm512_mullo_epi32(rz, ct), _mm512_mullo_epi32(cz, rs)));
  }
  int32_t* out = c + i * ldc + p * kNR;
  if (accumulate) v = _mm512_add_epi32(v, _mm512_maskz_loadu_epi32(mask, out));
  _mm512_mask_storeu_epi32(out, mask, v);
  return true;
}

}  // namespace onyx::cpu::qgemm_detail
