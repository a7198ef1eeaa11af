// transpose_tiles_avx2.cpp: transpose_tiles.h on AVX2. Like the other ISA
// files, nothing here calls a standard-library inline function: its AVX2
// code must not be merged into code every CPU runs.
#include "kernels/shape/transpose_tiles.h"

#if defined(ONYX_CPU_AVX2_LOOPS)
#include <immintrin.h>

#include "gemm/avx2_registers.h"

namespace onyx::cpu::transpose_tiles {

void transpose32(const uint32_t* src, int64_t src_ld, uint32_t* dst, int64_t dst_ld, int64_t rows, int64_t cols) {
  // Floats only as 32-bit lanes: the shuffles move bits, never convert them.
  const float* s = reinterpret_cast<const float*>(src);
  float* d = reinterpret_cast<float*>(dst);
  const int64_t rows8 = rows / 8 * 8, cols8 = cols / 8 * 8;
  for (int64_t c = 0; c < cols8; c += 8)
    for (int64_t r = 0; r < rows8; r += 8) {
      __m256 t[8];  // t[k]: output row r + k, columns c .. c + 7
      avx2::load_transposed8<8>(s + c * src_ld + r, src_ld, t);
#pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) _mm256_storeu_ps(d + (r + k) * dst_ld + c, t[k]);
    }
  // The edges: rows past rows8 in every column, columns past cols8 in the rest.
  for (int64_t r = rows8; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) dst[r * dst_ld + c] = src[c * src_ld + r];
  for (int64_t r = 0; r < rows8; ++r)
    for (int64_t c = cols8; c < cols; ++c) dst[r * dst_ld + c] = src[c * src_ld + r];
}

}  // namespace onyx::cpu::transpose_tiles

#endif  // ONYX_CPU_AVX2_LOOPS
