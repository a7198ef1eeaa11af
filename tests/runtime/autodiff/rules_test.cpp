// rules_test.cpp: every gradient rule against float64 central differences
// (grad_check.h states the tolerance), one small case or more per op.
#include <gtest/gtest.h>

#include <cmath>

#include "autodiff/emitter.h"
#include "grad_check.h"

namespace onyx::runtime::autodiff::testing {
namespace {

using A = std::vector<onnx::AttributeProto>;

// Forward model: one node over params named a, b, c... with the given
// shapes; output "y" of shape `out`.
void check_op(const std::string& op, std::vector<std::vector<int64_t>> inputs, std::vector<int64_t> out, A attrs = {},
              double lo = -1, double hi = 1, int64_t opset = 17) {
  Forward f(opset);
  std::vector<std::string> names;
  for (size_t k = 0; k < inputs.size(); ++k) {
    names.push_back(std::string(1, char('a' + k)));
    f.param(names.back(), inputs[k], lo, hi);
  }
  f.node(op, names, {"y"}, std::move(attrs)).output("y", out);
  expect_gradients_match(f.proto(), op);
}

TEST(GradRules, BinaryBroadcasting) {
  check_op("Add", {{2, 3}, {3}}, {2, 3});
  check_op("Sub", {{2, 1}, {2, 3}}, {2, 3});
  check_op("Mul", {{2, 3}, {1, 3}}, {2, 3});
  check_op("Div", {{2, 3}, {3}}, {2, 3}, {}, 0.5, 2);
  check_op("Pow", {{2, 3}, {3}}, {2, 3}, {}, 0.5, 1.5);
  // A negative base with an integer exponent: d/da exists, d/db is taken as 0.
  Forward square;
  square.param_values("a", {3}, {-1.5, 0.5, -0.25}).param_values("b", {}, {2.0});
  square.node("Pow", {"a", "b"}, {"y"}).output("y", {3});
  TrainingSpec base_only;
  base_only.requires_grad = {"a"};
  base_only.loss.kind = LossKind::kCustom;
  base_only.loss.custom = weighted_sum_loss(square.proto());
  expect_gradients_match(square.proto(), "Pow with negative base", &base_only);
  TrainingSpec both = base_only;
  both.requires_grad = {};
  auto built = build_training_models(square.proto(), both);
  ASSERT_TRUE(built.ok());
  auto s = open_session(built.value().training);
  auto a = tensor_of(built.value().initial_values[0]), b = tensor_of(built.value().initial_values[1]);
  auto out = s->run({{"a", &a}, {"b", &b}}, {"b_grad"});
  EXPECT_TRUE(std::isfinite(out[0].data_as<double>()[0]));  // log(0.5) term only
  check_op("Min", {{2, 3}, {3}}, {2, 3});
  check_op("Max", {{2, 3}, {2, 3}}, {2, 3});
  check_op("Sum", {{2, 3}, {3}, {2, 1}}, {2, 3});
  check_op("Mean", {{2, 3}, {3}, {2, 1}}, {2, 3});
}

TEST(GradRules, Unary) {
  check_op("Sqrt", {{2, 3}}, {2, 3}, {}, 0.5, 2);
  check_op("Log", {{2, 3}}, {2, 3}, {}, 0.5, 2);
  check_op("Exp", {{2, 3}}, {2, 3});
  check_op("Neg", {{2, 3}}, {2, 3});
  check_op("Abs", {{2, 3}}, {2, 3});
  check_op("Erf", {{2, 3}}, {2, 3});
  check_op("Identity", {{2, 3}}, {2, 3});
  check_op("Cast", {{2, 3}}, {2, 3}, {attr_int("to", onnx::TensorProto::DOUBLE)});
  check_op("Reciprocal", {{2, 3}}, {2, 3}, {}, 0.5, 2);
}

TEST(GradRules, Activations) {
  check_op("Relu", {{3, 4}}, {3, 4});
  check_op("LeakyRelu", {{3, 4}}, {3, 4}, {attr_float("alpha", 0.2f)});
  check_op("Sigmoid", {{3, 4}}, {3, 4});
  check_op("Tanh", {{3, 4}}, {3, 4});
  check_op("Softplus", {{3, 4}}, {3, 4});
  check_op("Softmax", {{3, 4}}, {3, 4});
  check_op("Softmax", {{3, 4}}, {3, 4}, {attr_int("axis", 0)});
  check_op("LogSoftmax", {{2, 3, 4}}, {2, 3, 4}, {attr_int("axis", 1)});
  check_op("Elu", {{3, 4}}, {3, 4}, {attr_float("alpha", 0.7f)});
  check_op("HardSigmoid", {{3, 4}}, {3, 4}, {attr_float("alpha", 0.4f)}, -2, 2);
  check_op("Gelu", {{3, 4}}, {3, 4}, {}, -2, 2, 20);
  check_op("Gelu", {{3, 4}}, {3, 4}, {attr_string("approximate", "tanh")}, -2, 2, 20);
}

TEST(GradRules, Where) {
  Forward f;
  f.param("c", {2, 3}).param("a", {2, 3}).param("b", {3});
  f.node("Greater", {"c", "b"}, {"cond"}).node("Where", {"cond", "a", "b"}, {"y"}).output("y", {2, 3});
  expect_gradients_match(f.proto(), "Where");
}

TEST(GradRules, Clip) {
  Forward f;
  f.param("x", {3, 4}).param_values("lo", {}, {-0.4}).param_values("hi", {}, {0.5});
  f.node("Clip", {"x", "lo", "hi"}, {"y"}).output("y", {3, 4});
  TrainingSpec spec;
  spec.requires_grad = {"x"};  // the bounds are frozen
  spec.loss.kind = LossKind::kCustom;
  spec.loss.custom = weighted_sum_loss(f.proto());
  expect_gradients_match(f.proto(), "Clip", &spec);
}

TEST(GradRules, Dropout) {
  check_op("Dropout", {{3, 4}}, {3, 4});  // inference mode: identity
  // Training mode with a seed: the kernel draws the same mask on every run,
  // so central differences see the function the gradient describes.
  Forward f(13);
  f.param("x", {4, 5}).param_values("ratio", {}, {0.3});
  auto* mode = f.proto().mutable_graph()->add_initializer();
  mode->set_name("training");
  mode->set_data_type(onnx::TensorProto::BOOL);
  mode->add_int32_data(1);
  f.node("Dropout", {"x", "ratio", "training"}, {"y"}, {attr_int("seed", 5)}).output("y", {4, 5});
  TrainingSpec spec;
  spec.requires_grad = {"x"};
  spec.loss.kind = LossKind::kCustom;
  spec.loss.custom = weighted_sum_loss(f.proto());
  expect_gradients_match(f.proto(), "Dropout (training mode)", &spec);
  // Some elements were dropped and some kept, so the mask mattered.
  auto built = build_training_models(f.proto(), spec);
  ASSERT_TRUE(built.ok());
  // ratio and training are not listed in requires_grad: constants of the model.
  ASSERT_EQ(built.value().initial_values.size(), 1u);
  auto s = open_session(built.value().training);
  auto x = tensor_of(built.value().initial_values[0]);
  auto out = s->run({{"x", &x}});
  int zeros = 0;
  for (int i = 0; i < 20; ++i) zeros += out[2].data_as<double>()[i] == 0;
  EXPECT_GT(zeros, 0);
  EXPECT_LT(zeros, 20);
}

TEST(GradRules, MatMulAndGemm) {
  check_op("MatMul", {{3, 4}, {4, 2}}, {3, 2});
  check_op("MatMul", {{2, 3, 4}, {4, 2}}, {2, 3, 2});
  check_op("MatMul", {{2, 2, 3, 4}, {4, 2}}, {2, 2, 3, 2});
  check_op("MatMul", {{2, 3, 4}, {2, 4, 5}}, {2, 3, 5});  // same batch dims: no sum
  check_op("MatMul", {{2, 1, 3, 4}, {3, 4, 2}}, {2, 3, 3, 2});
  check_op("MatMul", {{4}, {2, 4, 3}}, {2, 3});
  check_op("MatMul", {{2, 3, 4}, {4}}, {2, 3});
  check_op("Gemm", {{3, 4}, {4, 2}, {2}}, {3, 2});
  check_op("Gemm", {{4, 3}, {2, 4}, {3, 1}}, {3, 2},
           {attr_int("transA", 1), attr_int("transB", 1), attr_float("alpha", 0.7f), attr_float("beta", -1.5f)});
  check_op("Gemm", {{4, 3}, {4, 2}}, {3, 2}, {attr_int("transA", 1)});
  check_op("Gemm", {{3, 4}, {2, 4}, {3, 2}}, {3, 2}, {attr_int("transB", 1)});
}

// A linear layer over a batch of sequences ([..., M, K] times a matrix):
// each gradient is one Gemm over all rows, never a product per batch entry
// summed afterwards (SumToShape), which writes the weight once per entry.
TEST(GradRules, MatMulOverRowsIsOneGemmPerGradient) {
  Forward f;
  f.param("a", {2, 2, 3, 4}).param("b", {4, 5}).node("MatMul", {"a", "b"}, {"y"}).output("y", {2, 2, 3, 5});
  TrainingSpec spec;
  spec.loss.kind = LossKind::kCustom;
  spec.loss.custom = weighted_sum_loss(f.proto());
  auto built = build_training_models(f.proto(), spec);
  ASSERT_TRUE(built.ok()) << built.status().message();
  int gemms = 0, products = 0;
  for (const auto& n : built.value().training.graph().node()) {
    EXPECT_NE(n.op_type(), "SumToShape") << n.name();
    EXPECT_NE(n.op_type(), "Transpose") << n.name();
    gemms += n.op_type() == "Gemm";
    products += n.op_type() == "MatMul";
  }
  EXPECT_EQ(gemms, 2);
  EXPECT_EQ(products, 1);  // the forward one
}

// Shapes that agree only symbolically ([batch, 3] and [batch, 3]) are the
// same shape: a gradient passes through without a SumToShape, which would
// copy it at run time. A real broadcast ([3] against [batch, 3]) still sums.
TEST(GradRules, SymbolicShapesThatAgreeNeedNoSum) {
  Forward f;
  f.input("x", {2, 3}).param("w", {3});
  f.node("Mul", {"x", "w"}, {"h"}).node("Tanh", {"h"}, {"t"}).node("Add", {"h", "t"}, {"y"}).output("y", {2, 3});
  auto* graph = f.proto().mutable_graph();
  for (auto* v : {graph->mutable_input(0), graph->mutable_output(0)})
    v->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("batch");
  TrainingSpec spec;
  spec.loss.kind = LossKind::kMse;
  auto built = build_training_models(f.proto(), spec);
  ASSERT_TRUE(built.ok()) << built.status().message();
  int sums = 0;
  for (const auto& n : built.value().training.graph().node())
    if (n.op_type() == "SumToShape") ++sums;
  if (sums != 1) std::cerr << built.value().training.graph().DebugString();
  EXPECT_EQ(sums, 1);  // w's gradient: [batch, 3] summed to [3]
}

// Batched products whose batch dims agree (attention's) broadcast nothing:
// their gradients are the batched products alone.
TEST(GradRules, BatchedMatMulWithoutBroadcastNeedsNoSum) {
  Forward f;
  f.param("a", {2, 3, 4}).param("b", {2, 4, 5}).node("MatMul", {"a", "b"}, {"y"}).output("y", {2, 3, 5});
  TrainingSpec spec;
  spec.loss.kind = LossKind::kCustom;
  spec.loss.custom = weighted_sum_loss(f.proto());
  auto built = build_training_models(f.proto(), spec);
  ASSERT_TRUE(built.ok()) << built.status().message();
  for (const auto& n : built.value().training.graph().node()) EXPECT_NE(n.op_type(), "SumToShape") << n.name();
}

TEST(GradRules, Shapes) {
  Forward reshape;
  reshape.param("a", {2, 6}).ints("s", {3}, {3, 2, 2}).node("Reshape", {"a", "s"}, {"y"}).output("y", {3, 2, 2});
  expect_gradients_match(reshape.proto(), "Reshape");
  check_op("Flatten", {{2, 3, 2}}, {2, 6}, {attr_int("axis", 1)});
  check_op("Transpose", {{2, 3, 4}}, {4, 2, 3}, {attr_ints("perm", {2, 0, 1})});
  check_op("Transpose", {{2, 3}}, {3, 2});
  check_op("Concat", {{2, 3}, {2, 1}, {2, 2}}, {2, 6}, {attr_int("axis", -1)});
  Forward squeeze;
  squeeze.param("a", {2, 1, 3}).ints("ax", {1}, {1});
  squeeze.node("Squeeze", {"a", "ax"}, {"s"}).node("Unsqueeze", {"s", "ax"}, {"u"}).node("Mul", {"u", "u"}, {"y"});
  squeeze.output("y", {2, 1, 3});
  expect_gradients_match(squeeze.proto(), "Squeeze/Unsqueeze");
  Forward expand;
  expand.param("a", {3, 1}).ints("s", {3}, {2, 3, 4}).node("Expand", {"a", "s"}, {"y"}).output("y", {2, 3, 4});
  expect_gradients_match(expand.proto(), "Expand");
}

TEST(GradRules, SplitWithUnusedOutput) {
  Forward f;
  f.param("a", {2, 7}).ints("sizes", {3}, {2, 4, 1});
  f.node("Split", {"a", "sizes"}, {"p", "q", "r"}, {attr_int("axis", 1)});
  f.node("Mul", {"p", "p"}, {"y0"}).node("Sigmoid", {"r"}, {"y1"});  // q gets no gradient
  f.output("y0", {2, 2}).output("y1", {2, 1});
  expect_gradients_match(f.proto(), "Split");
}

TEST(GradRules, Slice) {
  Forward f;
  f.param("a", {4, 6}).ints("st", {2}, {1, -1}).ints("en", {2}, {4, 0}).ints("ax", {2}, {0, 1}).ints("sp", {2}, {2, -2});
  f.node("Slice", {"a", "st", "en", "ax", "sp"}, {"y"}).output("y", {2, 3});
  expect_gradients_match(f.proto(), "Slice with steps");
  Forward g;
  g.param("a", {3, 5}).ints("st", {1}, {1}).ints("en", {1}, {100});
  g.node("Slice", {"a", "st", "en"}, {"y"}).output("y", {2, 5});
  expect_gradients_match(g.proto(), "Slice clamped");
}

TEST(GradRules, GatherRepeatedIndices) {
  Forward f;
  f.param("a", {3, 4}).ints("i", {2, 2}, {2, 0, 2, -1});
  f.node("Gather", {"a", "i"}, {"y"}, {attr_int("axis", 1)}).output("y", {3, 2, 2});
  expect_gradients_match(f.proto(), "Gather axis 1");
  Forward g;
  g.param("a", {5, 3}).ints("i", {4}, {1, 1, 4, 0});
  g.node("Gather", {"a", "i"}, {"y"}).output("y", {4, 3});
  expect_gradients_match(g.proto(), "Gather axis 0 (embedding)");
}

TEST(GradRules, GatherElements) {
  Forward f;
  f.param("a", {3, 4}).ints("i", {3, 2}, {0, 3, 1, 1, 2, 0});
  f.node("GatherElements", {"a", "i"}, {"y"}, {attr_int("axis", 1)}).output("y", {3, 2});
  expect_gradients_match(f.proto(), "GatherElements axis 1 (repeated index)");
}

TEST(GradRules, Reductions) {
  Forward s;
  s.param("a", {2, 3, 4}).ints("ax", {2}, {0, -1});
  s.node("ReduceSum", {"a", "ax"}, {"y"}, {attr_int("keepdims", 0)}).output("y", {3});
  expect_gradients_match(s.proto(), "ReduceSum keepdims 0");
  check_op("ReduceSum", {{2, 3}}, {1, 1});
  check_op("ReduceMean", {{2, 3, 4}}, {2, 1, 4}, {attr_ints("axes", {1})});
  check_op("ReduceMean", {{2, 3, 4}}, {4}, {attr_ints("axes", {0, 1}), attr_int("keepdims", 0)});
  check_op("ReduceMean", {{2, 3}}, {}, {attr_int("keepdims", 0)});
}

TEST(GradRules, Pools) {
  check_op("MaxPool", {{1, 2, 5, 5}}, {1, 2, 3, 3},
           {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 1, 1})});
  check_op("MaxPool", {{2, 1, 6}}, {2, 1, 3}, {attr_ints("kernel_shape", {2}), attr_ints("strides", {2})});
  // 2x2 windows, stride 2 (the CPU provider's direct path), with and without
  // a last row and column that no window covers.
  check_op("MaxPool", {{2, 2, 6, 4}}, {2, 2, 3, 2}, {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})});
  check_op("MaxPool", {{1, 2, 5, 7}}, {1, 2, 2, 3}, {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})});
  check_op("AveragePool", {{1, 2, 5, 5}}, {1, 2, 3, 3},
           {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 1, 1})});
  check_op("AveragePool", {{1, 2, 4, 4}}, {1, 2, 2, 2},
           {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 0, 0}),
            attr_int("count_include_pad", 1)});
  check_op("GlobalAveragePool", {{2, 3, 2, 2}}, {2, 3, 1, 1});
}

TEST(GradRules, Normalization) {
  check_op("LayerNormalization", {{2, 3, 4}, {4}, {4}}, {2, 3, 4}, {attr_float("epsilon", 1e-3f)});
  check_op("LayerNormalization", {{2, 3, 4}, {3, 4}, {3, 4}}, {2, 3, 4}, {attr_int("axis", 1)});
  // Inference mode (variance kept positive).
  Forward bn;
  bn.param("x", {2, 3, 2, 2}).param("s", {3}).param("b", {3}).param("m", {3}).param("v", {3}, 0.5, 1.5);
  bn.node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"}).output("y", {2, 3, 2, 2});
  expect_gradients_match(bn.proto(), "BatchNormalization (inference)");
  Forward train;
  train.param("x", {3, 2, 2, 2}).param("s", {2}).param("b", {2}).param("m", {2}).param("v", {2}, 0.5, 1.5);
  train.node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"}, {attr_int("training_mode", 1)}).output("y", {3, 2, 2, 2});
  expect_gradients_match(train.proto(), "BatchNormalization (training mode)");
}

// ONNX Attention (opset 23): 4-D and 3-D (heads packed) Q, K, V, an explicit
// scale, an additive float mask (which gets a gradient too), a bool mask
// with causal masking on top, and query and key lengths that differ.
TEST(GradRules, Attention) {
  check_op("Attention", {{2, 2, 3, 4}, {2, 2, 5, 4}, {2, 2, 5, 3}}, {2, 2, 3, 3}, {}, -1, 1, 23);
  check_op("Attention", {{2, 3, 8}, {2, 5, 8}, {2, 5, 6}}, {2, 3, 6},
           {attr_int("q_num_heads", 2), attr_int("kv_num_heads", 2), attr_float("scale", 0.7f)}, -1, 1, 23);
  check_op("Attention", {{1, 2, 3, 4}, {1, 2, 3, 4}, {1, 2, 3, 2}, {1, 1, 3, 3}}, {1, 2, 3, 2}, {}, -1, 1, 23);
  Forward masked(23);
  masked.param("q", {2, 2, 4, 3}).param("k", {2, 2, 4, 3}).param("v", {2, 2, 4, 3}).param("m", {2, 1, 1, 4});
  masked.node("Greater", {"m", "zero"}, {"keep"})
      .param_values("zero", {}, {-0.5})
      .node("Attention", {"q", "k", "v", "keep"}, {"y"}, {attr_int("is_causal", 1)})
      .output("y", {2, 2, 4, 3});
  TrainingSpec qkv;
  qkv.requires_grad = {"q", "k", "v"};
  qkv.loss.kind = LossKind::kCustom;
  qkv.loss.custom = weighted_sum_loss(masked.proto());
  expect_gradients_match(masked.proto(), "Attention (bool mask, causal)", &qkv);
}

// Conv and ConvTranspose end to end in float64 like every other op: groups,
// strides, asymmetric pads, dilation, 1-D to 3-D.
TEST(GradRules, Conv) {
  for (int64_t group : {1, 2}) {
    Forward f;
    f.param("x", {2, 4, 5, 5}).param("w", {6, 4 / group, 3, 3}).param("b", {6});
    f.node("Conv", {"x", "w", "b"}, {"y"},
           {attr_ints("strides", {2, 1}), attr_ints("pads", {1, 0, 1, 1}), attr_int("group", group)});
    f.output("y", {2, 6, 3, 4});
    expect_gradients_match(f.proto(), "Conv group " + std::to_string(group));
  }
  Forward d;
  d.param("x", {1, 2, 7}).param("w", {3, 2, 3});
  d.node("Conv", {"x", "w"}, {"y"}, {attr_ints("dilations", {2})}).output("y", {1, 3, 3});
  expect_gradients_match(d.proto(), "Conv 1-D dilated");
  Forward depthwise;
  depthwise.param("x", {1, 3, 4, 4}).param("w", {3, 1, 2, 2});
  depthwise.node("Conv", {"x", "w"}, {"y"}, {attr_int("group", 3)}).output("y", {1, 3, 3, 3});
  expect_gradients_match(depthwise.proto(), "Conv depthwise");
  Forward volume;
  volume.param("x", {1, 2, 3, 4, 3}).param("w", {2, 2, 2, 2, 2});
  volume.node("Conv", {"x", "w"}, {"y"}, {attr_ints("pads", {0, 1, 0, 1, 0, 1})});
  volume.output("y", {1, 2, 3, 4, 3});
  expect_gradients_match(volume.proto(), "Conv 3-D");
}

TEST(GradRules, ConvTranspose) {
  Forward f;
  f.param("x", {2, 3, 3, 3}).param("w", {3, 2, 3, 3}).param("b", {2});
  f.node("ConvTranspose", {"x", "w", "b"}, {"y"}, {attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 1, 1})});
  f.output("y", {2, 2, 5, 5});
  expect_gradients_match(f.proto(), "ConvTranspose");
  Forward g;
  g.param("x", {1, 4, 3, 2}).param("w", {4, 1, 2, 3});
  g.node("ConvTranspose", {"x", "w"}, {"y"}, {attr_int("group", 2), attr_ints("dilations", {2, 1})});
  g.output("y", {1, 2, 5, 4});
  expect_gradients_match(g.proto(), "ConvTranspose groups, dilated");
}

}  // namespace
}  // namespace onyx::runtime::autodiff::testing
