// Fused groups and declines of the oneDNN provider, checked through real
// sessions against the CPU provider on the same model and inputs.
#include <gtest/gtest.h>

#include <cmath>

#include "onednn_test_util.h"
#include "proto_builder.h"
#include "test_models.h"
#include "transformer_block.h"

namespace onyx::onednn_test {
namespace {

namespace tm = onyx::test_models;

TEST(OnednnFusion, TransformerBlockMatchesCpuWithFusedLinearLayers) {
  onnx::ModelProto model = tm::build_transformer_block(/*seq=*/16, /*dim=*/32);
  std::string report = expect_same_as_cpu(model, {{"x", {2, 16, 32}, random_floats(2 * 16 * 32, 1)}}, "transformer");
  // MatMul + bias Add + Gelu is one kernel; MatMul + bias Add another.
  int ff1 = node_fused_group(report, "ff1.matmul");
  EXPECT_NE(ff1, 0) << report;
  EXPECT_EQ(node_fused_group(report, "ff1.add"), ff1);
  EXPECT_EQ(node_fused_group(report, "gelu"), ff1);
  EXPECT_NE(node_fused_group(report, "q.matmul"), 0);
  EXPECT_EQ(node_fused_group(report, "q.add"), node_fused_group(report, "q.matmul"));
  // The residual Adds end the o and ff2 groups (the residual on either side).
  EXPECT_NE(node_fused_group(report, "o.matmul"), 0);
  EXPECT_EQ(node_fused_group(report, "residual1"), node_fused_group(report, "o.matmul"));
  EXPECT_EQ(node_fused_group(report, "residual2"), node_fused_group(report, "ff2.matmul"));
  // The whole block runs on oneDNN, Transpose (a reorder) included.
  for (const char* node : {"ln1", "ln2", "softmax", "scores", "attention", "scaled", "residual1", "residual2", "k_t"})
    EXPECT_EQ(node_device(report, node), "onednn") << node;
}

TEST(OnednnFusion, GemmWithTransposesScalesAndMatrixCFusedWithSigmoid) {
  onnx::ModelProto model = tm::new_model("gemm");
  onnx::GraphProto& g = *model.mutable_graph();
  tm::add_input(g, "a", {int64_t(7), int64_t(5)});  // transA: [K, M]
  tm::add_input(g, "c", {int64_t(5), int64_t(3)});
  tm::add_initializer(g, "b", {3, 7}, random_floats(21, 2));  // transB: [N, K]
  onnx::NodeProto& gemm = tm::add_node(g, "Gemm", "gemm", {"a", "b", "c"}, {"g"});
  tm::set_int(gemm, "transA", 1);
  tm::set_int(gemm, "transB", 1);
  tm::set_float(gemm, "alpha", 0.5f);
  tm::set_float(gemm, "beta", 2.0f);
  tm::add_node(g, "Sigmoid", "sigmoid", {"g"}, {"y"});
  tm::add_output(g, "y", {int64_t(5), int64_t(3)});
  std::string report = expect_same_as_cpu(
      model, {{"a", {7, 5}, random_floats(35, 3, -2, 2)}, {"c", {5, 3}, random_floats(15, 4)}}, "gemm+sigmoid");
  EXPECT_NE(node_fused_group(report, "gemm"), 0) << report;
  EXPECT_EQ(node_fused_group(report, "sigmoid"), node_fused_group(report, "gemm"));
}

TEST(OnednnFusion, GroupedStridedDilatedConvFusedWithLeakyRelu) {
  onnx::ModelProto model = tm::new_model("conv");
  onnx::GraphProto& g = *model.mutable_graph();
  tm::add_input(g, "x", {int64_t(2), int64_t(4), int64_t(11), int64_t(9)});
  tm::add_initializer(g, "w", {6, 2, 3, 3}, random_floats(6 * 2 * 9, 5));
  tm::add_initializer(g, "bias", {6}, random_floats(6, 6));
  onnx::NodeProto& conv = tm::add_node(g, "Conv", "conv", {"x", "w", "bias"}, {"c"});
  tm::set_int(conv, "group", 2);
  tm::set_ints(conv, "strides", {2, 1});
  tm::set_ints(conv, "dilations", {1, 2});
  tm::set_ints(conv, "pads", {1, 0, 2, 1});
  tm::set_float(tm::add_node(g, "LeakyRelu", "leaky", {"c"}, {"y"}), "alpha", 0.1f);
  tm::add_output(g, "y", {int64_t(2), int64_t(6), int64_t(6), int64_t(6)});
  std::string report =
      expect_same_as_cpu(model, {{"x", {2, 4, 11, 9}, random_floats(2 * 4 * 11 * 9, 7)}}, "conv+leakyrelu");
  EXPECT_NE(node_fused_group(report, "conv"), 0) << report;
  EXPECT_EQ(node_fused_group(report, "leaky"), node_fused_group(report, "conv"));
}

// oneDNN broadcasts only its second operand: a broadcasting first input is
// swapped (Add, Mul) or expanded into the output first (Sub, Div).
TEST(OnednnFusion, BinaryOpsBroadcastEitherInput) {
  onnx::ModelProto model = tm::new_model("binary");
  onnx::GraphProto& g = *model.mutable_graph();
  tm::add_input(g, "a", {int64_t(3), int64_t(1), int64_t(5)});
  tm::add_input(g, "b", {int64_t(2), int64_t(1)});
  tm::add_input(g, "c", {int64_t(3), int64_t(2), int64_t(5)});
  tm::add_node(g, "Sub", "both_broadcast", {"a", "b"}, {"s"});   // [3,2,5]: a expanded
  tm::add_node(g, "Add", "first_broadcast", {"b", "s"}, {"t"});  // swapped
  tm::add_node(g, "Div", "divide", {"a", "c"}, {"d"});          // a expanded
  tm::add_node(g, "Mul", "multiply", {"t", "d"}, {"y"});
  tm::add_output(g, "y", {int64_t(3), int64_t(2), int64_t(5)});
  std::string report = expect_same_as_cpu(model,
                                          {{"a", {3, 1, 5}, random_floats(15, 10)},
                                           {"b", {2, 1}, random_floats(2, 11)},
                                           {"c", {3, 2, 5}, random_floats(30, 12, 0.5, 2.0)}},
                                          "binary broadcasting");
  for (const char* node : {"both_broadcast", "first_broadcast", "divide", "multiply"})
    EXPECT_EQ(node_device(report, node), "onednn") << node;
}

// MatMul + bias + Relu + residual Add is one kernel. The residual's shape is
// only known at run time: where it equals the product's it is a post-op;
// where it broadcasts (a row, or a batch of one) the same group adds it after
// the product; where it does not broadcast the run fails naming the Add.
TEST(OnednnFusion, ResidualAddEndsTheGroupAndMayBroadcastAtRunTime) {
  onnx::ModelProto model = tm::new_model("residual");
  onnx::GraphProto& g = *model.mutable_graph();
  tm::add_input(g, "x", {std::string("b"), int64_t(5), int64_t(8)});
  tm::add_input(g, "r", {std::string("rb"), std::string("rm"), int64_t(6)});
  tm::add_initializer(g, "w", {8, 6}, random_floats(48, 21));
  tm::add_initializer(g, "bias", {6}, random_floats(6, 22));
  tm::add_node(g, "MatMul", "matmul", {"x", "w"}, {"m"});
  tm::add_node(g, "Add", "bias_add", {"m", "bias"}, {"mb"});
  tm::add_node(g, "Relu", "relu", {"mb"}, {"a"});
  tm::add_node(g, "Add", "residual", {"r", "a"}, {"y"});
  tm::add_output(g, "y", {std::string("b"), int64_t(5), int64_t(6)});
  std::string report;
  for (std::vector<int64_t> r_dims : {std::vector<int64_t>{3, 5, 6}, {3, 1, 6}, {1, 5, 6}}) {
    int64_t r_count = r_dims[0] * r_dims[1] * r_dims[2];
    report = expect_same_as_cpu(
        model, {{"x", {3, 5, 8}, random_floats(120, 23)}, {"r", r_dims, random_floats(size_t(r_count), 24)}},
        "matmul+bias+relu+residual");
  }
  int group = node_fused_group(report, "matmul");
  EXPECT_NE(group, 0) << report;
  for (const char* node : {"bias_add", "relu", "residual"}) EXPECT_EQ(node_fused_group(report, node), group) << node;

  onyx::Env env;
  onyx::Session session = make_session(env, model, onednn_then_cpu());
  onyx::Tensor x = onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, {3, 5, 8}, random_floats(120, 25));
  onyx::Tensor bad = onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, {3, 4, 6}, random_floats(72, 26));
  try {
    session.run({{"x", &x}, {"r", &bad}});
    ADD_FAILURE() << "a residual that does not broadcast ran";
  } catch (const onyx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("broadcast"), std::string::npos) << e.what();
  }
}

// Attention's scaling: MatMul of two activations, then Div by a constant
// scalar (or Mul, the scalar first), is one kernel; a Div of the scalar by
// the product is not a scale and stays a node of its own.
TEST(OnednnFusion, ProductScaledByAConstantScalarIsOneKernel) {
  for (const char* form : {"div", "mul", "scalar_over_product"}) {
    onnx::ModelProto model = tm::new_model("scaled");
    onnx::GraphProto& g = *model.mutable_graph();
    tm::add_input(g, "q", {int64_t(2), int64_t(3), int64_t(4), int64_t(5)});
    tm::add_input(g, "k", {int64_t(2), int64_t(3), int64_t(5), int64_t(4)});
    tm::add_node(g, "MatMul", "qk", {"q", "k"}, {"s"});
    std::string f = form;
    if (f == "mul") {
      tm::add_initializer(g, "c", {1, 1}, {0.3f});
      tm::add_node(g, "Mul", "scale", {"c", "s"}, {"t"});
    } else {
      tm::add_initializer(g, "c", {}, {f == "div" ? 2.8284271f : 0.7f});
      tm::add_node(g, "Div", "scale", f == "div" ? std::vector<std::string>{"s", "c"} : std::vector<std::string>{"c", "s"},
                   {"t"});
    }
    tm::add_node(g, "Softmax", "softmax", {"t"}, {"y"});
    tm::add_output(g, "y", {int64_t(2), int64_t(3), int64_t(4), int64_t(4)});
    std::string report = expect_same_as_cpu(
        model, {{"q", {2, 3, 4, 5}, random_floats(120, 31, -2, 2)}, {"k", {2, 3, 5, 4}, random_floats(120, 32, -2, 2)}},
        form);
    if (f == "scalar_over_product") {
      EXPECT_EQ(node_fused_group(report, "qk"), 0) << report;
    } else {
      EXPECT_NE(node_fused_group(report, "qk"), 0) << report;
      EXPECT_EQ(node_fused_group(report, "scale"), node_fused_group(report, "qk")) << report;
    }
  }
}

// Multi-head attention as exporters write it (head split, Q K^T / sqrt(d),
// Softmax, P V, head merge): the core rewrites it into one
// com.microsoft::MultiHeadAttention (optimize/attention_fusion.cpp), which
// this provider runs on strided views of Q, K and V, checked against the CPU
// provider's own kernel for it (tests/runtime/optimize/attention_fusion_test.cpp
// checks that against the graph as written, tests/providers/ops both against
// float64). Queries and keys of different lengths, a symbolic
// batch run at two sizes, no mask, BERT's padding mask [b, 1, 1, l] (a
// post-op of Q K^T) and a [7, 5] mask (added by its own primitive); keys and
// values of different lengths fail the run.
enum class Mask { kNone, kPadding, kPerQuery };

onnx::ModelProto exported_attention(Mask mask = Mask::kNone) {
  onnx::ModelProto model = tm::new_model("attention");
  onnx::GraphProto& g = *model.mutable_graph();
  tm::add_input(g, "q", {std::string("b"), int64_t(7), int64_t(12)});
  tm::add_input(g, "k", {std::string("b"), std::string("l"), int64_t(12)});
  tm::add_input(g, "v", {std::string("b"), std::string("lv"), int64_t(12)});  // may differ: the run fails
  for (auto [name, dims] : {std::pair<const char*, std::vector<int64_t>>{"split", {0, 0, 3, 4}}, {"merge", {0, 0, 12}}}) {
    onnx::TensorProto* t = g.add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(int64_t(dims.size()));
    for (int64_t d : dims) t->add_int64_data(d);
  }
  tm::add_initializer(g, "sqrt_d", {}, {2.f});
  for (const char* x : {"q", "k", "v"}) {
    const std::string s = x;
    tm::add_node(g, "Reshape", s + "_split", {s, "split"}, {s + "_split"});
    tm::set_ints(tm::add_node(g, "Transpose", s + "_heads", {s + "_split"}, {s + "_heads"}), "perm",
                 s == "k" ? std::vector<int64_t>{0, 2, 3, 1} : std::vector<int64_t>{0, 2, 1, 3});
  }
  tm::add_node(g, "MatMul", "qk", {"q_heads", "k_heads"}, {"scores"});
  tm::add_node(g, "Div", "scale", {"scores", "sqrt_d"}, {"scaled"});
  std::string logits = "scaled";
  if (mask == Mask::kPadding) tm::add_input(g, "mask", {std::string("b"), int64_t(1), int64_t(1), std::string("l")});
  if (mask == Mask::kPerQuery) tm::add_initializer(g, "mask", {7, 5}, random_floats(35, 26, -3, 0));
  if (mask != Mask::kNone) tm::add_node(g, "Add", "mask_add", {"mask", "scaled"}, {logits = "masked"});
  tm::add_node(g, "Softmax", "softmax", {logits}, {"probs"});
  tm::add_node(g, "MatMul", "context", {"probs", "v_heads"}, {"context"});
  tm::set_ints(tm::add_node(g, "Transpose", "merge_heads", {"context"}, {"merged"}), "perm", {0, 2, 1, 3});
  tm::add_node(g, "Reshape", "merge", {"merged", "merge"}, {"y"});
  tm::add_output(g, "y", {std::string("b"), int64_t(7), int64_t(12)});
  return model;
}

TEST(OnednnFusion, AttentionWrittenOpByOpRunsAsOneKernel) {
  for (Mask mask : {Mask::kNone, Mask::kPadding, Mask::kPerQuery}) {
    const onnx::ModelProto model = exported_attention(mask);
    for (int64_t batch : {2, 3}) {
      const size_t q = size_t(batch * 7 * 12), kv = size_t(batch * 5 * 12);
      std::vector<Feed> feeds = {{"q", {batch, 7, 12}, random_floats(q, 20, -2, 2)},
                                 {"k", {batch, 5, 12}, random_floats(kv, 21, -2, 2)},
                                 {"v", {batch, 5, 12}, random_floats(kv, 22)}};
      if (mask == Mask::kPadding) {  // the last key of the first sequence padded
        std::vector<float> m(size_t(batch * 5), 0.f);
        m[4] = -10000.f;
        feeds.push_back({"mask", {batch, 1, 1, 5}, m});
      }
      std::string report = expect_same_as_cpu(model, feeds, "attention");
      EXPECT_EQ(node_device(report, "merge_attention"), "onednn") << report;
      EXPECT_EQ(node_device(report, "softmax"), "") << report;  // fused away
      EXPECT_EQ(node_device(report, "mask_add"), "") << report;
    }
  }
  const onnx::ModelProto model = exported_attention();
  onyx::Env env;
  onyx::Session session = make_session(env, model, onednn_then_cpu());
  onyx::Tensor q = onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, {1, 7, 12}, random_floats(84, 23));
  onyx::Tensor k = onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, {1, 5, 12}, random_floats(60, 24));
  onyx::Tensor v = onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, {1, 6, 12}, random_floats(72, 25));
  try {
    session.run({{"q", &q}, {"k", &k}, {"v", &v}});
    ADD_FAILURE() << "keys and values of different lengths must fail the run";
  } catch (const onyx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("MultiHeadAttention"), std::string::npos) << e.what();
  }
}

// An intermediate another node (or the caller) reads cannot be fused away.
TEST(OnednnFusion, SharedIntermediateIsNotFused) {
  onnx::ModelProto model = tm::new_model("shared");
  onnx::GraphProto& g = *model.mutable_graph();
  tm::add_input(g, "x", {int64_t(4), int64_t(8)});
  tm::add_initializer(g, "w", {8, 6}, random_floats(48, 8));
  tm::add_node(g, "MatMul", "matmul", {"x", "w"}, {"m"});
  tm::add_node(g, "Relu", "relu", {"m"}, {"y"});
  tm::add_output(g, "y", {int64_t(4), int64_t(6)});
  tm::add_output(g, "m", {int64_t(4), int64_t(6)});
  std::string report = expect_same_as_cpu(model, {{"x", {4, 8}, random_floats(32, 9)}}, "shared intermediate");
  EXPECT_EQ(node_fused_group(report, "matmul"), 0) << report;
  EXPECT_EQ(node_device(report, "matmul"), "onednn");
  EXPECT_EQ(node_device(report, "relu"), "onednn");
}

// Shapes that only turn out wrong at run time give an error, not a crash.
TEST(OnednnFusion, MismatchedRunTimeShapesAreAnError) {
  onnx::ModelProto model = tm::new_model("matmul");
  onnx::GraphProto& g = *model.mutable_graph();
  tm::add_input(g, "x", {int64_t(2), std::string("k")});
  tm::add_initializer(g, "w", {4, 3}, random_floats(12, 13));
  tm::add_node(g, "MatMul", "matmul", {"x", "w"}, {"y"});
  tm::add_output(g, "y", {int64_t(2), int64_t(3)});
  onyx::Env env;
  onyx::Session session = make_session(env, model, onednn_then_cpu());
  EXPECT_EQ(node_device(session.partition_report(), "matmul"), "onednn");
  onyx::Tensor bad = onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, {2, 5}, random_floats(10, 14));
  EXPECT_THROW(session.run({{"x", &bad}}), onyx::Error);
  onyx::Tensor good = onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, {2, 4}, random_floats(8, 15));
  EXPECT_EQ(session.run({{"x", &good}})[0].shape(), (std::vector<int64_t>{2, 3}));
}

// A node oneDNN cannot run is declined with a reason; under policy "fail"
// session creation names it, under "allow" it runs on the CPU provider.
TEST(OnednnFusion, UnsupportedNodeIsDeclinedWithReason) {
  onnx::ModelProto model = tm::new_model("maxpool_indices");
  onnx::GraphProto& g = *model.mutable_graph();
  tm::add_input(g, "x", {int64_t(1), int64_t(1), int64_t(4), int64_t(4)});
  tm::set_ints(tm::add_node(g, "MaxPool", "pool", {"x"}, {"y", "indices"}), "kernel_shape", {2, 2});
  tm::add_output(g, "y", {int64_t(1), int64_t(1), int64_t(3), int64_t(3)});
  onnx::ValueInfoProto* indices = g.add_output();
  indices->set_name("indices");
  indices->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
  onyx::Env env;
  onyx::SessionOptions strict;
  strict.provider("onednn").provider("cpu").fallback(ONYX_FALLBACK_FAIL);
  try {
    make_session(env, model, strict);
    ADD_FAILURE() << "session creation should fail under fallback policy 'fail'";
  } catch (const onyx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("Indices"), std::string::npos) << e.what();
  }
  onyx::Session session = make_session(env, model, onednn_then_cpu());
  EXPECT_EQ(node_device(session.partition_report(), "pool"), "cpu");
}

}  // namespace
}  // namespace onyx::onednn_test
