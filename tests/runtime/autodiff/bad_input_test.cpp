// bad_input_test.cpp: clear errors for parameters that do not exist, ops
// without gradients (all listed in one error), and labels out of range
// (reported by the loss kernel, never read out of bounds).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "autodiff/emitter.h"
#include "grad_check.h"

namespace onyx::runtime::autodiff::testing {
namespace {

using ::testing::HasSubstr;

Forward classifier() {
  Forward f;
  f.input("x", {-1, 4}).param("W", {4, 3}).param("b", {3});
  f.node("Gemm", {"x", "W", "b"}, {"logits"}).output("logits", {-1, 3});
  return f;
}

TEST(AutodiffBadInput, ParameterThatDoesNotExist) {
  TrainingSpec spec;
  spec.requires_grad = {"W", "W_typo"};
  auto built = build_training_models(classifier().proto(), spec);
  ASSERT_FALSE(built.ok());
  EXPECT_EQ(built.status().code(), ONYX_STATUS_NOT_FOUND);
  EXPECT_THAT(built.status().message(), HasSubstr("'W_typo' does not exist"));
  EXPECT_THAT(built.status().message(), HasSubstr("W, b"));  // what does exist
  spec.requires_grad = {};
  spec.frozen = {"bias"};
  built = build_training_models(classifier().proto(), spec);
  ASSERT_FALSE(built.ok());
  EXPECT_THAT(built.status().message(), HasSubstr("frozen parameter 'bias' does not exist"));
}

TEST(AutodiffBadInput, EveryOpWithoutARuleInOneError) {
  Forward f;
  f.param("a", {3}).node("Atan", {"a"}, {"t"}).node("Sin", {"t"}, {"e"}).node("Atan", {"e"}, {"y"}).output("y", {3});
  auto built = build_training_models(f.proto(), TrainingSpec{{}, {}, {LossKind::kCustom, Reduction::kMean, {}, 7, "", weighted_sum_loss(f.proto())}});
  ASSERT_FALSE(built.ok());
  EXPECT_EQ(built.status().code(), ONYX_STATUS_UNIMPLEMENTED);
  EXPECT_THAT(built.status().message(), HasSubstr("2 op type(s)"));
  EXPECT_THAT(built.status().message(), HasSubstr("Atan (nodes 'Atan_0', 'Atan_2')"));
  EXPECT_THAT(built.status().message(), HasSubstr("Sin (node 'Sin_1')"));
}

TEST(AutodiffBadInput, LabelOutOfRangeIsReportedByTheLossKernel) {
  TrainingSpec spec;
  auto built = build_training_models(classifier().proto(), spec);
  ASSERT_TRUE(built.ok()) << built.status().to_string();
  for (auto* model : {&built.value().training, &built.value().eval}) {
    auto s = open_session(*model);
    std::vector<double> xv(8, 0.5);
    auto x = tensor_from<double>(ONYX_DTYPE_FLOAT64, {2, 4}, xv);
    auto w = tensor_of(built.value().initial_values[0]);
    auto b = tensor_of(built.value().initial_values[1]);
    for (int64_t bad : {3, -1, 1000000}) {
      std::vector<int64_t> labels = {1, bad};
      auto t = tensor_from<int64_t>(ONYX_DTYPE_INT64, {2}, labels);
      try {
        s->run({{"x", &x}, {"labels", &t}, {"W", &w}, {"b", &b}});
        ADD_FAILURE() << "label " << bad << " was accepted";
      } catch (const RunError& e) {
        EXPECT_THAT(std::string(e.what()), HasSubstr("label " + std::to_string(bad) + " at flat position 1"));
        EXPECT_THAT(std::string(e.what()), HasSubstr("3 classes"));
      }
    }
  }
}

TEST(AutodiffBadInput, IgnoredLabelMayBeOutOfRange) {
  TrainingSpec spec;
  spec.loss.ignore_index = -100;
  auto built = build_training_models(classifier().proto(), spec);
  ASSERT_TRUE(built.ok()) << built.status().to_string();
  auto s = open_session(built.value().training);
  std::vector<double> xv(8, 0.5);
  auto x = tensor_from<double>(ONYX_DTYPE_FLOAT64, {2, 4}, xv);
  auto w = tensor_of(built.value().initial_values[0]);
  auto b = tensor_of(built.value().initial_values[1]);
  std::vector<int64_t> labels = {-100, -100};
  auto t = tensor_from<int64_t>(ONYX_DTYPE_INT64, {2}, labels);
  auto out = s->run({{"x", &x}, {"labels", &t}, {"W", &w}, {"b", &b}});
  EXPECT_EQ(out[0].data_as<double>()[0], 0.0);  // nothing counted: zero loss and gradients
  EXPECT_EQ(out[3].data_as<double>()[0], 0.0);
}

TEST(AutodiffBadInput, OtherSpecErrors) {
  TrainingSpec spec;
  spec.requires_grad = {"W"};
  spec.frozen = {"W"};
  auto built = build_training_models(classifier().proto(), spec);
  ASSERT_FALSE(built.ok());
  EXPECT_THAT(built.status().message(), HasSubstr("both"));
  TrainingSpec wrong_output;
  wrong_output.loss.output = "probs";
  built = build_training_models(classifier().proto(), wrong_output);
  ASSERT_FALSE(built.ok());
  EXPECT_THAT(built.status().message(), HasSubstr("'probs'"));
  Forward old(11);
  old.param("a", {2}).node("Relu", {"a"}, {"y"}).output("y", {2});
  built = build_training_models(old.proto(), TrainingSpec{});
  ASSERT_FALSE(built.ok());
  EXPECT_THAT(built.status().message(), HasSubstr("opset >= 13"));
  EXPECT_FALSE(parse_loss_kind("hinge").ok());
}

}  // namespace
}  // namespace onyx::runtime::autodiff::testing
