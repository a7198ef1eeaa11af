// The CPU provider's vectorized activation loops (kernels/elementwise/
// vec_math.h) against float64, on every ISA this CPU runs: within 2e-6
// relative, plus 4 times what one float32 ulp of x changes the exact result
// (far out in the tail GELU is ill-conditioned: its relative change is ~x^2
// times that of x), plus 1e-30 absolute where the result underflows; special
// values mapped as the exact function maps them.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <random>
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

// Sigmoid, Swish (alpha 1, QuickGelu's 1.702, a negative one) and Tanh:
// within 1e-6 relative, plus 4 times what one float32 ulp of x changes the
// exact result, plus 1.2e-38 absolute (the logistic's tail is 0 once e^z
// underflows; Swish's, x times it, is below 1.1e-36 there); special values
// mapped to the limits, in place, with a tail.
using ScaledLoop = void (*)(const float*, float*, size_t, float);

double sigmoid_exact(double z) { return z >= 0 ? 1 / (1 + std::exp(-z)) : std::exp(z) / (1 + std::exp(z)); }

struct LogisticCase {
  std::string name;
  std::function<void(const float*, float*, size_t)> loop;
  std::function<double(double)> exact;
  float at_inf, at_minus_inf;
  double absolute = 1.2e-38;
};

std::vector<LogisticCase> logistic_cases() {
  struct Isa {
    const char* name;
    Loop sigmoid, tanh;
    ScaledLoop swish;
  };
  std::vector<Isa> isas = {{"generic", detail::sigmoid_generic, detail::tanh_generic, detail::swish_generic},
                           {"dispatched", sigmoid, tanh, swish}};
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    isas.push_back({"avx2", detail::sigmoid_avx2, detail::tanh_avx2, detail::swish_avx2});
#endif
#if defined(ONYX_CPU_AVX512_LOOPS)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma"))
    isas.push_back({"avx512", detail::sigmoid_avx512, detail::tanh_avx512, detail::swish_avx512});
#endif
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<LogisticCase> c;
  for (const Isa& isa : isas) {
    c.push_back({std::string("sigmoid ") + isa.name, isa.sigmoid, sigmoid_exact, 1.0f, 0.0f});
    c.push_back({std::string("tanh ") + isa.name, isa.tanh, [](double x) { return std::tanh(x); }, 1.0f, -1.0f});
    for (float alpha : {1.0f, 1.702f, -0.5f}) {
      ScaledLoop swish_loop = isa.swish;
      c.push_back({std::string("swish ") + isa.name + " alpha " + std::to_string(alpha),
                   [swish_loop, alpha](const float* x, float* y, size_t n) { swish_loop(x, y, n, alpha); },
                   [alpha](double x) { return x * sigmoid_exact(double(alpha) * x); }, alpha > 0 ? inf : 0.0f,
                   alpha > 0 ? 0.0f : -inf, 1.1e-36});
    }
  }
  return c;
}

double logistic_tolerance(const LogisticCase& c, float x) {
  const std::function<double(double)>& exact = c.exact;
  const double want = exact(double(x));
  const double ulp = double(std::nextafter(std::fabs(x), std::numeric_limits<float>::infinity())) - std::fabs(double(x));
  const double swing = std::fabs(exact(double(x) + ulp) - want) + std::fabs(exact(double(x) - ulp) - want);
  return 1e-6 * std::fabs(want) + 4 * swing + c.absolute;
}

TEST(VecMath, SigmoidSwishTanhWithinAMillionthOfFloat64) {
  std::vector<float> x;
  for (double v = -110; v <= 110; v += 1.0 / 64) x.push_back(float(v));
  for (double v = -1; v <= 1; v += 1.0 / 4096) x.push_back(float(v));  // tanh's polynomial and its seam
  for (float v : {1e-30f, -1e-30f, 1e-8f, -1e-8f, 0.0f, -0.0f, 0.625f, -0.625f, 3e4f, -3e4f, 3e38f, -3e38f})
    x.push_back(v);
  for (const LogisticCase& c : logistic_cases()) {
    std::vector<float> y(x.size());
    c.loop(x.data(), y.data(), x.size());
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_NEAR(y[i], c.exact(double(x[i])), logistic_tolerance(c, x[i])) << c.name << " at x = " << x[i];
  }
}

TEST(VecMath, SigmoidSwishTanhSpecialValuesAndInPlaceTails) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (const LogisticCase& c : logistic_cases()) {
    for (size_t n : {size_t(11), size_t(3), size_t(37)}) {  // vectors and tails, in place
      std::vector<float> v(n);
      for (size_t i = 0; i < n; ++i) v[i] = float(int(i % 9) - 4) * 0.75f;
      v[0] = nan;
      v[1] = inf;
      v[2] = -inf;
      const std::vector<float> x = v;
      c.loop(v.data(), v.data(), v.size());
      EXPECT_TRUE(std::isnan(v[0])) << c.name;
      EXPECT_EQ(v[1], c.at_inf) << c.name;
      EXPECT_EQ(v[2], c.at_minus_inf) << c.name;
      for (size_t i = 3; i < n; ++i)
        EXPECT_NEAR(v[i], c.exact(double(x[i])), logistic_tolerance(c, x[i])) << c.name << " at x = " << x[i];
    }
  }
}

// Exp's or Log's loop on every ISA this CPU runs.
std::vector<std::pair<std::string, Loop>> exp_or_log_loops(bool log) {
  std::vector<std::pair<std::string, Loop>> loops = {{"generic", log ? detail::log_generic : detail::exp_generic},
                                                     {"dispatched", log ? vec::log : vec::exp}};
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    loops.push_back({"avx2", log ? detail::log_avx2 : detail::exp_avx2});
#endif
#if defined(ONYX_CPU_AVX512_LOOPS)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma"))
    loops.push_back({"avx512", log ? detail::log_avx512 : detail::exp_avx512});
#endif
  return loops;
}

// exp's promise (vec_math.h): 3 ulp of the float64 value where that is a
// normal float, one subnormal step (1.4e-45) below, +inf past FLT_MAX.
void expect_exp_of(float x, float y, const std::string& name) {
  const double want = std::exp(double(x));
  if (want > double(std::numeric_limits<float>::max())) {
    EXPECT_EQ(y, std::numeric_limits<float>::infinity()) << name << " at x = " << x;
  } else if (want < double(std::numeric_limits<float>::min())) {
    EXPECT_NEAR(y, want, 1.5e-45) << name << " at x = " << x;
  } else {
    const float w = float(want);
    const double ulp = double(std::nextafter(w, std::numeric_limits<float>::infinity())) - double(w);
    EXPECT_NEAR(y, want, 3 * ulp) << name << " at x = " << x;
  }
}

TEST(VecMath, ExpWithinThreeUlpOfFloat64) {
  std::vector<float> x;
  for (double v = -110; v <= 110; v += 1.0 / 64) x.push_back(float(v));
  for (double v = -1; v <= 1; v += 1.0 / 4096) x.push_back(float(v));
  for (float v : {1e-30f, -1e-30f, 1e-8f, -1e-8f, 0.0f, -0.0f, 88.7f, 88.72f, 88.73f, -87.3f, -87.4f, -100.0f,
                  -103.9f, -103.98f, -104.0f, 3e38f, -3e38f})
    x.push_back(v);
  for (const auto& [name, loop] : exp_or_log_loops(false)) {
    std::vector<float> y(x.size());
    loop(x.data(), y.data(), x.size());
    for (size_t i = 0; i < x.size(); ++i) expect_exp_of(x[i], y[i], name);
  }
}

// log's promise (vec_math.h): 3 ulp of the float64 value, subnormal x too.
void expect_log_of(float x, float y, const std::string& name) {
  const double want = std::log(double(x));
  const float w = float(want);
  const double ulp = double(std::nextafter(std::fabs(w), std::numeric_limits<float>::infinity())) - std::fabs(double(w));
  EXPECT_NEAR(y, want, 3 * ulp) << name << " at x = " << x;
}

TEST(VecMath, LogWithinThreeUlpOfFloat64) {
  std::vector<float> x;
  // Every binade, subnormals included (where a step of 1.37% rounds back, the next float).
  for (float v = 1.4e-45f; v < 3e38f; v = std::max(v * 1.0137f, std::nextafter(v, 3e38f))) x.push_back(v);
  for (double v = 0.5; v <= 2; v += 1.0 / 8192) x.push_back(float(v));  // around 1, where ln x is small
  for (float v : {1.0f, std::nextafter(1.0f, 2.0f), std::nextafter(1.0f, 0.0f), 0.70710677f, 0.70710683f,
                  1.17549435e-38f, 1.1754942e-38f, 3.40282347e38f})
    x.push_back(v);
  for (const auto& [name, loop] : exp_or_log_loops(true)) {
    std::vector<float> y(x.size());
    loop(x.data(), y.data(), x.size());
    for (size_t i = 0; i < x.size(); ++i) expect_log_of(x[i], y[i], name);
  }
}

// Special values map exactly (NaN to NaN), first in vectors and tails run in
// place; the other lanes (positive, for Log) within the promise.
TEST(VecMath, ExpAndLogSpecialValuesAndInPlaceTails) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  // x, e^x, ln x
  const std::vector<std::array<float, 3>> specials = {
      {nan, nan, nan}, {inf, inf, inf}, {-inf, 0.0f, nan}, {0.0f, 1.0f, -inf}, {-0.0f, 1.0f, -inf},
      {-1.0f, float(std::exp(-1.0)), nan}, {1.0f, float(std::exp(1.0)), 0.0f}};
  for (bool log : {false, true})
    for (const auto& [name, loop] : exp_or_log_loops(log))
      for (size_t n : {size_t(11), size_t(7), size_t(37)}) {  // vectors and tails, in place
        std::vector<float> v(n);
        for (size_t i = 0; i < n; ++i) v[i] = i < specials.size() ? specials[i][0] : float(i % 9) * 0.75f + 0.125f;
        const std::vector<float> x = v;
        loop(v.data(), v.data(), v.size());
        for (size_t i = 0; i < n; ++i) {
          if (log ? i == 6 : i >= 5) {  // not exactly representable: the promise
            log ? expect_log_of(x[i], v[i], name) : expect_exp_of(x[i], v[i], name);
          } else if (i < specials.size()) {
            const float want = specials[i][log ? 2 : 1];
            EXPECT_TRUE(std::isnan(want) ? std::isnan(v[i]) : v[i] == want) << name << " at x = " << x[i];
          } else {
            log ? expect_log_of(x[i], v[i], name) : expect_exp_of(x[i], v[i], name);
          }
        }
      }
}

// erf's promise (vec_math.h): 3e-7 relative or 1e-37 absolute of float64's
// erf (the Chebyshev erfc's 1.2e-7 and the float rounding of 1 - erfc near
// the 0.5 switch: 1.8e-7 measured; the Taylor side is within 1 ulp), on every
// ISA, with the specials exact, in vectors and tails, in place.
TEST(VecMath, ErfWithinThreeTenthsOfAMillionth) {
  std::vector<std::pair<std::string, Loop>> loops = {{"generic", detail::erf_generic}, {"dispatched", vec::erf}};
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) loops.push_back({"avx2", detail::erf_avx2});
#endif
#if defined(ONYX_CPU_AVX512_LOOPS)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma"))
    loops.push_back({"avx512", detail::erf_avx512});
#endif
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x = {nan, inf, -inf, 0.0f, -0.0f};
  for (double v = -7; v <= 7; v += 1.0 / 1024) x.push_back(float(v));
  for (float v = 1e-38f; v < 1.0f; v *= 1.01f) x.push_back(v), x.push_back(-v);
  for (float v : {0.49999997f, 0.5f, 0.50000006f, -0.49999997f, -0.5f, 3.9f, 10.0f, -10.0f, 1e30f}) x.push_back(v);
  for (const auto& [name, loop] : loops)
    for (size_t n : {x.size(), size_t(13)}) {  // all, and a tail shorter than two vectors
      std::vector<float> y(x.begin(), x.begin() + ptrdiff_t(n));
      loop(y.data(), y.data(), n);
      EXPECT_TRUE(std::isnan(y[0])) << name;
      EXPECT_EQ(y[1], 1.0f) << name;
      EXPECT_EQ(y[2], -1.0f) << name;
      EXPECT_TRUE(y[3] == 0.0f && !std::signbit(y[3])) << name;
      EXPECT_TRUE(y[4] == 0.0f && std::signbit(y[4])) << name;
      for (size_t i = 5; i < n; ++i) {
        const double want = std::erf(double(x[i]));
        EXPECT_NEAR(y[i], want, std::max(3e-7 * std::fabs(want), 1e-37)) << name << " at x = " << x[i];
      }
    }
}

// The double sum of floats: within 1e-15 of the sum of magnitudes (double
// rounding over a few thousand terms), at lengths around the vector width.
TEST(VecMath, SumInDoubleMatchesLongDouble) {
  std::vector<std::pair<const char*, double (*)(const float*, size_t)>> sums = {{"dispatched", sum}};
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) sums.push_back({"avx2", detail::sum_avx2});
#endif
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-1000, 1000);
  for (size_t n : {size_t(0), size_t(1), size_t(15), size_t(16), size_t(17), size_t(49), size_t(3136)}) {
    std::vector<float> x(n);
    long double exact = 0, magnitude = 0;
    for (float& v : x) {
      v = d(rng);
      exact += v;
      magnitude += std::fabs(v);
    }
    for (auto [name, f] : sums) EXPECT_NEAR(f(x.data(), n), double(exact), 1e-15 * double(magnitude)) << name << " n " << n;
  }
}

// Pooling inputs: multiples of 0.01 in [-10, 10] from a linear
// congruential generator (many ties, so the first-maximum rules show).
struct Hundredths {
  explicit Hundredths(uint32_t seed) : state(seed) {}
  float operator()() {
    state = state * 1664525u + 1013904223u;
    return float(int32_t(state >> 8) % 2001 - 1000) / 100.0f;
  }
  uint32_t state;
};

// MaxPool 2x2 / stride 2 on planes of odd and even sizes (a dropped last row
// and column), with NaNs: every ISA gives what the row-major
// `tap > best ? tap : best` scan gives, bit for bit.
TEST(VecMath, MaxPool2x2MatchesTheScalarScan) {
  using Pool = void (*)(const float*, float*, int64_t, int64_t, int64_t, int64_t);
  std::vector<std::pair<const char*, Pool>> pools = {{"generic", detail::max_pool_2x2_generic}, {"dispatched", max_pool_2x2}};
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) pools.push_back({"avx2", detail::max_pool_2x2_avx2});
#endif
  Hundredths next(12345);
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

// A row of MaxPool windows, strides 1 and 2, every length to past two
// vector blocks, with NaNs (a first tap and later ones): every ISA gives the
// in-order `tap > best ? tap : best` scan bit for bit, writes n outputs
// and nothing after, and reads nothing past the last tap (the source ends
// at its allocation's end).
TEST(VecMath, MaxWindowRowMatchesTheScalarScan) {
  using Fn = void (*)(float*, const float*, int64_t, int64_t, const int64_t*, int64_t);
  std::vector<std::pair<const char*, Fn>> fns = {{"generic", detail::max_window_row_generic}, {"dispatched", max_window_row}};
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) fns.push_back({"avx2", detail::max_window_row_avx2});
#endif
  Hundredths next(777);
  const std::vector<int64_t> offsets = {0, 1, 2, 40, 41, 42, 80, 81, 82};  // 3 x 3 on rows 40 apart
  for (const auto& [name, fn] : fns)
    for (int64_t stride : {1, 2})
      for (int64_t n = 1; n <= 40; ++n) {
        SCOPED_TRACE(std::string(name) + " stride " + std::to_string(stride) + " n " + std::to_string(n));
        const int64_t span = (n - 1) * stride + offsets.back() + 1;
        std::vector<float> src(static_cast<size_t>(span));
        for (float& v : src) v = next();
        src[size_t(n % 7)] = std::numeric_limits<float>::quiet_NaN();
        src[size_t(40 + n % 5)] = std::numeric_limits<float>::quiet_NaN();
        std::vector<float> y(size_t(n) + 8, -1.0f);
        fn(y.data(), src.data(), n, stride, offsets.data(), int64_t(offsets.size()));
        for (int64_t o = 0; o < n + 8; ++o) {
          if (o >= n) {
            ASSERT_EQ(y[size_t(o)], -1.0f) << "wrote past the output at " << o;
            continue;
          }
          float best = src[size_t(o * stride)];
          for (size_t t = 1; t < offsets.size(); ++t) {
            const float tap = src[size_t(o * stride + offsets[t])];
            best = tap > best ? tap : best;
          }
          const float got = y[size_t(o)];
          ASSERT_TRUE(got == best || (std::isnan(got) && std::isnan(best))) << o << ": " << got << " vs " << best;
        }
      }
}

// copy_strided, strides 1 to 3, every length to past two vector blocks:
// the elements in order, nothing written past n, nothing read past the last
// element (the source ends at its allocation's end).
TEST(VecMath, CopyStridedTakesEveryStrideThElement) {
  using Fn = void (*)(const float*, int64_t, int64_t, float*);
  std::vector<std::pair<const char*, Fn>> fns = {{"generic", detail::copy_strided_generic}, {"dispatched", copy_strided}};
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    fns.push_back({"avx2", [](const float* src, int64_t stride, int64_t n, float* dst) {
                     if (stride == 2) detail::copy_stride_2_avx2(src, n, dst);
                     else detail::copy_strided_generic(src, stride, n, dst);
                   }});
#endif
  for (const auto& [name, fn] : fns)
    for (int64_t stride : {1, 2, 3})
      for (int64_t n = 0; n <= 40; ++n) {
        SCOPED_TRACE(std::string(name) + " stride " + std::to_string(stride) + " n " + std::to_string(n));
        std::vector<float> src(static_cast<size_t>(n == 0 ? 0 : (n - 1) * stride + 1));
        for (size_t i = 0; i < src.size(); ++i) src[i] = float(i);
        std::vector<float> dst(size_t(n) + 8, -1.0f);
        fn(src.data(), stride, n, dst.data());
        for (int64_t i = 0; i < n + 8; ++i) ASSERT_EQ(dst[size_t(i)], i < n ? float(i * stride) : -1.0f) << i;
      }
}

// Its gradient on the same planes: each dy lands on the tap the scalar scan
// picks (the first maximum; a NaN tap never wins a comparison), the other
// taps of its window get 0, and the inputs no window covers keep their value.
TEST(VecMath, MaxPool2x2GradRoutesEachGradientToTheScanPick) {
  using Grad = void (*)(const float*, const float*, float*, int64_t, int64_t, int64_t, int64_t);
  std::vector<std::pair<const char*, Grad>> grads = {{"generic", detail::max_pool_2x2_grad_generic},
                                                     {"dispatched", max_pool_2x2_grad}};
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    grads.push_back({"avx2", detail::max_pool_2x2_grad_avx2});
#endif
  Hundredths next(777);
  for (auto [h, w] : std::vector<std::pair<int64_t, int64_t>>{{2, 2}, {28, 28}, {14, 14}, {15, 37}, {6, 34}, {4, 32}}) {
    std::vector<float> x(size_t(h * w));
    for (float& v : x) v = std::round(next());  // ties: the first maximum wins
    x[3 % x.size()] = std::numeric_limits<float>::quiet_NaN();
    x[x.size() / 2] = std::numeric_limits<float>::quiet_NaN();
    const int64_t oh = h / 2, ow = w / 2;
    std::vector<float> dy(size_t(oh * ow));
    for (float& v : dy) v = next();
    std::vector<float> want(x.size(), -7.0f);  // uncovered inputs keep the guard
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        auto at = [&](int64_t t) { return size_t((2 * i + t / 2) * w + 2 * j + t % 2); };
        int64_t pick = 0;
        for (int64_t t = 1; t < 4; ++t)
          if (x[at(t)] > x[at(pick)]) pick = t;
        for (int64_t t = 0; t < 4; ++t) want[at(t)] = t == pick ? dy[size_t(i * ow + j)] : 0.0f;
      }
    for (auto [name, grad] : grads) {
      std::vector<float> dx(x.size() + 8, -7.0f);  // 8 guard values after the plane
      grad(x.data(), dy.data(), dx.data(), h, w, oh, ow);
      for (size_t i = x.size(); i < dx.size(); ++i)
        EXPECT_EQ(dx[i], -7.0f) << name << " " << h << "x" << w << ": wrote past the plane";
      for (size_t i = 0; i < x.size(); ++i)
        EXPECT_EQ(dx[i], want[i]) << name << " " << h << "x" << w << " at input " << i;
    }
  }
}

}  // namespace
}  // namespace onyx::cpu::vec

namespace onyx::cpu::vec {
namespace {

// Softmax rows against float64 on every ISA: within 1e-6 relative (exp to
// ~2 ulp, float32 partial sums) plus the rounding of x - max, or 1e-30
// absolute, for every tail length; a
// row with NaN or +inf is NaN, -inf elements give 0, and every element -inf
// is NaN (x - max is NaN), as the scalar loop has it.
TEST(VecMath, SoftmaxRowWithinAMillionthOfFloat64) {
  using Row = void (*)(const float*, float*, size_t);
  std::vector<std::pair<const char*, Row>> rows = {{"generic", detail::softmax_row_generic}, {"dispatched", softmax_row}};
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) rows.push_back({"avx2", detail::softmax_row_avx2});
#endif
#if defined(ONYX_CPU_AVX512_LOOPS)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma")) rows.push_back({"avx512", detail::softmax_row_avx512});
#endif
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(-30.0f, 30.0f);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (const auto& [name, fn] : rows) {
    SCOPED_TRACE(name);
    for (size_t n : {1, 2, 7, 8, 15, 16, 17, 33, 64, 100, 1000}) {
      std::vector<float> x(n), y(n);
      for (float& v : x) v = d(rng);
      if (n > 3) x[2] = -inf;
      fn(x.data(), y.data(), n);
      double max = -1e300, sum = 0;
      for (float v : x) max = std::max(max, double(v));
      for (float v : x) sum += std::exp(double(v) - max);
      for (size_t i = 0; i < n; ++i) {
        // x - max is rounded to float32 (relative 2^-24, so e^(x - max) is off
        // by up to |x - max| 2^-24 relative) before exp's own ~2 ulp.
        if (std::isinf(x[i])) {  // -inf: exactly 0
          ASSERT_EQ(y[i], 0.0f) << "n " << n << " at " << i;
          continue;
        }
        const double gap = max - double(x[i]), want = std::exp(-gap) / sum;
        ASSERT_NEAR(y[i], want, (1e-6 + gap * 6e-8) * want + 1e-30) << "n " << n << " at " << i;
      }
      fn(x.data(), x.data(), n);  // in place
      ASSERT_EQ(x, y) << "n " << n;
    }
    for (float special : {nan, inf}) {
      std::vector<float> x(21, 1.0f), y(21);
      x[19] = special;
      fn(x.data(), y.data(), x.size());
      for (float v : y) ASSERT_TRUE(std::isnan(v)) << special;
    }
    std::vector<float> x(18, -inf), y(18);
    fn(x.data(), y.data(), x.size());
    for (float v : y) ASSERT_TRUE(std::isnan(v));
  }
}

}  // namespace
}  // namespace onyx::cpu::vec

namespace onyx::cpu::vec {
namespace {

// LayerNormalization rows against long double: within half an ulp of the
// exact value (the loop's statistics are double, so its only visible error
// is the final rounding to float) plus 1e-12 relative for the double sums,
// on rows whose mean is 1000 times their spread (where one pass would lose
// the variance), every tail length; the mean and 1 / std it reports too,
// and in place. Without a vector loop it must decline and write nothing.
TEST(VecMath, LayerNormRowWithinHalfAnUlpOfTheExactValue) {
  using Row = void (*)(const float*, float*, int64_t, const double*, const double*, double, double*, double*);
  std::vector<std::pair<const char*, Row>> rows;
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    rows.push_back({"avx2", detail::layer_norm_row_avx2});
#endif
  rows.push_back({"dispatched", [](const float* x, float* y, int64_t n, const double* s, const double* b, double e,
                                   double* mean, double* inv_std) {
                    if (!layer_norm_row(x, y, n, s, b, e, mean, inv_std)) *mean = *inv_std = -1;
                  }});
  std::mt19937 rng(5);
  std::normal_distribution<float> spread(0.0f, 1.0f);
  for (const auto& [name, fn] : rows) {
    SCOPED_TRACE(name);
    for (int64_t n : {1, 2, 7, 8, 15, 16, 17, 31, 33, 256, 1000}) {
      const size_t count = static_cast<size_t>(n);
      std::vector<float> x(count), y(count, -7.0f);
      std::vector<double> scale(count), bias(count);
      for (float& v : x) v = 1000.0f + spread(rng);
      for (double& v : scale) v = double(spread(rng));
      for (double& v : bias) v = double(spread(rng));
      double mean = 0, inv_std = 0;
      fn(x.data(), y.data(), n, scale.data(), bias.data(), 1e-5, &mean, &inv_std);
      if (mean == -1) {  // no vector loop on this CPU: declined, y untouched
        for (float v : y) ASSERT_EQ(v, -7.0f);
        continue;
      }
      long double sum = 0, squares = 0;
      for (float v : x) sum += v;
      const long double exact_mean = sum / n;
      for (float v : x) squares += (v - exact_mean) * (v - exact_mean);
      const long double exact_inv_std = 1 / std::sqrt(squares / n + 1e-5L);
      ASSERT_NEAR(mean, double(exact_mean), 1e-12 * 1000) << "n " << n;
      ASSERT_NEAR(inv_std, double(exact_inv_std), 1e-9 * double(exact_inv_std)) << "n " << n;
      for (int64_t k = 0; k < n; ++k) {
        const double want = double((x[size_t(k)] - exact_mean) * exact_inv_std * scale[size_t(k)] + bias[size_t(k)]);
        const double half_ulp = std::abs(double(std::nextafter(float(want), 1e30f)) - double(float(want))) / 2;
        ASSERT_NEAR(double(y[size_t(k)]), want, half_ulp * (1 + 1e-6) + 1e-12 * std::abs(want)) << "n " << n << " at " << k;
      }
      std::vector<float> in_place = x;
      fn(in_place.data(), in_place.data(), n, scale.data(), bias.data(), 1e-5, &mean, &inv_std);
      ASSERT_EQ(in_place, y) << "n " << n;
    }
  }
}

}  // namespace
}  // namespace onyx::cpu::vec

namespace onyx::cpu::vec {
namespace {

// window_rows on every ISA: the float Conv's depthwise loop, and the int8
// one's, where the values are integers (8-bit codes minus zero points) and
// the sums must come out exact: a 3x3 window over a flat plane whose rows
// are 41 apart, the extreme codes included, every row block (8, 4, 3, 2, 1
// rows and what is left) and every column count to 4 vectors and past.
// Nothing past a row's columns is written.
TEST(VecMath, WindowRowsOfIntegersAreExact) {
  using Rows = void (*)(float*, int64_t, const float*, int64_t, int64_t, int64_t, const int64_t*, const float*,
                        int64_t, float, float, float);
  std::vector<std::pair<const char*, Rows>> fns = {{"generic", detail::window_rows_generic}, {"dispatched", window_rows}};
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) fns.push_back({"avx2", detail::window_rows_avx2});
#endif
#if defined(ONYX_CPU_AVX512_LOOPS)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma")) fns.push_back({"avx512", detail::window_rows_avx512});
#endif
  constexpr int64_t lds = 41, max_rows = 19, max_cols = 38, ldy = 40;
  const int64_t offsets[9] = {0, 1, 2, lds, lds + 1, lds + 2, 2 * lds, 2 * lds + 1, 2 * lds + 2};
  const float taps[9] = {255, -1, 4, -1, 255, -9, 2, -255, 5};
  std::mt19937 rng(9);
  // Rows to max_rows + 2 (the window's reach), then what window_rows may read past.
  std::vector<float> src(size_t((max_rows + 2) * lds + kWindowReadPast));
  for (auto& v : src) v = float(int(rng() % 511) - 255);
  src[0] = src[lds + 1] = 255, src[1] = -255;
  for (const auto& [name, fn] : fns)
    for (int64_t rows : {1, 2, 3, 5, 7, 8, 13, 19})
      for (int64_t cols : {1, 5, 8, 9, 16, 17, 24, 31, 32, 33, 38}) {
        SCOPED_TRACE(std::string(name) + " rows " + std::to_string(rows) + " cols " + std::to_string(cols));
        std::vector<float> y(size_t(max_rows * ldy), 99.0f);
        fn(y.data(), ldy, src.data(), lds, rows, cols, offsets, taps, 9, 7.0f, -INFINITY, INFINITY);
        for (int64_t r = 0; r < max_rows; ++r)
          for (int64_t o = 0; o < ldy; ++o) {
            float want = 99.0f;
            if (r < rows && o < cols) {
              int64_t sum = 7;
              for (int t = 0; t < 9; ++t) sum += int64_t(src[size_t(r * lds + o + offsets[t])]) * int64_t(taps[t]);
              want = float(sum);
            }
            ASSERT_EQ(y[size_t(r * ldy + o)], want) << "row " << r << " column " << o;
          }
      }
  static_assert(max_cols < ldy);
}

// transpose on every ISA: whole 8 x 8 blocks, ragged rows and columns,
// strides wider than the rows; nothing outside dst's rows is written.
TEST(VecMath, TransposeMovesEveryElementAndNothingElse) {
  using Fn = void (*)(const float*, int64_t, int64_t, int64_t, float*, int64_t);
  std::vector<std::pair<const char*, Fn>> fns = {{"generic", detail::transpose_generic}, {"dispatched", transpose}};
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) fns.push_back({"avx2", detail::transpose_avx2});
#endif
  for (const auto& [name, fn] : fns)
    for (int64_t rows : {1, 7, 8, 49, 64})
      for (int64_t cols : {1, 5, 8, 20, 33}) {
        SCOPED_TRACE(std::string(name) + " " + std::to_string(rows) + " x " + std::to_string(cols));
        const int64_t ld_src = cols + 3, ld_dst = rows + 2;
        std::vector<float> src(size_t(rows * ld_src));
        for (size_t i = 0; i < src.size(); ++i) src[i] = float(i);
        std::vector<float> dst(size_t(cols * ld_dst), -1.0f);
        fn(src.data(), rows, cols, ld_src, dst.data(), ld_dst);
        for (int64_t c = 0; c < cols; ++c)
          for (int64_t r = 0; r < ld_dst; ++r)
            ASSERT_EQ(dst[size_t(c * ld_dst + r)], r < rows ? src[size_t(r * ld_src + c)] : -1.0f) << c << "," << r;
      }
}

// copy_rows on every ISA: whole vectors and every tail length; the floats
// around each destination row (a padded plane's border) stay as they were,
// and the source is read no further than its last element (the copy ends at
// the end of its allocation).
TEST(VecMath, CopyRowsWritesTheRowsAndNothingElse) {
  using Fn = void (*)(float*, int64_t, const float*, int64_t, int64_t, int64_t);
  std::vector<std::pair<const char*, Fn>> fns = {{"generic", detail::copy_rows_generic}, {"dispatched", copy_rows}};
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) fns.push_back({"avx2", detail::copy_rows_avx2});
#endif
  for (const auto& [name, fn] : fns)
    for (int64_t rows : {1, 3, 7})
      for (int64_t cols = 1; cols <= 25; ++cols) {
        SCOPED_TRACE(std::string(name) + " " + std::to_string(rows) + " x " + std::to_string(cols));
        const int64_t ld_src = cols + 1, ld_dst = cols + 4;
        std::vector<float> src(size_t((rows - 1) * ld_src + cols));
        for (size_t i = 0; i < src.size(); ++i) src[i] = float(i);
        std::vector<float> dst(size_t(rows * ld_dst + 2), -1.0f);
        fn(dst.data() + 2, ld_dst, src.data(), ld_src, rows, cols);
        for (int64_t i = 0; i < int64_t(dst.size()); ++i) {
          const int64_t r = (i - 2) / ld_dst, c = (i - 2) % ld_dst;
          const bool inside = i >= 2 && c < cols;
          ASSERT_EQ(dst[size_t(i)], inside ? src[size_t(r * ld_src + c)] : -1.0f) << i;
        }
      }
}

// The clamp of a fused Relu or Clip: NaN sums stay NaN, the rest land in [lo, hi].
TEST(VecMath, WindowRowsClampKeepsNaN) {
  for (int64_t cols : {3, 8, 20}) {
    std::vector<float> src(size_t(cols + kWindowReadPast), 2.0f);
    std::vector<float> y(size_t(cols), 99.0f);
    src[1] = NAN;
    const int64_t offsets[2] = {0, 1};
    const float taps[2] = {1.0f, -4.0f};
    window_rows(y.data(), cols, src.data(), cols, 1, cols, offsets, taps, 2, 0.5f, 0.0f, 6.0f);
    EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1]));  // outputs 0 and 1 read src[1]
    for (int64_t o = 2; o < cols; ++o) EXPECT_EQ(y[size_t(o)], 0.0f) << o;  // 0.5 + 2 - 8 clamped up to 0
  }
}

}  // namespace
}  // namespace onyx::cpu::vec
