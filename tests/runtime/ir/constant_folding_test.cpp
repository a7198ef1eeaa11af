// Constant folding during shape inference: shape arithmetic chains become
// known values so that Reshape/Expand/... get concrete output shapes. The
// nodes stay in the graph; their outputs are only annotated.
#include <gtest/gtest.h>

#include <limits>

#include "ir/shape_inference.h"
#include "ir_test_util.h"

namespace onyx::runtime::ir {
namespace {

using namespace testing;

constexpr int32_t F = ONYX_DTYPE_FLOAT32;

#define ASSERT_OK(m) ASSERT_TRUE((m).ok()) << (m).status().to_string()

std::vector<int64_t> int64s(const Value* v) {
  if (!v || !v->constant || v->constant->dtype() != ONYX_DTYPE_INT64) return {-999};
  const int64_t* p = v->constant->data_as<int64_t>();
  return std::vector<int64_t>(p, p + v->constant->size());
}

const Value& value(const Graph& g, const std::string& name) { return g.values[size_t(g.find_value(name))]; }

// The classic exporter pattern: x.reshape(x.shape[0], -1) spelled out as
// Shape -> Gather -> Unsqueeze -> Concat -> Reshape.
GraphBuilder flatten_by_shape_math(std::vector<int64_t> x_dims) {
  GraphBuilder g;
  g.input("x", F, x_dims)
      .initializer(int64_tensor("zero", {}, {0}))
      .initializer(int64_tensor("axes0", {1}, {0}))
      .initializer(int64_tensor("minus_one", {1}, {-1}))
      .node("Shape", {"x"}, {"shape"})
      .node("Gather", {"shape", "zero"}, {"batch"}, {attr_int("axis", 0)})
      .node("Unsqueeze", {"batch", "axes0"}, {"batch_1d"})
      .node("Concat", {"batch_1d", "minus_one"}, {"target"}, {attr_int("axis", 0)})
      .node("Reshape", {"x", "target"}, {"y"})
      .output("y");
  return g;
}

TEST(ConstantFolding, ShapeGatherConcatReshapeChain) {
  auto m = import(make_model(flatten_by_shape_math({2, 3, 4}).proto()));
  ASSERT_OK(m);
  EXPECT_EQ(int64s(find(*m, "shape")), std::vector<int64_t>({2, 3, 4}));
  EXPECT_EQ(int64s(find(*m, "batch")), std::vector<int64_t>({2}));
  EXPECT_EQ(find(*m, "batch")->dims, Shape({}));
  EXPECT_EQ(int64s(find(*m, "target")), std::vector<int64_t>({2, -1}));
  EXPECT_EQ(find(*m, "y")->dims, Shape({2, 12}));
  // Nodes are kept; folded values keep their producer.
  EXPECT_EQ(m->graph->nodes.size(), 5u);
  EXPECT_GE(find(*m, "target")->producer, 0);
  // The data-dependent output itself is not folded (x is a graph input).
  EXPECT_FALSE(find(*m, "y")->constant.has_value());
}

TEST(ConstantFolding, SymbolicBatchBecomesConcreteWithInputShapes) {
  auto m = import(make_model(flatten_by_shape_math({-1, 3, 4}).proto()));
  ASSERT_OK(m);
  // Unknown batch: nothing to fold, but the rank is known.
  EXPECT_FALSE(find(*m, "shape")->constant.has_value());
  EXPECT_EQ(find(*m, "y")->rank, 2);
  EXPECT_EQ(find(*m, "y")->dims, Shape({-1, -1}));
  // What a session's plan does for concrete inputs: infer a copy.
  Graph g = *m->graph;
  ASSERT_TRUE(infer_shapes(g, {{"x", {5, 3, 4}}}).ok());
  EXPECT_EQ(int64s(&value(g, "target")), std::vector<int64_t>({5, -1}));
  EXPECT_EQ(value(g, "y").dims, Shape({5, 12}));
  // The original is untouched.
  EXPECT_FALSE(find(*m, "target")->constant.has_value());
}

TEST(ConstantFolding, PartiallyKnownShapeStillFoldsTheKnownPart) {
  // Shape(start=1) needs only dims 1.. known.
  GraphBuilder g;
  g.input("x", F, {-1, 3, 4})
      .initializer(int64_tensor("minus_one", {1}, {-1}))
      .node("Shape", {"x"}, {"tail"}, {attr_int("start", 1)})
      .node("Concat", {"minus_one", "tail"}, {"target"}, {attr_int("axis", 0)})
      .node("Reshape", {"x", "target"}, {"y"})
      .output("y");
  auto m = import(make_model(g.proto(), 15));
  ASSERT_OK(m);
  EXPECT_EQ(int64s(find(*m, "tail")), std::vector<int64_t>({3, 4}));
  EXPECT_EQ(int64s(find(*m, "target")), std::vector<int64_t>({-1, 3, 4}));
  EXPECT_EQ(find(*m, "y")->dims, Shape({-1, 3, 4}));
}

TEST(ConstantFolding, ArithmeticSliceAndCast) {
  // [N, C, H, W] -> [N, C, H * W] via Slice, Gather, Mul, Concat.
  GraphBuilder g;
  g.input("x", F, {2, 3, 4, 5})
      .initializer(int64_tensor("s0", {1}, {0}))
      .initializer(int64_tensor("s2", {1}, {2}))
      .initializer(int64_tensor("i2", {}, {2}))
      .initializer(int64_tensor("i3", {}, {3}))
      .initializer(int64_tensor("axes0", {1}, {0}))
      .node("Shape", {"x"}, {"shape"})
      .node("Slice", {"shape", "s0", "s2"}, {"nc"})
      .node("Gather", {"shape", "i2"}, {"h"})
      .node("Gather", {"shape", "i3"}, {"w"})
      .node("Mul", {"h", "w"}, {"hw"})
      .node("Unsqueeze", {"hw", "axes0"}, {"hw_1d"})
      .node("Concat", {"nc", "hw_1d"}, {"target"}, {attr_int("axis", 0)})
      .node("Reshape", {"x", "target"}, {"y"})
      .output("y");
  auto m = import(make_model(g.proto()));
  ASSERT_OK(m);
  EXPECT_EQ(int64s(find(*m, "nc")), std::vector<int64_t>({2, 3}));
  EXPECT_EQ(int64s(find(*m, "hw")), std::vector<int64_t>({20}));
  EXPECT_EQ(find(*m, "y")->dims, Shape({2, 3, 20}));
}

// torch's F.pad writes its pads as (begin, end) pairs per axis, transposed
// and flattened into ONNX's order: the Pad's output shape needs the Transpose folded.
TEST(ConstantFolding, TransposedPadsGiveThePadItsShape) {
  GraphBuilder g;
  g.input("x", F, {1, 5, 6})
      .initializer(int64_tensor("pairs", {3, 2}, {0, 0, 1, 2, 0, 3}))
      .initializer(int64_tensor("flat", {1}, {-1}))
      .initializer(int64_tensor("cube", {2, 3, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}))
      .node("Transpose", {"pairs"}, {"by_side"}, {attr_ints("perm", {1, 0})})
      .node("Reshape", {"by_side", "flat"}, {"pads"})
      .node("Pad", {"x", "pads"}, {"y"})
      .node("Transpose", {"cube"}, {"reversed"})  // no perm: the axes reversed
      .output("y")
      .output("reversed");
  auto m = import(make_model(g.proto()));
  ASSERT_OK(m);
  EXPECT_EQ(int64s(find(*m, "pads")), std::vector<int64_t>({0, 1, 0, 0, 2, 3}));
  EXPECT_EQ(find(*m, "y")->dims, Shape({1, 8, 9}));
  EXPECT_EQ(find(*m, "reversed")->dims, Shape({2, 3, 2}));
  EXPECT_EQ(int64s(find(*m, "reversed")), std::vector<int64_t>({0, 6, 2, 8, 4, 10, 1, 7, 3, 9, 5, 11}));
}

TEST(ConstantFolding, IntegerDivisionTruncatesAndCastTruncates) {
  GraphBuilder g;
  g.initializer(int64_tensor("a", {3}, {-7, 7, 9}))
      .initializer(int64_tensor("b", {1}, {2}))
      .initializer(float_tensor("f", {3}, {2.7f, -2.7f, 0.5f}))
      .node("Div", {"a", "b"}, {"q"})
      .node("Cast", {"f"}, {"c"}, {attr_int("to", ONYX_DTYPE_INT64)})
      .node("Neg", {"q"}, {"nq"})
      .node("Equal", {"q", "nq"}, {"eq"})
      .output("q").output("c").output("eq");
  auto m = import(make_model(g.proto()));
  ASSERT_OK(m);
  EXPECT_EQ(int64s(find(*m, "q")), std::vector<int64_t>({-3, 3, 4}));  // toward zero
  EXPECT_EQ(int64s(find(*m, "c")), std::vector<int64_t>({2, -2, 0}));
  const Value* eq = find(*m, "eq");
  ASSERT_TRUE(eq && eq->constant);
  EXPECT_EQ(eq->constant->dtype(), ONYX_DTYPE_BOOL);
  EXPECT_EQ(std::vector<uint8_t>(eq->constant->data_as<uint8_t>(), eq->constant->data_as<uint8_t>() + 3),
            std::vector<uint8_t>({0, 0, 0}));
}

pb::TensorProto bool_tensor(std::vector<int> values) {
  pb::TensorProto t;
  t.set_data_type(pb::TensorProto::BOOL);
  t.add_dims(int64_t(values.size()));
  for (int v : values) t.add_int32_data(v);
  return t;
}

// bad-inputs.md, class 1: INT64_MIN / -1 and INT64_MIN % -1 trap on x86
// (SIGFPE) when computed with idiv; they fold to the wrapped result as the
// kernels compute it (and as numpy does), and sums wrap, not overflow.
TEST(ConstantFolding, IntegerEdgeCasesFoldWithoutTrapping) {
  const int64_t min = std::numeric_limits<int64_t>::min(), max = std::numeric_limits<int64_t>::max();
  GraphBuilder g;
  g.initializer(int64_tensor("a", {2}, {min, 7}))
      .initializer(int64_tensor("minus_one", {1}, {-1}))
      .initializer(int64_tensor("big", {1}, {max}))
      .node("Div", {"a", "minus_one"}, {"q"})
      .node("Mod", {"a", "minus_one"}, {"r"})
      .node("Mod", {"a", "minus_one"}, {"rf"}, {attr_int("fmod", 1)})
      .node("Add", {"big", "big"}, {"sum"})
      .output("q").output("r").output("rf").output("sum");
  auto m = import(make_model(g.proto()));
  ASSERT_OK(m);
  EXPECT_EQ(int64s(find(*m, "q")), std::vector<int64_t>({min, -7}));
  EXPECT_EQ(int64s(find(*m, "r")), std::vector<int64_t>({0, 0}));
  EXPECT_EQ(int64s(find(*m, "rf")), std::vector<int64_t>({0, 0}));
  EXPECT_EQ(int64s(find(*m, "sum")), std::vector<int64_t>({-2}));
}

TEST(ConstantFolding, RangeConstantOfShapeWhereExpand) {
  GraphBuilder g;
  g.input("x", F, {1, 3})
      .initializer(int64_tensor("start", {}, {1}))
      .initializer(int64_tensor("limit", {}, {8}))
      .initializer(int64_tensor("delta", {}, {3}))
      .initializer(int64_tensor("dims", {2}, {2, 3}))
      .node("Range", {"start", "limit", "delta"}, {"r"})
      .node("ConstantOfShape", {"dims"}, {"ones"}, {attr_tensor("value", int64_tensor("", {1}, {1}))})
      .node("Constant", {}, {"cond"}, {attr_tensor("value", bool_tensor({1, 0}))})
      .node("Where", {"cond", "dims", "start"}, {"w"})
      .node("Expand", {"x", "w"}, {"y"})
      .output("r").output("ones").output("w").output("y");
  auto m = import(make_model(g.proto()));
  ASSERT_OK(m);
  EXPECT_EQ(int64s(find(*m, "r")), std::vector<int64_t>({1, 4, 7}));
  EXPECT_EQ(find(*m, "ones")->dims, Shape({2, 3}));
  EXPECT_EQ(int64s(find(*m, "ones")), std::vector<int64_t>({1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(int64s(find(*m, "w")), std::vector<int64_t>({2, 1}));  // [cond ? dims : start]
  EXPECT_EQ(find(*m, "y")->dims, Shape({2, 3}));  // [1, 3] expanded by [2, 1]
}

TEST(ConstantFolding, OverridableDefaultsAreNotFolded) {
  // 'k' is a graph input with a default: its value may change per run.
  GraphBuilder g;
  g.input("x", F, {2, 6}).input("k", ONYX_DTYPE_INT64, {2})
      .initializer(int64_tensor("k", {2}, {3, 4}))
      .initializer(int64_tensor("one", {1}, {1}))
      .node("Mul", {"k", "one"}, {"k2"})
      .node("Reshape", {"x", "k2"}, {"y"})
      .output("y");
  auto m = import(make_model(g.proto()));
  ASSERT_OK(m);
  EXPECT_FALSE(find(*m, "k2")->constant.has_value());
  EXPECT_EQ(find(*m, "y")->rank, 2);
  EXPECT_EQ(find(*m, "y")->dims, Shape({-1, -1}));
}

TEST(ConstantFolding, LargeResultsAreLeftToKernels) {
  auto m = OpTest("ConstantOfShape").ints("s", {100, 100}).run();
  ASSERT_OK(m);
  EXPECT_EQ(out(m).dims, Shape({100, 100}));
  EXPECT_FALSE(out(m).constant.has_value());
}

}  // namespace
}  // namespace onyx::runtime::ir
