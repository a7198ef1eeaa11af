// dgemm_test.cpp: onyx::cpu::dgemm (the float64 GEMM behind float64 Conv,
// ConvTranspose and ConvGrad) against a long double reference: every
// transpose, alpha/beta, padded leading dimensions, beta 0 on a C full of
// NaN (C must not be read), and rows split over threads.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "gemm/gemm.h"

namespace onyx::cpu {
namespace {

// Splits the rows over up to 3 std::threads, like a host pool would.
ParallelFor three_threads() {
  ParallelFor pf;
  pf.threads = 3;
  pf.run = [](size_t n, const std::function<void(size_t, size_t)>& body) {
    std::vector<std::thread> workers;
    size_t chunk = (n + 2) / 3;
    for (size_t lo = 0; lo < n; lo += chunk) workers.emplace_back(body, lo, std::min(n, lo + chunk));
    for (std::thread& t : workers) t.join();
  };
  return pf;
}

TEST(Dgemm, MatchesLongDoubleReference) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> dist(-1, 1);
  const int64_t m = 7, n = 11, k = 13, pad = 3;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (double alpha : {1.0, -0.75})
        for (double beta : {0.0, 1.0, 0.5})
          for (bool threaded : {false, true}) {
            const int64_t lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
            std::vector<double> a(size_t((ta ? k : m) * lda)), b(size_t((tb ? n : k) * ldb)), c(size_t(m * ldc));
            for (double& v : a) v = dist(rng);
            for (double& v : b) v = dist(rng);
            for (double& v : c) v = beta == 0 ? std::numeric_limits<double>::quiet_NaN() : dist(rng);
            std::vector<double> c0 = c;
            dgemm(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc,
                  threaded ? three_threads() : ParallelFor{});
            for (int64_t i = 0; i < m; ++i)
              for (int64_t j = 0; j < n; ++j) {
                long double sum = 0, magnitude = 0;
                for (int64_t p = 0; p < k; ++p) {
                  long double term = (long double)(ta ? a[size_t(p * lda + i)] : a[size_t(i * lda + p)]) *
                                     (tb ? b[size_t(j * ldb + p)] : b[size_t(p * ldb + j)]);
                  sum += term;
                  magnitude += std::fabs(term);
                }
                const double c_in = beta == 0 ? 0.0 : c0[size_t(i * ldc + j)];
                long double want = alpha * sum + beta * c_in;
                // k + 2 roundings of at most 2^-53 of the magnitude each.
                double tol = double((k + 2) * std::ldexp(1.0L, -53) * (magnitude + std::fabs(c_in)));
                EXPECT_NEAR(c[size_t(i * ldc + j)], double(want), tol)
                    << (ta ? "T" : "N") << (tb ? "T" : "N") << " alpha " << alpha << " beta " << beta << " at " << i << "," << j;
              }
            for (int64_t i = 0; i < m; ++i)  // padding of C untouched
              for (int64_t j = n; j < ldc; ++j)
                if (beta != 0) EXPECT_EQ(c[size_t(i * ldc + j)], c0[size_t(i * ldc + j)]);
                else EXPECT_TRUE(std::isnan(c[size_t(i * ldc + j)]));
          }
}

}  // namespace
}  // namespace onyx::cpu
