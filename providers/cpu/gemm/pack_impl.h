// pack_impl.h: packing loops shared by the kernel files, which include it so
// that the compiler vectorises them for each file's ISA.
//
// Everything is in an anonymous namespace on purpose: the same template built
// with different -m flags in different files must never be merged by the
// linker (an AVX-512 copy could end up called on an AVX2-only CPU).
#pragma once

#include <cstdint>
#include <cstring>

#include "kernel_set.h"

namespace onyx::cpu::gemm_detail {
namespace {

inline int64_t min64(int64_t x, int64_t y) { return x < y ? x : y; }

template <int MR>
void pack_a_impl(bool trans, const float* a, int64_t lda, int64_t rows, int64_t kc, float* dst) {
  if (trans) {
    // op(A)(i, k) = a[k*lda + i]: read each stored row's run of `rows` floats
    // once, handing MR of them to each panel. Panel by panel instead, every
    // panel would reread kc rows lda apart, one cache line each: with lda a
    // multiple of 4 KB (a weight gradient X^T dY over 1024 rows) they share a
    // few cache sets and come from L3 every time.
    const int64_t full = rows / MR * MR;
    for (int64_t k = 0; k < kc; ++k) {
      const float* src = a + k * lda;
      float* d = dst + k * MR;
      for (int64_t p = 0; p < full; p += MR, d += kc * MR)
        std::memcpy(d, src + p, MR * sizeof(float));  // a few vector moves (the loop stayed scalar)
      for (int64_t i = 0; full < rows && i < MR; ++i) d[i] = full + i < rows ? src[full + i] : 0.0f;
    }
    return;
  }
  for (int64_t p = 0; p < rows; p += MR, dst += kc * MR) {
    const int64_t mr = min64(MR, rows - p);
    // op(A)(i, k) = a[i*lda + k]: walk each row contiguously (the read side
    // streams from memory) and scatter into the panel, which stays in L1.
    for (int64_t i = 0; i < mr; ++i) {
      const float* src = a + (p + i) * lda;
      for (int64_t k = 0; k < kc; ++k) dst[k * MR + i] = src[k];
    }
    for (int64_t i = mr; i < MR; ++i)
      for (int64_t k = 0; k < kc; ++k) dst[k * MR + i] = 0.0f;
  }
}

template <int NR>
void pack_b_impl(bool trans, const float* b, int64_t ldb, int64_t kc, int64_t cols, float* dst) {
  for (int64_t q = 0; q < cols; q += NR, dst += kc * NR) {
    const int64_t nr = min64(NR, cols - q);
    if (!trans) {
      // op(B)(k, j) = b[k*ldb + j]: a row of the panel is a contiguous run.
      for (int64_t k = 0; k < kc; ++k) {
        const float* src = b + k * ldb + q;
        float* d = dst + k * NR;
        if (nr == NR) {
          for (int j = 0; j < NR; ++j) d[j] = src[j];
        } else {
          for (int64_t j = 0; j < NR; ++j) d[j] = j < nr ? src[j] : 0.0f;
        }
      }
    } else {
      // op(B)(k, j) = b[j*ldb + k]: read each stored row contiguously.
      for (int64_t j = 0; j < nr; ++j) {
        const float* src = b + (q + j) * ldb;
        for (int64_t k = 0; k < kc; ++k) dst[k * NR + j] = src[k];
      }
      for (int64_t j = nr; j < NR; ++j)
        for (int64_t k = 0; k < kc; ++k) dst[k * NR + j] = 0.0f;
    }
  }
}

}  // namespace
}  // namespace onyx::cpu::gemm_detail
