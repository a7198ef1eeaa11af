// The pattern fusions (runtime/optimize/layer_norm_fusion.cpp,
// gelu_fusion.cpp, swish_fusion.cpp, matmul_bias_fusion.cpp, relu_grad_fusion.cpp,
// batchnorm_grad_fusion.cpp, activation_fusion.cpp (Conv, Gemm, BatchNormalization), conv_pool_fusion.cpp): each test writes the op-by-op form an exporter (or
// autodiff) writes, checks the one node the optimized session runs instead,
// and compares its outputs with the same model run unfused and with a
// float64 reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "ir/onnx_import.h"
#include "model_builder.h"
#include "optimize/graph_optimizer.h"
#include "session/session.h"

namespace onyx::runtime {
namespace {

namespace pb = ONNX_NAMESPACE;
using testing::ModelBuilder;

std::vector<float> random_floats(size_t n, std::mt19937& rng, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

void scalar(ModelBuilder& b, const std::string& name, float v) { b.initializer(name, {}, {v}); }

class PatternFusionTest : public ::testing::Test {
 protected:
  void SetUp() override { registry_.add_search_dir(ONYX_PROVIDER_DIR); }

  std::unique_ptr<Session> session(const std::string& bytes, GraphOptimization level) {
    auto model = ir::load_model_from_bytes(bytes.data(), bytes.size(), "");
    EXPECT_TRUE(model.ok()) << model.status().to_string();
    SessionOptions options;
    options.providers.push_back({"cpu", {}});
    options.fallback = FallbackPolicy::kFail;
    options.intra_op_threads = 1;
    options.graph_optimization = level;
    auto s = Session::create(registry_, std::move(model).value(), options);
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  static std::vector<std::string> ops(const Session& s) {
    std::vector<std::string> out;
    for (const ir::Node& n : s.graph().nodes) out.push_back(n.domain.empty() ? n.op_type : n.domain + "::" + n.op_type);
    return out;
  }

  // Runs `bytes` fused (level all) and unfused on x; checks the fused graph
  // is `want_ops`, and both results against `reference` within
  // rel * |ref| + abs. x has y's shape unless `x_shape` is given.
  void check(const std::string& bytes, const std::vector<std::string>& want_ops, const Shape& shape,
             const std::vector<float>& xs, const std::vector<double>& reference, double rel, double abs,
             const Shape& x_shape = {}, int patterns = 1) {
    auto fused = session(bytes, GraphOptimization::kAll);
    auto plain = session(bytes, GraphOptimization::kOff);
    ASSERT_TRUE(fused && plain);
    EXPECT_EQ(ops(*fused), want_ops);
    EXPECT_EQ(fused->partition_report().optimization.patterns_fused, patterns);
    Tensor x = Tensor::allocate(ONYX_DTYPE_FLOAT32, x_shape.empty() ? shape : x_shape);
    std::copy(xs.begin(), xs.end(), x.data_as<float>());
    for (Session* s : {fused.get(), plain.get()}) {
      auto out = s->run({{"x", x}});
      ASSERT_TRUE(out.ok()) << out.status().to_string();
      const Tensor& y = out.value()[0];
      ASSERT_EQ(y.shape(), shape);
      for (size_t i = 0; i < reference.size(); ++i)
        ASSERT_NEAR(y.data_as<float>()[i], reference[i], rel * std::fabs(reference[i]) + abs)
            << (s == fused.get() ? "fused" : "unfused") << " element " << i;
    }
  }

  ProviderRegistry registry_;
};

// ---------------------------------------------------------------------------
// LayerNorm
// ---------------------------------------------------------------------------

struct LayerNormForm {
  int64_t opset = 17;
  bool square_by_mul = false;  // Mul(d, d) instead of Pow(d, 2)
  bool swapped = false;        // gamma * normed, beta + scaled
  bool with_beta = true;
  bool centered_is_output = false;  // an intermediate the caller reads: no fusion
};

constexpr int64_t kRows = 6, kWidth = 24;

std::string layer_norm_model(const LayerNormForm& f, const std::vector<float>& gamma, const std::vector<float>& beta) {
  ModelBuilder mb(f.opset);
  mb.input("x", {2, 3, kWidth}).output("y", {2, 3, kWidth});
  if (f.centered_is_output) mb.output("d", {2, 3, kWidth});
  mb.initializer("gamma", {kWidth}, gamma).initializer("beta", {kWidth}, beta);
  scalar(mb, "two", 2);
  scalar(mb, "eps", 1e-5f);
  auto reduce = [&](const std::string& in, const std::string& out) {
    if (f.opset >= 18) {
      mb.node("ReduceMean", {in, "axes"}, {out}, out);
    } else {
      mb.node("ReduceMean", {in}, {out}, out);
      attr_ints(mb, "axes", {-1});
    }
  };
  if (f.opset >= 18) {
    auto* t = mb.proto().mutable_graph()->add_initializer();
    t->set_name("axes");
    t->set_data_type(pb::TensorProto::INT64);
    t->add_dims(1);
    t->add_int64_data(-1);
  }
  reduce("x", "m");
  mb.node("Sub", {"x", "m"}, {"d"}, "sub");
  if (f.square_by_mul) mb.node("Mul", {"d", "d"}, {"sq"}, "square");
  else mb.node("Pow", {"d", "two"}, {"sq"}, "square");
  reduce("sq", "v");
  mb.node("Add", {"v", "eps"}, {"ve"}, "add_eps");
  mb.node("Sqrt", {"ve"}, {"s"}, "sqrt");
  mb.node("Div", {"d", "s"}, {"n"}, "div");
  const std::string scaled = f.with_beta ? "g" : "y";
  mb.node("Mul", f.swapped ? std::vector<std::string>{"gamma", "n"} : std::vector<std::string>{"n", "gamma"}, {scaled}, "mul");
  if (f.with_beta)
    mb.node("Add", f.swapped ? std::vector<std::string>{"beta", "g"} : std::vector<std::string>{"g", "beta"}, {"y"}, "add");
  return mb.bytes();
}

std::vector<double> layer_norm_reference(const std::vector<float>& x, const std::vector<float>& gamma,
                                         const std::vector<float>& beta, bool with_beta) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < kRows; ++r) {
    const float* row = &x[size_t(r * kWidth)];
    double mean = 0, var = 0;
    for (int64_t k = 0; k < kWidth; ++k) mean += row[k];
    mean /= kWidth;
    for (int64_t k = 0; k < kWidth; ++k) var += (row[k] - mean) * (row[k] - mean);
    var /= kWidth;
    for (int64_t k = 0; k < kWidth; ++k)
      y[size_t(r * kWidth + k)] =
          (row[k] - mean) / std::sqrt(var + 1e-5) * gamma[size_t(k)] + (with_beta ? beta[size_t(k)] : 0.0);
  }
  return y;
}

TEST_F(PatternFusionTest, DecomposedLayerNormBecomesLayerNormalization) {
  std::mt19937 rng(11);
  const std::vector<float> gamma = random_floats(kWidth, rng, 0.5f, 1.5f), beta = random_floats(kWidth, rng, -1, 1);
  const std::vector<float> x = random_floats(size_t(kRows * kWidth), rng, -3, 5);
  std::vector<LayerNormForm> forms(5);
  forms[1].square_by_mul = true;
  forms[2].swapped = true;
  forms[3].with_beta = false;
  forms[4].opset = 18;  // axes as an input
  for (const LayerNormForm& f : forms) {
    SCOPED_TRACE("opset " + std::to_string(f.opset) + (f.square_by_mul ? " mul" : "") + (f.swapped ? " swapped" : "") +
                 (f.with_beta ? "" : " no beta"));
    // float32 statistics over 24 elements of magnitude <= 5, normalized by
    // a std of ~2: a few float32 ulps of the result.
    check(layer_norm_model(f, gamma, beta), {"LayerNormalization"}, {2, 3, kWidth}, x,
          layer_norm_reference(x, gamma, beta, f.with_beta), 2e-6, 2e-6);
  }
}

TEST_F(PatternFusionTest, LayerNormStaysWhereItCannotFuse) {
  std::mt19937 rng(12);
  const std::vector<float> gamma = random_floats(kWidth, rng, 0.5f, 1.5f), beta = random_floats(kWidth, rng, -1, 1);
  LayerNormForm old_opset, read_elsewhere;
  old_opset.opset = 16;  // no LayerNormalization before opset 17
  read_elsewhere.centered_is_output = true;
  for (const LayerNormForm& f : {old_opset, read_elsewhere}) {
    auto s = session(layer_norm_model(f, gamma, beta), GraphOptimization::kAll);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->partition_report().optimization.patterns_fused, 0);
    EXPECT_EQ(s->graph().nodes.size(), 9u);
  }
}

// ---------------------------------------------------------------------------
// GELU
// ---------------------------------------------------------------------------

enum class GeluOrder { kXTimesPThenHalf, kHalfXTimesP, kXTimesHalfP };

std::string gelu_model(int64_t opset, bool tanh_form, GeluOrder order, bool cube_by_pow = true) {
  ModelBuilder mb(opset);
  const int64_t n = 77;  // a full AVX2 vector multiple plus a tail
  mb.input("x", {n}).output("y", {n});
  scalar(mb, "one", 1);
  scalar(mb, "half", 0.5f);
  if (tanh_form) {
    scalar(mb, "three", 3);
    scalar(mb, "c", 0.044715f);
    scalar(mb, "k", 0.7978845608f);
    if (cube_by_pow) {
      mb.node("Pow", {"x", "three"}, {"x3"}, "cube");
    } else {
      mb.node("Mul", {"x", "x"}, {"x2"}, "square");
      mb.node("Mul", {"x2", "x"}, {"x3"}, "cube");
    }
    mb.node("Mul", {"c", "x3"}, {"cx3"}, "scale_cube");
    mb.node("Add", {"x", "cx3"}, {"u"}, "inner");
    mb.node("Mul", {"u", "k"}, {"a"}, "scale");
    mb.node("Tanh", {"a"}, {"e"}, "tanh");
  } else {
    scalar(mb, "sqrt2", 1.4142135f);
    mb.node("Div", {"x", "sqrt2"}, {"a"}, "div");
    mb.node("Erf", {"a"}, {"e"}, "erf");
  }
  mb.node("Add", {"e", "one"}, {"p"}, "plus_one");
  switch (order) {
    case GeluOrder::kXTimesPThenHalf:
      mb.node("Mul", {"x", "p"}, {"xp"}, "mul");
      mb.node("Mul", {"xp", "half"}, {"y"}, "half");
      break;
    case GeluOrder::kHalfXTimesP:
      mb.node("Mul", {"half", "x"}, {"hx"}, "half");
      mb.node("Mul", {"p", "hx"}, {"y"}, "mul");
      break;
    case GeluOrder::kXTimesHalfP:
      mb.node("Mul", {"p", "half"}, {"hp"}, "half");
      mb.node("Mul", {"x", "hp"}, {"y"}, "mul");
      break;
  }
  return mb.bytes();
}

TEST_F(PatternFusionTest, ErfAndTanhGeluBecomeGelu) {
  std::mt19937 rng(13);
  const std::vector<float> x = random_floats(77, rng, -6, 6);
  std::vector<double> erf_ref, tanh_ref;
  for (float v : x) {
    erf_ref.push_back(0.5 * v * std::erfc(-double(v) / std::sqrt(2.0)));
    tanh_ref.push_back(v / (1 + std::exp(-2 * std::sqrt(2 / M_PI) * (v + 0.044715 * double(v) * v * v))));
  }
  for (GeluOrder order : {GeluOrder::kXTimesPThenHalf, GeluOrder::kHalfXTimesP, GeluOrder::kXTimesHalfP})
    for (int64_t opset : {17, 20}) {
      SCOPED_TRACE("order " + std::to_string(int(order)) + ", opset " + std::to_string(opset));
      // Unfused, float32 1 + erf cancels for x < 0: its error is ~1e-7
      // absolute times |x|, not relative; the fused form is closer.
      check(gelu_model(opset, false, order), {opset >= 20 ? "Gelu" : "com.microsoft::Gelu"}, {77}, x, erf_ref, 2e-6,
            1e-6);
      check(gelu_model(opset, true, order, order != GeluOrder::kHalfXTimesP),
            {opset >= 20 ? "Gelu" : "com.microsoft::FastGelu"}, {77}, x, tanh_ref, 2e-6, 1e-6);
    }
}

// ---------------------------------------------------------------------------
// SiLU / Swish
// ---------------------------------------------------------------------------

// x * Sigmoid(z), z = x or alpha * x (scale_shape: alpha's shape), the
// products in either order.
std::string swish_model(int64_t opset, float alpha, bool sigmoid_first, const Shape& scale_shape = {}) {
  ModelBuilder mb(opset);
  mb.input("x", {77}).output("y", scale_shape.size() > 1 ? Shape{1, 77} : Shape{77});
  std::string z = "x";
  if (alpha != 1.0f) {
    mb.initializer("alpha", scale_shape, {alpha});
    mb.node("Mul", sigmoid_first ? std::vector<std::string>{"alpha", "x"} : std::vector<std::string>{"x", "alpha"},
            {"z"}, "scale");
    z = "z";
  }
  mb.node("Sigmoid", {z}, {"s"}, "sigmoid");
  mb.node("Mul", sigmoid_first ? std::vector<std::string>{"s", "x"} : std::vector<std::string>{"x", "s"}, {"y"},
          "mul");
  return mb.bytes();
}

TEST_F(PatternFusionTest, SigmoidTimesInputBecomesSwish) {
  std::mt19937 rng(17);
  std::vector<float> x = random_floats(77, rng, -12, 12);
  x[0] = -95;  // the logistic's underflowing tail
  for (float alpha : {1.0f, 1.702f})
    for (bool sigmoid_first : {false, true})
      for (int64_t opset : {17, 24}) {
        SCOPED_TRACE("alpha " + std::to_string(alpha) + ", opset " + std::to_string(opset));
        std::vector<double> ref;
        for (float v : x) ref.push_back(v / (1 + std::exp(-double(alpha) * v)));
        // Unfused, alpha x rounds before the sigmoid, whose relative change
        // is |z| times that of z: up to 20 x 2^-24 = 1.2e-6 at |x| = 12.
        check(swish_model(opset, alpha, sigmoid_first), {opset >= 24 ? "Swish" : "com.microsoft::QuickGelu"}, {77}, x,
              ref, 2e-6, 1e-37);
      }
}

TEST_F(PatternFusionTest, SwishStaysWhereItCannotFuse) {
  // alpha of rank 2 broadcasts x up to [1, 77]: not x's shape.
  auto s = session(swish_model(17, 1.5f, false, {1, 1}), GraphOptimization::kAll);
  ASSERT_TRUE(s);
  EXPECT_EQ(ops(*s), (std::vector<std::string>{"Mul", "Sigmoid", "Mul"}));
  // The sigmoid is also a graph output.
  ModelBuilder mb(17);
  mb.input("x", {8}).output("y", {8}).output("s", {8});
  mb.node("Sigmoid", {"x"}, {"s"}, "sigmoid");
  mb.node("Mul", {"x", "s"}, {"y"}, "mul");
  s = session(mb.bytes(), GraphOptimization::kAll);
  ASSERT_TRUE(s);
  EXPECT_EQ(ops(*s), (std::vector<std::string>{"Sigmoid", "Mul"}));
}

// ---------------------------------------------------------------------------
// Conv + activation
// ---------------------------------------------------------------------------

// A Conv of x [2, c, h, w] with w [m, c / group, k, k] (stride 1, pads k / 2)
// plus b, in float64.
std::vector<double> conv_reference(const std::vector<float>& x, const std::vector<float>& w,
                                   const std::vector<float>& b, int64_t C, int64_t H, int64_t W, int64_t M, int64_t K,
                                   int64_t group = 1) {
  const int64_t pad = K / 2, cg = C / group, mg = M / group;
  std::vector<double> y;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t i = 0; i < H; ++i)
        for (int64_t j = 0; j < W; ++j) {
          double acc = b[size_t(m)];
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t di = 0; di < K; ++di)
              for (int64_t dj = 0; dj < K; ++dj) {
                const int64_t ii = i + di - pad, jj = j + dj - pad, ci = m / mg * cg + c;
                if (ii < 0 || ii >= H || jj < 0 || jj >= W) continue;
                acc += double(x[size_t(((n * C + ci) * H + ii) * W + jj)]) * w[size_t(((m * cg + c) * K + di) * K + dj)];
              }
          y.push_back(acc);
        }
  return y;
}

// Conv (3x3, pads 1, bias) -> Relu / LeakyRelu / Clip(-0.5, 0.5) / Clip(min
// only), against float64.
TEST_F(PatternFusionTest, ConvThenActivationBecomesFusedConv) {
  std::mt19937 rng(14);
  const int64_t C = 3, M = 4, H = 5, W = 6;
  const std::vector<float> w = random_floats(size_t(M * C * 9), rng, -1, 1), b = random_floats(size_t(M), rng, -1, 1);
  const std::vector<float> x = random_floats(size_t(2 * C * H * W), rng, -1, 1);
  for (int form = 0; form < 4; ++form) {
    SCOPED_TRACE("form " + std::to_string(form));
    ModelBuilder mb(13);
    mb.input("x", {2, C, H, W}).output("y", {2, M, H, W});
    mb.initializer("w", {M, C, 3, 3}, w).initializer("b", {M}, b);
    scalar(mb, "lo", -0.5f);
    scalar(mb, "hi", 0.5f);
    mb.node("Conv", {"x", "w", "b"}, {"c"}, "conv");
    attr_ints(mb, "pads", {1, 1, 1, 1});
    if (form == 0) mb.node("Relu", {"c"}, {"y"}, "act");
    if (form == 1) {
      mb.node("LeakyRelu", {"c"}, {"y"}, "act");
      attr_float(mb, "alpha", 0.2f);
    }
    if (form == 2) mb.node("Clip", {"c", "lo", "hi"}, {"y"}, "act");
    if (form == 3) mb.node("Clip", {"c", "lo"}, {"y"}, "act");
    std::vector<double> reference = conv_reference(x, w, b, C, H, W, M, 3);
    for (double& y : reference)
      y = form == 0   ? std::max(y, 0.0)
          : form == 1 ? (y < 0 ? 0.2 * y : y)
          : form == 2 ? std::min(std::max(y, -0.5), 0.5)
                      : std::max(y, -0.5);
    // float32 sums of 28 terms of magnitude <= 1: a few ulps of 28.
    check(mb.bytes(), {"com.microsoft::FusedConv"}, {2, M, H, W}, x, reference, 0, 1e-5, {2, C, H, W});
  }
}

// Conv -> Sigmoid / Tanh / HardSwish / SiLU / Swish (alpha 1.702, as x * Sigmoid(1.702 x))
// becomes one FusedConv whose activation is a vector map, on the CPU's three
// convolution paths for it (a 3x3 Conv: the direct loops, then a separate pass;
// a pointwise one: the GEMM's epilogue; a depthwise one: per plane), against
// float64.
TEST_F(PatternFusionTest, ConvThenMappedActivationBecomesFusedConv) {
  std::mt19937 rng(15);
  const int64_t C = 8, H = 7, W = 9;
  const std::vector<float> x = random_floats(size_t(2 * C * H * W), rng, -1, 1);
  struct ConvForm {
    const char* name;
    int64_t m, k, group;
  };
  for (const ConvForm& conv : {ConvForm{"3x3", 5, 3, 1}, ConvForm{"pointwise", 12, 1, 1}, ConvForm{"depthwise", C, 3, C}})
    for (const char* act : {"Sigmoid", "Tanh", "HardSwish", "SiLU", "Swish"}) {
      SCOPED_TRACE(std::string(conv.name) + " " + act);
      const int64_t M = conv.m, K = conv.k, pad = K / 2, cg = C / conv.group;
      const std::vector<float> w = random_floats(size_t(M * cg * K * K), rng, -1, 1);
      const std::vector<float> b = random_floats(size_t(M), rng, -1, 1);
      ModelBuilder mb(14);  // HardSwish
      mb.input("x", {2, C, H, W}).output("y", {2, M, H, W});
      mb.initializer("w", {M, cg, K, K}, w).initializer("b", {M}, b);
      mb.node("Conv", {"x", "w", "b"}, {"c"}, "conv");
      attr_ints(mb, "pads", {pad, pad, pad, pad});
      attr_int(mb, "group", conv.group);
      const std::string a = act;
      const double alpha = a == "Swish" ? 1.702 : 1.0;
      if (a == "Sigmoid" || a == "Tanh" || a == "HardSwish") {
        mb.node(act, {"c"}, {"y"}, "act");
      } else {
        std::string z = "c";
        if (a == "Swish") {
          scalar(mb, "alpha", 1.702f);
          mb.node("Mul", {"c", "alpha"}, {"z"}, "scale");
          z = "z";
        }
        mb.node("Sigmoid", {z}, {"s"}, "sigmoid");
        mb.node("Mul", {"c", "s"}, {"y"}, "act");
      }
      std::vector<double> reference = conv_reference(x, w, b, C, H, W, M, K, conv.group);
      for (double& y : reference) {
        const double s = 1 / (1 + std::exp(-alpha * y));
        y = a == "Sigmoid"     ? s
            : a == "Tanh"      ? std::tanh(y)
            : a == "HardSwish" ? y * std::max(0.0, std::min(1.0, y / 6 + 0.5))
                               : y * s;
      }
      // float32 sums of up to 72 terms of magnitude <= 1 (a few ulps of 72),
      // through activations of slope <= 1.1, plus their own 1e-6.
      check(mb.bytes(), {"com.microsoft::FusedConv"}, {2, M, H, W}, x, reference, 1e-6, 3e-5, {2, C, H, W},
            a == "Sigmoid" || a == "Tanh" || a == "HardSwish" ? 1 : 2);
    }
}

// Conv (-> Relu) -> MaxPool 2 x 2, stride 2 becomes one ai.onyx
// FusedConvMaxPool, against float64 (an odd plane: the last row and column
// no window covers); a pool it does not cover, Indices, and a convolution
// output read elsewhere stay unfused.
std::string conv_pool_model(bool relu, const std::vector<float>& w, const std::vector<float>& b, int variant = 0) {
  ModelBuilder mb(13);
  const std::vector<int64_t> pooled = {2, 4, 3, variant == 2 ? 8 : 4};
  mb.input("x", {2, 3, 7, 9}).output("y", pooled);
  if (variant == 3) mb.output("idx", pooled, 7);  // int64
  if (variant == 4) mb.output("c", {2, 4, 7, 9});
  mb.initializer("w", {4, 3, 3, 3}, w).initializer("b", {4}, b);
  mb.node("Conv", {"x", "w", "b"}, {"c"}, "conv");
  attr_ints(mb, "pads", {1, 1, 1, 1});
  if (relu) mb.node("Relu", {"c"}, {"r"}, "act");
  std::vector<std::string> outs = {"y"};
  if (variant == 3) outs.push_back("idx");
  mb.node("MaxPool", {relu ? "r" : "c"}, outs, "pool");
  attr_ints(mb, "kernel_shape", {variant == 1 ? 3 : 2, 2});
  attr_ints(mb, "strides", {2, variant == 2 ? 1 : 2});
  return mb.bytes();
}

TEST_F(PatternFusionTest, ConvThenMaxPoolBecomesFusedConvMaxPool) {
  std::mt19937 rng(16);
  const std::vector<float> w = random_floats(108, rng, -1, 1), b = random_floats(4, rng, -1, 1);
  const std::vector<float> xs = random_floats(2 * 3 * 7 * 9, rng, -1, 1);
  Tensor x = Tensor::allocate(ONYX_DTYPE_FLOAT32, {2, 3, 7, 9});
  std::copy(xs.begin(), xs.end(), x.data_as<float>());
  for (bool relu : {true, false}) {
    SCOPED_TRACE(relu ? "relu" : "no activation");
    std::vector<double> conv;  // [2, 4, 7, 9]
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t m = 0; m < 4; ++m)
        for (int64_t i = 0; i < 7; ++i)
          for (int64_t j = 0; j < 9; ++j) {
            double acc = b[size_t(m)];
            for (int64_t c = 0; c < 3; ++c)
              for (int64_t di = 0; di < 3; ++di)
                for (int64_t dj = 0; dj < 3; ++dj) {
                  const int64_t ii = i + di - 1, jj = j + dj - 1;
                  if (ii < 0 || ii >= 7 || jj < 0 || jj >= 9) continue;
                  acc += double(xs[size_t(((n * 3 + c) * 7 + ii) * 9 + jj)]) * w[size_t(((m * 3 + c) * 3 + di) * 3 + dj)];
                }
            conv.push_back(relu ? std::max(acc, 0.0) : acc);
          }
    auto fused = session(conv_pool_model(relu, w, b), GraphOptimization::kAll);
    auto plain = session(conv_pool_model(relu, w, b), GraphOptimization::kOff);
    ASSERT_TRUE(fused && plain);
    EXPECT_EQ(ops(*fused), std::vector<std::string>{"ai.onyx::FusedConvMaxPool"});
    EXPECT_EQ(fused->partition_report().optimization.fused_patterns.at("FusedConvMaxPool"), 1);
    for (Session* s : {fused.get(), plain.get()}) {
      auto out = s->run({{"x", x}});
      ASSERT_TRUE(out.ok()) << out.status().to_string();
      const Tensor& y = out.value()[0];
      ASSERT_EQ(y.shape(), (Shape{2, 4, 3, 4}));
      for (int64_t p = 0; p < 8; ++p)
        for (int64_t i = 0; i < 3; ++i)
          for (int64_t j = 0; j < 4; ++j) {
            double want = -INFINITY;
            for (int64_t a = 0; a < 2; ++a)
              for (int64_t e = 0; e < 2; ++e) want = std::max(want, conv[size_t((p * 7 + 2 * i + a) * 9 + 2 * j + e)]);
            // float32 sums of 28 terms of magnitude <= 1: a few ulps of 28.
            ASSERT_NEAR(y.data_as<float>()[(p * 3 + i) * 4 + j], want, 1e-5)
                << (s == fused.get() ? "fused" : "unfused") << " plane " << p << " (" << i << ", " << j << ")";
          }
    }
  }
  // 3 x 2 windows; stride 1 along W; the Indices output; the convolution's
  // output a graph output too.
  for (int variant = 1; variant <= 4; ++variant) {
    auto s = session(conv_pool_model(true, w, b, variant), GraphOptimization::kAll);
    ASSERT_TRUE(s);
    const std::vector<std::string> want = variant == 4 ? std::vector<std::string>{"Conv", "Relu", "MaxPool"}
                                                       : std::vector<std::string>{"com.microsoft::FusedConv", "MaxPool"};
    EXPECT_EQ(ops(*s), want) << "variant " << variant;
  }
}

TEST_F(PatternFusionTest, GemmThenReluBecomesFusedGemm) {
  std::mt19937 rng(15);
  const int64_t M = 5, K = 7, N = 6;
  const std::vector<float> w = random_floats(size_t(N * K), rng, -1, 1), b = random_floats(size_t(N), rng, -1, 1);
  const std::vector<float> x = random_floats(size_t(M * K), rng, -1, 1);
  for (bool trans_b : {false, true}) {
    SCOPED_TRACE(trans_b ? "transB" : "B");
    ModelBuilder mb(13);
    mb.input("x", {M, K}).output("y", {M, N});
    mb.initializer("w", trans_b ? Shape{N, K} : Shape{K, N}, w).initializer("b", {N}, b);
    mb.node("Gemm", {"x", "w", "b"}, {"g"}, "fc");
    attr_int(mb, "transB", trans_b ? 1 : 0);
    mb.node("Relu", {"g"}, {"y"}, "act");
    std::vector<double> reference;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = b[size_t(j)];
        for (int64_t p = 0; p < K; ++p)
          acc += double(x[size_t(i * K + p)]) * w[size_t(trans_b ? j * K + p : p * N + j)];
        reference.push_back(std::max(acc, 0.0));
      }
    // float32 sums of 8 terms of magnitude <= 1.
    check(mb.bytes(), {"com.microsoft::FusedGemm"}, {M, N}, x, reference, 0, 1e-5, {M, K});
  }
  // A pre-activation read elsewhere (as a training graph's Relu gradient
  // reads it) keeps the Gemm and the Relu apart.
  ModelBuilder mb(13);
  mb.input("x", {M, K}).output("y", {M, N}).output("g", {M, N});
  mb.initializer("w", {K, N}, w).initializer("b", {N}, b);
  mb.node("Gemm", {"x", "w", "b"}, {"g"}, "fc");
  mb.node("Relu", {"g"}, {"y"}, "act");
  auto fused = session(mb.bytes(), GraphOptimization::kAll);
  ASSERT_TRUE(fused);
  EXPECT_EQ(ops(*fused), (std::vector<std::string>{"Gemm", "Relu"}));
}

// A training graph's frozen BatchNorm (its weights are inputs there, so it
// does not fold into the Conv before it) and the Relu after it: one pass.
TEST_F(PatternFusionTest, InferenceBatchNormThenReluBecomesFusedBatchNormalization) {
  std::mt19937 rng(16);
  const int64_t N = 2, C = 3, H = 4, W = 5, per = N * C * H * W;
  const std::vector<float> x = random_floats(size_t(per), rng, -2, 2);
  const std::vector<float> scale = random_floats(size_t(C), rng, -1.5, 1.5), bias = random_floats(size_t(C), rng, -1, 1),
                           mean = random_floats(size_t(C), rng, -0.5, 0.5), var = random_floats(size_t(C), rng, 0.1f, 2);
  const float epsilon = 1e-3f;
  // form 0: fused; 1: BN's output also a graph output; 2: training_mode = 1;
  // 3: a Sigmoid after the BatchNorm (only Relu fuses).
  auto model = [&](int form) {
    ModelBuilder mb(15);
    mb.input("x", {N, C, H, W}).output("y", {N, C, H, W});
    if (form == 1) mb.output("bn", {N, C, H, W});
    mb.initializer("scale", {C}, scale).initializer("b", {C}, bias).initializer("mean", {C}, mean).initializer("var", {C}, var);
    mb.node("BatchNormalization", {"x", "scale", "b", "mean", "var"}, {"bn"}, "bn1");
    attr_float(mb, "epsilon", epsilon);
    if (form == 2) attr_int(mb, "training_mode", 1);
    mb.node(form == 3 ? "Sigmoid" : "Relu", {"bn"}, {"y"}, "act");
    return mb.bytes();
  };
  std::vector<double> reference;
  for (int64_t i = 0; i < per; ++i) {
    const size_t c = size_t(i / (H * W) % C);
    const double v = (double(x[size_t(i)]) - mean[c]) / std::sqrt(double(var[c]) + double(epsilon)) * scale[c] + bias[c];
    reference.push_back(std::max(v, 0.0));
  }
  // |y| <= about 10: a few float32 roundings of the scale, shift and product.
  check(model(0), {"ai.onyx::FusedBatchNormalization"}, {N, C, H, W}, x, reference, 1e-6, 1e-6);
  const std::vector<std::string> apart[] = {{"BatchNormalization", "Relu"}, {"BatchNormalization", "Relu"},
                                            {"BatchNormalization", "Sigmoid"}};
  for (int form = 1; form <= 3; ++form) {
    auto s = session(model(form), GraphOptimization::kAll);
    ASSERT_TRUE(s);
    EXPECT_EQ(ops(*s), apart[form - 1]) << "form " << form;
  }
}

// ---------------------------------------------------------------------------
// MatMul + bias (+ activation)
// ---------------------------------------------------------------------------

struct MatMulBiasForm {
  const char* activation = "";  // "", "Relu", "Gelu", "GeluTanh"
  bool bias_first = false;      // Add(bias, product)
  bool bias_3d = false;         // the bias as [1, 1, N]
};

constexpr int64_t kMmRows = 2, kMmSeq = 3, kMmK = 7, kMmN = 20;  // N > 16: a full and a narrow panel

std::string matmul_bias_model(const MatMulBiasForm& f, const std::vector<float>& w, const std::vector<float>& b,
                              bool sum_is_output = false) {
  ModelBuilder mb(20);
  mb.input("x", {kMmRows, kMmSeq, kMmK}).output("y", {kMmRows, kMmSeq, kMmN});
  if (sum_is_output) mb.output("s", {kMmRows, kMmSeq, kMmN});
  mb.initializer("w", {kMmK, kMmN}, w).initializer("b", f.bias_3d ? Shape{1, 1, kMmN} : Shape{kMmN}, b);
  mb.node("MatMul", {"x", "w"}, {"m"}, "proj");
  const std::string sum = *f.activation ? "s" : "y";
  mb.node("Add", f.bias_first ? std::vector<std::string>{"b", "m"} : std::vector<std::string>{"m", "b"}, {sum}, "bias");
  if (*f.activation) {
    const bool tanh_form = std::string(f.activation) == "GeluTanh";
    mb.node(tanh_form ? "Gelu" : f.activation, {"s"}, {"y"}, "act");
    if (tanh_form) {
      auto* a = last_node(mb).add_attribute();
      a->set_name("approximate");
      a->set_type(pb::AttributeProto::STRING);
      a->set_s("tanh");
    }
  }
  return mb.bytes();
}

std::vector<double> matmul_bias_reference(const std::string& activation, const std::vector<float>& x,
                                          const std::vector<float>& w, const std::vector<float>& b) {
  std::vector<double> y;
  for (int64_t i = 0; i < kMmRows * kMmSeq; ++i)
    for (int64_t j = 0; j < kMmN; ++j) {
      double v = b[size_t(j)];
      for (int64_t p = 0; p < kMmK; ++p) v += double(x[size_t(i * kMmK + p)]) * w[size_t(p * kMmN + j)];
      if (activation == "Relu") v = std::max(v, 0.0);
      if (activation == "Gelu") v = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
      if (activation == "GeluTanh")
        v = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
      y.push_back(v);
    }
  return y;
}

// Random weights, bias and input for the MatMul + bias models.
struct MatMulBiasData {
  explicit MatMulBiasData(uint32_t seed) : rng(seed) {}
  std::mt19937 rng;
  const std::vector<float> w = random_floats(size_t(kMmK * kMmN), rng, -1, 1);
  const std::vector<float> b = random_floats(size_t(kMmN), rng, -1, 1);
  const std::vector<float> x = random_floats(size_t(kMmRows * kMmSeq * kMmK), rng, -1, 1);
  const Shape shape = {kMmRows, kMmSeq, kMmN}, x_shape = {kMmRows, kMmSeq, kMmK};
};

TEST_F(PatternFusionTest, MatMulBiasAndActivationBecomeMatMulBias) {
  const MatMulBiasData d(21);
  const auto &w = d.w, &b = d.b, &x = d.x;
  const Shape &shape = d.shape, &x_shape = d.x_shape;
  for (const char* act : {"", "Relu", "Gelu", "GeluTanh"})
    for (bool bias_first : {false, true})
      for (bool bias_3d : {false, true}) {
        SCOPED_TRACE(std::string("activation '") + act + "'" + (bias_first ? " bias first" : "") +
                     (bias_3d ? " bias [1, 1, N]" : ""));
        // float32 sums of 8 terms of magnitude <= 1, then GELU to 2e-6 relative.
        check(matmul_bias_model({act, bias_first, bias_3d}, w, b), {"ai.onyx::MatMulBias"}, shape, x,
              matmul_bias_reference(act, x, w, b), 2e-6, 1e-5, x_shape);
      }
}

// MatMul + bias (+ Gelu) + a residual input r, which may broadcast: one
// MatMulBias with r as input 3, against float64.
TEST_F(PatternFusionTest, AResidualAddJoinsMatMulBias) {
  MatMulBiasData d(24);
  const auto &w = d.w, &b = d.b, &xs = d.x;
  const Shape &shape = d.shape, &x_shape = d.x_shape;
  std::mt19937& rng = d.rng;
  for (const char* act : {"", "Gelu"})
    for (const Shape& r_shape : {shape, Shape{1, kMmSeq, kMmN}}) {  // the product's shape, and one that broadcasts
      SCOPED_TRACE(std::string("activation '") + act + "', residual batch " + std::to_string(r_shape[0]));
      ModelBuilder mb(20);
      mb.input("x", x_shape).input("r", r_shape).output("y", shape);
      mb.initializer("w", {kMmK, kMmN}, w).initializer("b", {kMmN}, b);
      mb.node("MatMul", {"x", "w"}, {"m"}, "proj");
      mb.node("Add", {"m", "b"}, {"s"}, "bias");
      if (*act) mb.node(act, {"s"}, {"g"}, "act");
      mb.node("Add", {"r", *act ? "g" : "s"}, {"y"}, "residual");
      auto fused = session(mb.bytes(), GraphOptimization::kAll);
      auto plain = session(mb.bytes(), GraphOptimization::kOff);
      ASSERT_TRUE(fused && plain);
      EXPECT_EQ(ops(*fused), (std::vector<std::string>{"ai.onyx::MatMulBias"}));
      const std::vector<float> rs = random_floats(size_t(r_shape[0] * kMmSeq * kMmN), rng, -1, 1);
      Tensor x = Tensor::allocate(ONYX_DTYPE_FLOAT32, x_shape), r = Tensor::allocate(ONYX_DTYPE_FLOAT32, r_shape);
      std::copy(xs.begin(), xs.end(), x.data_as<float>());
      std::copy(rs.begin(), rs.end(), r.data_as<float>());
      std::vector<double> want = matmul_bias_reference(act, xs, w, b);
      const int64_t r_size = int64_t(rs.size());
      for (size_t i = 0; i < want.size(); ++i) want[i] += rs[i % size_t(r_size)];
      for (Session* s : {fused.get(), plain.get()}) {
        auto out = s->run({{"x", x}, {"r", r}});
        ASSERT_TRUE(out.ok()) << out.status().to_string();
        const Tensor& y = out.value()[0];
        ASSERT_EQ(y.shape(), shape);
        // float32 sums of 8 terms of magnitude <= 1, GELU to 2e-6, one more add.
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_NEAR(y.data_as<float>()[i], want[i], 2e-6 * std::fabs(want[i]) + 2e-5)
              << (s == fused.get() ? "fused" : "unfused") << " element " << i;
      }
    }
}

TEST_F(PatternFusionTest, MatMulBiasLeavesOutWhatOthersRead) {
  MatMulBiasData d(22);
  const auto &w = d.w, &b = d.b;
  std::mt19937& rng = d.rng;
  // The sum is a graph output too (as a training graph's pre-activation is
  // read by the activation's gradient): the activation stays a node.
  auto fused = session(matmul_bias_model({"Relu"}, w, b, true), GraphOptimization::kAll);
  ASSERT_TRUE(fused);
  EXPECT_EQ(ops(*fused), (std::vector<std::string>{"ai.onyx::MatMulBias", "Relu"}));
  // The product is read elsewhere: nothing fuses.
  ModelBuilder mb(20);
  mb.input("x", {kMmRows, kMmSeq, kMmK}).output("y", {kMmRows, kMmSeq, kMmN}).output("m", {kMmRows, kMmSeq, kMmN});
  mb.initializer("w", {kMmK, kMmN}, w).initializer("b", {kMmN}, b);
  mb.node("MatMul", {"x", "w"}, {"m"}, "proj");
  mb.node("Add", {"m", "b"}, {"y"}, "bias");
  fused = session(mb.bytes(), GraphOptimization::kAll);
  ASSERT_TRUE(fused);
  EXPECT_EQ(ops(*fused), (std::vector<std::string>{"MatMul", "Add"}));
  // An [M, N] tensor added to the product is not a bias (one value per column).
  ModelBuilder full(20);
  full.input("x", {kMmSeq, kMmK}).output("y", {kMmSeq, kMmN});
  full.initializer("w", {kMmK, kMmN}, w).initializer("b", {kMmSeq, kMmN}, random_floats(size_t(kMmSeq * kMmN), rng, -1, 1));
  full.node("MatMul", {"x", "w"}, {"m"}, "proj");
  full.node("Add", {"m", "b"}, {"y"}, "bias");
  fused = session(full.bytes(), GraphOptimization::kAll);
  ASSERT_TRUE(fused);
  EXPECT_EQ(ops(*fused), (std::vector<std::string>{"MatMul", "Add"}));
}

// ---------------------------------------------------------------------------
// Relu's gradient
// ---------------------------------------------------------------------------

// Where(Greater(x, 0), dy, 0), as autodiff writes it; dy may broadcast.
std::string relu_grad_model(const Shape& x_shape, const Shape& dy_shape, float zero = 0) {
  ModelBuilder mb(13);
  mb.input("x", x_shape).input("dy", dy_shape).output("dx", x_shape);
  scalar(mb, "zero", zero);
  mb.node("Greater", {"x", "zero"}, {"positive"}, "relu_grad_mask");
  mb.node("Where", {"positive", "dy", "zero"}, {"dx"}, "relu_grad");
  return mb.bytes();
}

TEST_F(PatternFusionTest, GreaterThenWhereBecomesReluGrad) {
  std::mt19937 rng(23);
  const Shape x_shape = {2, 3, 20};
  const std::vector<float> xs = random_floats(2 * 3 * 20, rng, -1, 1);
  for (const Shape& dy_shape : {Shape{2, 3, 20}, Shape{3, 20}}) {  // the same shape, and a dy that broadcasts
    SCOPED_TRACE("dy " + std::to_string(dy_shape.size()) + "-D");
    const int64_t dy_size = dy_shape.size() == 3 ? 2 * 3 * 20 : 3 * 20;
    std::vector<float> dys = random_floats(size_t(dy_size), rng, -1, 1);
    auto fused = session(relu_grad_model(x_shape, dy_shape), GraphOptimization::kAll);
    auto plain = session(relu_grad_model(x_shape, dy_shape), GraphOptimization::kOff);
    ASSERT_TRUE(fused && plain);
    EXPECT_EQ(ops(*fused), (std::vector<std::string>{"ai.onyx::ReluGrad"}));
    Tensor x = Tensor::allocate(ONYX_DTYPE_FLOAT32, x_shape), dy = Tensor::allocate(ONYX_DTYPE_FLOAT32, dy_shape);
    std::copy(xs.begin(), xs.end(), x.data_as<float>());
    std::copy(dys.begin(), dys.end(), dy.data_as<float>());
    x.data_as<float>()[0] = 0.0f;  // not positive: 0
    x.data_as<float>()[1] = std::numeric_limits<float>::quiet_NaN();  // Greater is false: 0
    for (Session* s : {fused.get(), plain.get()}) {
      auto out = s->run({{"x", x}, {"dy", dy}});
      ASSERT_TRUE(out.ok()) << out.status().to_string();
      const Tensor& dx = out.value()[0];
      ASSERT_EQ(dx.shape(), x_shape);
      for (int64_t i = 0; i < 2 * 3 * 20; ++i) {
        const float xi = x.data_as<float>()[i], dyi = dys[size_t(i % dy_size)];
        ASSERT_EQ(dx.data_as<float>()[i], xi > 0 ? dyi : 0.0f) << (s == fused.get() ? "fused" : "unfused") << " " << i;
      }
    }
  }
  // A threshold other than 0 is not Relu's gradient.
  auto other = session(relu_grad_model(x_shape, x_shape, 0.5f), GraphOptimization::kAll);
  ASSERT_TRUE(other);
  EXPECT_EQ(ops(*other), (std::vector<std::string>{"Greater", "Where"}));
}

// Relu -> MaxPool's gradient as autodiff writes it: Where(Greater(r, 0),
// MaxPoolGrad(dp, r), 0), with p = MaxPool(r). `grad_strides` differ from
// the pool's to make a MaxPoolGrad of other windows; `zero` other than 0 is
// not Relu's mask.
struct PoolReluGradForm {
  Shape r_shape, p_shape;
  std::vector<int64_t> kernel, strides, pads, grad_strides;
  float zero = 0;
};

std::string pool_relu_grad_model(const PoolReluGradForm& f) {
  ModelBuilder mb(13);
  mb.opset("ai.onyx", 1);
  mb.input("r", f.r_shape).input("dp", f.p_shape).output("p", f.p_shape).output("dr", f.r_shape);
  scalar(mb, "zero", f.zero);
  auto window = [&](const std::vector<int64_t>& strides) {
    attr_ints(mb, "kernel_shape", f.kernel);
    attr_ints(mb, "strides", strides);
    if (!f.pads.empty()) attr_ints(mb, "pads", f.pads);
  };
  mb.node("MaxPool", {"r"}, {"p"}, "pool");
  window(f.strides);
  mb.node("MaxPoolGrad", {"dp", "r"}, {"g"}, "pool_grad", "ai.onyx");
  window(f.grad_strides.empty() ? f.strides : f.grad_strides);
  mb.node("Greater", {"r", "zero"}, {"positive"}, "relu_grad_mask");
  mb.node("Where", {"positive", "g", "zero"}, {"dr"}, "relu_grad");
  return mb.bytes();
}

TEST_F(PatternFusionTest, ReluMaskMovesToThePooledSideOfMaxPoolGrad) {
  struct Want {
    PoolReluGradForm form;
    std::vector<std::string> ops;
  };
  const std::vector<std::string> reordered = {"MaxPool", "ai.onyx::ReluGrad", "ai.onyx::MaxPoolGrad"};
  const std::vector<Want> cases = {
      {{{2, 3, 6, 8}, {2, 3, 3, 4}, {2, 2}, {2, 2}, {}, {}, 0}, reordered},
      // overlapping, padded windows: an input may take several windows' dp
      {{{2, 3, 7, 7}, {2, 3, 4, 4}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, 0}, reordered},
      // a MaxPoolGrad of other windows than the MaxPool's
      {{{2, 3, 6, 8}, {2, 3, 3, 4}, {2, 2}, {2, 2}, {}, {2, 1}, 0}, {"MaxPool", "ai.onyx::MaxPoolGrad", "ai.onyx::ReluGrad"}},
      // a threshold of 0.5
      {{{2, 3, 6, 8}, {2, 3, 3, 4}, {2, 2}, {2, 2}, {}, {}, 0.5f}, {"MaxPool", "ai.onyx::MaxPoolGrad", "Greater", "Where"}},
  };
  std::mt19937 rng(31);
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const PoolReluGradForm& f = cases[i].form;
    const std::string bytes = pool_relu_grad_model(f);
    auto moved = session(bytes, GraphOptimization::kAll);
    auto plain = session(bytes, GraphOptimization::kOff);
    ASSERT_TRUE(moved && plain);
    EXPECT_EQ(ops(*moved), cases[i].ops);
    EXPECT_EQ(moved->partition_report().optimization.relu_grads_reordered, cases[i].ops == reordered ? 1 : 0);
    if (!f.grad_strides.empty()) continue;  // MaxPoolGrad refuses dp of the pool's shape for other windows
    Tensor r = Tensor::allocate(ONYX_DTYPE_FLOAT32, f.r_shape), dp = Tensor::allocate(ONYX_DTYPE_FLOAT32, f.p_shape);
    const std::vector<float> rs = random_floats(size_t(r.size()), rng, -1, 1), dps = random_floats(size_t(dp.size()), rng, -1, 1);
    std::copy(rs.begin(), rs.end(), r.data_as<float>());
    std::copy(dps.begin(), dps.end(), dp.data_as<float>());
    for (int64_t k = 0; k < r.size(); k += 5) r.data_as<float>()[k] = 0.0f;  // windows whose maximum is 0
    auto a = moved->run({{"r", r}, {"dp", dp}});
    auto b = plain->run({{"r", r}, {"dp", dp}});
    ASSERT_TRUE(a.ok() && b.ok()) << (a.ok() ? b.status() : a.status()).to_string();
    const Tensor &got = a.value()[1], &want = b.value()[1];
    ASSERT_EQ(got.shape(), f.r_shape);
    int64_t nonzero = 0;
    for (int64_t k = 0; k < got.size(); ++k) {
      ASSERT_EQ(got.data_as<float>()[k], want.data_as<float>()[k]) << k;  // the same selects and sums
      nonzero += want.data_as<float>()[k] != 0.0f;
    }
    EXPECT_GT(nonzero, 0);
  }
}

// ---------------------------------------------------------------------------
// BatchNormalization's gradient sums
// ---------------------------------------------------------------------------

struct BatchNormSumsForm {
  Shape x_shape = {-1, 3, 4, 5};         // -1: the batch, symbolic
  Shape mean_shape = {3, 1, 1};
  std::vector<int64_t> axes = {0, 2, 3};
  int64_t opset = 13;                     // 13: axes an input; 11: an attribute
  int64_t keepdims = 0;
  bool plain_sum = true;                  // ReduceSum(dy) too, first, read by a Neg before the other sum
  bool centered_is_output = false;
};

// As autodiff writes BatchNormalization's scale and bias gradients
// (rules_norm.cpp): ReduceSum(Mul(dy, Sub(x, mean))) and ReduceSum(dy).
std::string batchnorm_sums_model(const BatchNormSumsForm& f, const std::vector<float>& mean) {
  ModelBuilder mb(f.opset);
  mb.input("x", f.x_shape).input("dy", f.x_shape).output("s1", {});
  if (f.plain_sum) mb.output("s2n", {});
  if (f.centered_is_output) mb.output("c", f.x_shape);
  mb.initializer("mean", f.mean_shape, mean);
  if (f.opset >= 13) {
    auto* t = mb.proto().mutable_graph()->add_initializer();
    t->set_name("axes");
    t->set_data_type(pb::TensorProto::INT64);
    t->add_dims(int64_t(f.axes.size()));
    for (int64_t a : f.axes) t->add_int64_data(a);
  }
  auto reduce = [&](const std::string& in, const std::string& out) {
    mb.node("ReduceSum", f.opset >= 13 ? std::vector<std::string>{in, "axes"} : std::vector<std::string>{in}, {out}, out);
    if (f.opset < 13) attr_ints(mb, "axes", f.axes);
    attr_int(mb, "keepdims", f.keepdims);
  };
  if (f.plain_sum) {
    reduce("dy", "s2");
    mb.node("Neg", {"s2"}, {"s2n"}, "neg");
  }
  mb.node("Sub", {"x", "mean"}, {"c"}, "center");
  mb.node("Mul", {"dy", "c"}, {"p"}, "product");
  reduce("p", "s1");
  for (auto& o : *mb.proto().mutable_graph()->mutable_output()) o.mutable_type()->mutable_tensor_type()->clear_shape();
  return mb.bytes();
}

TEST_F(PatternFusionTest, BatchNormGradientSumsBecomeOneNode) {
  struct Want {
    BatchNormSumsForm form;
    bool fused;
  };
  const std::vector<Want> cases = {
      {{}, true},                                                   // sums read in between, [C, 1, 1] mean
      {{{-1, 3, 4, 5}, {1, 3, 1, 1}, {0, -1, 2}, 11}, true},        // axes an attribute, negative; [1, C, 1, 1]
      {{{6, 3}, {3}, {0}, 13, 0, false}, true},                     // rank 2, no plain sum
      {{{-1, 3, 4, 5}, {1, 1, 5}}, false},                          // the mean is not per channel
      {{{-1, 3, 4, 5}, {3, 1, 1}, {0, 2}}, false},                  // not every axis but the channels
      {{{-1, 3, 4, 5}, {3, 1, 1}, {0, 2, 3}, 13, 1}, false},        // keepdims
      {{{-1, 3, 4, 5}, {3, 1, 1}, {0, 2, 3}, 13, 0, true, true}, false},  // the centered X is read elsewhere
  };
  std::mt19937 rng(29);
  for (size_t i = 0; i < cases.size(); ++i) {
    const BatchNormSumsForm& f = cases[i].form;
    SCOPED_TRACE("case " + std::to_string(i));
    Shape shape = f.x_shape;
    if (shape[0] < 0) shape[0] = 2;
    const int64_t n = shape[0], c = shape[1];
    int64_t plane = 1;
    for (size_t d = 2; d < shape.size(); ++d) plane *= shape[d];
    const std::vector<float> mean = random_floats(size_t(c * plane), rng, -1, 1);  // enough for any mean shape
    int64_t mean_count = 1;
    for (int64_t d : f.mean_shape) mean_count *= d;
    const std::vector<float> mean_values(mean.begin(), mean.begin() + mean_count);
    const std::string bytes = batchnorm_sums_model(f, mean_values);
    auto fused = session(bytes, GraphOptimization::kAll);
    auto plain = session(bytes, GraphOptimization::kOff);
    ASSERT_TRUE(fused && plain);
    const std::vector<std::string> got = ops(*fused);
    EXPECT_EQ(std::count(got.begin(), got.end(), "ai.onyx::BatchNormGradSums"), cases[i].fused ? 1 : 0);
    if (!cases[i].fused) continue;
    EXPECT_EQ(got.size(), f.plain_sum ? 2u : 1u);  // and the Neg
    Tensor x = Tensor::allocate(ONYX_DTYPE_FLOAT32, shape), dy = Tensor::allocate(ONYX_DTYPE_FLOAT32, shape);
    const std::vector<float> xs = random_floats(size_t(n * c * plane), rng, -2, 3);
    const std::vector<float> dys = random_floats(size_t(n * c * plane), rng, -1, 1);
    std::copy(xs.begin(), xs.end(), x.data_as<float>());
    std::copy(dys.begin(), dys.end(), dy.data_as<float>());
    std::vector<double> want_centered(size_t(c), 0.0), want_sum(size_t(c), 0.0), abs_centered(size_t(c), 0.0),
        abs_sum(size_t(c), 0.0);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t k = 0; k < c; ++k)
        for (int64_t j = 0; j < plane; ++j) {
          const size_t at = size_t((b * c + k) * plane + j);
          const double term = double(dys[at]) * (double(xs[at]) - double(mean_values[size_t(k)]));
          want_centered[size_t(k)] += term, abs_centered[size_t(k)] += std::fabs(term);
          want_sum[size_t(k)] += double(dys[at]), abs_sum[size_t(k)] += std::fabs(double(dys[at]));
        }
    for (Session* s : {fused.get(), plain.get()}) {
      auto out = s->run({{"x", x}, {"dy", dy}});
      ASSERT_TRUE(out.ok()) << out.status().to_string();
      ASSERT_EQ(out.value()[0].shape(), (Shape{c}));
      // n * plane float32 terms (each rounded twice) added in any order:
      // (terms + 2) * 2^-24 times the sum of their magnitudes.
      const double terms = double(n * plane + 2) * std::ldexp(1.0, -24);
      for (int64_t k = 0; k < c; ++k) {
        EXPECT_NEAR(out.value()[0].data_as<float>()[k], want_centered[size_t(k)], terms * abs_centered[size_t(k)]) << k;
        if (f.plain_sum) {
          EXPECT_NEAR(out.value()[1].data_as<float>()[k], -want_sum[size_t(k)], terms * abs_sum[size_t(k)]) << k;
        }
      }
    }
  }
}

// A bias gradient below an inference-mode BatchNormalization, as autodiff
// writes it: ReduceSum(Mul(g, Unsqueeze(k))) beside ReduceSum(g) over the
// same axes (BatchNormalization's bias gradient) -> Mul(ReduceSum(g), k).
struct ChannelSumForm {
  Shape g_shape = {2, 3, 4, 5};
  std::vector<int64_t> unsqueeze_axes = {1, 2};  // empty: k [C] multiplies g [N, C] itself
  std::vector<int64_t> axes = {0, 2, 3};
  bool plain_sum = true;
};

std::string channel_sum_model(const ChannelSumForm& f, int64_t k_size) {
  ModelBuilder mb(13);
  // k an input, as in a training graph (scale x invstd of trainable inputs;
  // a constant Unsqueeze would be folded away first).
  mb.input("g", f.g_shape).input("k", {k_size}).output("scaled_sum", {}).output("product", f.g_shape);
  if (f.plain_sum) mb.output("plain_sum", {});
  auto ints = [&](const std::string& name, const std::vector<int64_t>& v) {
    auto* t = mb.proto().mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(pb::TensorProto::INT64);
    t->add_dims(int64_t(v.size()));
    for (int64_t a : v) t->add_int64_data(a);
  };
  ints("axes", f.axes);
  std::string factor = "k";
  if (!f.unsqueeze_axes.empty()) {
    ints("unsqueeze_axes", f.unsqueeze_axes);
    mb.node("Unsqueeze", {"k", "unsqueeze_axes"}, {"k_c"}, "per_channel");
    factor = "k_c";
  }
  if (f.plain_sum) {
    mb.node("ReduceSum", {"g", "axes"}, {"plain_sum"}, "plain");
    attr_int(mb, "keepdims", 0);
  }
  mb.node("Mul", {"g", factor}, {"product"}, "scale");  // read elsewhere too (a ConvGrad's dY)
  mb.node("ReduceSum", {"product", "axes"}, {"scaled_sum"}, "scaled");
  attr_int(mb, "keepdims", 0);
  for (auto& o : *mb.proto().mutable_graph()->mutable_output()) o.mutable_type()->mutable_tensor_type()->clear_shape();
  return mb.bytes();
}

TEST_F(PatternFusionTest, AScaledChannelSumComesFromThePlainSum) {
  struct Want {
    ChannelSumForm form;
    bool reused;
  };
  const std::vector<Want> cases = {
      {{}, true},                                     // [N, C, H, W], k unsqueezed to [C, 1, 1]
      {{{6, 3}, {}, {0}, true}, true},                // [N, C], k [C] itself
      {{{2, 3, 4, 5}, {1, 2}, {0, 2, 3}, false}, false},  // no plain sum to take
      {{{2, 3, 4, 5}, {1, 2}, {0, 2}, true}, false},      // not every axis but the channels
      {{{2, 3, 4, 5}, {0, 1}, {0, 2, 3}, true}, false},   // k [1, 1, C]: not per channel of [N, C, H, W]
  };
  std::mt19937 rng(37);
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const ChannelSumForm& f = cases[i].form;
    const int64_t c = f.unsqueeze_axes == std::vector<int64_t>{0, 1} ? f.g_shape.back() : f.g_shape[1];
    const std::vector<float> k = random_floats(size_t(c), rng, -2, 2);
    const std::string bytes = channel_sum_model(f, c);
    auto reused = session(bytes, GraphOptimization::kAll);
    auto plain = session(bytes, GraphOptimization::kOff);
    ASSERT_TRUE(reused && plain);
    EXPECT_EQ(reused->partition_report().optimization.channel_sums_reused, cases[i].reused ? 1 : 0);
    const std::vector<std::string> got = ops(*reused);
    EXPECT_EQ(std::count(got.begin(), got.end(), "Mul"), cases[i].reused ? 2 : 1);
    if (!cases[i].reused) continue;
    Tensor g = Tensor::allocate(ONYX_DTYPE_FLOAT32, f.g_shape), kt = Tensor::allocate(ONYX_DTYPE_FLOAT32, {c});
    const std::vector<float> gs = random_floats(size_t(g.size()), rng, -1, 1);
    std::copy(gs.begin(), gs.end(), g.data_as<float>());
    std::copy(k.begin(), k.end(), kt.data_as<float>());
    const int64_t plane = g.size() / (f.g_shape[0] * c);
    std::vector<double> want(size_t(c), 0.0), magnitude(size_t(c), 0.0);
    for (int64_t at = 0; at < g.size(); ++at) {
      const size_t ch = size_t(at / plane % c);
      want[ch] += double(gs[size_t(at)]) * double(k[ch]);
      magnitude[ch] += std::fabs(double(gs[size_t(at)]) * double(k[ch]));
    }
    for (Session* s : {reused.get(), plain.get()}) {
      auto out = s->run({{"g", g}, {"k", kt}});
      ASSERT_TRUE(out.ok()) << out.status().to_string();
      ASSERT_EQ(out.value()[0].shape(), (Shape{c}));
      // terms rounded once or twice, summed in any order, one more rounding:
      // (terms + 2) * 2^-24 of the sum of magnitudes.
      const double bound = double(f.g_shape[0] * plane + 2) * std::ldexp(1.0, -24);
      for (int64_t ch = 0; ch < c; ++ch)
        EXPECT_NEAR(out.value()[0].data_as<float>()[ch], want[size_t(ch)], bound * magnitude[size_t(ch)]) << ch;
    }
  }
}

TEST(PatternFusionPass, NothingIsFusedThatNoProviderClaimsFirst) {
  const std::string bytes = gelu_model(20, false, GeluOrder::kXTimesPThenHalf);
  auto load = [&] {
    auto m = ir::load_model_from_bytes(bytes.data(), bytes.size(), "");
    EXPECT_TRUE(m.ok());
    return std::move(m).value();
  };
  const ProviderRank none = [](const ir::Graph&, const ir::Node&) { return -1; };
  // Gelu only on a provider ranked after the one running Erf and Mul.
  const ProviderRank later = [](const ir::Graph&, const ir::Node& n) { return n.op_type == "Gelu" ? 1 : 0; };
  const ProviderRank all = [](const ir::Graph&, const ir::Node&) { return 0; };
  for (const ProviderRank* providers : {&none, &later, &all}) {
    ir::Model m = load();
    OptimizationReport report;
    ASSERT_TRUE(optimize_graph(*m.graph, GraphOptimization::kAll, &report, *providers).ok());
    const bool fuses = providers == &all;
    EXPECT_EQ(report.patterns_fused, fuses ? 1 : 0);
    EXPECT_EQ(m.graph->nodes.size(), fuses ? 1u : 5u);
    EXPECT_EQ(report.fused_patterns["Gelu"], fuses ? 1 : 0);
  }
}

}  // namespace
}  // namespace onyx::runtime
