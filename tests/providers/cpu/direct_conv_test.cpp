// direct_conv_test.cpp: the CPU provider's direct convolution
// (kernels/conv/direct_conv.h) on every ISA this CPU runs, not only the one
// the provider picks, against a float64 loop over every tap. The op tests
// (../ops/conv_test.cpp) cover it through the Conv kernel on the best ISA.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/conv/direct_conv.h"

namespace onyx::cpu::direct_conv {
namespace {

struct Isa {
  std::string name;
  int64_t lanes;
  void (*run)(const detail::Work&, int64_t, int64_t);
  void (*weight_gradient)(const detail::Work&, int64_t, int64_t);
};

std::vector<Isa> isas() {
  std::vector<Isa> v;
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) v.push_back({"avx2", 8, detail::run_avx2, detail::weight_gradient_avx2});
#endif
#if defined(ONYX_CPU_AVX512_LOOPS)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma"))
    v.push_back({"avx512", 16, detail::run_avx512, detail::weight_gradient_avx512});
#endif
  return v;
}

struct Case {
  Shape s;
  Epilogue e;
  bool bias = true;
};

// Every tap of the padded input, in float64, then the bias and activation.
std::vector<double> reference(const Case& c, const std::vector<float>& x, const std::vector<float>& w,
                              const std::vector<float>& b) {
  const Shape& s = c.s;
  std::vector<double> y;
  for (int64_t m = 0; m < s.out_channels; ++m)
    for (int64_t r = 0; r < s.out_h; ++r)
      for (int64_t q = 0; q < s.out_w; ++q) {
        double acc = c.bias ? b[size_t(m)] : 0.0;
        for (int64_t ch = 0; ch < s.channels; ++ch)
          for (int64_t i = 0; i < s.kernel_h; ++i)
            for (int64_t j = 0; j < s.kernel_w; ++j)
              acc += double(w[size_t(((m * s.channels + ch) * s.kernel_h + i) * s.kernel_w + j)]) *
                     x[size_t((ch * s.padded_h + r * s.stride_h + i * s.dilation_h) * s.padded_w + q +
                              j * s.dilation_w)];
        switch (c.e.kind) {
          case Epilogue::kNone: break;
          case Epilogue::kRelu: acc = acc < 0 ? 0 : acc; break;
          case Epilogue::kClip: acc = std::min(std::max(acc, double(c.e.a)), double(c.e.b)); break;
          case Epilogue::kLeakyRelu: acc = acc < 0 ? c.e.a * acc : acc; break;
        }
        y.push_back(acc);
      }
  return y;
}

Case make(int64_t channels, int64_t out_channels, int64_t kh, int64_t kw, int64_t out_h, int64_t out_w,
          int64_t stride_h = 1, int64_t dil_h = 1, int64_t dil_w = 1) {
  Case c;
  Shape& s = c.s;
  s.channels = channels, s.out_channels = out_channels, s.kernel_h = kh, s.kernel_w = kw;
  s.stride_h = stride_h, s.dilation_h = dil_h, s.dilation_w = dil_w, s.out_h = out_h, s.out_w = out_w;
  s.padded_h = (out_h - 1) * stride_h + (kh - 1) * dil_h + 1;
  s.padded_w = out_w - 1 + (kw - 1) * dil_w + 1;
  return c;
}

struct Inputs {
  std::vector<float> x, w, b;  // padded input (and its slack), weights, bias: uniform in [-1, 1)
};

Inputs random_inputs(const Shape& s, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1, 1);
  Inputs in{std::vector<float>(size_t(s.channels * s.padded_h * s.padded_w + kSlack)),
            std::vector<float>(size_t(s.out_channels * s.channels * s.kernel_h * s.kernel_w)),
            std::vector<float>(size_t(s.out_channels))};
  for (std::vector<float>* v : {&in.x, &in.w, &in.b})
    for (float& f : *v) f = dist(rng);
  return in;
}

// W in the channel-lane or flat form's order (lane_channels output channels
// per block).
std::vector<float> lane_order(const Shape& s, const std::vector<float>& w, int64_t lane_channels) {
  const int64_t taps = s.kernel_h * s.kernel_w;
  const std::vector<float> packed = pack_weights(w.data(), s.out_channels, s.channels, taps);
  std::vector<float> ordered(packed.size());
  lane_weights(packed.data(), s.out_channels, s.channels, taps, lane_channels, ordered.data());
  return ordered;
}

// float32 sums of channels x taps + 1 terms of magnitude <= 1: each within
// (terms) * 2^-24 of the sum of |terms| (a loose bound).
double tolerance(const Shape& s) {
  const int64_t terms = s.channels * s.kernel_h * s.kernel_w;
  return double(terms + 1) * double(terms) * std::ldexp(1.0, -24);
}

// `base` with each activation (Relu, Clip, LeakyRelu) and without its bias,
// appended to `cases`.
void add_epilogues(const Case& base, std::vector<Case>& cases) {
  Case relu = base, clip = base, leaky = base, nobias = base;
  relu.e.kind = Epilogue::kRelu;
  clip.e = {Epilogue::kClip, -0.25f, 0.5f};
  leaky.e = {Epilogue::kLeakyRelu, 0.1f, 0};
  nobias.bias = false;
  for (const Case& c : {relu, clip, leaky, nobias}) cases.push_back(c);
}

// Output widths around both vector sizes, 1 to 9 output channels (every
// partial block of 4), strides and dilations, every activation, no bias.
std::vector<Case> cases() {
  std::vector<Case> v;
  for (int64_t out_w : {1, 7, 8, 9, 15, 16, 17, 33})
    for (int64_t m : {1, 2, 3, 4, 5, 9}) v.push_back(make(2, m, 3, 3, 3, out_w));
  v.push_back(make(1, 8, 3, 3, 28, 28));
  v.push_back(make(8, 16, 3, 3, 14, 14));
  v.push_back(make(3, 6, 2, 5, 4, 11, 2, 2, 3));
  v.push_back(make(5, 4, 1, 7, 2, 20));
  add_epilogues(make(3, 7, 3, 3, 5, 13), v);
  return v;
}

TEST(DirectConv, EveryIsaMatchesTheFloat64Loop) {
  const std::vector<Isa> all = isas();
  if (all.empty()) GTEST_SKIP() << "no AVX2 or AVX-512 on this CPU: the provider uses im2col";
  std::mt19937 rng(7);
  for (const Case& c : cases()) {
    const Shape& s = c.s;
    const int64_t taps = s.kernel_h * s.kernel_w;
    const auto [x, w, b] = random_inputs(s, rng);
    const std::vector<double> want = reference(c, x, w, b);
    const std::vector<float> packed = pack_weights(w.data(), s.out_channels, s.channels, taps);
    for (const Isa& isa : all) {
      const Plan plan = make_plan(s, isa.lanes);
      // Guard values after the output catch a store past its end.
      std::vector<float> y(want.size() + 32, 12345.0f);
      const detail::Work work =
          detail::work_for(plan, x.data(), packed.data(), c.bias ? b.data() : nullptr, c.e, y.data());
      isa.run(work, 0, plan.blocks);
      const std::string where = isa.name + " C" + std::to_string(s.channels) + " M" +
                                std::to_string(s.out_channels) + " " + std::to_string(s.out_h) + "x" +
                                std::to_string(s.out_w) + " act " + std::to_string(int(c.e.kind));
      const double tol = tolerance(s);
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(y[i], want[i], tol) << where << " element " << i;
      for (size_t i = want.size(); i < y.size(); ++i) ASSERT_EQ(y[i], 12345.0f) << where << ": wrote past the output";
    }
  }
}

// The channel-lane form (AVX2) against float64, over position ranges as
// the pool splits them (ends that cut 6-position tiles and 8 x 8
// transposes), every activation, strides, dilations and no bias.
TEST(DirectConv, LaneFormMatchesTheFloat64Loop) {
  if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) GTEST_SKIP() << "no AVX2 on this CPU";
  std::vector<Case> all = {make(8, 16, 3, 3, 14, 14), make(16, 32, 3, 3, 7, 7), make(3, 16, 3, 3, 5, 13),
                           make(2, 48, 2, 5, 4, 11, 2, 2, 3), make(1, 16, 1, 1, 1, 1)};
  add_epilogues(make(8, 16, 3, 3, 9, 6), all);
  std::mt19937 rng(5);
  for (const Case& c : all) {
    const Shape& s = c.s;
    const int64_t positions = s.out_h * s.out_w;
    const auto [x, w, b] = random_inputs(s, rng);
    const std::vector<double> want = reference(c, x, w, b);
    const std::vector<float> lane_w = lane_order(s, w, kLaneChannels);
    const Plan plan = make_plan(s, 8);
    const double tol = tolerance(s);
    for (int64_t cut : {positions, std::min<int64_t>(1, positions), std::min<int64_t>(7, positions), positions / 2}) {
      std::vector<float> y(want.size() + 32, 12345.0f), staged(size_t(positions * s.out_channels));
      const float* bias = c.bias ? b.data() : nullptr;
      run_lanes(plan, x.data(), lane_w.data(), bias, c.e, staged.data(), y.data(), 0, cut);
      run_lanes(plan, x.data(), lane_w.data(), bias, c.e, staged.data(), y.data(), cut, positions);
      const std::string where = "C" + std::to_string(s.channels) + " M" + std::to_string(s.out_channels) + " " +
                                std::to_string(s.out_h) + "x" + std::to_string(s.out_w) + " act " +
                                std::to_string(int(c.e.kind)) + " cut at " + std::to_string(cut);
      for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(y[i], want[i], tol) << where << " element " << i;
      for (size_t i = want.size(); i < y.size(); ++i) ASSERT_EQ(y[i], 12345.0f) << where << ": wrote past the output";
    }
  }
}

// The flat form (AVX2) against float64, unpooled and pooled 2 x 2 (odd
// planes: the last row or column no window covers), over row ranges as the
// pool splits them, with NaN in the slack past the last plane (read only by
// the dropped columns past each row), both tap orders (a 3-wide kernel row
// at a time, else tap by tap), dilations, every activation and no bias.
TEST(DirectConv, FlatFormMatchesTheFloat64Loop) {
  if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) GTEST_SKIP() << "no AVX2 on this CPU";
  std::vector<Case> all = {make(1, 8, 3, 3, 28, 28), make(1, 16, 3, 3, 7, 7),   make(3, 8, 3, 3, 5, 13),
                           make(2, 8, 5, 5, 6, 9),   make(2, 8, 3, 3, 4, 11, 1, 2, 1), make(1, 8, 2, 3, 3, 3),
                           make(4, 24, 1, 3, 5, 6),  make(1, 8, 3, 2, 9, 1)};
  add_epilogues(make(2, 8, 3, 3, 9, 6), all);
  std::mt19937 rng(9);
  for (const Case& c : all) {
    const Shape& s = c.s;
    const int64_t plane = s.padded_h * s.padded_w;
    auto [x, w, b] = random_inputs(s, rng);
    for (int64_t i = 0; i < kSlack; ++i) x[size_t(s.channels * plane + i)] = std::nanf("");
    const std::vector<double> conv = reference(c, x, w, b);
    const std::vector<float> flat_w = lane_order(s, w, kFlatChannels);
    const Plan plan = make_plan(s, 8);
    const double tol = tolerance(s);
    for (bool pool : {false, true}) {
      const int64_t rows = pool ? s.out_h / 2 : s.out_h, cols = pool ? s.out_w / 2 : s.out_w;
      std::vector<double> want;
      for (int64_t m = 0; m < s.out_channels; ++m)
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t q = 0; q < cols; ++q) {
            auto at = [&](int64_t i, int64_t j) { return conv[size_t((m * s.out_h + i) * s.out_w + j)]; };
            want.push_back(pool ? std::max({at(2 * r, 2 * q), at(2 * r, 2 * q + 1), at(2 * r + 1, 2 * q),
                                            at(2 * r + 1, 2 * q + 1)})
                                : at(r, q));
          }
      for (int64_t cut : {rows, std::min<int64_t>(1, rows), rows / 2}) {
        std::vector<float> y(want.size() + 32, 12345.0f), staged(size_t(s.out_h * s.padded_w * kFlatChannels));
        const float* bias = c.bias ? b.data() : nullptr;
        run_flat(plan, x.data(), flat_w.data(), bias, c.e, pool, staged.data(), y.data(), 0, cut);
        run_flat(plan, x.data(), flat_w.data(), bias, c.e, pool, staged.data(), y.data(), cut, rows);
        const std::string where = "C" + std::to_string(s.channels) + " M" + std::to_string(s.out_channels) + " " +
                                  std::to_string(s.kernel_h) + "x" + std::to_string(s.kernel_w) + " on " +
                                  std::to_string(s.out_h) + "x" + std::to_string(s.out_w) + " act " +
                                  std::to_string(int(c.e.kind)) + (pool ? " pooled" : "") + " cut at " +
                                  std::to_string(cut);
        for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(y[i], want[i], tol) << where << " element " << i;
        for (size_t i = want.size(); i < y.size(); ++i)
          ASSERT_EQ(y[i], 12345.0f) << where << ": wrote past the output";
      }
    }
  }
}

// Blocks run separately (as the pool splits them) give the same output.
TEST(DirectConv, BlocksRunSeparatelyGiveTheSameOutput) {
  const std::vector<Isa> all = isas();
  if (all.empty()) GTEST_SKIP() << "no AVX2 or AVX-512 on this CPU";
  const Case c = make(4, 11, 3, 3, 6, 10);
  const Shape& s = c.s;
  std::vector<float> x(size_t(s.channels * s.padded_h * s.padded_w + kSlack), 0.5f), b(11, 0.25f);
  std::vector<float> w(size_t(11 * 4 * 9));
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(int(i % 7) - 3) / 8;
  const std::vector<float> packed = pack_weights(w.data(), 11, 4, 9);
  for (const Isa& isa : all) {
    const Plan plan = make_plan(s, isa.lanes);
    ASSERT_EQ(plan.blocks, 3);
    std::vector<float> whole(size_t(11 * 60)), parts(whole.size());
    isa.run(detail::work_for(plan, x.data(), packed.data(), b.data(), c.e, whole.data()), 0, 3);
    for (int64_t blk = 2; blk >= 0; --blk)
      isa.run(detail::work_for(plan, x.data(), packed.data(), b.data(), c.e, parts.data()), blk, blk + 1);
    EXPECT_EQ(whole, parts) << isa.name;
  }
}

// dW += sum over output positions of dY x X under each tap, against float64,
// with a NaN in the slack past the last plane (partial vectors must not read
// it into a sum) and dW starting from nonzero values (it is added into).
TEST(DirectConv, WeightGradientOnEveryIsaMatchesTheFloat64Sum) {
  const std::vector<Isa> all = isas();
  if (all.empty()) GTEST_SKIP() << "no AVX2 or AVX-512 on this CPU";
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (const Case& c : {make(1, 8, 3, 3, 28, 28), make(8, 16, 3, 3, 14, 14), make(3, 5, 2, 5, 4, 11, 2, 2, 3),
                        make(2, 3, 3, 3, 3, 7), make(4, 9, 1, 7, 2, 33)}) {
    const Shape& s = c.s;
    const int64_t taps = s.kernel_h * s.kernel_w, plane = s.padded_h * s.padded_w;
    std::vector<float> x(size_t(s.channels * plane + kSlack)), dy(size_t(s.out_channels * s.out_h * s.out_w));
    for (float& f : x) f = dist(rng);
    for (float& f : dy) f = dist(rng);
    for (int64_t i = 0; i < kSlack; ++i) x[size_t(s.channels * plane + i)] = std::nanf("");
    std::vector<double> want(size_t(s.out_channels * s.channels * taps)), bound(want.size());
    for (int64_t m = 0; m < s.out_channels; ++m)
      for (int64_t ch = 0; ch < s.channels; ++ch)
        for (int64_t i = 0; i < s.kernel_h; ++i)
          for (int64_t j = 0; j < s.kernel_w; ++j) {
            const size_t wi = size_t((m * s.channels + ch) * taps + i * s.kernel_w + j);
            want[wi] = 0.5;
            for (int64_t r = 0; r < s.out_h; ++r)
              for (int64_t q = 0; q < s.out_w; ++q) {
                const double term = double(dy[size_t((m * s.out_h + r) * s.out_w + q)]) *
                                    x[size_t((ch * s.padded_h + r * s.stride_h + i * s.dilation_h) * s.padded_w + q +
                                             j * s.dilation_w)];
                want[wi] += term;
                bound[wi] += std::fabs(term);
              }
          }
    const double u = std::ldexp(1.0, -24), terms = double(s.out_h * s.out_w + 2);
    for (const Isa& isa : all) {
      const Plan plan = make_plan(s, isa.lanes);
      // Per-lane partial sums, added into: 0.5 waits in each weight's first lane.
      const size_t lanes = size_t(isa.lanes);
      std::vector<float> partial(want.size() * lanes, 0.0f);
      for (size_t i = 0; i < want.size(); ++i) partial[i * lanes] = 0.5f;
      detail::Work work = detail::work_for(plan, x.data(), nullptr, nullptr, c.e, nullptr);
      work.dy = dy.data(), work.dw = partial.data();
      isa.weight_gradient(work, 0, plan.blocks);
      std::vector<float> dw(want.size(), 0.0f);
      for (size_t i = 0; i < want.size(); ++i)
        for (size_t l = 0; l < lanes; ++l) dw[i] += partial[i * lanes + l];
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(dw[i], want[i], terms * u * (bound[i] + 0.5) + 1e-30)
            << isa.name << " C" << s.channels << " M" << s.out_channels << " " << s.out_h << "x" << s.out_w
            << " dw[" << i << "]";
    }
  }
}

}  // namespace
}  // namespace onyx::cpu::direct_conv
