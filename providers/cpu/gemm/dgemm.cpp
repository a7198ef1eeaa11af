// dgemm.cpp: double-precision GEMM for float64 Conv/ConvTranspose/ConvGrad,
// which serve references and gradient checks rather than speed. Plain loops
// over rows of C (in parallel when asked): for op(B) = B the inner loop runs
// along a row of B and C (contiguous, vectorizable); for op(B) = B^T along
// a row of B as a dot product.
#include "gemm/gemm.h"

namespace onyx::cpu {

void dgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
           const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
           int64_t ldc, const ParallelFor& parallel) {
  auto a_at = [&](int64_t i, int64_t p) { return trans_a ? a[p * lda + i] : a[i * lda + p]; };
  auto rows = [&](size_t lo, size_t hi) {
    for (int64_t i = int64_t(lo); i < int64_t(hi); ++i) {
      double* ci = c + i * ldc;
      for (int64_t j = 0; j < n; ++j) ci[j] = beta == 0 ? 0.0 : beta * ci[j];  // beta 0: C unread
      if (!trans_b) {
        for (int64_t p = 0; p < k; ++p) {
          const double s = alpha * a_at(i, p);
          const double* bp = b + p * ldb;
          for (int64_t j = 0; j < n; ++j) ci[j] += s * bp[j];
        }
      } else {
        for (int64_t j = 0; j < n; ++j) {
          const double* bj = b + j * ldb;
          double s = 0;
          for (int64_t p = 0; p < k; ++p) s += a_at(i, p) * bj[p];
          ci[j] += alpha * s;
        }
      }
    }
  };
  if (m <= 0) return;
  if (parallel.run && parallel.threads > 1 && m > 1)
    parallel.run(size_t(m), rows);
  else
    rows(0, size_t(m));
}

}  // namespace onyx::cpu
