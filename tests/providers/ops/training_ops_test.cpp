// training_ops_test.cpp: the ops training graphs add (ai.onyx SumToShape,
// NegativeLogLikelihoodLoss(Grad), MaxPoolGrad, ConvGrad, BatchNormGradSums) and the plain ops
// they use (Greater and the other comparisons, Shape), against float64
// reference loops written from the ops' definitions. Every provider that
// claims them runs the same cases, so a GPU provider's training step is
// checked op by op against the same references as the CPU's.
//
// Tolerances: sums of k float32 terms whose absolute values sum to S may be
// added in any order (threads, blocks, GEMM tiles): nn::sum_tol(k, S), the
// classic gamma_k bound. Selections (comparisons, Shape, the max-pooling
// routing) are exact.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>

#include "kernel_harness.h"
#include "nn_test_util.h"
#include "test_providers.h"

namespace onyx::test {
namespace {

using nn::all_near;
using nn::count;
using nn::for_each_index;

NodeSpec onyx_node(const std::string& op) {
  NodeSpec node(op);
  node.domain = "ai.onyx";
  return node;
}

// ---- comparisons and Shape --------------------------------------------------

ONYX_PROVIDER_SUITE(Comparison);

ONYX_OP_TEST(Comparison, BroadcastsAndTreatsNanAsUnordered) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> a = {-1, 0, 2, nan, 3, 3};  // [2, 3]
  std::vector<float> b = {0, 3, nan};            // [3]
  struct Op {
    const char* name;
    int64_t opset;
    bool (*fn)(float, float);
  };
  const Op ops[] = {{"Greater", 13, [](float x, float y) { return x > y; }},
                    {"Less", 13, [](float x, float y) { return x < y; }},
                    {"GreaterOrEqual", 16, [](float x, float y) { return x >= y; }},
                    {"LessOrEqual", 16, [](float x, float y) { return x <= y; }},
                    {"Equal", 13, [](float x, float y) { return x == y; }}};
  for (const Op& op : ops) {
    NodeSpec node(op.name, op.opset);
    node.inputs = {make_tensor<float>({2, 3}, a), make_tensor<float>({3}, b)};
    RunResult r = run_node(node);
    ASSERT_TRUE(r.ok()) << op.name << ": " << r.error;
    EXPECT_EQ(r.outputs[0].dtype, ONYX_DTYPE_BOOL);
    EXPECT_EQ(r.outputs[0].dims, (std::vector<int64_t>{2, 3}));
    std::vector<uint8_t> got = r.outputs[0].values<uint8_t>();
    for (size_t i = 0; i < 6; ++i) EXPECT_EQ(got[i] != 0, op.fn(a[i], b[i % 3])) << op.name << " element " << i;
  }
}

ONYX_PROVIDER_SUITE(ShapeOp);

ONYX_OP_TEST(ShapeOp, GivesTheDimsBetweenStartAndEnd) {
  struct Case {
    std::optional<int64_t> start, end;
    std::vector<int64_t> want;
  };
  const Case cases[] = {{{}, {}, {2, 3, 4, 5}}, {1, {}, {3, 4, 5}}, {-1, {}, {5}}, {1, 3, {3, 4}},
                        {-10, 10, {2, 3, 4, 5}}, {3, 1, {}}};
  for (const Case& c : cases) {
    NodeSpec node("Shape", 15);
    if (c.start) node.attr("start", *c.start);
    if (c.end) node.attr("end", *c.end);
    node.inputs = {make_tensor<float>({2, 3, 4, 5}, std::vector<float>(120, 1.f))};
    RunResult r = run_node(node);
    ASSERT_TRUE(r.ok()) << r.error;
    EXPECT_EQ(r.outputs[0].dims, (std::vector<int64_t>{int64_t(c.want.size())}));
    EXPECT_EQ(r.outputs[0].values<int64_t>(), c.want);
  }
}

// ---- SumToShape -------------------------------------------------------------

ONYX_PROVIDER_SUITE(SumToShape);

ONYX_OP_TEST(SumToShape, SumsTheBroadcastDims) {
  const std::vector<int64_t> g_dims = {3, 4, 5};
  const std::vector<std::vector<int64_t>> targets = {{3, 4, 5}, {4, 5}, {5}, {4, 1}, {3, 1, 1}, {1}, {}};
  std::vector<float> g = nn::random_floats(60, 11);
  for (const auto& target : targets)
    for (bool constant : {false, true}) {
      NodeSpec node = onyx_node("SumToShape");
      const std::vector<int64_t> shape_dims = {int64_t(target.size())};
      node.inputs = {make_tensor<float>(g_dims, g), constant ? make_constant<int64_t>(shape_dims, target)
                                                             : make_tensor<int64_t>(shape_dims, target)};
      RunResult r = run_node(node);
      ASSERT_TRUE(r.ok()) << ::testing::PrintToString(target) << ": " << r.error;
      EXPECT_EQ(r.outputs[0].dims, target);
      // Reference: each element of G adds into the target element it broadcasts from.
      std::vector<int64_t> padded(g_dims.size() - target.size(), 1);
      padded.insert(padded.end(), target.begin(), target.end());
      std::vector<double> want(size_t(count(target)), 0.0), abs_sum(want.size(), 0.0);
      size_t flat = 0;
      for_each_index(g_dims, [&](const std::vector<int64_t>& i) {
        int64_t at = 0;
        for (size_t d = 0; d < i.size(); ++d) at = at * padded[d] + (padded[d] == 1 ? 0 : i[d]);
        want[size_t(at)] += g[flat];
        abs_sum[size_t(at)] += std::fabs(g[flat++]);
      });
      const double k = double(count(g_dims)) / double(want.size());
      std::vector<double> tol(want.size());
      for (size_t i = 0; i < tol.size(); ++i) tol[i] = nn::sum_tol(k, abs_sum[i]);
      EXPECT_TRUE(all_near(r.outputs[0].values<float>(), want, tol)) << ::testing::PrintToString(target);
    }
}

// A bias gradient's many rows: the threads share the kept columns, and each
// element is summed in the same order whatever their number.
ONYX_OP_TEST(SumToShape, ThreadsGiveTheSameSums) {
  const std::vector<int64_t> g_dims = {300, 2, 130};
  std::vector<float> g = nn::random_floats(size_t(count(g_dims)), 12);
  for (const std::vector<int64_t>& target : {std::vector<int64_t>{2, 130}, std::vector<int64_t>{130}}) {
    std::vector<std::vector<float>> results;
    for (size_t threads : {1, 4}) {
      NodeSpec node = onyx_node("SumToShape");
      node.inputs = {make_tensor<float>(g_dims, g), make_tensor<int64_t>({int64_t(target.size())}, target)};
      RunResult r = run_node(node, {.threads = threads});
      ASSERT_TRUE(r.ok()) << r.error;
      results.push_back(r.outputs[0].values<float>());
    }
    EXPECT_EQ(results[0], results[1]) << ::testing::PrintToString(target);
    const int64_t cols = count(target);
    std::vector<double> want(size_t(cols), 0.0), abs_sum(want.size(), 0.0);
    for (size_t i = 0; i < g.size(); ++i) {
      want[i % size_t(cols)] += g[i];
      abs_sum[i % size_t(cols)] += std::fabs(g[i]);
    }
    std::vector<double> tol(want.size());
    for (size_t i = 0; i < tol.size(); ++i) tol[i] = nn::sum_tol(double(g.size()) / double(cols), abs_sum[i]);
    EXPECT_TRUE(all_near(results[1], want, tol)) << ::testing::PrintToString(target);
  }
}

ONYX_OP_TEST(SumToShape, RefusesAShapeThatDoesNotBroadcast) {
  NodeSpec node = onyx_node("SumToShape");
  node.inputs = {make_tensor<float>({3, 4}, std::vector<float>(12, 1.f)), make_tensor<int64_t>({1}, {3})};
  EXPECT_ERROR_MENTIONS(run_node(node), "cannot be summed");
}

// ---- NegativeLogLikelihoodLoss and its gradient -----------------------------

struct NllCase {
  std::vector<int64_t> scores;  // [N, C, d...]
  std::string reduction;
  std::optional<int64_t> ignore_index;
  bool int32_labels = false;
};

void PrintTo(const NllCase& c, std::ostream* os) {
  *os << ::testing::PrintToString(c.scores) << " " << c.reduction
      << (c.ignore_index ? " ignore " + std::to_string(*c.ignore_index) : "") << (c.int32_labels ? " int32" : "");
}

std::vector<NllCase> nll_cases() {
  return {{{8, 10}, "mean", {}, false},       {{8, 10}, "sum", {}, true},   {{8, 10}, "none", {}, false},
          {{4, 5, 3}, "mean", 2, false},      {{4, 5, 3}, "none", 2, true}, {{600, 7}, "mean", {}, false},
          {{3, 4}, "mean", 1, false}};
}

// Labels in [0, C), every fifth one the ignore_index where there is one.
std::vector<int64_t> nll_labels(const NllCase& c) {
  std::vector<int64_t> dims = c.scores;
  dims.erase(dims.begin() + 1);
  std::vector<int64_t> labels(size_t(count(dims)));
  for (size_t i = 0; i < labels.size(); ++i)
    labels[i] = c.ignore_index && i % 5 == 0 ? *c.ignore_index : int64_t((i * 7 + 3) % size_t(c.scores[1]));
  return labels;
}

HostTensor labels_tensor(const NllCase& c, const std::vector<int64_t>& labels) {
  std::vector<int64_t> dims = c.scores;
  dims.erase(dims.begin() + 1);
  if (!c.int32_labels) return make_tensor<int64_t>(dims, labels);
  return make_tensor<int32_t>(dims, std::vector<int32_t>(labels.begin(), labels.end()));
}

ONYX_PROVIDER_CASE_SUITE(NllTest, NllCase, nll_cases(), case_index<NllCase>);

ONYX_OP_TEST(NllTest, LossAndGradientMatchTheDefinition) {
  const NllCase& c = test_case(self);
  const int64_t n = c.scores[0], classes = c.scores[1], inner = count(c.scores) / (n * classes);
  std::vector<float> x = nn::random_floats(size_t(count(c.scores)), 5, -4, 0);
  std::vector<int64_t> labels = nll_labels(c);
  // Reference: per target -x[n, label, i], 0 where ignored; mean over the counted.
  std::vector<double> per(labels.size(), 0.0);
  double total = 0, abs_total = 0, counted = 0;
  for (size_t t = 0; t < labels.size(); ++t) {
    if (c.ignore_index && labels[t] == *c.ignore_index) continue;
    const int64_t b = int64_t(t) / inner, i = int64_t(t) % inner;
    per[t] = -double(x[size_t((b * classes + labels[t]) * inner + i)]);
    total += per[t], abs_total += std::fabs(per[t]), ++counted;
  }
  NodeSpec loss = onyx_node("NegativeLogLikelihoodLoss");
  loss.attr("reduction", c.reduction);
  if (c.ignore_index) loss.attr("ignore_index", *c.ignore_index);
  loss.inputs = {make_tensor<float>(c.scores, x), labels_tensor(c, labels)};
  RunResult r = run_node(loss);
  ASSERT_TRUE(r.ok()) << r.error;
  if (c.reduction == "none") {
    EXPECT_TRUE(all_near(r.outputs[0].values<float>(), per, {0.0}));
  } else {
    const double want = c.reduction == "sum" ? total : total / counted;
    const double tol = nn::sum_tol(double(labels.size()), c.reduction == "sum" ? abs_total : abs_total / counted);
    EXPECT_EQ(r.outputs[0].dims, std::vector<int64_t>{});
    EXPECT_TRUE(all_near(r.outputs[0].values<float>(), {want}, {tol}));
  }

  // The gradient: -dloss (/ count for mean) at each counted target's label.
  std::vector<float> dy = c.reduction == "none" ? nn::random_floats(labels.size(), 9) : std::vector<float>{0.75f};
  std::vector<int64_t> dy_dims = c.scores;
  dy_dims.erase(dy_dims.begin() + 1);
  if (c.reduction != "none") dy_dims.clear();
  NodeSpec grad = onyx_node("NegativeLogLikelihoodLossGrad");
  grad.attr("reduction", c.reduction);
  if (c.ignore_index) grad.attr("ignore_index", *c.ignore_index);
  grad.inputs = {make_tensor<float>(dy_dims, dy), labels_tensor(c, labels),
                 make_tensor<int64_t>({int64_t(c.scores.size())}, c.scores)};
  RunResult g = run_node(grad);
  ASSERT_TRUE(g.ok()) << g.error;
  EXPECT_EQ(g.outputs[0].dims, c.scores);
  std::vector<double> want(x.size(), 0.0);
  for (size_t t = 0; t < labels.size(); ++t) {
    if (c.ignore_index && labels[t] == *c.ignore_index) continue;
    const int64_t b = int64_t(t) / inner, i = int64_t(t) % inner;
    const double d = c.reduction == "none" ? dy[t] : dy[0];
    want[size_t((b * classes + labels[t]) * inner + i)] = -d / (c.reduction == "mean" ? counted : 1.0);
  }
  // One division (mean) and the product: two roundings.
  EXPECT_TRUE(all_near(g.outputs[0].values<float>(), want, nn::rel_tol(want, 2 * nn::kU32, 0)));
}

ONYX_PROVIDER_SUITE(Nll);

ONYX_OP_TEST(Nll, ALabelOutOfRangeIsAnErrorNamingIt) {
  for (int64_t bad : {int64_t{10}, int64_t{-1}}) {
    NodeSpec loss = onyx_node("NegativeLogLikelihoodLoss");
    loss.inputs = {make_tensor<float>({2, 10}, std::vector<float>(20, -1.f)), make_tensor<int64_t>({2}, {3, bad})};
    EXPECT_ERROR_MENTIONS(run_node(loss), "out of range");
    NodeSpec grad = onyx_node("NegativeLogLikelihoodLossGrad");
    grad.inputs = {make_scalar<float>(1.f), make_tensor<int64_t>({2}, {bad, 3}), make_tensor<int64_t>({2}, {2, 10})};
    EXPECT_ERROR_MENTIONS(run_node(grad), "out of range");
  }
}

// ---- MaxPoolGrad ------------------------------------------------------------

struct PoolGradCase {
  std::vector<int64_t> x_dims, kernel, strides, pads, dilations;
};

void PrintTo(const PoolGradCase& c, std::ostream* os) {
  *os << ::testing::PrintToString(c.x_dims) << " k" << ::testing::PrintToString(c.kernel) << " s"
      << ::testing::PrintToString(c.strides) << " p" << ::testing::PrintToString(c.pads) << " d"
      << ::testing::PrintToString(c.dilations);
}

std::vector<PoolGradCase> pool_grad_cases() {
  return {{{2, 3, 8, 8}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}},  // the CNN's pool
          {{1, 2, 7, 9}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}},  // overlapping windows, padding
          {{2, 1, 9, 8}, {3, 2}, {2, 3}, {1, 0, 2, 1}, {1, 1}},
          {{1, 2, 9, 9}, {2, 2}, {1, 1}, {0, 0, 0, 0}, {2, 2}}};
}

ONYX_PROVIDER_CASE_SUITE(MaxPoolGradTest, PoolGradCase, pool_grad_cases(), case_index<PoolGradCase>);

ONYX_OP_TEST(MaxPoolGradTest, RoutesEachWindowsGradientToItsMaximum) {
  const PoolGradCase& c = test_case(self);
  std::vector<float> x = nn::random_floats(size_t(count(c.x_dims)), 21);  // distinct: no ties
  const int64_t planes = c.x_dims[0] * c.x_dims[1], h = c.x_dims[2], w = c.x_dims[3];
  const int64_t oh = (h + c.pads[0] + c.pads[2] - c.dilations[0] * (c.kernel[0] - 1) - 1) / c.strides[0] + 1;
  const int64_t ow = (w + c.pads[1] + c.pads[3] - c.dilations[1] * (c.kernel[1] - 1) - 1) / c.strides[1] + 1;
  std::vector<float> dy = nn::random_floats(size_t(planes * oh * ow), 22);
  std::vector<double> want(x.size(), 0.0), abs_sum(x.size(), 0.0);
  std::vector<int> hits(x.size(), 0);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox) {
        int64_t best = -1;
        for (int64_t kh = 0; kh < c.kernel[0]; ++kh)
          for (int64_t kw = 0; kw < c.kernel[1]; ++kw) {
            int64_t y = oy * c.strides[0] - c.pads[0] + kh * c.dilations[0];
            int64_t xx = ox * c.strides[1] - c.pads[1] + kw * c.dilations[1];
            if (y < 0 || y >= h || xx < 0 || xx >= w) continue;
            int64_t at = (p * h + y) * w + xx;
            if (best < 0 || x[size_t(at)] > x[size_t(best)]) best = at;
          }
        if (best < 0) continue;
        const float g = dy[size_t((p * oh + oy) * ow + ox)];
        want[size_t(best)] += g, abs_sum[size_t(best)] += std::fabs(g), ++hits[size_t(best)];
      }
  NodeSpec node = onyx_node("MaxPoolGrad");
  node.attr("kernel_shape", c.kernel).attr("strides", c.strides).attr("pads", c.pads).attr("dilations", c.dilations);
  node.inputs = {make_tensor<float>({c.x_dims[0], c.x_dims[1], oh, ow}, dy), make_tensor<float>(c.x_dims, x)};
  RunResult r = run_node(node);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].dims, c.x_dims);
  std::vector<double> tol(want.size());
  for (size_t i = 0; i < tol.size(); ++i) tol[i] = nn::sum_tol(hits[i], abs_sum[i]);
  EXPECT_TRUE(all_near(r.outputs[0].values<float>(), want, tol));
}

// ---- ConvGrad ---------------------------------------------------------------

struct ConvGradCase {
  std::vector<int64_t> x_dims, w_dims;
  int64_t stride = 1, pad = 0, dilation = 1, group = 1;
};

void PrintTo(const ConvGradCase& c, std::ostream* os) {
  *os << ::testing::PrintToString(c.x_dims) << " w" << ::testing::PrintToString(c.w_dims) << " s" << c.stride
      << " p" << c.pad << " d" << c.dilation << " g" << c.group;
}

std::vector<ConvGradCase> conv_grad_cases() {
  return {{{4, 1, 12, 12}, {8, 1, 3, 3}, 1, 1, 1, 1},   // the CNN's first conv
          {{3, 8, 7, 7}, {16, 8, 3, 3}, 1, 1, 1, 1},    // its second
          {{2, 3, 9, 8}, {4, 3, 3, 2}, 2, 1, 1, 1},     // stride 2, uneven kernel
          {{2, 4, 9, 9}, {6, 2, 3, 3}, 1, 2, 2, 2},     // dilation, groups
          {{2, 2, 5, 5}, {3, 2, 1, 1}, 1, 0, 1, 1},     // 1x1
          {{2, 3, 9, 9}, {32, 3, 3, 3}, 1, 1, 1, 1},    // dW with channels in lanes: 2 blocks, 27 pairs
          {{2, 4, 7, 7}, {32, 2, 3, 3}, 1, 1, 1, 2},    // and per group
          // dX on the CPU provider's Winograd F(4x4, 3x3) (its transforms'
          // roundoff, 1e-6 of the sum of |terms|, is within sum_tol for the
          // >= 4 x 8 terms of every dX): 32 channels and 32 tiles, by
          // groups, and 8 images in the vector lanes (16 <- 8 channels).
          {{2, 32, 16, 16}, {32, 32, 3, 3}, 1, 1, 1, 1},
          {{2, 64, 12, 12}, {64, 32, 3, 3}, 1, 1, 1, 2},
          {{8, 16, 7, 9}, {8, 16, 3, 3}, 1, 1, 1, 1}};
}

ONYX_PROVIDER_CASE_SUITE(ConvGradTest, ConvGradCase, conv_grad_cases(), case_index<ConvGradCase>);

ONYX_OP_TEST(ConvGradTest, MatchesTheAdjointOfTheConvolution) {
  const ConvGradCase& c = test_case(self);
  const int64_t n = c.x_dims[0], ch = c.x_dims[1], h = c.x_dims[2], w = c.x_dims[3];
  const int64_t m = c.w_dims[0], cg = c.w_dims[1], kh = c.w_dims[2], kw = c.w_dims[3], mg = m / c.group;
  const int64_t oh = (h + 2 * c.pad - c.dilation * (kh - 1) - 1) / c.stride + 1;
  const int64_t ow = (w + 2 * c.pad - c.dilation * (kw - 1) - 1) / c.stride + 1;
  std::vector<float> x = nn::random_floats(size_t(count(c.x_dims)), 31);
  std::vector<float> wt = nn::random_floats(size_t(count(c.w_dims)), 32);
  std::vector<float> dy = nn::random_floats(size_t(n * m * oh * ow), 33);
  // Every tap of y[b, o, oy, ox] = sum W[o, ci, i, j] x[b, g*cg + ci, ...]
  // contributes dy * W to dX and dy * x to dW.
  std::vector<double> dx(x.size(), 0.0), dx_abs(x.size(), 0.0), dw(wt.size(), 0.0), dw_abs(wt.size(), 0.0);
  std::vector<int> dx_terms(x.size(), 0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < m; ++o)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          const double g = dy[size_t(((b * m + o) * oh + oy) * ow + ox)];
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t y = oy * c.stride - c.pad + i * c.dilation, xx = ox * c.stride - c.pad + j * c.dilation;
                if (y < 0 || y >= h || xx < 0 || xx >= w) continue;
                const size_t xi = size_t(((b * ch + (o / mg) * cg + ci) * h + y) * w + xx);
                const size_t wi = size_t(((o * cg + ci) * kh + i) * kw + j);
                dx[xi] += g * wt[wi], dx_abs[xi] += std::fabs(g * wt[wi]), ++dx_terms[xi];
                dw[wi] += g * x[xi], dw_abs[wi] += std::fabs(g * x[xi]);
              }
        }
  std::vector<double> dx_tol(dx.size()), dw_tol(dw.size());
  for (size_t i = 0; i < dx.size(); ++i) dx_tol[i] = nn::sum_tol(dx_terms[i], dx_abs[i]);
  for (size_t i = 0; i < dw.size(); ++i) dw_tol[i] = nn::sum_tol(double(n * oh * ow), dw_abs[i]);
  // Both outputs, then each alone (the other omitted and not computed).
  for (int want_outputs : {3, 1, 2}) {
    NodeSpec node = onyx_node("ConvGrad");
    node.attr("strides", std::vector<int64_t>{c.stride, c.stride})
        .attr("pads", std::vector<int64_t>{c.pad, c.pad, c.pad, c.pad})
        .attr("dilations", std::vector<int64_t>{c.dilation, c.dilation})
        .attr("group", c.group)
        .attr("kernel_shape", std::vector<int64_t>{kh, kw});
    node.inputs = {make_tensor<float>({n, m, oh, ow}, dy), make_tensor<float>(c.x_dims, x),
                   make_tensor<float>(c.w_dims, wt)};
    node.output_count = 2;
    node.omitted_outputs = {!(want_outputs & 1), !(want_outputs & 2)};
    RunResult r = run_node(node);
    ASSERT_TRUE(r.ok()) << r.error;
    if (want_outputs & 1) {
      EXPECT_EQ(r.outputs[0].dims, c.x_dims);
      EXPECT_TRUE(all_near(r.outputs[0].values<float>(), dx, dx_tol)) << "dX";
    }
    if (want_outputs & 2) {
      EXPECT_EQ(r.outputs[1].dims, c.w_dims);
      EXPECT_TRUE(all_near(r.outputs[1].values<float>(), dw, dw_tol)) << "dW";
    }
  }
}

// A NaN in dY reaches only the dX positions whose windows read it: a
// provider that takes dX through a transform mixing a whole tile (the CPU's
// Winograd) must fall back for non-finite gradients, as its Conv does.
ONYX_PROVIDER_SUITE(ConvGrad);

ONYX_OP_TEST(ConvGrad, ANanInTheOutputGradientStaysInItsWindows) {
  const int64_t n = 2, c = 32, m = 32, h = 16, w = 16;
  std::vector<float> dy = nn::random_floats(size_t(n * m * h * w), 41);
  const int64_t nan_b = 1, nan_y = 5, nan_x = 9;
  dy[size_t(((nan_b * m + 3) * h + nan_y) * w + nan_x)] = std::numeric_limits<float>::quiet_NaN();
  NodeSpec node = onyx_node("ConvGrad");
  node.attr("pads", std::vector<int64_t>{1, 1, 1, 1}).attr("kernel_shape", std::vector<int64_t>{3, 3});
  node.inputs = {make_tensor<float>({n, m, h, w}, dy),
                 make_tensor<float>({n, c, h, w}, nn::random_floats(size_t(n * c * h * w), 42)),
                 make_tensor<float>({m, c, 3, 3}, nn::random_floats(size_t(m * c * 9), 43))};
  node.output_count = 2;
  node.omitted_outputs = {false, true};
  RunResult r = run_node(node);
  ASSERT_TRUE(r.ok()) << r.error;
  const std::vector<float> dx = r.outputs[0].values<float>();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x) {
          const bool reads_nan = b == nan_b && std::abs(y - nan_y) <= 1 && std::abs(x - nan_x) <= 1;
          const float v = dx[size_t(((b * c + ci) * h + y) * w + x)];
          ASSERT_EQ(std::isnan(v), reads_nan) << "dX[" << b << ", " << ci << ", " << y << ", " << x << "] = " << v;
        }
}

// ---- BatchNormGradSums ------------------------------------------------------

struct BatchNormSumsCase {
  std::vector<int64_t> x_dims, mean_dims;
  size_t threads = 1;
};

void PrintTo(const BatchNormSumsCase& c, std::ostream* os) {
  *os << ::testing::PrintToString(c.x_dims) << " mean" << ::testing::PrintToString(c.mean_dims) << " t" << c.threads;
}

std::vector<BatchNormSumsCase> batch_norm_sums_cases() {
  return {{{4, 8, 28, 28}, {8, 1, 1}, 1},   // the CNN's first BatchNorm
          {{4, 8, 28, 28}, {8, 1, 1}, 3},   // planes over threads
          {{2, 3, 5, 7}, {1, 3, 1, 1}, 2},  // planes of 35: a vector and a tail
          {{5, 3}, {3}, 1},                 // rank 2: a plane is one value
          {{2, 2, 3, 4, 5}, {2, 1, 1, 1}, 1},
          {{1, 1, 17}, {1, 1}, 1}};
}

ONYX_PROVIDER_CASE_SUITE(BatchNormGradSumsTest, BatchNormSumsCase, batch_norm_sums_cases(),
                         case_index<BatchNormSumsCase>);

// Per channel c of X [N, C, ...]: sum of dY (X - mean[c]) and of dY over
// every other axis, against float64 sums of the same float32 terms.
ONYX_OP_TEST(BatchNormGradSumsTest, SumsEachChannelOverEveryOtherAxis) {
  const BatchNormSumsCase& c = test_case(self);
  const int64_t n = c.x_dims[0], ch = c.x_dims[1], plane = count(c.x_dims) / (n * ch);
  std::vector<float> x = nn::random_floats(size_t(count(c.x_dims)), 41, -2, 3);
  std::vector<float> dy = nn::random_floats(x.size(), 42);
  std::vector<float> mean = nn::random_floats(size_t(ch), 43);
  std::vector<double> centered(size_t(ch), 0.0), centered_abs(size_t(ch), 0.0), sum(size_t(ch), 0.0),
      sum_abs(size_t(ch), 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t k = 0; k < ch; ++k)
      for (int64_t i = 0; i < plane; ++i) {
        const size_t at = size_t((b * ch + k) * plane + i);
        const double term = double(dy[at]) * (double(x[at]) - double(mean[size_t(k)]));
        centered[size_t(k)] += term, centered_abs[size_t(k)] += std::fabs(term);
        sum[size_t(k)] += dy[at], sum_abs[size_t(k)] += std::fabs(dy[at]);
      }
  std::vector<double> centered_tol(static_cast<size_t>(ch)), sum_tol(static_cast<size_t>(ch));
  for (size_t k = 0; k < size_t(ch); ++k) {
    // + 2: the float32 difference and product of each term, then the sum.
    centered_tol[k] = nn::sum_tol(double(n * plane + 2), centered_abs[k]);
    sum_tol[k] = nn::sum_tol(double(n * plane), sum_abs[k]);
  }
  for (bool both : {true, false}) {
    SCOPED_TRACE(both ? "both sums" : "the sum of dY omitted");
    NodeSpec node = onyx_node("BatchNormGradSums");
    node.inputs = {make_tensor<float>(c.x_dims, dy), make_tensor<float>(c.x_dims, x),
                   make_tensor<float>(c.mean_dims, mean)};
    node.output_count = 2;
    if (!both) node.omitted_outputs = {false, true};
    RunResult r = run_node(node, RunOptions{c.threads});
    ASSERT_TRUE(r.ok()) << r.error;
    EXPECT_EQ(r.outputs[0].dims, (std::vector<int64_t>{ch}));
    EXPECT_TRUE(all_near(r.outputs[0].values<float>(), centered, centered_tol));
    if (both) {
      EXPECT_TRUE(all_near(r.outputs[1].values<float>(), sum, sum_tol));
    }
  }
}

ONYX_PROVIDER_SUITE(BatchNormGradSums);

ONYX_OP_TEST(BatchNormGradSums, RefusesAMeanThatIsNotOnePerChannel) {
  NodeSpec node = onyx_node("BatchNormGradSums");
  node.inputs = {make_tensor<float>({2, 3, 4}, std::vector<float>(24, 1.0f)),
                 make_tensor<float>({2, 3, 4}, std::vector<float>(24, 1.0f)),
                 make_tensor<float>({4}, std::vector<float>(4, 0.0f))};
  node.output_count = 2;
  RunResult r = run_node(node);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error.find("one value per channel"), std::string::npos) << r.error;
  node.inputs[2] = make_tensor<float>({3}, std::vector<float>(3, 0.0f));
  node.inputs[0] = make_tensor<float>({2, 3, 2}, std::vector<float>(12, 1.0f));
  r = run_node(node);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error.find("one shape"), std::string::npos) << r.error;
}

}  // namespace
}  // namespace onyx::test
