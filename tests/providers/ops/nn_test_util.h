// nn_test_util.h: helpers shared by the tests of the neural-network kernels
// (linalg, conv, pool, norm, softmax): seeded random data and element-wise
// comparison with per-element tolerances.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "compare.h"
#include "kernel_harness.h"

namespace onyx::test::nn {

// Unit roundoff of float32 (2^-24): one rounding errs by at most u * |value|.
constexpr double kU32 = 1.0 / (1 << 24);

inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1, float hi = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

inline std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

inline int64_t count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// Calls fn(index vector) for every index of `dims`, row-major.
template <typename Fn>
void for_each_index(const std::vector<int64_t>& dims, Fn&& fn) {
  if (count(dims) == 0) return;
  std::vector<int64_t> i(dims.size(), 0);
  while (true) {
    fn(i);
    size_t d = dims.size();
    while (d-- > 0) {
      if (++i[d] < dims[d]) break;
      i[d] = 0;
    }
    if (d == size_t(-1)) return;
  }
}

// Every |actual[i] - expected[i]| <= tol[i] (tol of size 1: the same for all).
template <typename T>
::testing::AssertionResult all_near(const std::vector<T>& actual,
                                    const std::vector<double>& expected,
                                    const std::vector<double>& tol) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure()
           << "size " << actual.size() << " != expected " << expected.size();
  for (size_t i = 0; i < actual.size(); ++i) {
    double t = tol.size() == 1 ? tol[0] : tol[i];
    double diff = std::fabs(double(actual[i]) - expected[i]);
    if (!(diff <= t))  // also catches NaN
      return ::testing::AssertionFailure()
             << "element " << i << ": got " << double(actual[i]) << ", expected " << expected[i]
             << " (diff " << diff << " > tol " << t << ")";
  }
  return ::testing::AssertionSuccess();
}

// Tolerance rtol * |expected| + atol per element.
inline std::vector<double> rel_tol(const std::vector<double>& expected, double rtol, double atol) {
  std::vector<double> t(expected.size());
  for (size_t i = 0; i < t.size(); ++i) t[i] = rtol * std::fabs(expected[i]) + atol;
  return t;
}

// The tolerance of results of `op` on the current provider. On the
// reference, `reference_tol`: the test's own bound, derived from how the CPU
// kernels compute (most in double, rounded once). Any other provider may
// accumulate in float32, as oneDNN and the GPU kernels do, so it gets at least
// the conformance tolerance table's bound for the op
// (conformance/tolerances.cpp: the bound every provider is certified against,
// each row with its reason). The reference's bounds are never widened.
inline std::vector<double> provider_tol(const std::string& op, const std::vector<double>& want,
                                        const std::vector<double>& reference_tol) {
  if (on_reference_provider()) return reference_tol;
  const conformance::Tolerance table = conformance::tolerance_for(op, ONYX_DTYPE_FLOAT32);
  std::vector<double> t(want.size());
  for (size_t i = 0; i < t.size(); ++i)
    t[i] = std::max(reference_tol.size() == 1 ? reference_tol[0] : reference_tol[i],
                    table.atol + table.rtol * std::fabs(want[i]));
  return t;
}

// The tolerance of a float32 sum of k terms (any order, with or without
// FMA) whose absolute values sum to `abs_sum`: the classic bound
// |fl(sum) - sum| <= gamma_k * abs_sum with gamma_k = k u / (1 - k u),
// doubled for the rounding of the products and of the stored result.
inline double sum_tol(double k, double abs_sum) {
  double gamma = (k + 2) * kU32 / (1 - (k + 2) * kU32);
  return 2 * gamma * abs_sum + 1e-30;
}

}  // namespace onyx::test::nn
