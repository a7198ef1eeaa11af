// qkernel_avx2.cpp: the 6 x 16 int16-pair microkernel for AVX2. Per K pair:
// two loads of B (16 columns x 2 int16), six broadcasts of an A pair, twelve
// vpmaddwd into twelve int32 accumulators.
#include <immintrin.h>

#include "qkernel_set.h"

namespace onyx::cpu::qgemm_detail {
namespace {

void ukr(int64_t kp, const int16_t* a, const int16_t* b, int32_t* c, int64_t ldc, bool accumulate,
         int rows, int cols) {
  __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00,
          c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  const int32_t* ap = reinterpret_cast<const int32_t*>(a);
  for (int64_t p = 0; p < kp; ++p) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 16));
    __m256i av = _mm256_set1_epi32(ap[0]);
    c00 = _mm256_add_epi32(c00, _mm256_madd_epi16(av, b0));
    c01 = _mm256_add_epi32(c01, _mm256_madd_epi16(av, b1));
    av = _mm256_set1_epi32(ap[1]);
    c10 = _mm256_add_epi32(c10, _mm256_madd_epi16(av, b0));
    c11 = _mm256_add_epi32(c11, _mm256_madd_epi16(av, b1));
    av = _mm256_set1_epi32(ap[2]);
    c20 = _mm256_add_epi32(c20, _mm256_madd_epi16(av, b0));
    c21 = _mm256_add_epi32(c21, _mm256_madd_epi16(av, b1));
    av = _mm256_set1_epi32(ap[3]);
    c30 = _mm256_add_epi32(c30, _mm256_madd_epi16(av, b0));
    c31 = _mm256_add_epi32(c31, _mm256_madd_epi16(av, b1));
    av = _mm256_set1_epi32(ap[4]);
    c40 = _mm256_add_epi32(c40, _mm256_madd_epi16(av, b0));
    c41 = _mm256_add_epi32(c41, _mm256_madd_epi16(av, b1));
    av = _mm256_set1_epi32(ap[5]);
    c50 = _mm256_add_epi32(c50, _mm256_madd_epi16(av, b0));
    c51 = _mm256_add_epi32(c51, _mm256_madd_epi16(av, b1));
    ap += kMR;
    b += kNR * 2;
  }
  const __m256i acc[kMR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
  if (cols == kNR) {
    for (int i = 0; i < rows; ++i) {
      __m256i* ci = reinterpret_cast<__m256i*>(c + i * ldc);
      __m256i v0 = acc[i][0], v1 = acc[i][1];
      if (accumulate) {
        v0 = _mm256_add_epi32(v0, _mm256_loadu_si256(ci));
        v1 = _mm256_add_epi32(v1, _mm256_loadu_si256(ci + 1));
      }
      _mm256_storeu_si256(ci, v0);
      _mm256_storeu_si256(ci + 1, v1);
    }
    return;
  }
  alignas(32) int32_t tile[kNR];
  for (int i = 0; i < rows; ++i) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(tile), acc[i][0]);
    _mm256_store_si256(reinterpret_cast<__m256i*>(tile + 8), acc[i][1]);
    int32_t* ci = c + i * ldc;
    for (int j = 0; j < cols; ++j)  // wraps like the vector adds, without signed overflow
      ci[j] = accumulate ? int32_t(uint32_t(ci[j]) + uint32_t(tile[j])) : tile[j];
  }
}

}  // namespace

QMicroKernel qkernel_avx2() { return &ukr; }

}  // namespace onyx::cpu::qgemm_detail
