// training_model_test.cpp: the training/eval model conventions on an MLP
// (Gemm, MatMul, Add, Relu) with the crossentropy loss, in float32 as the
// trainer runs it and in float64 against finite differences.
#include <gtest/gtest.h>

#include <cmath>

#include "grad_check.h"

namespace onyx::runtime::autodiff::testing {
namespace {

// x [N,4] -> Gemm(W1 [4,5], b1) -> Relu -> MatMul(W2 [5,3]) + b2 -> logits [N,3]
Forward mlp(int64_t batch) {
  Forward f;
  f.input("x", {batch, 4})
      .param("W1", {4, 5})
      .param("b1", {5})
      .param("W2", {5, 3})
      .param("b2", {3})
      .node("Gemm", {"x", "W1", "b1"}, {"h"})
      .node("Relu", {"h"}, {"a"})
      .node("MatMul", {"a", "W2"}, {"m"})
      .node("Add", {"m", "b2"}, {"logits"})
      .output("logits", {batch, 3});
  return f;
}

std::shared_ptr<Tensor> doubles(std::vector<int64_t> dims, std::mt19937& rng) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = dist(rng);
  return std::make_shared<Tensor>(tensor_from<double>(ONYX_DTYPE_FLOAT64, dims, v));
}

TEST(TrainingModel, InputsOutputsAndParameters) {
  Forward f = mlp(-1);
  TrainingSpec spec;
  spec.frozen = {"b2"};
  auto built = build_training_models(f.proto(), spec);
  ASSERT_TRUE(built.ok()) << built.status().to_string();
  const TrainingModels& m = built.value();
  ASSERT_EQ(m.parameters.size(), 4u);
  EXPECT_EQ(m.parameters[0].name, "W1");
  EXPECT_EQ(m.parameters[2].name, "W2");
  EXPECT_EQ(m.parameters[3].name, "b2");
  EXPECT_FALSE(m.parameters[3].requires_grad);
  EXPECT_TRUE(m.parameters[0].requires_grad);
  EXPECT_EQ(m.parameters[0].shape, (std::vector<int64_t>{4, 5}));
  std::vector<std::string> inputs, outputs, eval_outputs;
  for (const auto& i : m.training.graph().input()) inputs.push_back(i.name());
  for (const auto& o : m.training.graph().output()) outputs.push_back(o.name());
  for (const auto& o : m.eval.graph().output()) eval_outputs.push_back(o.name());
  EXPECT_EQ(inputs, (std::vector<std::string>{"x", "labels", "W1", "b1", "W2", "b2"}));
  EXPECT_EQ(outputs, (std::vector<std::string>{"loss", "logits", "W1_grad", "b1_grad", "W2_grad"}));
  EXPECT_EQ(eval_outputs, (std::vector<std::string>{"loss", "logits"}));
  EXPECT_EQ(m.training.graph().initializer_size(), 0);  // weights live outside the models
  EXPECT_EQ(m.label_inputs, (std::vector<std::string>{"labels"}));
}

// As in ORT Training: with requires_grad given, an initializer in neither
// list stays a constant of both models (not a parameter, not an input).
TEST(TrainingModel, InitializersInNeitherListStayConstants) {
  Forward f = mlp(6);
  TrainingSpec spec;
  spec.requires_grad = {"W1", "W2"};
  spec.frozen = {"b2"};
  auto built = build_training_models(f.proto(), spec);
  ASSERT_TRUE(built.ok()) << built.status().to_string();
  const TrainingModels& m = built.value();
  std::vector<std::string> params, inputs, inits;
  for (const auto& p : m.parameters) params.push_back(p.name + (p.requires_grad ? "+" : "-"));
  for (const auto& i : m.training.graph().input()) inputs.push_back(i.name());
  for (const auto& t : m.training.graph().initializer()) inits.push_back(t.name());
  EXPECT_EQ(params, (std::vector<std::string>{"W1+", "W2+", "b2-"}));
  EXPECT_EQ(inputs, (std::vector<std::string>{"x", "labels", "W1", "W2", "b2"}));
  EXPECT_EQ(inits, std::vector<std::string>{"b1"});
  ASSERT_EQ(m.eval.graph().initializer_size(), 1);
  EXPECT_EQ(m.eval.graph().initializer(0).name(), "b1");
  // The constant still takes part: the gradients match finite differences.
  std::mt19937 rng(11);
  auto x = doubles({6, 4}, rng);
  auto t = std::make_shared<Tensor>(tensor_from<int64_t>(ONYX_DTYPE_INT64, {6}, {0, 2, 1, 1, 0, 2}));
  expect_gradients_match(f.proto(), "mlp with b1 a constant", &spec, {{"x", x}, {"labels", t}});
}

TEST(TrainingModel, MlpCrossEntropyMatchesFiniteDifferences) {
  Forward f = mlp(6);
  std::mt19937 rng(7);
  std::vector<int64_t> labels = {0, 2, 1, 1, 0, 2};
  auto x = doubles({6, 4}, rng);
  auto t = std::make_shared<Tensor>(tensor_from<int64_t>(ONYX_DTYPE_INT64, {6}, labels));
  TrainingSpec spec;
  expect_gradients_match(f.proto(), "mlp + crossentropy (mean)", &spec, {{"x", x}, {"labels", t}});
  spec.loss.reduction = Reduction::kSum;
  spec.loss.ignore_index = 1;
  expect_gradients_match(f.proto(), "mlp + crossentropy (sum, ignore_index 1)", &spec, {{"x", x}, {"labels", t}});
}

TEST(TrainingModel, DynamicBatchRunsAtAnySize) {
  // Declared batch "N": the gradient graph uses run-time shapes.
  Forward f = mlp(-1);
  std::mt19937 rng(11);
  for (int64_t batch : {5, 2}) {
    auto x = doubles({batch, 4}, rng);
    std::vector<int64_t> labels(static_cast<size_t>(batch), 2);
    auto t = std::make_shared<Tensor>(tensor_from<int64_t>(ONYX_DTYPE_INT64, {batch}, labels));
    TrainingSpec spec;
    expect_gradients_match(f.proto(), "mlp, batch " + std::to_string(batch), &spec, {{"x", x}, {"labels", t}});
  }
}

TEST(TrainingModel, SharedWeightsAccumulateAndUnusedParametersGetZeros) {
  Forward f;
  f.param("W", {3, 3}).param("a", {2, 3}).param("unused", {4});
  f.node("MatMul", {"a", "W"}, {"h"}).node("Tanh", {"h"}, {"t"}).node("MatMul", {"t", "W"}, {"y"});
  f.output("y", {2, 3});
  expect_gradients_match(f.proto(), "W used twice");
  TrainingSpec spec;
  spec.loss.kind = LossKind::kCustom;
  spec.loss.custom = weighted_sum_loss(f.proto());
  auto built = build_training_models(f.proto(), spec);
  ASSERT_TRUE(built.ok());
  auto s = open_session(built.value().training);
  std::vector<Tensor> params;
  std::vector<std::pair<std::string, const Tensor*>> in;
  for (const auto& p : built.value().initial_values) params.push_back(tensor_of(p));
  for (size_t k = 0; k < params.size(); ++k) in.push_back({built.value().parameters[k].name, &params[k]});
  auto out = s->run(in, {"unused_grad"});
  ASSERT_EQ(out[0].size(), 4);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[0].data_as<double>()[i], 0.0);
}

TEST(TrainingModel, CrossEntropyInt32LabelsAndValue) {
  // One sample, logits = b2 (all weights zero): loss = log(sum exp b) - b[label].
  Forward f;
  f.input("x", {1, 4})
      .param_values("W", {4, 3}, std::vector<double>(12, 0.0))
      .param_values("b", {3}, {0.5, -1.0, 2.0})
      .node("Gemm", {"x", "W", "b"}, {"logits"})
      .output("logits", {1, 3});
  TrainingSpec spec;
  spec.loss.label_dtype = onnx::TensorProto::INT32;
  auto built = build_training_models(f.proto(), spec);
  ASSERT_TRUE(built.ok()) << built.status().to_string();
  auto s = open_session(built.value().training);
  std::vector<double> xv = {1, 2, 3, 4};
  std::vector<int32_t> label = {2};
  auto x = tensor_from<double>(ONYX_DTYPE_FLOAT64, {1, 4}, xv);
  auto t = tensor_from<int32_t>(ONYX_DTYPE_INT32, {1}, label);
  auto w = tensor_of(built.value().initial_values[0]);
  auto b = tensor_of(built.value().initial_values[1]);
  auto out = s->run({{"x", &x}, {"labels", &t}, {"W", &w}, {"b", &b}});
  double expected = std::log(std::exp(0.5) + std::exp(-1.0) + std::exp(2.0)) - 2.0;
  EXPECT_NEAR(out[0].data_as<double>()[0], expected, 1e-12);
  // d loss / d b = softmax(b) - onehot(label)
  double z = std::exp(0.5) + std::exp(-1.0) + std::exp(2.0);
  EXPECT_NEAR(out[3].data_as<double>()[2], std::exp(2.0) / z - 1, 1e-12);
}

}  // namespace
}  // namespace onyx::runtime::autodiff::testing
