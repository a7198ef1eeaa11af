// nn_test_util.h: helpers shared by the tests of the neural-network kernels
// (linalg, conv, pool, norm, softmax): seeded random data, element-wise
// comparison with per-element tolerances, and the ONNX node-test sweep.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

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

// The tolerance of a float32 sum of k terms (any order, with or without
// FMA) whose absolute values sum to `abs_sum`: the classic bound
// |fl(sum) - sum| <= gamma_k * abs_sum with gamma_k = k u / (1 - k u),
// doubled for the rounding of the products and of the stored result.
inline double sum_tol(double k, double abs_sum) {
  double gamma = (k + 2) * kU32 / (1 - (k + 2) * kU32);
  return 2 * gamma * abs_sum + 1e-30;
}

// Runs every ONNX backend node test whose name starts with one of
// `prefixes`. Single-node cases must pass, except those listed in
// `declines` (name -> why the kernel refuses it), which must be declined;
// multi-node ("_expanded") cases are skipped by the harness. Prints and
// records the counts.
inline void run_onnx_cases(const std::vector<std::string>& prefixes,
                           const std::map<std::string, std::string>& declines = {}) {
  std::set<std::string> names;  // prefixes may overlap
  for (const std::string& prefix : prefixes)
    for (const std::string& name : list_onnx_node_tests(prefix)) names.insert(name);
  int pass = 0, skipped = 0, declined = 0, total = 0;
  for (const std::string& name : names) {
    ++total;
    OnnxCaseResult r = run_onnx_node_test(name);
    if (declines.count(name)) {
      EXPECT_EQ(r.outcome, OnnxCaseResult::kDeclined) << name << ": " << r.message;
      declined += r.outcome == OnnxCaseResult::kDeclined;
      continue;
    }
    if (r.outcome == OnnxCaseResult::kSkipped) {
      ++skipped;
      continue;
    }
    EXPECT_EQ(r.outcome, OnnxCaseResult::kPass) << name << ": " << r.message;
    pass += r.outcome == OnnxCaseResult::kPass;
  }
  if (total == 0) GTEST_SKIP() << "no ONNX node tests found in " << onnx_node_tests_dir();
  std::printf(
      "ONNX node tests: %d passed, %d declined as expected, %d skipped (multi-node) of %d\n", pass,
      declined, skipped, total);
  ::testing::Test::RecordProperty("onnx_passed", pass);
  ::testing::Test::RecordProperty("onnx_skipped", skipped);
}

}  // namespace onyx::test::nn
