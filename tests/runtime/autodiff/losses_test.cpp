// losses_test.cpp: the built-in losses' values and gradients (float64
// central differences), and ONNX function-body differentiation.
#include <gtest/gtest.h>

#include <cmath>

#include "autodiff/emitter.h"
#include "grad_check.h"

namespace onyx::runtime::autodiff::testing {
namespace {

std::shared_ptr<Tensor> random_doubles(std::vector<int64_t> dims, uint32_t seed, double lo = -1, double hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = dist(rng);
  return std::make_shared<Tensor>(tensor_from<double>(ONYX_DTYPE_FLOAT64, dims, v));
}

// y = x W + b over a [4, 3] batch.
Forward linear() {
  Forward f;
  f.input("x", {4, 2}).param("W", {2, 3}).param("b", {3});
  f.node("MatMul", {"x", "W"}, {"m"}).node("Add", {"m", "b"}, {"y"}).output("y", {4, 3});
  return f;
}

TEST(Losses, RegressionLossesMatchFiniteDifferences) {
  auto x = random_doubles({4, 2}, 1);
  auto t = random_doubles({4, 3}, 2);
  auto probs = random_doubles({4, 3}, 3, 0, 1);
  for (LossKind kind : {LossKind::kMse, LossKind::kL1, LossKind::kBceWithLogits})
    for (Reduction r : {Reduction::kMean, Reduction::kSum}) {
      TrainingSpec spec;
      spec.loss.kind = kind;
      spec.loss.reduction = r;
      auto labels = kind == LossKind::kBceWithLogits ? probs : t;
      expect_gradients_match(linear().proto(), "loss kind " + std::to_string(int(kind)) + " reduction " +
                                                   std::to_string(int(r)),
                             &spec, {{"x", x}, {"labels", labels}});
    }
}

TEST(Losses, NllOverSpatialScores) {
  // Scores [N=2, C=3, 2]: log-probabilities from LogSoftmax in the model.
  Forward f;
  f.param("s", {2, 3, 2}).node("LogSoftmax", {"s"}, {"y"}, {attr_int("axis", 1)}).output("y", {2, 3, 2});
  std::vector<int64_t> labels = {0, 2, 1, 1};
  auto t = std::make_shared<Tensor>(tensor_from<int64_t>(ONYX_DTYPE_INT64, {2, 2}, labels));
  TrainingSpec spec;
  spec.loss.kind = LossKind::kNll;
  expect_gradients_match(f.proto(), "nll [N, C, d]", &spec, {{"labels", t}});
}

TEST(Losses, BceWithLogitsIsStableForLargeLogits) {
  Forward f;
  f.param_values("z", {4}, {800, -800, 30, -30}).node("Identity", {"z"}, {"y"}).output("y", {4});
  TrainingSpec spec;
  spec.loss.kind = LossKind::kBceWithLogits;
  spec.loss.reduction = Reduction::kSum;
  auto built = build_training_models(f.proto(), spec);
  ASSERT_TRUE(built.ok()) << built.status().to_string();
  auto s = open_session(built.value().training);
  std::vector<double> targets = {0, 1, 1, 0};
  auto t = tensor_from<double>(ONYX_DTYPE_FLOAT64, {4}, targets);
  auto z = tensor_of(built.value().initial_values[0]);
  auto out = s->run({{"labels", &t}, {"z", &z}});
  // Per element max(z,0) - z t + log(1 + exp(-|z|)): 800 + 800 + ~e^-30 + ~e^-30.
  double expected = 800 + 800 + 2 * std::log1p(std::exp(-30.0));
  EXPECT_NEAR(out[0].data_as<double>()[0], expected, 1e-9);
  const double* g = out[2].data_as<double>();  // sigmoid(z) - t
  EXPECT_NEAR(g[0], 1, 1e-12);
  EXPECT_NEAR(g[1], -1, 1e-12);
  EXPECT_NEAR(g[2], 1 / (1 + std::exp(-30.0)) - 1, 1e-12);
  EXPECT_NEAR(g[3], 1 / (1 + std::exp(30.0)), 1e-12);
}

TEST(Losses, HardSwishIsDifferentiatedThroughItsBody) {
  // HardSwish has no rule; its onnx 1.12 body is x * HardSigmoid(x, 1/6, 1/2).
  Forward f;
  f.param("x", {3, 4}, -2.5, 2.5).node("HardSwish", {"x"}, {"y"}).output("y", {3, 4});
  expect_gradients_match(f.proto(), "HardSwish via its function body");
}

TEST(Losses, ContextDependentFunctionBody) {
  // ONNX's own NegativeLogLikelihoodLoss op inside the model: its schema
  // builds a body for the node's attributes and input types, and the
  // gradient goes through that body.
  Forward f;
  f.param("s", {3, 4}).ints("t", {3}, {1, 3, 0});
  f.node("LogSoftmax", {"s"}, {"lp"}, {attr_int("axis", 1)});
  f.node("NegativeLogLikelihoodLoss", {"lp", "t"}, {"y"}, {attr_string("reduction", "mean")});
  f.output("y", {});
  expect_gradients_match(f.proto(), "onnx NegativeLogLikelihoodLoss via its built body");
}

TEST(Losses, FunctionBodyOpIsDifferentiatedThroughItsBody) {
  // MeanVarianceNormalization has no rule of its own; onnx defines it as a
  // function of ReduceMean, Pow, Sub, Sqrt, Div. Its onnx 1.12 body has
  // float32 constants, so this runs in float32: step 1e-2 gives truncation
  // error ~h^2 |f'''| / 6 ~ 1e-4 and rounding ~eps32 * 24 / 2h ~ 1e-4 on this
  // well-conditioned case; 1e-2 still fails any wrong term.
  Forward f;
  f.param32("x", {2, 3, 2, 2}).node("MeanVarianceNormalization", {"x"}, {"y"});
  f.output("y", {2, 3, 2, 2}, onnx::TensorProto::FLOAT);
  expect_gradients_match(f.proto(), "MeanVarianceNormalization via its function body", nullptr, {}, 1e-2, 1e-2);
}

}  // namespace
}  // namespace onyx::runtime::autodiff::testing
