// Shape inference: the driver (declared shapes, input_shapes, dtypes,
// fallbacks) and the element-wise and nn rules. Expected shapes are worked
// out by hand from the ONNX operator spec in the comments.
#include <gtest/gtest.h>

#include "ir/shape_inference.h"
#include "ir_test_util.h"

namespace onyx::runtime::ir {
namespace {

using namespace testing;

constexpr int32_t F = ONYX_DTYPE_FLOAT32;
constexpr int32_t I64 = ONYX_DTYPE_INT64;
constexpr int32_t B = ONYX_DTYPE_BOOL;

#define ASSERT_OK(m) ASSERT_TRUE((m).ok()) << (m).status().to_string()

::testing::AssertionResult error_has(const StatusOr<Model>& m, const std::string& needle) {
  if (m.ok()) return ::testing::AssertionFailure() << "succeeded";
  if (m.status().message().find(needle) == std::string::npos)
    return ::testing::AssertionFailure() << "'" << m.status().to_string() << "' lacks '" << needle << "'";
  return ::testing::AssertionSuccess();
}

TEST(ShapeInference, Broadcasting) {
  auto m = OpTest("Add").in("a", F, {2, 1, 3}).in("b", F, {4, 1}).run();
  ASSERT_OK(m);
  EXPECT_EQ(out(m).dtype, F);
  EXPECT_EQ(out(m).dims, Shape({2, 4, 3}));
  // An unknown dim is pinned by a known size > 1, and stays unknown against 1.
  m = OpTest("Mul").in("a", F, {-1, 3}).in("b", F, {4, 1}).run();
  EXPECT_EQ(out(m).dims, Shape({4, 3}));
  m = OpTest("Sub").in("a", F, {-1}).in("b", F, {1}).run();
  EXPECT_EQ(out(m).dims, Shape({-1}));
  m = OpTest("Div").in("a", F, {}).in("b", F, {0, 5}).run();  // scalars and empty dims
  EXPECT_EQ(out(m).dims, Shape({0, 5}));
  m = OpTest("Add").in("a", F, {2, 3}).in_unknown("b", F).run();
  EXPECT_EQ(out(m).rank, -1);
  // Incompatible sizes: a clear error naming the node.
  m = OpTest("Add").in("a", F, {2, 3}).in("b", F, {4}).run();
  EXPECT_TRUE(error_has(m, "Add 'n': cannot broadcast shapes [2, 3] and [4]"));
  EXPECT_EQ(m.status().code(), ONYX_STATUS_INVALID_ARGUMENT);
  // Variadic ops broadcast all inputs.
  m = OpTest("Sum").in("a", F, {3, 1}).in("b", F, {1, 4}).in("c", F, {4}).run();
  EXPECT_EQ(out(m).dims, Shape({3, 4}));
  m = OpTest("Max").in("a", F, {2, 1}).in("b", F, {1, 5}).run();
  EXPECT_EQ(out(m).dims, Shape({2, 5}));
}

TEST(ShapeInference, ElementwiseTypes) {
  for (const char* op : {"Sqrt", "Exp", "Log", "Neg", "Abs", "Reciprocal", "Relu", "LeakyRelu", "Sigmoid",
                         "Tanh", "Erf", "Softmax", "LogSoftmax", "Identity"}) {
    auto m = OpTest(op).in("x", F, {2, -1, 3}).run();
    ASSERT_OK(m);
    EXPECT_EQ(out(m).dtype, F) << op;
    EXPECT_EQ(out(m).dims, Shape({2, -1, 3})) << op;
  }
  auto m = OpTest("Gelu", 20).in("x", F, {4}).run();
  EXPECT_EQ(out(m).dims, Shape({4}));
  for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"}) {
    m = OpTest(op).in("a", F, {2, 3}).in("b", F, {3}).run();
    EXPECT_EQ(out(m).dtype, B) << op;
    EXPECT_EQ(out(m).dims, Shape({2, 3})) << op;
  }
  m = OpTest("And").in("a", B, {2, 1}).in("b", B, {2}).run();
  EXPECT_EQ(out(m).dtype, B);
  EXPECT_EQ(out(m).dims, Shape({2, 2}));
  m = OpTest("Not").in("a", B, {5}).run();
  EXPECT_EQ(out(m).dtype, B);
  // Pow keeps the base's type.
  m = OpTest("Pow").in("x", F, {3}).in("y", I64, {}).run();
  EXPECT_EQ(out(m).dtype, F);
  m = OpTest("Where").in("c", B, {2, 1}).in("x", ONYX_DTYPE_INT32, {3}).in("y", ONYX_DTYPE_INT32, {1, 3}).run();
  EXPECT_EQ(out(m).dtype, ONYX_DTYPE_INT32);
  EXPECT_EQ(out(m).dims, Shape({2, 3}));
  m = OpTest("Cast").in("x", F, {2}).attr(attr_int("to", ONYX_DTYPE_FLOAT16)).run();
  EXPECT_EQ(out(m).dtype, ONYX_DTYPE_FLOAT16);
  m = OpTest("Cast", 1).in("x", F, {2}).attr(attr_string("to", "INT64")).run();  // Cast-1 spelling
  EXPECT_EQ(out(m).dtype, I64);
  m = OpTest("CastLike").in("x", F, {2, 2}).in("like", ONYX_DTYPE_FLOAT64, {}).run();
  EXPECT_EQ(out(m).dtype, ONYX_DTYPE_FLOAT64);
  EXPECT_EQ(out(m).dims, Shape({2, 2}));
  m = OpTest("Clip").in("x", F, {2, 2}).floats("lo", {0}, std::vector<int64_t>{}).omit().run();
  EXPECT_EQ(out(m).dims, Shape({2, 2}));
}

TEST(ShapeInference, DropoutMask) {
  auto m = OpTest("Dropout").in("x", F, {4, 5}).floats("ratio", {0.1f}, std::vector<int64_t>{}).outputs(2).run();
  ASSERT_OK(m);
  EXPECT_EQ(out(m, 0).dims, Shape({4, 5}));
  EXPECT_EQ(out(m, 1).dtype, B);
  EXPECT_EQ(out(m, 1).dims, Shape({4, 5}));
  m = OpTest("Dropout", 7).in("x", F, {4}).outputs(2).run();  // before opset 10 the mask had X's type
  EXPECT_EQ(out(m, 1).dtype, F);
}

TEST(ShapeInference, MatMul) {
  auto m = OpTest("MatMul").in("a", F, {2, 3}).in("b", F, {3, 4}).run();
  EXPECT_EQ(out(m).dims, Shape({2, 4}));
  m = OpTest("MatMul").in("a", F, {2, 1, 3, 4}).in("b", F, {5, 4, 6}).run();  // batch dims broadcast
  EXPECT_EQ(out(m).dims, Shape({2, 5, 3, 6}));
  m = OpTest("MatMul").in("a", F, {3}).in("b", F, {7, 3, 4}).run();  // 1-D: prepend, then drop
  EXPECT_EQ(out(m).dims, Shape({7, 4}));
  m = OpTest("MatMul").in("a", F, {2, 3}).in("b", F, {3}).run();
  EXPECT_EQ(out(m).dims, Shape({2}));
  m = OpTest("MatMul").in("a", F, {3}).in("b", F, {3}).run();
  EXPECT_EQ(out(m).dims, Shape({}));
  m = OpTest("MatMul").in("a", F, {-1, 3}).in("b", F, {-1, 8}).run();
  EXPECT_EQ(out(m).dims, Shape({-1, 8}));
  m = OpTest("MatMul").in("a", F, {2, 3}).in("b", F, {4, 5}).run();
  EXPECT_TRUE(error_has(m, "MatMul 'n': inner dimensions differ: [2, 3] x [4, 5]"));
  m = OpTest("MatMul").in("a", F, {2, 3, 4}).in("b", F, {3, 4, 5}).run();
  EXPECT_TRUE(error_has(m, "cannot broadcast"));
}

// Sizes that overflow (shared/docs/bad-inputs.md, class 1): a declared input,
// a Reshape, ConstantOfShape or Expand whose element count or bytes wrap is
// refused by name at load, before a kernel or an allocation trusts it.
TEST(ShapeInference, SizesThatOverflowAreRefused) {
  const int64_t huge = (int64_t(1) << 62) + 1;
  auto m = OpTest("MatMul").in("a", F, {huge, 4}).in("b", F, {4, 4}).run();
  EXPECT_TRUE(error_has(m, "graph input: 'a' of shape [4611686018427387905, 4] has more elements or bytes"));
  m = OpTest("Relu").in("x", F, {int64_t(1) << 31, int64_t(1) << 31, 4}).run();  // count 2^64: wraps to 0
  EXPECT_TRUE(error_has(m, "'x' of shape"));
  m = OpTest("Reshape").in("x", F, {4}).ints("s", {huge, 4}).run();
  EXPECT_TRUE(error_has(m, "Reshape 'n'"));
  m = OpTest("ConstantOfShape").ints("s", {int64_t(1) << 62, 4}).run();
  EXPECT_TRUE(error_has(m, "ConstantOfShape 'n'"));
  m = OpTest("Expand").in("x", F, {4}).ints("s", {int64_t(1) << 31, int64_t(1) << 31, 4}).run();
  EXPECT_TRUE(error_has(m, "Expand 'n'"));
  // Big but addressable stays legal: [2^40, 4] float is 16 TiB, and sizes
  // are the memory planner's business, not inference's.
  m = OpTest("Relu").in("x", F, {int64_t(1) << 40, 4}).run();
  EXPECT_TRUE(m.ok()) << m.status().to_string();
}

// Found by tests/fuzz (model_loader): dim arithmetic with values a model
// chose overflowed int64 (undefined behaviour) before any size check.
TEST(ShapeInference, DimArithmeticThatOverflowsIsRefused) {
  const int64_t big = int64_t(1) << 62;
  auto m = OpTest("Pad").in("x", F, {4}).ints("pads", {big, big}).run();
  EXPECT_TRUE(error_has(m, "Pad 'n': axis 0 and its pads [4, 4611686018427387904, 4611686018427387904] overflows"));
  // The same family, found by reading the rules the fuzzer pointed at.
  m = OpTest("Concat").in("a", ONYX_DTYPE_INT8, {big + 1}).in("b", ONYX_DTYPE_INT8, {big + 1})
          .attr(attr_int("axis", 0)).run();
  EXPECT_TRUE(error_has(m, "Concat 'n': the inputs' sizes along axis 0"));
  m = OpTest("Tile").in("x", F, {4}).ints("r", {big}).run();
  EXPECT_TRUE(error_has(m, "Tile 'n': dim 0 and its repeats [4, 4611686018427387904] overflows"));
  m = OpTest("Range").floats("start", {0.f}, std::vector<int64_t>{}).floats("limit", {1e30f}, std::vector<int64_t>{})
          .floats("delta", {1.f}, std::vector<int64_t>{}).run();
  EXPECT_TRUE(error_has(m, "Range 'n': the element count"));
  m = OpTest("Conv").in("x", F, {1, 1, 4, 4}).in("w", F, {1, 1, 2, 2})
          .attr(attr_ints("pads", {big, 0, big, 0})).run();
  EXPECT_TRUE(error_has(m, "Conv 'n': spatial axis 0: input and pads"));
  m = OpTest("ConvTranspose").in("x", F, {1, 1, 4, 4}).in("w", F, {1, 1, 2, 2})
          .attr(attr_ints("strides", {big, 1})).run();
  EXPECT_TRUE(error_has(m, "ConvTranspose 'n': spatial axis 0: stride and input - 1"));
  m = OpTest("DepthToSpace").in("x", F, {1, 4, 2, 2}).attr(attr_int("blocksize", int64_t(1) << 32)).run();
  EXPECT_TRUE(error_has(m, "DepthToSpace 'n': blocksize^2"));
}

TEST(ShapeInference, Gemm) {
  auto m = OpTest("Gemm").in("a", F, {4, 3}).in("b", F, {3, 5}).run();
  EXPECT_EQ(out(m).dims, Shape({4, 5}));
  m = OpTest("Gemm").in("a", F, {3, 4}).in("b", F, {3, 5}).attr(attr_int("transA", 1)).run();
  EXPECT_EQ(out(m).dims, Shape({4, 5}));
  m = OpTest("Gemm").in("a", F, {4, 3}).in("b", F, {5, 3}).attr(attr_int("transB", 1)).run();
  EXPECT_EQ(out(m).dims, Shape({4, 5}));
  m = OpTest("Gemm").in("a", F, {3, 4}).in("b", F, {5, 3}).in("c", F, {5})
          .attr(attr_int("transA", 1)).attr(attr_int("transB", 1)).run();
  EXPECT_EQ(out(m).dims, Shape({4, 5}));
  m = OpTest("Gemm").in("a", F, {-1, 3}).in("b", F, {3, 5}).in("c", F, {4, 1}).run();  // C pins M
  EXPECT_EQ(out(m).dims, Shape({4, 5}));
  m = OpTest("Gemm").in("a", F, {4, 3}).in("b", F, {3, 5}).in("c", F, {3}).run();
  EXPECT_TRUE(error_has(m, "Gemm 'n'"));
  m = OpTest("Gemm").in("a", F, {4, 3}).in("b", F, {3, 5}).attr(attr_int("transA", 1)).run();
  EXPECT_TRUE(error_has(m, "inner dimensions differ: A [4, 3] (transposed) x B [3, 5]"));
  m = OpTest("Gemm").in("a", F, {4, 3, 1}).in("b", F, {3, 5}).run();
  EXPECT_TRUE(error_has(m, "must be matrices"));
}

TEST(ShapeInference, Conv) {
  // out = floor((in + pad_begin + pad_end - dilation * (k - 1) - 1) / stride) + 1
  auto m = OpTest("Conv").in("x", F, {1, 3, 32, 32}).in("w", F, {8, 3, 3, 3})
               .attr(attr_ints("pads", {1, 1, 1, 1})).attr(attr_ints("strides", {2, 2})).run();
  EXPECT_EQ(out(m).dims, Shape({1, 8, 16, 16}));  // (32 + 2 - 3) / 2 + 1
  m = OpTest("Conv").in("x", F, {1, 3, 32, 32}).in("w", F, {8, 3, 3, 3}).attr(attr_ints("dilations", {2, 3})).run();
  EXPECT_EQ(out(m).dims, Shape({1, 8, 28, 26}));  // effective kernels 5 and 7
  m = OpTest("Conv").in("x", F, {1, 3, 32, 32}).in("w", F, {8, 3, 3, 3}).attr(attr_ints("pads", {0, 1, 2, 3})).run();
  EXPECT_EQ(out(m).dims, Shape({1, 8, 32, 34}));  // H: 0 + 2 pads, W: 1 + 3
  m = OpTest("Conv").in("x", F, {1, 3, 33, 33}).in("w", F, {8, 3, 3, 3})
          .attr(attr_string("auto_pad", "SAME_UPPER")).attr(attr_ints("strides", {2, 2})).run();
  EXPECT_EQ(out(m).dims, Shape({1, 8, 17, 17}));  // ceil(33 / 2)
  m = OpTest("Conv").in("x", F, {1, 3, 33, 33}).in("w", F, {8, 3, 3, 3})
          .attr(attr_string("auto_pad", "VALID")).attr(attr_ints("strides", {2, 2})).run();
  EXPECT_EQ(out(m).dims, Shape({1, 8, 16, 16}));  // (33 - 3) / 2 + 1
  m = OpTest("Conv").in("x", F, {1, 4, 10}).in("w", F, {6, 2, 3}).attr(attr_int("group", 2)).run();  // 1-D
  EXPECT_EQ(out(m).dims, Shape({1, 6, 8}));
  m = OpTest("Conv").in("x", F, {2, 1, 8, 8, 8}).in("w", F, {4, 1, 2, 2, 2}).attr(attr_ints("strides", {2, 2, 2})).run();
  EXPECT_EQ(out(m).dims, Shape({2, 4, 4, 4, 4}));  // 3-D
  m = OpTest("Conv").in("x", F, {-1, 3, -1, 32}).in("w", F, {8, 3, 3, 3}).attr(attr_ints("strides", {2, 2})).run();
  EXPECT_EQ(out(m).dims, Shape({-1, 8, -1, 15}));
  m = OpTest("Conv").in("x", F, {1, 4, 10}).in("w", F, {6, 3, 3}).attr(attr_int("group", 2)).run();
  EXPECT_TRUE(error_has(m, "Conv 'n': input has 4 channels but weight [6, 3, 3] with group 2 expects 6"));
  m = OpTest("Conv").in("x", F, {1, 3, 2, 2}).in("w", F, {8, 3, 3, 3}).run();
  EXPECT_TRUE(error_has(m, "exceeds the padded input"));
  m = OpTest("Conv").in("x", F, {1, 3, 8, 8}).in("w", F, {8, 3, 3, 3}).attr(attr_ints("pads", {1, 1})).run();
  EXPECT_TRUE(error_has(m, "pads has 2 entries, expected 4"));
}

TEST(ShapeInference, QuantizedConvolutionsCheckRanksBeforeAnyOnnxCode) {
  // bad-inputs.md class 2: W of rank 5 with X of rank 4 made onnx 1.12's
  // convPoolShapeInference read past its arrays (segfault in info and run).
  constexpr int32_t U8 = ONYX_DTYPE_UINT8;
  auto qlinear = [](std::vector<int64_t> x, std::vector<int64_t> w, bool x_known = true) {
    OpTest t("QLinearConv", 17);
    x_known ? t.in("x", U8, x) : t.in_unknown("x", U8);
    return t.floats("xs", {1.f}, std::vector<int64_t>{}).in("xz", U8, {}).in("w", U8, w)
        .floats("ws", {1.f}, std::vector<int64_t>{}).in("wz", U8, {})
        .floats("ys", {1.f}, std::vector<int64_t>{}).in("yz", U8, {});
  };
  auto m = qlinear({1, 1, 5, 5}, {1, 1, 3, 3, 3}).run();
  EXPECT_TRUE(error_has(m, "QLinearConv 'n': weight [1, 1, 3, 3, 3] and input [1, 1, 5, 5] ranks differ"));
  m = qlinear({1, 1, 5, 5}, {2, 1, 3, 3}).run();
  ASSERT_OK(m);
  EXPECT_EQ(out(m).dims, Shape({1, 2, 3, 3}));
  EXPECT_EQ(out(m).dtype, U8);
  // X's rank unknown: the rank comes from W, and concrete input shapes are checked later.
  m = qlinear({}, {1, 1, 3, 3, 3}, false).run();
  ASSERT_OK(m);
  EXPECT_EQ(out(m).rank, 5);
  m = OpTest("ConvInteger").in("x", U8, {1, 1, 5, 5}).in("w", U8, {1, 1, 3, 3, 3}).run();
  EXPECT_TRUE(error_has(m, "ConvInteger 'n': weight [1, 1, 3, 3, 3] and input [1, 1, 5, 5] ranks differ"));
  m = OpTest("ConvInteger").in("x", U8, {1, 1, 5, 5}).in("w", U8, {4, 1, 2, 2}).run();
  ASSERT_OK(m);
  EXPECT_EQ(out(m).dims, Shape({1, 4, 4, 4}));
  EXPECT_EQ(out(m).dtype, ONYX_DTYPE_INT32);
  m = OpTest("ConvInteger").in("x", U8, {1, 1, 5, 5}).in("w", U8, {4, 1, 2, 2})
          .attr(attr_ints("kernel_shape", {2, 2, 2})).run();
  EXPECT_TRUE(error_has(m, "kernel_shape has 3 entries for 2 spatial dims"));
}

TEST(ShapeInference, ConvTranspose) {
  // out = stride * (in - 1) + output_padding + (k - 1) * dilation + 1 - pad_begin - pad_end
  auto m = OpTest("ConvTranspose").in("x", F, {1, 2, 3, 3}).in("w", F, {2, 3, 3, 3})
               .attr(attr_ints("strides", {2, 2})).run();
  EXPECT_EQ(out(m).dims, Shape({1, 3, 7, 7}));
  m = OpTest("ConvTranspose").in("x", F, {1, 2, 3, 3}).in("w", F, {2, 3, 3, 3})
          .attr(attr_ints("strides", {2, 2})).attr(attr_ints("output_padding", {1, 0}))
          .attr(attr_ints("pads", {1, 1, 1, 1})).run();
  EXPECT_EQ(out(m).dims, Shape({1, 3, 6, 5}));
  m = OpTest("ConvTranspose").in("x", F, {1, 2, 3, 3}).in("w", F, {2, 3, 3, 3}).attr(attr_int("group", 2)).run();
  EXPECT_EQ(out(m).dims, Shape({1, 6, 5, 5}));  // channels = W[1] * group
  m = OpTest("ConvTranspose").in("x", F, {1, 2, 3, 3}).in("w", F, {2, 3, 3, 3})
          .attr(attr_ints("output_shape", {10, 8})).attr(attr_ints("strides", {3, 3})).run();
  EXPECT_EQ(out(m).dims, Shape({1, 3, 10, 8}));
  m = OpTest("ConvTranspose").in("x", F, {1, 2, 3, 4}).in("w", F, {2, 3, 3, 3})
          .attr(attr_ints("strides", {2, 2})).attr(attr_string("auto_pad", "SAME_UPPER")).run();
  EXPECT_EQ(out(m).dims, Shape({1, 3, 6, 8}));  // in * stride
  m = OpTest("ConvTranspose").in("x", F, {1, 5, 3, 3}).in("w", F, {2, 3, 3, 3}).run();
  EXPECT_TRUE(error_has(m, "ConvTranspose 'n': input has 5 channels"));
}

TEST(ShapeInference, Pooling) {
  auto pool = [](const char* op, Shape x, std::vector<pb::AttributeProto> attrs) {
    OpTest t(op);
    t.in("x", F, x).outputs(std::string(op) == "MaxPool" ? 2 : 1);
    for (auto& a : attrs) t.attr(a);
    return t.run();
  };
  auto m = pool("MaxPool", {1, 1, 5, 5}, {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})});
  EXPECT_EQ(out(m, 0).dims, Shape({1, 1, 2, 2}));  // floor(3 / 2) + 1
  EXPECT_EQ(out(m, 1).dtype, I64);                 // Indices
  EXPECT_EQ(out(m, 1).dims, Shape({1, 1, 2, 2}));
  m = pool("MaxPool", {1, 1, 5, 5}, {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2}), attr_int("ceil_mode", 1)});
  EXPECT_EQ(out(m, 0).dims, Shape({1, 1, 3, 3}));  // ceil(3 / 2) + 1; the last window starts at 4 < 5
  // ceil_mode: a window that would start in the end padding is dropped.
  m = pool("MaxPool", {1, 1, 2, 2}, {attr_ints("kernel_shape", {1, 1}), attr_ints("strides", {2, 2}), attr_int("ceil_mode", 1)});
  EXPECT_EQ(out(m, 0).dims, Shape({1, 1, 1, 1}));
  m = pool("MaxPool", {1, 1, 6, 6}, {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}),
                                     attr_ints("pads", {1, 1, 1, 1}), attr_int("ceil_mode", 1)});
  EXPECT_EQ(out(m, 0).dims, Shape({1, 1, 4, 4}));  // ceil(5 / 2) + 1
  m = pool("MaxPool", {1, 1, 5, 5}, {attr_ints("kernel_shape", {2, 2}), attr_ints("dilations", {2, 2})});
  EXPECT_EQ(out(m, 0).dims, Shape({1, 1, 3, 3}));  // effective kernel 3
  m = pool("AveragePool", {2, 3, 7, 7}, {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}), attr_int("ceil_mode", 1)});
  EXPECT_EQ(out(m, 0).dims, Shape({2, 3, 3, 3}));  // ceil(4 / 2) + 1 = 3
  m = pool("AveragePool", {2, 3, 8, 8}, {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}), attr_int("ceil_mode", 1)});
  EXPECT_EQ(out(m, 0).dims, Shape({2, 3, 4, 4}));  // ceil(5 / 2) + 1 = 4; the window at 6 starts inside
  m = pool("AveragePool", {1, 1, 5}, {attr_ints("kernel_shape", {3}), attr_string("auto_pad", "SAME_UPPER"), attr_ints("strides", {2})});
  EXPECT_EQ(out(m, 0).dims, Shape({1, 1, 3}));
  m = pool("MaxPool", {1, 1, 5, 5}, {});
  EXPECT_TRUE(error_has(m, "kernel_shape is required"));
  m = OpTest("GlobalAveragePool").in("x", F, {2, 3, 7, 9}).run();
  EXPECT_EQ(out(m).dims, Shape({2, 3, 1, 1}));
  m = OpTest("GlobalMaxPool").in("x", F, {2, 3, 7}).run();
  EXPECT_EQ(out(m).dims, Shape({2, 3, 1}));
}

TEST(ShapeInference, Normalizations) {
  auto m = OpTest("BatchNormalization", 15).in("x", F, {2, 3, 4, 4}).in("s", F, {3}).in("b", F, {3})
               .in("mean", F, {3}).in("var", F, {3}).attr(attr_int("training_mode", 1)).outputs(3).run();
  ASSERT_OK(m);
  EXPECT_EQ(out(m, 0).dims, Shape({2, 3, 4, 4}));
  EXPECT_EQ(out(m, 1).dims, Shape({3}));  // running mean
  EXPECT_EQ(out(m, 2).dims, Shape({3}));
  m = OpTest("LayerNormalization").in("x", F, {2, 5, 6}).in("s", F, {6}).outputs(3).run();
  EXPECT_EQ(out(m, 0).dims, Shape({2, 5, 6}));
  EXPECT_EQ(out(m, 1).dims, Shape({2, 5, 1}));
  EXPECT_EQ(out(m, 2).dims, Shape({2, 5, 1}));
  EXPECT_EQ(out(m, 1).dtype, F);
  m = OpTest("LayerNormalization").in("x", F, {2, 5, 6}).in("s", F, {5, 6}).attr(attr_int("axis", 1)).outputs(2).run();
  EXPECT_EQ(out(m, 1).dims, Shape({2, 1, 1}));
}

TEST(ShapeInference, DeclaredShapesAreMerged) {
  // A declared concrete dim fills an unknown one...
  auto m = OpTest("Relu").in("x", F, {-1, 3}).declare(0, F, {5, 3}).run();
  ASSERT_OK(m);
  EXPECT_EQ(out(m).dims, Shape({5, 3}));
  // ...and an inferred one fills a declared symbolic dim.
  m = OpTest("Relu").in("x", F, {2, 3}).declare(0, F, {-1, 3}).run();
  EXPECT_EQ(out(m).dims, Shape({2, 3}));
  // A contradiction names the value.
  m = OpTest("Relu").in("x", F, {2, 3}).declare(0, F, {2, 4}).run();
  EXPECT_TRUE(error_has(m, "Relu 'n': output 'out0' is declared [2, 4] but inferred [2, 3]"));
  m = OpTest("Relu").in("x", F, {2, 3}).declare(0, F, {2, 3, 1}).run();
  EXPECT_TRUE(error_has(m, "declared [2, 3, 1] but inferred [2, 3]"));
  m = OpTest("Shape").in("x", F, {2, 3}).declare(0, F, {2}).run();
  EXPECT_TRUE(error_has(m, "output 'out0' is declared float32 but inferred int64"));
}

TEST(ShapeInference, InputShapesOverrideSymbolicDims) {
  GraphBuilder g;
  g.input("x", F, {-1, 3}).input("y", F, {-1, 3}).node("Add", {"x", "y"}, {"s"}).node("Relu", {"s"}, {"r"}).output("r");
  auto m = import(make_model(g.proto()));
  ASSERT_OK(m);
  EXPECT_EQ(find(*m, "r")->dims, Shape({-1, 3}));
  Graph copy = *m->graph;
  ASSERT_TRUE(infer_shapes(copy, {{"x", {7, 3}}}).ok());
  EXPECT_EQ(copy.values[size_t(copy.find_value("r"))].dims, Shape({7, 3}));
  copy = *m->graph;
  Status st = infer_shapes(copy, {{"x", {7, 4}}});
  EXPECT_NE(st.message().find("input 'x' was given shape [7, 4] but is declared [?, 3]"), std::string::npos) << st.message();
  copy = *m->graph;
  st = infer_shapes(copy, {{"x", {7}}});
  EXPECT_NE(st.message().find("declared with rank 2"), std::string::npos) << st.message();
  copy = *m->graph;
  st = infer_shapes(copy, {{"s", {7, 3}}});
  EXPECT_NE(st.message().find("'s', which is not a graph input"), std::string::npos) << st.message();
  // Two inputs whose given shapes do not broadcast: the node's error.
  copy = *m->graph;
  st = infer_shapes(copy, {{"x", {7, 3}}, {"y", {5, 3}}});
  EXPECT_NE(st.message().find("Add 'Add_0': cannot broadcast"), std::string::npos) << st.message();
}

TEST(ShapeInference, OpsWithoutAnOnyxRule) {
  // onnx's own inference (ai.onnx up to opset 17): Det of a batch of matrices.
  auto m = OpTest("Det").in("x", F, {3, 2, 2}).run();
  ASSERT_OK(m);
  EXPECT_EQ(out(m).dims, Shape({3}));
  // An op onnx does not know: output unknown, no error.
  GraphBuilder g;
  g.input("x", F, {2}).node("Mystery", {"x"}, {"y"}, {}, "m", "com.example").output("y");
  pb::ModelProto proto = make_model(g.proto());
  auto* dom = proto.add_opset_import();
  dom->set_domain("com.example");
  dom->set_version(1);
  auto custom = import(proto);
  ASSERT_OK(custom);
  EXPECT_EQ(find(*custom, "y")->rank, -1);
  EXPECT_EQ(find(*custom, "y")->dtype, ONYX_DTYPE_UNDEFINED);
}

TEST(ShapeInference, RecurrentAndEinsum) {
  auto m = OpTest("LSTM").in("x", F, {5, 2, 4}).in("w", F, {2, 12, 4}).in("r", F, {2, 12, 3})
               .attr(attr_int("hidden_size", 3)).attr(attr_string("direction", "bidirectional")).outputs(3).run();
  ASSERT_OK(m);
  EXPECT_EQ(out(m, 0).dims, Shape({5, 2, 2, 3}));  // [seq, directions, batch, hidden]
  EXPECT_EQ(out(m, 1).dims, Shape({2, 2, 3}));
  EXPECT_EQ(out(m, 2).dims, Shape({2, 2, 3}));
  m = OpTest("Einsum", 12).in("a", F, {2, 3, 4}).in("b", F, {2, 4, 5}).attr(attr_string("equation", "bij,bjk->bik")).run();
  EXPECT_EQ(out(m).dims, Shape({2, 3, 5}));
  m = OpTest("Einsum", 12).in("a", F, {3, 4}).attr(attr_string("equation", "ij")).run();  // implicit: sorted
  EXPECT_EQ(out(m).dims, Shape({3, 4}));
  m = OpTest("Einsum", 12).in("a", F, {7, 3, 4}).attr(attr_string("equation", "...ij->...ji")).run();
  EXPECT_EQ(out(m).dims, Shape({7, 4, 3}));
}

}  // namespace
}  // namespace onyx::runtime::ir
