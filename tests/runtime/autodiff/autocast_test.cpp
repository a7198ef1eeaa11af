// autocast_test.cpp: mixed-precision training models (autocast.h): where
// the casts go, that a value is narrowed once, that parameter gradients stay
// float32 and the eval model untouched, and that bf16/fp16 gradients are
// within rounding distance of float32's.
#include "autodiff/autocast.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <tuple>

#include "grad_check.h"

namespace onyx::runtime::autodiff::testing {
namespace {

constexpr int32_t kFloat = onnx::TensorProto::FLOAT, kBf16 = onnx::TensorProto::BFLOAT16,
                  kFp16 = onnx::TensorProto::FLOAT16;

int64_t cast_to(const onnx::NodeProto& n) {
  for (const auto& a : n.attribute())
    if (a.name() == "to") return a.i();
  return -1;
}

// x [8,16] -> Gemm(W1, b1) -> Relu -> a; m1 = a W2, m2 = a W3 (a shared);
// k = m1 W4 (a chain of autocast ops); s = Tanh(m2) + k; logits = s W5 [8,10].
Forward model() {
  Forward f;
  f.input("x", {8, 16}, kFloat)
      .param32("W1", {16, 32})
      .param32("b1", {32})
      .param32("W2", {32, 32})
      .param32("W3", {32, 32})
      .param32("W4", {32, 32})
      .param32("W5", {32, 10})
      .node("Gemm", {"x", "W1", "b1"}, {"h"})
      .node("Relu", {"h"}, {"a"})
      .node("MatMul", {"a", "W2"}, {"m1"})
      .node("MatMul", {"a", "W3"}, {"m2"})
      .node("MatMul", {"m1", "W4"}, {"k"})
      .node("Tanh", {"m2"}, {"t"})
      .node("Add", {"t", "k"}, {"s"})
      .node("MatMul", {"s", "W5"}, {"logits"})
      .output("logits", {8, 10}, kFloat);
  return f;
}

TEST(Autocast, CastsTheAllowlistOnlyAndEachValueOnce) {
  Forward f = model();
  onnx::GraphProto g = f.proto().graph();
  Emitter e(&g, 17, "onyx/");
  e.infer_types(g);
  auto rewritten = autocast(&g, e, Precision::kBf16, g.node_size());
  ASSERT_TRUE(rewritten.ok()) << rewritten.status().to_string();
  EXPECT_EQ(rewritten.value(), 5);  // Gemm and four MatMuls; Relu, Tanh, Add stay
  std::map<std::string, int> narrowed;  // float32 value -> Casts to bf16 reading it
  int back = 0;
  std::map<std::string, int> position;
  for (int i = 0; i < g.node_size(); ++i)
    for (const auto& o : g.node(i).output()) position[o] = i;
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    for (const auto& in : n.input()) {  // still topological
      if (position.count(in)) {
        EXPECT_LT(position[in], i) << n.name() << " reads " << in;
      }
    }
    if (n.op_type() == "Cast" && cast_to(n) == kBf16) ++narrowed[n.input(0)];
    if (n.op_type() == "Cast" && cast_to(n) == kFloat) ++back;
    const bool kept = n.op_type() == "Relu" || n.op_type() == "Tanh" || n.op_type() == "Add";
    const bool cast = n.op_type() == "MatMul" || n.op_type() == "Gemm";
    for (const auto& in : n.input()) {
      if (kept || cast) {
        EXPECT_EQ(e.dtype(in), cast ? kBf16 : kFloat) << n.op_type() << " reads " << in;
      }
    }
  }
  // x, W1..W5, b1, a (shared by two MatMuls: one Cast), s. m1 is not cast
  // down again: k reads the bf16 result m1 was cast back from.
  const std::map<std::string, int> expected = {{"x", 1},  {"W1", 1}, {"b1", 1}, {"W2", 1}, {"W3", 1},
                                               {"W4", 1}, {"W5", 1}, {"a", 1},  {"s", 1}};
  EXPECT_EQ(narrowed, expected);
  EXPECT_EQ(back, 5);  // h, m1, m2, k, logits keep their names as float32
  EXPECT_EQ(e.dtype("logits"), kFloat);
}

TEST(Autocast, LeavesFloat64AndNodesPastTheCountAlone) {
  Forward f;  // float64 parameters: the model chose its precision
  f.input("x", {2, 3}).param("W", {3, 3}).node("MatMul", {"x", "W"}, {"y"}).output("y", {2, 3});
  onnx::GraphProto g = f.proto().graph();
  Emitter e(&g, 17, "onyx/");
  e.infer_types(g);
  EXPECT_EQ(autocast(&g, e, Precision::kFp16, g.node_size()).value(), 0);
  Forward f32 = model();
  onnx::GraphProto g32 = f32.proto().graph();
  Emitter e32(&g32, 17, "onyx/");
  e32.infer_types(g32);
  EXPECT_EQ(autocast(&g32, e32, Precision::kFp16, 1).value(), 1);  // the Gemm only
  EXPECT_EQ(autocast(&g32, e32, Precision::kFp32, g32.node_size()).value(), 0);
  EXPECT_FALSE(parse_precision("fp8").ok());
  EXPECT_NE(parse_precision("half").status().to_string().find("'half' is not one of fp32, bf16, fp16"),
            std::string::npos);
}

struct GradRun {
  std::map<std::string, Tensor> grads;
  float loss = 0;
};

// x [2,2,6,6] -> Conv(Wc, Bc, pads 1) -> Relu -> ConvTranspose(Wt, pads 1)
// -> scores [2,2,6,6] (two classes per pixel).
Forward conv_model() {
  Forward f;
  std::vector<onnx::AttributeProto> pads = {attr_ints("pads", {1, 1, 1, 1})};
  f.input("x", {2, 2, 6, 6}, kFloat)
      .param32("Wc", {3, 2, 3, 3})
      .param32("Bc", {3})
      .param32("Wt", {3, 2, 3, 3})
      .node("Conv", {"x", "Wc", "Bc"}, {"c"}, pads)
      .node("Relu", {"c"}, {"r"})
      .node("ConvTranspose", {"r", "Wt"}, {"logits"}, pads)
      .output("logits", {2, 2, 6, 6}, kFloat);
  return f;
}

// Gradients of every parameter for precision p (fp16: fed loss_scale, then
// divided by it), from random inputs x of `x_dims` and labels below `classes`.
GradRun train_once(Forward f, Precision p, std::vector<int64_t> x_dims, std::vector<int64_t> label_dims,
               int64_t classes, double loss_scale = 1) {
  TrainingSpec spec;
  spec.precision = p;
  auto built = build_training_models(f.proto(), spec);
  if (!built.ok()) throw RunError(built.status().to_string());
  const TrainingModels& m = built.value();
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1, 1);
  int64_t nx = 1, nl = 1;
  for (int64_t d : x_dims) nx *= d;
  for (int64_t d : label_dims) nl *= d;
  std::vector<float> x(static_cast<size_t>(nx));
  for (float& v : x) v = dist(rng);
  std::vector<int64_t> labels(static_cast<size_t>(nl));
  for (int64_t& l : labels) l = int64_t(rng() % uint64_t(classes));
  std::vector<Tensor> keep = {tensor_from<float>(ONYX_DTYPE_FLOAT32, x_dims, x),
                              tensor_from<int64_t>(ONYX_DTYPE_INT64, label_dims, labels)};
  Tensor scale = Tensor::allocate(ONYX_DTYPE_FLOAT32, {});
  *scale.data_as<float>() = float(loss_scale);
  for (const auto& v : m.initial_values) keep.push_back(tensor_of(v));
  std::vector<std::pair<std::string, const Tensor*>> in = {{"x", &keep[0]}, {"labels", &keep[1]}};
  for (size_t k = 0; k < m.parameters.size(); ++k) in.push_back({m.parameters[k].name, &keep[k + 2]});
  if (p == Precision::kFp16) in.push_back({kLossScaleInput, &scale});
  std::vector<std::string> outputs = {"loss"};
  for (const auto& param : m.parameters) outputs.push_back(param.name + "_grad");
  auto out = open_session(m.training)->run(in, outputs);
  GradRun r;
  r.loss = *out[0].data_as<float>();
  for (size_t k = 0; k < m.parameters.size(); ++k) {
    EXPECT_EQ(out[k + 1].dtype(), ONYX_DTYPE_FLOAT32) << m.parameters[k].name << "_grad";
    float* g = out[k + 1].data_as<float>();
    for (int64_t i = 0; i < out[k + 1].size(); ++i) g[i] = float(g[i] / loss_scale);
    r.grads.emplace(m.parameters[k].name, out[k + 1]);
  }
  return r;
}

// ||a - b|| / ||b|| over one parameter's gradient.
double relative_error(const Tensor& a, const Tensor& b) {
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < b.size(); ++i) {
    double d = double(a.data_as<float>()[i]) - double(b.data_as<float>()[i]);
    diff += d * d;
    norm += double(b.data_as<float>()[i]) * b.data_as<float>()[i];
  }
  return std::sqrt(diff / norm);
}

// Tolerance. Round-to-nearest bfloat16 keeps 8 significant bits: unit
// roundoff u = 2^-8 ~ 3.9e-3 (float16: 11 bits, u = 2^-11 ~ 4.9e-4 when no
// value is subnormal). A 16-bit product rounds both operands and its result
// (~3u relative per element), and a parameter gradient here passes through
// at most four of them (two forward, two backward), so a worst element is
// off by ~12u while the norm-wise error, where independent roundings
// average out, sits near u..3u. Bounds: norm-wise <= 10u (3.9e-2 for bf16,
// 4.9e-3 for fp16). A wrong gradient (a lost Cast gradient, a transposed
// product, a double-counted shared cast) is off by O(1). And at least one
// gradient must differ from float32's by more than 0.1u: the 16-bit path
// really ran (float32 against itself differs by ~1e-7).
void expect_within_rounding(const std::function<Forward()>& make, std::vector<int64_t> x_dims,
                            std::vector<int64_t> label_dims, int64_t classes, const char* what) {
  GradRun fp32 = train_once(make(), Precision::kFp32, x_dims, label_dims, classes);
  for (auto [p, u, scale] : {std::tuple{Precision::kBf16, std::ldexp(1.0, -8), 1.0},
                             std::tuple{Precision::kFp16, std::ldexp(1.0, -11), 1024.0}}) {
    GradRun low = train_once(make(), p, x_dims, label_dims, classes, scale);
    EXPECT_NEAR(low.loss, fp32.loss, 10 * u * std::abs(fp32.loss)) << what << " " << precision_name(p);
    double worst = 0;
    for (const auto& [name, g] : fp32.grads) {
      double err = relative_error(low.grads.at(name), g);
      EXPECT_LE(err, 10 * u) << what << " " << precision_name(p) << " gradient of " << name;
      worst = std::max(worst, err);
    }
    EXPECT_GT(worst, 0.1 * u) << what << " " << precision_name(p) << ": gradients equal float32's, was anything cast?";
    std::printf("%s %s: loss %.6f (fp32 %.6f), worst norm-wise relative gradient error %.2e (bound %.2e)\n", what,
                precision_name(p), low.loss, fp32.loss, worst, 10 * u);
  }
}

TEST(Autocast, Bf16AndFp16GradientsAreWithinRoundingOfFloat32) {
  expect_within_rounding(model, {8, 16}, {8}, 10, "Gemm/MatMul model");
  expect_within_rounding(conv_model, {2, 2, 6, 6}, {2, 6, 6}, 2, "Conv/ConvTranspose model");
}

TEST(Autocast, TrainingModelKeepsFloat32ParametersEvalAndOnlyFp16HasLossScale) {
  Forward f = model();
  for (Precision p : {Precision::kBf16, Precision::kFp16}) {
    TrainingSpec spec;
    spec.precision = p;
    auto built = build_training_models(f.proto(), spec);
    ASSERT_TRUE(built.ok()) << built.status().to_string();
    TrainingSpec plain;
    auto reference = build_training_models(f.proto(), plain);
    ASSERT_TRUE(reference.ok());
    // The eval model (so the exported inference model) is the float32 one.
    EXPECT_EQ(built->eval.SerializeAsString(), reference->eval.SerializeAsString()) << precision_name(p);
    bool has_scale = false;
    for (const auto& i : built->training.graph().input()) {
      has_scale = has_scale || i.name() == kLossScaleInput;
      if (i.name() != "labels") {
        EXPECT_EQ(i.type().tensor_type().elem_type(), kFloat) << i.name();
      }
    }
    EXPECT_EQ(has_scale, p == Precision::kFp16);
    for (const auto& o : built->training.graph().output())
      EXPECT_EQ(o.type().tensor_type().elem_type(), kFloat) << o.name();
    for (const auto& param : built->parameters) EXPECT_EQ(param.dtype, kFloat);
    int narrowed = 0;
    for (const auto& n : built->training.graph().node())
      narrowed += n.op_type() == "Cast" && cast_to(n) == (p == Precision::kBf16 ? kBf16 : kFp16);
    EXPECT_GT(narrowed, 0);
  }
}

}  // namespace
}  // namespace onyx::runtime::autodiff::testing
