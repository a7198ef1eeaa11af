// Channels-last layout for quantized convolution chains
// (runtime/optimize/channels_last.cpp): which nodes go channels-last, where
// the Transposes go, and that the rewritten graph's shapes are the
// original's. Which provider claims what is a ProviderRank here; the
// oneDNN provider's tests run such graphs (tests/providers/onednn).
#include <gtest/gtest.h>

#include "ir/onnx_import.h"
#include "ir/shape_inference.h"
#include "model_builder.h"
#include "optimize/graph_optimizer.h"

namespace onyx::runtime {
namespace {

namespace pb = ONNX_NAMESPACE;
using testing::ModelBuilder;

constexpr int kU8 = pb::TensorProto::UINT8, kI8 = pb::TensorProto::INT8;

void scalar(ModelBuilder& b, const std::string& name, int dtype, double v, std::vector<int64_t> dims = {}) {
  auto* t = b.proto().mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(dtype);
  int64_t count = 1;
  for (int64_t d : dims) t->add_dims(d), count *= d;
  for (int64_t i = 0; i < count; ++i) {
    if (dtype == pb::TensorProto::FLOAT) t->add_float_data(float(v));
    else t->add_int32_data(int32_t(v));
  }
}

// x [N, 8, 6, 6] -> QLinearConv c1 -> QLinearConv c2 -> QLinearAdd(c1, c2) = a
// -> QLinearGlobalAveragePool = g; c1 is also read by a MaxPool (NCHW only)
// = p; graph outputs g, p, a.
ir::Model conv_chain() {
  ModelBuilder mb;
  auto* ms = mb.proto().add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(1);
  mb.input("x", {-1, 8, 6, 6}, kU8).output("g", {-1, 8, 1, 1}, kU8).output("p", {-1, 8, 3, 3}, kU8);
  mb.output("a", {-1, 8, 6, 6}, kU8);
  scalar(mb, "s", pb::TensorProto::FLOAT, 0.05);
  scalar(mb, "z", kU8, 128);
  scalar(mb, "w", kI8, 3, {8, 8, 3, 3});
  scalar(mb, "ws", pb::TensorProto::FLOAT, 0.01, {8});
  scalar(mb, "wz", kI8, 0, {8});
  for (const char* c : {"c1", "c2"}) {
    mb.node("QLinearConv", {c == std::string("c1") ? "x" : "c1", "s", "z", "w", "ws", "wz", "s", "z"}, {c}, c);
    attr_ints(mb, "pads", {1, 1, 1, 1});
  }
  mb.node("QLinearAdd", {"c1", "s", "z", "c2", "s", "z", "s", "z"}, {"a"}, "add", "com.microsoft");
  mb.node("QLinearGlobalAveragePool", {"a", "s", "z", "s", "z"}, {"g"}, "pool", "com.microsoft");
  attr_int(mb, "channels_last", 0);
  mb.node("MaxPool", {"c1"}, {"p"}, "max");
  attr_ints(mb, "kernel_shape", {2, 2});
  attr_ints(mb, "strides", {2, 2});
  const std::string bytes = mb.bytes();
  auto model = ir::load_model_from_bytes(bytes.data(), bytes.size(), "");
  EXPECT_TRUE(model.ok()) << model.status().to_string();
  return std::move(model).value();
}

int count_op(const ir::Graph& g, const std::string& op) {
  int n = 0;
  for (const ir::Node& node : g.nodes) n += node.op_type == op;
  return n;
}

const ir::Node& node_named(const ir::Graph& g, const std::string& name) {
  for (const ir::Node& n : g.nodes)
    if (n.name == name) return n;
  ADD_FAILURE() << "no node " << name;
  return g.nodes.front();
}

bool is_channels_last_form(const ir::Node& n) {
  return n.domain == "com.microsoft" && n.attr_int("channels_last", 0) == 1;
}

TEST(ChannelsLast, ConvChainRunsChannelsLastWithTransposesOnlyAtItsEdges) {
  ir::Model model = conv_chain();
  ir::Graph& g = *model.graph;
  OptimizationReport report;
  auto claims_all = [](const ir::Graph&, const ir::Node&) { return 0; };
  ASSERT_TRUE(optimize_graph(g, GraphOptimization::kAll, &report, claims_all).ok());
  EXPECT_EQ(report.nodes_channels_last, 4);  // both convolutions, the Add, the pool
  EXPECT_TRUE(is_channels_last_form(node_named(g, "c1")));
  EXPECT_TRUE(is_channels_last_form(node_named(g, "c2")));
  EXPECT_TRUE(is_channels_last_form(node_named(g, "pool")));
  // x in; c1 back for the MaxPool; a back (a graph output); g back.
  EXPECT_EQ(count_op(g, "Transpose"), 4);
  std::vector<std::string> outputs;
  for (int v : g.outputs) outputs.push_back(g.values[size_t(v)].name);
  EXPECT_EQ(outputs, (std::vector<std::string>{"g", "p", "a"}));
  // The rewritten graph's shapes, inferred afresh for a batch of 2: the original's.
  ASSERT_TRUE(ir::infer_shapes(g, {{"x", {2, 8, 6, 6}}}).ok());
  const std::vector<Shape> want = {{2, 8, 1, 1}, {2, 8, 3, 3}, {2, 8, 6, 6}};
  for (size_t k = 0; k < g.outputs.size(); ++k) EXPECT_EQ(g.values[size_t(g.outputs[k])].dims, want[k]) << outputs[k];
  EXPECT_EQ(g.values[size_t(node_named(g, "c2").outputs[0])].dims, (Shape{2, 6, 6, 8}));
}

// A provider that would run the channels-last forms only after the one
// running the NCHW nodes: nothing moves.
TEST(ChannelsLast, NothingChangesWhereTheChannelsLastFormRanksLower) {
  ir::Model model = conv_chain();
  ir::Graph& g = *model.graph;
  OptimizationReport report;
  auto ranks = [](const ir::Graph&, const ir::Node& n) { return is_channels_last_form(n) ? 1 : 0; };
  ASSERT_TRUE(optimize_graph(g, GraphOptimization::kAll, &report, ranks).ok());
  EXPECT_EQ(report.nodes_channels_last, 0);
  EXPECT_EQ(count_op(g, "Transpose"), 0);
  EXPECT_EQ(node_named(g, "c1").attr_int("channels_last", 0), 0);
}

// No provider of the session runs the Transposes a region's edges need
// (a session of one provider without them): nothing moves.
TEST(ChannelsLast, NothingChangesWhereNoProviderRunsTheTransposes) {
  ir::Model model = conv_chain();
  ir::Graph& g = *model.graph;
  OptimizationReport report;
  auto ranks = [](const ir::Graph&, const ir::Node& n) { return n.op_type == "Transpose" ? -1 : 0; };
  ASSERT_TRUE(optimize_graph(g, GraphOptimization::kAll, &report, ranks).ok());
  EXPECT_EQ(report.nodes_channels_last, 0);
  EXPECT_EQ(count_op(g, "Transpose"), 0);
}

}  // namespace
}  // namespace onyx::runtime
