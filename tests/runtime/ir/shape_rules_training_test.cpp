// Shape inference of the ai.onyx ops autodiff writes (shape_rules_training.cpp):
// each gradient gets its dtype and shape, so that training graphs plan their
// buffers instead of allocating them on every step.
#include <gtest/gtest.h>

#include "ir_test_util.h"

namespace onyx::runtime::ir {
namespace {

using namespace testing;

constexpr int32_t F = ONYX_DTYPE_FLOAT32;
constexpr int32_t I64 = ONYX_DTYPE_INT64;

// One ai.onyx node reading graph inputs `inputs` (name, dtype, dims; a
// negative dim is symbolic) and int64 constants `shapes`, writing out0...
struct Input {
  std::string name;
  int32_t dtype = 0;
  std::vector<int64_t> dims;
};
StatusOr<Model> run(const std::string& op, const std::vector<Input>& inputs,
                    const std::vector<std::pair<std::string, std::vector<int64_t>>>& shapes, std::vector<std::string> order,
                    int outputs = 1, std::vector<pb::AttributeProto> attrs = {}) {
  GraphBuilder g;
  for (const Input& in : inputs) g.input(in.name, in.dtype, in.dims);
  for (const auto& [name, values] : shapes) g.initializer(int64_tensor(name, {int64_t(values.size())}, values));
  std::vector<std::string> outs;
  for (int k = 0; k < outputs; ++k) outs.push_back("out" + std::to_string(k));
  g.node(op, order, outs, attrs, "n", "ai.onyx");
  for (const std::string& o : outs) g.output(o);
  pb::ModelProto m = make_model(g.proto());
  auto* onyx = m.add_opset_import();
  onyx->set_domain("ai.onyx");
  onyx->set_version(1);
  return import(m);
}

const Value& out(const StatusOr<Model>& m, int k = 0) {
  static const Value none;
  if (!m.ok()) return none;
  const Value* v = find(m.value(), "out" + std::to_string(k));
  return v ? *v : none;
}

TEST(TrainingShapeRules, SumToShapeTakesItsConstantShape) {
  auto m = run("SumToShape", {{"g", F, {-1, 256}}}, {{"s", {256}}}, {"g", "s"});
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(out(m).dtype, F);
  EXPECT_EQ(out(m).dims, Shape({256}));
  // A shape known only at run time: its length is the rank.
  auto dynamic = run("SumToShape", {{"g", F, {4, 5}}, {"s", I64, {2}}}, {}, {"g", "s"});
  ASSERT_TRUE(dynamic.ok()) << dynamic.status().to_string();
  EXPECT_EQ(out(dynamic).rank, 2);
}

TEST(TrainingShapeRules, NllLossIsAScalarOrTheLabelsShape) {
  auto mean = run("NegativeLogLikelihoodLoss", {{"x", F, {-1, 10}}, {"t", I64, {-1}}}, {}, {"x", "t"});
  ASSERT_TRUE(mean.ok()) << mean.status().to_string();
  EXPECT_EQ(out(mean).rank, 0);
  auto none = run("NegativeLogLikelihoodLoss", {{"x", F, {8, 10, 3}}, {"t", I64, {8, 3}}}, {}, {"x", "t"}, 1,
                  {attr_string("reduction", "none")});
  ASSERT_TRUE(none.ok()) << none.status().to_string();
  EXPECT_EQ(out(none).dims, Shape({8, 3}));
}

TEST(TrainingShapeRules, NllLossGradHasTheScoresShape) {
  auto known = run("NegativeLogLikelihoodLossGrad", {{"d", F, {}}, {"t", I64, {8}}}, {{"s", {8, 10}}}, {"d", "t", "s"});
  ASSERT_TRUE(known.ok()) << known.status().to_string();
  EXPECT_EQ(out(known).dims, Shape({8, 10}));
  // The classes only at run time: [N, ?, d...] from the labels.
  auto classes = run("NegativeLogLikelihoodLossGrad", {{"d", F, {}}, {"t", I64, {8, 3}}, {"s", I64, {3}}}, {},
                     {"d", "t", "s"});
  ASSERT_TRUE(classes.ok()) << classes.status().to_string();
  ASSERT_EQ(out(classes).rank, 3);
  EXPECT_EQ(out(classes).dims[0], 8);
  EXPECT_EQ(out(classes).dims[2], 3);
}

TEST(TrainingShapeRules, PoolAndConvGradientsHaveTheirInputsShapes) {
  auto pool = run("MaxPoolGrad", {{"dy", F, {2, 3, 4, 4}}, {"x", F, {2, 3, 8, 8}}}, {}, {"dy", "x"}, 1,
                  {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})});
  ASSERT_TRUE(pool.ok()) << pool.status().to_string();
  EXPECT_EQ(out(pool).dims, Shape({2, 3, 8, 8}));
  auto average = run("AveragePoolGrad", {{"dy", F, {2, 3, 4, 4}}}, {{"s", {2, 3, 8, 8}}}, {"dy", "s"}, 1,
                     {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})});
  ASSERT_TRUE(average.ok()) << average.status().to_string();
  EXPECT_EQ(out(average).dims, Shape({2, 3, 8, 8}));
  auto conv = run("ConvGrad", {{"dy", F, {2, 16, 14, 14}}, {"x", F, {2, 8, 14, 14}}, {"w", F, {16, 8, 3, 3}}}, {},
                  {"dy", "x", "w"}, 2, {attr_ints("pads", {1, 1, 1, 1})});
  ASSERT_TRUE(conv.ok()) << conv.status().to_string();
  EXPECT_EQ(out(conv, 0).dims, Shape({2, 8, 14, 14}));
  EXPECT_EQ(out(conv, 1).dims, Shape({16, 8, 3, 3}));
}

TEST(TrainingShapeRules, GatherAndSliceGradientsHaveTheDataShape) {
  auto gather = run("GatherGrad", {{"dy", F, {4, 2, 5}}, {"i", I64, {2}}}, {{"s", {4, 7, 5}}}, {"dy", "i", "s"}, 1,
                    {attr_int("axis", 1)});
  ASSERT_TRUE(gather.ok()) << gather.status().to_string();
  EXPECT_EQ(out(gather).dims, Shape({4, 7, 5}));
  auto slice = run("SliceGrad", {{"dy", F, {2, 3}}}, {{"s", {4, 3}}, {"b", {1}}, {"e", {3}}}, {"dy", "s", "b", "e"});
  ASSERT_TRUE(slice.ok()) << slice.status().to_string();
  EXPECT_EQ(out(slice).dims, Shape({4, 3}));
}

}  // namespace
}  // namespace onyx::runtime::ir
