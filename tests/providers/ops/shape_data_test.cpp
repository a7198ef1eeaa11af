// shape_data_test.cpp: Gather*/Scatter*, Cast, Dropout, Shape/Size and the
// tensor-creating ops (Constant*, Range, EyeLike, OneHot), Trilu, NonZero,
// CumSum, TopK.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>

#include "kernel_harness.h"
#include "test_providers.h"

namespace onyx::test {
namespace {

using Dims = std::vector<int64_t>;

std::vector<float> iota_floats(size_t n) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), 0.f);
  return v;
}

RunResult run_ok(const NodeSpec& node, const RunOptions& options = {}) {
  RunResult r = run_node(node, options);
  EXPECT_TRUE(r.ok()) << node.op_type << ": " << r.error;
  return r;
}

ONYX_PROVIDER_SUITE(GatherOps);

ONYX_OP_TEST(GatherOps, GatherWithNegativeIndicesAndRangeError) {
  NodeSpec node("Gather", 13);
  node.inputs = {make_tensor<float>({2, 3}, iota_floats(6)), make_tensor<int32_t>({2, 2}, {2, -3, 1, -1})};
  node.attr("axis", int64_t{1});
  RunResult r = run_ok(node);
  EXPECT_EQ(r.outputs[0].dims, (Dims{2, 2, 2}));
  EXPECT_EQ(r.outputs[0].values<float>(), (std::vector<float>{2, 0, 1, 2, 5, 3, 4, 5}));
  node.inputs[1] = make_tensor<int64_t>({1}, {3});
  r = run_node(node);
  ASSERT_FALSE(r.ok());
  EXPECT_ERROR_MENTIONS(r, "index 3 (element 0 of input 1) is out of range for axis 1 of size 3");
}

// Threads split the output's bytes, not its blocks: one block larger than a
// thread's share (q of a packed q/k/v), and many blocks cut mid-way.
ONYX_OP_TEST(GatherOps, GatherSplitsLargeBlocksAcrossThreads) {
  const std::vector<float> x = iota_floats(3 * 7 * 3000);
  NodeSpec one("Gather", 13);
  one.inputs = {make_tensor<float>({3, 7 * 3000}, x), make_tensor<int64_t>({}, {1})};
  RunResult r = run_node(one, {.threads = 4});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].dims, (Dims{7 * 3000}));
  EXPECT_EQ(r.outputs[0].values<float>(), std::vector<float>(x.begin() + 7 * 3000, x.begin() + 14 * 3000));
  NodeSpec many("Gather", 13);
  many.inputs = {make_tensor<float>({3, 7, 3000}, x), make_tensor<int64_t>({3}, {6, 0, -1})};
  many.attr("axis", int64_t{1});
  r = run_node(many, {.threads = 3});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].dims, (Dims{3, 3, 3000}));
  std::vector<float> want;
  for (int64_t o = 0; o < 3; ++o)
    for (int64_t j : {6, 0, 6})
      for (int64_t e = 0; e < 3000; ++e) want.push_back(x[size_t((o * 7 + j) * 3000 + e)]);
  EXPECT_EQ(r.outputs[0].values<float>(), want);
}

ONYX_OP_TEST(GatherOps, GatherElementsAndGatherND) {
  NodeSpec ge("GatherElements", 13);
  ge.inputs = {make_tensor<int32_t>({2, 2}, {1, 2, 3, 4}), make_tensor<int64_t>({2, 2}, {0, 0, 1, 0})};
  ge.attr("axis", int64_t{1});
  EXPECT_EQ(run_ok(ge).outputs[0].values<int32_t>(), (std::vector<int32_t>{1, 1, 4, 3}));

  NodeSpec nd("GatherND", 13);  // batch_dims 1: one index tuple per batch row
  nd.inputs = {make_tensor<float>({2, 2, 2}, iota_floats(8)), make_tensor<int64_t>({2, 1}, {1, 0})};
  nd.attr("batch_dims", int64_t{1});
  RunResult r = run_ok(nd);
  EXPECT_EQ(r.outputs[0].dims, (Dims{2, 2}));
  EXPECT_EQ(r.outputs[0].values<float>(), (std::vector<float>{2, 3, 4, 5}));
  nd.inputs[1] = make_tensor<int64_t>({2, 3}, {0, 0, 0, 0, 0, 0});  // k = 3 > rank - batch_dims
  EXPECT_FALSE(run_node(nd).ok());
}

ONYX_OP_TEST(GatherOps, ScatterElementsReductionsAndInPlace) {
  NodeSpec node("ScatterElements", 18);
  node.inputs = {make_tensor<float>({1, 5}, {1, 2, 3, 4, 5}), make_tensor<int64_t>({1, 3}, {1, 1, -1}),
                 make_tensor<float>({1, 3}, {10, 20, 30})};
  node.attr("axis", int64_t{1}).attr("reduction", "add");
  RunResult r = run_ok(node, {.in_place = true});
  EXPECT_ON_REFERENCE(EXPECT_TRUE(r.shared_with_input[0]));
  EXPECT_EQ(r.outputs[0].values<float>(), (std::vector<float>{1, 32, 3, 4, 35}));
  node.attributes.clear();
  node.attr("axis", int64_t{1}).attr("reduction", "max");
  EXPECT_EQ(run_ok(node).outputs[0].values<float>(), (std::vector<float>{1, 20, 3, 4, 30}));

  NodeSpec nd("ScatterND", 16);
  nd.inputs = {make_tensor<int64_t>({4, 2}, {1, 1, 2, 2, 3, 3, 4, 4}), make_tensor<int64_t>({2, 1}, {3, 0}),
               make_tensor<int64_t>({2, 2}, {7, 8, 9, 10})};
  nd.attr("reduction", "mul");
  EXPECT_EQ(run_ok(nd).outputs[0].values<int64_t>(), (std::vector<int64_t>{9, 10, 2, 2, 3, 3, 28, 32}));
  nd.inputs[2] = make_tensor<int64_t>({2}, {1, 2});
  EXPECT_ERROR_MENTIONS(run_node(nd), "input 2 has shape [2]");
}

ONYX_PROVIDER_SUITE(CastOps);

ONYX_OP_TEST(CastOps, NumpyConversionRules) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  HostTensor x = make_tensor<float>({6}, {2.7f, -2.7f, nan, 300.f, -1.f, 0.f});
  auto cast = [&](int32_t to) {
    NodeSpec node("Cast", 19);
    node.inputs = {x};
    node.attr("to", int64_t{to});
    return run_ok(node);
  };
  EXPECT_EQ(cast(ONYX_DTYPE_INT32).outputs[0].values<int32_t>(), (std::vector<int32_t>{2, -2, 0, 300, -1, 0}));
  // Through int64, then wrapped: 300 -> 44, -1 -> 255.
  EXPECT_EQ(cast(ONYX_DTYPE_UINT8).outputs[0].values<uint8_t>(), (std::vector<uint8_t>{2, 254, 0, 44, 255, 0}));
  EXPECT_EQ(cast(ONYX_DTYPE_BOOL).outputs[0].values<uint8_t>(), (std::vector<uint8_t>{1, 1, 1, 1, 1, 0}));
  std::vector<double> d = cast(ONYX_DTYPE_FLOAT64).outputs[0].values<double>();
  EXPECT_EQ(d[0], double(2.7f));
  EXPECT_TRUE(std::isnan(d[2]));
  std::vector<uint16_t> h = cast(ONYX_DTYPE_FLOAT16).outputs[0].values<uint16_t>();
  for (size_t i = 0; i < 6; ++i) {
    if (i == 2) continue;  // NaN: checked below
    EXPECT_EQ(h[i], float_to_half(x.values<float>()[i])) << i;
  }
  EXPECT_EQ(h[2] & 0x7C00, 0x7C00);  // NaN stays NaN
  std::vector<uint16_t> b = cast(ONYX_DTYPE_BFLOAT16).outputs[0].values<uint16_t>();
  EXPECT_EQ(b[0], float_to_bfloat16(2.7f));

  NodeSpec from_bool("Cast", 13);
  from_bool.inputs = {make_tensor<bool>({2}, {true, false})};
  from_bool.attr("to", int64_t{ONYX_DTYPE_FLOAT32});
  EXPECT_EQ(run_ok(from_bool).outputs[0].values<float>(), (std::vector<float>{1, 0}));

  NodeSpec like("CastLike", 15);  // target type from input 1; equal sizes run in place
  like.inputs = {make_tensor<int32_t>({2}, {-3, 16777217}), make_tensor<float>({1}, {0})};
  RunResult r = run_ok(like, {.in_place = true});
  EXPECT_ON_REFERENCE(EXPECT_TRUE(r.shared_with_input[0]));
  EXPECT_EQ(r.outputs[0].values<float>(), (std::vector<float>{-3, 16777216}));

  NodeSpec old("Cast", 5);  // Cast-1..5 name the type with a string
  old.inputs = {make_tensor<int64_t>({1}, {7})};
  old.attr("to", "DOUBLE");
  EXPECT_EQ(run_ok(old).outputs[0].values<double>(), (std::vector<double>{7}));

  // float8 E4M3FN: round to nearest even; beyond 448 saturates, or is NaN
  // (0x7F, signed) with saturate=0. 0.3 lies between 0.28125 and 0.3125.
  NodeSpec f8("Cast", 19);
  f8.inputs = {make_tensor<float>({4}, {1.0f, 448.0f, 500.0f, -0.3f})};
  f8.attr("to", int64_t{ONYX_DTYPE_FLOAT8E4M3FN});
  EXPECT_EQ(run_ok(f8).outputs[0].bytes, (std::vector<unsigned char>{0x38, 0x7E, 0x7E, 0xAA}));
  f8.attr("saturate", int64_t{0});
  EXPECT_EQ(run_ok(f8).outputs[0].bytes, (std::vector<unsigned char>{0x38, 0x7E, 0x7F, 0xAA}));
  f8.inputs = {x};
  f8.attributes.clear();
  f8.attr("to", int64_t{ONYX_DTYPE_STRING});
  EXPECT_ERROR_MENTIONS(run_node(f8), "Cast to string not implemented");
}

ONYX_PROVIDER_SUITE(DropoutOps);

ONYX_OP_TEST(DropoutOps, InferenceAliasesAndTrainingDropsWithSeed) {
  std::vector<float> xv(10000, 1.f);
  NodeSpec infer("Dropout", 13);
  infer.inputs = {make_tensor<float>({10000}, xv)};
  infer.output_count = 2;
  RunResult r = run_ok(infer);
  EXPECT_ON_REFERENCE(EXPECT_EQ(r.output_memory[0].kind, ONYX_OUTPUT_ALIASES_INPUT));
  EXPECT_EQ(r.outputs[0].values<float>(), xv);
  EXPECT_EQ(r.outputs[1].values<uint8_t>(), std::vector<uint8_t>(10000, 1));

  NodeSpec train("Dropout", 13);
  train.inputs = {make_tensor<float>({10000}, xv), make_scalar<float>(0.25f), make_scalar<bool>(true)};
  train.attr("seed", int64_t{42});
  train.output_count = 2;
  r = run_ok(train);
  // training_mode is not a constant
  EXPECT_ON_REFERENCE(EXPECT_EQ(r.output_memory[0].kind, ONYX_OUTPUT_FRESH));
  std::vector<float> y = r.outputs[0].values<float>();
  std::vector<uint8_t> mask = r.outputs[1].values<uint8_t>();
  size_t kept = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    kept += mask[i];
    EXPECT_EQ(y[i], mask[i] ? 1 / 0.75f : 0.f) << i;
  }
  // 10000 Bernoulli(0.75) draws: mean 7500, sd ~43; 5 sd either side.
  EXPECT_NEAR(double(kept), 7500, 220);
  EXPECT_EQ(run_ok(train).outputs[1].values<uint8_t>(), mask);  // same seed, same mask
}

ONYX_PROVIDER_SUITE(ShapeInfoOps);

ONYX_OP_TEST(ShapeInfoOps, ShapeAndSize) {
  HostTensor x = make_tensor<float>({2, 3, 4}, iota_floats(24));
  NodeSpec shape("Shape", 15);
  shape.inputs = {x};
  shape.attr("start", int64_t{-2}).attr("end", int64_t{100});
  RunResult r = run_ok(shape);
  EXPECT_EQ(r.outputs[0].values<int64_t>(), (std::vector<int64_t>{3, 4}));
  NodeSpec size("Size", 13);
  size.inputs = {x};
  r = run_ok(size);
  EXPECT_EQ(r.outputs[0].dims, Dims{});
  EXPECT_EQ(r.outputs[0].values<int64_t>(), (std::vector<int64_t>{24}));
}

ONYX_PROVIDER_SUITE(MakeOps);

ONYX_OP_TEST(MakeOps, ConstantsRangeEyeLikeOneHot) {
  NodeSpec floats("Constant", 13);
  floats.output_count = 1;
  floats.attr("value_floats", std::vector<float>{1.5f, 2.5f});
  RunResult r = run_ok(floats);
  EXPECT_EQ(r.outputs[0].dims, (Dims{2}));
  EXPECT_EQ(r.outputs[0].values<float>(), (std::vector<float>{1.5f, 2.5f}));
  NodeSpec tensor("Constant", 13);
  tensor.attr("value", make_tensor<int8_t>({2, 1}, {-1, 3}));
  r = run_ok(tensor);
  EXPECT_EQ(r.outputs[0].dtype, ONYX_DTYPE_INT8);
  EXPECT_EQ(r.outputs[0].values<int8_t>(), (std::vector<int8_t>{-1, 3}));
  NodeSpec strings("Constant", 13);
  strings.attr("value_strings", std::vector<std::string>{"a"});
  EXPECT_TRUE(run_node(strings).declined);

  NodeSpec cos("ConstantOfShape", 20);
  cos.inputs = {make_tensor<int64_t>({2}, {2, 2})};
  cos.attr("value", make_tensor<int64_t>({1}, {-9}));
  EXPECT_EQ(run_ok(cos).outputs[0].values<int64_t>(), (std::vector<int64_t>(4, -9)));

  NodeSpec range("Range", 11);
  range.inputs = {make_scalar<float>(1), make_scalar<float>(2), make_scalar<float>(0.3f)};
  // start + i * delta in float32: within an ulp (1.2e-7) of the exact values.
  std::vector<float> steps = run_ok(range).outputs[0].values<float>();
  ASSERT_EQ(steps.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(steps[i], 1 + 0.3 * double(i), 3e-7) << i;
  range.inputs = {make_scalar<int32_t>(10), make_scalar<int32_t>(4), make_scalar<int32_t>(-3)};
  EXPECT_EQ(run_ok(range).outputs[0].values<int32_t>(), (std::vector<int32_t>{10, 7}));
  range.inputs[2] = make_scalar<int32_t>(0);
  EXPECT_ERROR_MENTIONS(run_node(range), "delta is 0");

  NodeSpec eye("EyeLike", 9);
  eye.inputs = {make_tensor<int32_t>({2, 3}, std::vector<int32_t>(6))};
  eye.attr("k", int64_t{1}).attr("dtype", int64_t{ONYX_DTYPE_FLOAT64});
  EXPECT_EQ(run_ok(eye).outputs[0].values<double>(), (std::vector<double>{0, 1, 0, 0, 0, 1}));

  NodeSpec onehot("OneHot", 11);
  onehot.inputs = {make_tensor<int64_t>({3}, {0, -1, 5}), make_scalar<float>(3), make_tensor<float>({2}, {-1, 1})};
  onehot.attr("axis", int64_t{0});
  r = run_ok(onehot);
  EXPECT_EQ(r.outputs[0].dims, (Dims{3, 3}));
  // Column j is index j one-hot along axis 0; 5 is out of range: all off.
  EXPECT_EQ(r.outputs[0].values<float>(), (std::vector<float>{1, -1, -1, -1, -1, -1, -1, 1, -1}));
}

ONYX_PROVIDER_SUITE(MiscOps);

ONYX_OP_TEST(MiscOps, TriluNonZeroCumSumTopK) {
  NodeSpec upper("Trilu", 14);
  upper.inputs = {make_tensor<float>({3, 3}, iota_floats(9)), make_scalar<int64_t>(1)};
  RunResult r = run_ok(upper, {.in_place = true});
  EXPECT_ON_REFERENCE(EXPECT_TRUE(r.shared_with_input[0]));
  EXPECT_EQ(r.outputs[0].values<float>(), (std::vector<float>{0, 1, 2, 0, 0, 5, 0, 0, 0}));
  NodeSpec lower("Trilu", 14);
  lower.inputs = {make_tensor<float>({3, 3}, iota_floats(9))};
  lower.attr("upper", int64_t{0});
  EXPECT_EQ(run_ok(lower).outputs[0].values<float>(), (std::vector<float>{0, 0, 0, 3, 4, 0, 6, 7, 8}));

  NodeSpec nonzero("NonZero", 13);
  nonzero.inputs = {make_tensor<float>({2, 2}, {0, 3, -1, 0})};
  r = run_ok(nonzero);
  EXPECT_EQ(r.outputs[0].dims, (Dims{2, 2}));
  EXPECT_EQ(r.outputs[0].values<int64_t>(), (std::vector<int64_t>{0, 1, 1, 0}));

  NodeSpec cumsum("CumSum", 14);
  cumsum.inputs = {make_tensor<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6}), make_scalar<int32_t>(-1)};
  EXPECT_EQ(run_ok(cumsum).outputs[0].values<int32_t>(), (std::vector<int32_t>{1, 3, 6, 4, 9, 15}));
  cumsum.attr("exclusive", int64_t{1}).attr("reverse", int64_t{1});
  EXPECT_EQ(run_ok(cumsum).outputs[0].values<int32_t>(), (std::vector<int32_t>{5, 3, 0, 11, 6, 0}));

  NodeSpec topk("TopK", 11);
  topk.inputs = {make_tensor<float>({2, 4}, {3, 1, 3, 2, 0, 5, 5, -1}), make_tensor<int64_t>({1}, {2})};
  topk.output_count = 2;
  r = run_ok(topk);
  EXPECT_EQ(r.outputs[0].values<float>(), (std::vector<float>{3, 3, 5, 5}));
  EXPECT_EQ(r.outputs[1].values<int64_t>(), (std::vector<int64_t>{0, 2, 1, 2}));  // ties: lower index first
  topk.attr("largest", int64_t{0}).attr("axis", int64_t{0});
  r = run_ok(topk);
  EXPECT_EQ(r.outputs[0].values<float>(), (std::vector<float>{0, 1, 3, -1, 3, 5, 5, 2}));
  EXPECT_EQ(r.outputs[1].values<int64_t>(), (std::vector<int64_t>{1, 0, 0, 1, 0, 1, 1, 0}));
  topk.inputs[1] = make_tensor<int64_t>({1}, {3});
  EXPECT_ERROR_MENTIONS(run_node(topk), "k = 3 is outside [0, 2]");
}

}  // namespace
}  // namespace onyx::test
