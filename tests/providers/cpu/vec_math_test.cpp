// The CPU provider's vectorized activation loops (kernels/elementwise/
// vec_math.h) against float64, on every ISA this CPU runs: within 2e-6
// relative, plus 4 times what one float32 ulp of x changes the exact result
// (far out in the tail GELU is ill-conditioned: its relative change is ~x^2
// times that of x), plus 1e-30 absolute where the result underflows; special
// values mapped as the exact function maps them.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "kernels/elementwise/vec_math.h"

namespace onyx::cpu::vec {
namespace {

using Loop = void (*)(const float*, float*, size_t);

double gelu_erf_exact(double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }
// 0.5 x (1 + tanh(u)) = x / (1 + e^{-2u}); the first form cancels for u < -18.
double gelu_tanh_exact(double x) {
  return x / (1.0 + std::exp(-2.0 * std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

double tolerance(double (*exact)(double), float x) {
  const double want = exact(double(x));
  const double ulp = double(std::nextafter(std::fabs(x), std::numeric_limits<float>::infinity())) - std::fabs(double(x));
  const double swing = std::fabs(exact(double(x) + ulp) - want) + std::fabs(exact(double(x) - ulp) - want);
  return 2e-6 * std::fabs(want) + 4 * swing + 1e-30;
}

struct Case {
  const char* name;
  Loop loop;
  double (*exact)(double);
};

std::vector<Case> cases() {
  std::vector<Case> c = {{"gelu_erf generic", detail::gelu_erf_generic, gelu_erf_exact},
                         {"gelu_tanh generic", detail::gelu_tanh_generic, gelu_tanh_exact}};
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    c.push_back({"gelu_erf avx2", detail::gelu_erf_avx2, gelu_erf_exact});
    c.push_back({"gelu_tanh avx2", detail::gelu_tanh_avx2, gelu_tanh_exact});
  }
#endif
#if defined(ONYX_CPU_AVX512_LOOPS)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma")) {
    c.push_back({"gelu_erf avx512", detail::gelu_erf_avx512, gelu_erf_exact});
    c.push_back({"gelu_tanh avx512", detail::gelu_tanh_avx512, gelu_tanh_exact});
  }
#endif
  c.push_back({"gelu_erf dispatched", gelu_erf, gelu_erf_exact});
  c.push_back({"gelu_tanh dispatched", gelu_tanh, gelu_tanh_exact});
  return c;
}

TEST(VecMath, GeluWithinTwoMillionthsOfFloat64) {
  std::vector<float> x;
  for (double v = -14; v <= 14; v += 1.0 / 512) x.push_back(float(v));
  for (float v : {1e-30f, -1e-30f, 1e-8f, -1e-8f, 0.0f, -0.0f, 3e4f, -3e4f}) x.push_back(v);
  for (const Case& c : cases()) {
    std::vector<float> y(x.size());
    c.loop(x.data(), y.data(), x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      const double want = c.exact(double(x[i]));
      ASSERT_NEAR(y[i], want, tolerance(c.exact, x[i])) << c.name << " at x = " << x[i];
    }
  }
}

TEST(VecMath, GeluSpecialValuesAndInPlaceTails) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (const Case& c : cases()) {
    // 11 elements: one full vector and a tail, in place.
    std::vector<float> v = {nan, inf, -inf, 0.5f, -0.5f, 2, -2, 7, -7, 1, -1};
    const std::vector<float> x = v;
    c.loop(v.data(), v.data(), v.size());
    EXPECT_TRUE(std::isnan(v[0])) << c.name;
    EXPECT_EQ(v[1], inf) << c.name;
    EXPECT_EQ(v[2], 0.0f) << c.name;
    for (size_t i = 3; i < v.size(); ++i) {
      const double want = c.exact(double(x[i]));
      EXPECT_NEAR(v[i], want, tolerance(c.exact, x[i])) << c.name << " at x = " << x[i];
    }
  }
}

// MaxPool 2x2 / stride 2 on planes of odd and even sizes (a dropped last row
// and column), with NaNs: every ISA gives what the row-major
// `tap > best ? tap : best` scan gives, bit for bit.
TEST(VecMath, MaxPool2x2MatchesTheScalarScan) {
  using Pool = void (*)(const float*, float*, int64_t, int64_t, int64_t, int64_t);
  std::vector<std::pair<const char*, Pool>> pools = {{"generic", detail::max_pool_2x2_generic}, {"dispatched", max_pool_2x2}};
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) pools.push_back({"avx2", detail::max_pool_2x2_avx2});
#endif
  uint32_t state = 12345;
  auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return float(int32_t(state >> 8) % 2001 - 1000) / 100.0f;
  };
  for (auto [h, w] : std::vector<std::pair<int64_t, int64_t>>{{2, 2}, {28, 28}, {14, 14}, {15, 37}, {6, 34}, {4, 32}}) {
    std::vector<float> x(size_t(h * w));
    for (float& v : x) v = next();
    x[3 % x.size()] = std::numeric_limits<float>::quiet_NaN();
    x[x.size() / 2] = std::numeric_limits<float>::quiet_NaN();
    const int64_t oh = h / 2, ow = w / 2;
    for (auto [name, pool] : pools) {
      std::vector<float> y(size_t(oh * ow) + 8, -1.0f);  // 8 guard values after the output
      pool(x.data(), y.data(), h, w, oh, ow);
      for (size_t i = size_t(oh * ow); i < y.size(); ++i)
        EXPECT_EQ(y[i], -1.0f) << name << " " << h << "x" << w << ": wrote past the output";
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          float best = x[size_t(2 * i * w + 2 * j)];
          for (int64_t t = 1; t < 4; ++t) {
            const float tap = x[size_t((2 * i + t / 2) * w + 2 * j + t % 2)];
            best = tap > best ? tap : best;
          }
          const float got = y[size_t(i * ow + j)];
          EXPECT_TRUE(got == best || (std::isnan(got) && std::isnan(best)))
              << name << " " << h << "x" << w << " at " << i << "," << j << ": " << got << " vs " << best;
        }
    }
  }
}

}  // namespace
}  // namespace onyx::cpu::vec
