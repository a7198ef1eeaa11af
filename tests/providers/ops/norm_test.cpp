// norm_test.cpp: BatchNormalization (and ai.onyx FusedBatchNormalization), LayerNormalization,
// InstanceNormalization, GroupNormalization, LRN and
// MeanVarianceNormalization against float64 reference loops.
#include <gtest/gtest.h>

#include <cmath>

#include "kernel_harness.h"
#include "test_providers.h"
#include "nn_test_util.h"

namespace onyx::test {
namespace {

using nn::all_near;
using nn::kU32;

// Population mean and variance of x[i] for i in `idx`.
std::pair<double, double> moments(const std::vector<double>& x, const std::vector<int64_t>& idx) {
  double s = 0, q = 0;
  for (int64_t i : idx) s += x[size_t(i)];
  double m = s / double(idx.size());
  for (int64_t i : idx) q += (x[size_t(i)] - m) * (x[size_t(i)] - m);
  return {m, q / double(idx.size())};
}

// Kernels that end with y = x * a + b in float32 (a = scale / std, b =
// bias - mean * a, both rounded to float32): roundings of a, b, the product
// and the sum each err by <= u of their magnitude, so
// |err| <= 4 u (|x a| + |b|) covers them with the magnitudes taken exactly.
struct AffineRef {
  std::vector<double> y, tol;
  void add(double x, double a, double b) {
    y.push_back(x * a + b);
    tol.push_back(4 * kU32 * (std::fabs(x * a) + std::fabs(b)) + 1e-30);
  }
};

// Per-channel normalization over [N, C, S]: stats over the index sets
// `group_of` (element -> statistics group); affine per channel.
AffineRef normalize(const std::vector<double>& x, const std::vector<int64_t>& group_of,
                    int64_t groups, const std::vector<int64_t>& channel_of,
                    const std::vector<double>& scale, const std::vector<double>& bias, double eps) {
  std::vector<std::vector<int64_t>> members(static_cast<size_t>(groups));
  for (size_t i = 0; i < x.size(); ++i) members[size_t(group_of[i])].push_back(int64_t(i));
  std::vector<std::pair<double, double>> st;
  for (const auto& m : members) st.push_back(moments(x, m));
  AffineRef r;
  for (size_t i = 0; i < x.size(); ++i) {
    auto [mean, var] = st[size_t(group_of[i])];
    double a = scale[size_t(channel_of[i])] / std::sqrt(var + eps);
    r.add(x[i], a, bias[size_t(channel_of[i])] - mean * a);
  }
  return r;
}

std::vector<double> positive(size_t n, uint32_t seed) {
  return nn::to_double(nn::random_floats(n, seed, 0.5f, 2.0f));
}

ONYX_PROVIDER_SUITE(BatchNorm);

ONYX_OP_TEST(BatchNorm, InferenceMatchesReference) {
  const int64_t n = 2, c = 3, s = 20;  // X [2, 3, 4, 5]
  std::vector<float> x = nn::random_floats(size_t(n * c * s), 1, -3, 3);
  std::vector<double> scale = nn::to_double(nn::random_floats(3, 2)),
                      bias = nn::to_double(nn::random_floats(3, 3)),
                      mean = nn::to_double(nn::random_floats(3, 4)), var = positive(3, 5);
  std::vector<int64_t> chan(x.size());
  for (size_t i = 0; i < x.size(); ++i) chan[i] = int64_t(i) / s % c;
  AffineRef want;
  for (size_t i = 0; i < x.size(); ++i) {
    size_t k = size_t(chan[i]);
    double a = scale[k] / std::sqrt(var[k] + 1e-3);
    want.add(x[i], a, bias[k] - mean[k] * a);
  }
  for (int64_t opset : {6, 9, 15}) {
    NodeSpec node("BatchNormalization", opset);
    node.attr("epsilon", 1e-3);
    if (opset < 7) node.attr("is_test", 1);
    // opset 15: the statistics may have their own type (T2).
    auto stat = [&](const std::vector<double>& v) {
      return opset == 15 ? make_tensor<double>({c}, v)
                         : make_tensor<float>({c}, std::vector<float>(v.begin(), v.end()));
    };
    node.inputs = {make_tensor<float>({n, c, 4, 5}, x), stat(scale), stat(bias), stat(mean),
                   stat(var)};
    for (bool in_place : {false, true}) {
      RunResult r = run_node(node, {.threads = 2, .in_place = in_place});
      ASSERT_TRUE(r.ok()) << "opset " << opset << ": " << r.error;
      EXPECT_ON_REFERENCE(EXPECT_EQ(r.shared_with_input[0], in_place));
      EXPECT_TRUE(all_near(r.outputs[0].values<float>(), want.y, want.tol)) << "opset " << opset;
    }
  }
}

// Training: Y uses the batch statistics; the running statistics blend the
// inputs with the batch values: running = input * momentum + batch * (1 - momentum).
ONYX_OP_TEST(BatchNorm, TrainingModeOutputsRunningStatistics) {
  const int64_t n = 3, c = 2, s = 7;
  std::vector<float> xf = nn::random_floats(size_t(n * c * s), 8, -2, 4);
  std::vector<double> x = nn::to_double(xf);
  std::vector<float> scale = {1.5f, -0.5f}, bias = {0.25f, 1}, mean = {0.1f, -0.2f}, var = {1, 2};
  std::vector<int64_t> chan(x.size());
  for (size_t i = 0; i < x.size(); ++i) chan[i] = int64_t(i) / s % c;
  AffineRef want = normalize(x, chan, c, chan, nn::to_double(scale), nn::to_double(bias), 1e-5);
  std::vector<double> run_mean, run_var;
  for (int64_t k = 0; k < c; ++k) {
    std::vector<int64_t> idx;
    for (size_t i = 0; i < x.size(); ++i)
      if (chan[i] == k) idx.push_back(int64_t(i));
    auto [m, v] = moments(x, idx);
    const double momentum = as_onnx_float(0.8);
    run_mean.push_back(mean[size_t(k)] * momentum + m * (1 - momentum));
    run_var.push_back(var[size_t(k)] * momentum + v * (1 - momentum));
  }
  NodeSpec node("BatchNormalization", 15);
  node.attr("training_mode", 1).attr("momentum", 0.8);
  node.output_count = 3;
  node.inputs = {make_tensor<float>({n, c, s}, xf), make_tensor<float>({c}, scale),
                 make_tensor<float>({c}, bias), make_tensor<float>({c}, mean),
                 make_tensor<float>({c}, var)};
  RunResult r = run_node(node, {.threads = 2});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_TRUE(all_near(r.outputs[0].values<float>(), want.y, want.tol));
  // Computed in double, rounded once.
  EXPECT_TRUE(all_near(r.outputs[1].values<float>(), run_mean, nn::rel_tol(run_mean, kU32, 1e-30)));
  EXPECT_TRUE(all_near(r.outputs[2].values<float>(), run_var, nn::rel_tol(run_var, kU32, 1e-30)));

  // Opset 6 with is_test = 0 is training too: batch statistics.
  NodeSpec legacy("BatchNormalization", 6);
  legacy.attr("is_test", 0);
  legacy.inputs = node.inputs;
  r = run_node(legacy);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_TRUE(all_near(r.outputs[0].values<float>(), want.y, want.tol));

  // Without is_test it is inference, as ONNX's version converter reads it.
  AffineRef inference;
  for (size_t i = 0; i < x.size(); ++i) {
    size_t k = size_t(chan[i]);
    double a = scale[k] / std::sqrt(double(var[k]) + 1e-5);
    inference.add(x[i], a, bias[k] - mean[k] * a);
  }
  NodeSpec absent("BatchNormalization", 6);
  absent.inputs = node.inputs;
  r = run_node(absent);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_TRUE(all_near(r.outputs[0].values<float>(), inference.y, inference.tol));
}

ONYX_OP_TEST(BatchNorm, LegacyPerActivationStatistics) {
  // spatial = 0 (opset 7): one statistic per (C, H, W) element.
  const int64_t n = 2, f = 6;  // C = 2, H x W = 3
  std::vector<float> x = nn::random_floats(size_t(n * f), 9);
  std::vector<float> scale = nn::random_floats(6, 10), bias = nn::random_floats(6, 11),
                     mean = nn::random_floats(6, 12), var = nn::random_floats(6, 13, 0.5, 2);
  AffineRef want;
  for (size_t i = 0; i < x.size(); ++i) {
    size_t k = i % size_t(f);
    double a = double(scale[k]) / std::sqrt(double(var[k]) + 1e-5);
    want.add(x[i], a, bias[k] - mean[k] * a);
  }
  NodeSpec node("BatchNormalization", 7);
  node.attr("spatial", 0);
  node.inputs = {make_tensor<float>({n, 2, 3}, x), make_tensor<float>({2, 3}, scale),
                 make_tensor<float>({2, 3}, bias), make_tensor<float>({2, 3}, mean),
                 make_tensor<float>({2, 3}, var)};
  RunResult r = run_node(node);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_TRUE(all_near(r.outputs[0].values<float>(), want.y, want.tol));
}

ONYX_OP_TEST(BatchNorm, ErrorsAndDeclines) {
  NodeSpec node("BatchNormalization", 15);
  std::vector<float> ones(3, 1.f);
  node.inputs = {make_tensor<float>({1, 3, 2}, std::vector<float>(6, 0.f)),
                 make_tensor<float>({3}, ones), make_tensor<float>({3}, ones),
                 make_tensor<float>({2}, {0, 0}), make_tensor<float>({3}, ones)};
  RunResult r = run_node(node);
  ASSERT_FALSE(r.ok());
  EXPECT_ERROR_MENTIONS(r, "input 3 (input_mean)");

  NodeSpec old("BatchNormalization", 9);  // training outputs before opset 14
  old.inputs = node.inputs;
  old.output_count = 5;
  r = run_node(old);
  EXPECT_TRUE(r.declined);
  EXPECT_ERROR_MENTIONS(r, "opset 14");
}

// ai.onyx FusedBatchNormalization (optimize/activation_fusion.cpp): the
// inference form, then Relu; a NaN input stays NaN, as Relu keeps it.
ONYX_PROVIDER_SUITE(FusedBatchNorm);

ONYX_OP_TEST(FusedBatchNorm, InferenceThenRelu) {
  const int64_t n = 2, c = 3, s = 20;  // X [2, 3, 4, 5]
  std::vector<float> x = nn::random_floats(size_t(n * c * s), 6, -3, 3);
  x[7] = std::nanf("");
  std::vector<double> scale = nn::to_double(nn::random_floats(3, 7)), bias = nn::to_double(nn::random_floats(3, 8)),
                      mean = nn::to_double(nn::random_floats(3, 9)), var = positive(3, 10);
  AffineRef want;
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t k = size_t(int64_t(i) / s % c);
    const double a = scale[k] / std::sqrt(var[k] + 1e-3);
    want.add(x[i], a, bias[k] - mean[k] * a);
    want.y.back() = std::max(want.y.back(), 0.0);  // Relu: its error bound stays the affine one
  }
  auto f32 = [&](const std::vector<double>& v) {
    return make_tensor<float>({c}, std::vector<float>(v.begin(), v.end()));
  };
  NodeSpec node("FusedBatchNormalization", 1);
  node.domain = "ai.onyx";
  node.attr("epsilon", 1e-3);
  node.attr("activation", "Relu");
  node.inputs = {make_tensor<float>({n, c, 4, 5}, x), f32(scale), f32(bias), f32(mean), f32(var)};
  for (bool in_place : {false, true}) {
    RunResult r = run_node(node, {.threads = 2, .in_place = in_place});
    ASSERT_TRUE(r.ok()) << r.error;
    std::vector<float> y = r.outputs[0].values<float>();
    EXPECT_TRUE(std::isnan(y[7]));
    y[7] = 0.0f;
    want.y[7] = 0.0;
    want.tol[7] = 0.0;
    EXPECT_TRUE(all_near(y, want.y, want.tol)) << (in_place ? "in place" : "");
  }
  node.attributes.clear();
  node.attr("activation", "Sigmoid");
  RunResult r = run_node(node);
  EXPECT_TRUE(r.declined);
  EXPECT_ERROR_MENTIONS(r, "activation 'Sigmoid'");
}

ONYX_PROVIDER_SUITE(LayerNorm);

ONYX_OP_TEST(LayerNorm, AxesBiasAndStatistics) {
  const std::vector<int64_t> dims = {2, 3, 5};
  std::vector<float> xf = nn::random_floats(30, 14, -2, 3);
  std::vector<double> x = nn::to_double(xf);
  for (int64_t axis : {-1, 1, 0, -2}) {
    int64_t a = axis < 0 ? axis + 3 : axis;
    int64_t rows = 1, cols = 1;
    for (int64_t d = 0; d < 3; ++d) (d < a ? rows : cols) *= dims[size_t(d)];
    std::vector<int64_t> norm_dims(dims.begin() + a, dims.end());
    std::vector<float> scale = nn::random_floats(size_t(cols), 15),
                       bias = nn::random_floats(size_t(cols), 16);
    std::vector<double> y, mean, inv;
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<int64_t> idx;
      for (int64_t k = 0; k < cols; ++k) idx.push_back(r * cols + k);
      auto [m, v] = moments(x, idx);
      mean.push_back(m);
      inv.push_back(1 / std::sqrt(v + 1e-5));
      for (int64_t k = 0; k < cols; ++k)
        y.push_back((x[size_t(r * cols + k)] - m) * inv.back() * scale[size_t(k)] +
                    bias[size_t(k)]);
    }
    NodeSpec node("LayerNormalization", 17);
    node.attr("axis", axis);
    node.output_count = 3;
    node.inputs = {make_tensor<float>(dims, xf), make_tensor<float>(norm_dims, scale),
                   make_tensor<float>(norm_dims, bias)};
    RunResult r = run_node(node, {.threads = 3, .in_place = axis == 0});
    ASSERT_TRUE(r.ok()) << r.error;
    EXPECT_ON_REFERENCE(EXPECT_EQ(r.shared_with_input[0], axis == 0));
    // Everything runs in double and is rounded once: 1 u relative.
    auto tol = [](const std::vector<double>& want) {
      return nn::provider_tol("LayerNormalization", want, nn::rel_tol(want, kU32, 1e-12));
    };
    EXPECT_TRUE(all_near(r.outputs[0].values<float>(), y, tol(y))) << axis;
    EXPECT_TRUE(all_near(r.outputs[1].values<float>(), mean, tol(mean)));
    EXPECT_TRUE(all_near(r.outputs[2].values<float>(), inv, tol(inv)));
    std::vector<int64_t> stat_dims = dims;
    for (int64_t d = a; d < 3; ++d) stat_dims[size_t(d)] = 1;
    EXPECT_EQ(r.outputs[1].dims, stat_dims);
  }
}

ONYX_OP_TEST(LayerNorm, ScaleBroadcastsAndBiasIsOptional) {
  std::vector<float> xf = nn::random_floats(24, 17);
  std::vector<double> x = nn::to_double(xf), y;
  std::vector<float> scale = {0.5f, -2.0f, 3.0f};  // [1, 3] over the normalized [4, 3]
  for (int64_t r = 0; r < 2; ++r) {
    std::vector<int64_t> idx;
    for (int64_t k = 0; k < 12; ++k) idx.push_back(r * 12 + k);
    auto [m, v] = moments(x, idx);
    for (int64_t k = 0; k < 12; ++k)
      y.push_back((x[size_t(r * 12 + k)] - m) / std::sqrt(v + 1e-5) * scale[size_t(k % 3)]);
  }
  NodeSpec node("LayerNormalization", 17);
  node.attr("axis", 1);
  node.inputs = {make_tensor<float>({2, 4, 3}, xf), make_tensor<float>({1, 3}, scale)};
  RunResult r = run_node(node);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_TRUE(all_near(r.outputs[0].values<float>(), y,
                       nn::provider_tol("LayerNormalization", y, nn::rel_tol(y, kU32, 1e-12))));

  node.inputs[1] = make_tensor<float>({2, 3}, std::vector<float>(6, 1.f));  // does not broadcast
  r = run_node(node);
  ASSERT_FALSE(r.ok());
  EXPECT_ERROR_MENTIONS(r, "input 1");
  NodeSpec bad_axis("LayerNormalization", 17);
  bad_axis.attr("axis", 3);
  bad_axis.inputs = {node.inputs[0], make_tensor<float>({1, 3}, scale)};
  r = run_node(bad_axis);
  ASSERT_FALSE(r.ok());
  EXPECT_ERROR_MENTIONS(r, "axis 3");
}

ONYX_PROVIDER_SUITE(InstanceAndGroupNorm);

ONYX_OP_TEST(InstanceAndGroupNorm, MatchReference) {
  const int64_t n = 2, c = 6, s = 7;  // X [2, 6, 7]
  std::vector<float> xf = nn::random_floats(size_t(n * c * s), 18, -1, 5);
  std::vector<double> x = nn::to_double(xf);
  std::vector<int64_t> chan(x.size()), inst(x.size());
  for (size_t i = 0; i < x.size(); ++i) chan[i] = int64_t(i) / s % c, inst[i] = int64_t(i) / s;
  std::vector<float> scale = nn::random_floats(size_t(c), 19),
                     bias = nn::random_floats(size_t(c), 20);

  AffineRef want = normalize(x, inst, n * c, chan, nn::to_double(scale), nn::to_double(bias), 1e-5);
  NodeSpec node("InstanceNormalization", 6);
  node.inputs = {make_tensor<float>({n, c, s}, xf), make_tensor<float>({c}, scale),
                 make_tensor<float>({c}, bias)};
  RunResult r = run_node(node, {.threads = 2, .in_place = true});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_ON_REFERENCE(EXPECT_TRUE(r.shared_with_input[0]));
  EXPECT_TRUE(all_near(r.outputs[0].values<float>(), want.y, want.tol));

  const int64_t g = 3;
  std::vector<int64_t> group(x.size()), group_id(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    group[i] = int64_t(i) / (s * c / g);  // (n, g) statistics
    group_id[i] = chan[i] / (c / g);
  }
  // Opset 21: scale and bias per channel.
  want = normalize(x, group, n * g, chan, nn::to_double(scale), nn::to_double(bias), 1e-4);
  NodeSpec gn("GroupNormalization", 21);
  gn.attr("num_groups", g).attr("epsilon", 1e-4);
  gn.inputs = node.inputs;
  r = run_node(gn, {.threads = 2});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_TRUE(all_near(r.outputs[0].values<float>(), want.y, want.tol));

  // Opset 18: scale and bias per group.
  std::vector<float> gscale = {0.5f, 2, -1}, gbias = {1, 0, -0.5f};
  want = normalize(x, group, n * g, group_id, nn::to_double(gscale), nn::to_double(gbias), 1e-4);
  gn.opset = 18;
  gn.inputs = {make_tensor<float>({n, c, s}, xf), make_tensor<float>({g}, gscale),
               make_tensor<float>({g}, gbias)};
  r = run_node(gn);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_TRUE(all_near(r.outputs[0].values<float>(), want.y, want.tol));

  NodeSpec bad_groups("GroupNormalization", 18);
  bad_groups.attr("num_groups", 4);  // 4 does not divide 6 channels
  bad_groups.inputs = gn.inputs;
  r = run_node(bad_groups);
  ASSERT_FALSE(r.ok());
  EXPECT_ERROR_MENTIONS(r, "num_groups 4");
}

ONYX_PROVIDER_SUITE(Lrn);

ONYX_OP_TEST(Lrn, OddAndEvenSizes) {
  const int64_t n = 2, c = 5, s = 6;
  std::vector<float> xf = nn::random_floats(size_t(n * c * s), 21, -2, 2);
  for (int64_t size : {3, 4}) {
    std::vector<double> y;
    for (int64_t i = 0; i < n * c * s; ++i) {
      int64_t b = i / (c * s), ch = i / s % c, p = i % s;
      double sq = 0;
      for (int64_t j = std::max<int64_t>(0, ch - (size - 1) / 2);
           j <= std::min(c - 1, ch + size / 2); ++j) {  // ceil((size-1)/2) = size/2
        double v = xf[size_t((b * c + j) * s + p)];
        sq += v * v;
      }
      y.push_back(xf[size_t(i)] / std::pow(2.0 + as_onnx_float(0.01) / double(size) * sq, as_onnx_float(0.6)));
    }
    NodeSpec node("LRN", 13);
    node.attr("size", size).attr("alpha", 0.01).attr("beta", 0.6).attr("bias", 2.0);
    node.inputs = {make_tensor<float>({n, c, 2, 3}, xf)};
    RunResult r = run_node(node, {.threads = 2});
    ASSERT_TRUE(r.ok()) << r.error;
    // Computed in double, rounded once.
    EXPECT_TRUE(all_near(r.outputs[0].values<float>(), y, nn::rel_tol(y, kU32, 1e-12))) << size;
  }
}

ONYX_PROVIDER_SUITE(MeanVarianceNorm);

ONYX_OP_TEST(MeanVarianceNorm, AxesMatchReference) {
  const std::vector<int64_t> dims = {2, 3, 2, 4};
  std::vector<float> xf = nn::random_floats(48, 22, -1, 3);
  std::vector<double> x = nn::to_double(xf);
  for (std::vector<int64_t> axes :
       std::vector<std::vector<int64_t>>{{0, 2, 3}, {2, 3}, {1}, {-1}}) {
    // Statistics group: the element's index with the reduced dims zeroed.
    std::vector<bool> reduced(4, false);
    for (int64_t a : axes) reduced[size_t(a < 0 ? a + 4 : a)] = true;
    std::vector<int64_t> key(x.size());
    for (int64_t i = 0; i < 48; ++i) {
      int64_t rem = i, k = 0, stride = 1;
      for (int64_t d = 3; d >= 0; --d) {
        int64_t pos = rem % dims[size_t(d)];
        rem /= dims[size_t(d)];
        if (!reduced[size_t(d)]) k += pos * stride;
        stride *= dims[size_t(d)];
      }
      key[size_t(i)] = k;
    }
    std::vector<double> y(x.size());
    for (int64_t i = 0; i < 48; ++i) {
      std::vector<int64_t> idx;
      for (int64_t j = 0; j < 48; ++j)
        if (key[size_t(j)] == key[size_t(i)]) idx.push_back(j);
      auto [m, v] = moments(x, idx);
      y[size_t(i)] = (x[size_t(i)] - m) / (std::sqrt(v) + 1e-9);
    }
    NodeSpec node("MeanVarianceNormalization", 13);
    if (axes != std::vector<int64_t>{0, 2, 3}) node.attr("axes", axes);
    node.inputs = {make_tensor<float>(dims, xf)};
    RunResult r = run_node(node);
    ASSERT_TRUE(r.ok()) << r.error;
    EXPECT_TRUE(all_near(r.outputs[0].values<float>(), y, nn::rel_tol(y, kU32, 1e-12)));
  }
}

}  // namespace
}  // namespace onyx::test
