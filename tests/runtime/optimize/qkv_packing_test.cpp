// QKV packing (runtime/optimize/qkv_packing.cpp): the three projections of
// one input into a MultiHeadAttention become one product with the weights
// side by side per head, a Reshape and the attention on packed QKV; graphs
// where that would change the meaning stay as written. The rewrite alone
// (fake provider ranks), then on the CPU provider: the packed graph's
// outputs against the graph run as written.
#include <gtest/gtest.h>

#include <random>

#include "ir/onnx_import.h"
#include "model_builder.h"
#include "optimize/cpu_session.h"
#include "optimize/graph_optimizer.h"

namespace onyx::runtime {
namespace {

using testing::ModelBuilder;

constexpr int64_t kHeads = 3, kSize = 4, kWidth = kHeads * kSize, kIn = 5;

struct Form {
  bool bias[3] = {true, true, true};  // per projection: MatMul + Add of a bias, or MatMul alone
  bool cross = false;                 // k and v project another input (cross-attention)
  bool q_is_output = false;           // the caller reads Q too
  bool relu_on_v = false;             // V = Relu(X Wv + bv)
  bool weights_are_inputs = false;    // Wk is a graph input, not a constant
  bool mask = false;                  // an attention_bias input [B, 1, 1, S]
};

// Projection p's weight (r, c) and bias (c): distinct values, so that a
// misplaced column shows.
float weight(int p, int64_t r, int64_t c) { return float(p * 1000 + r * 37 + c) * 1e-3f - 0.5f; }
float bias_value(int p, int64_t c) { return float(p * 10 + c) * 0.01f; }

std::string model(const Form& f) {
  ModelBuilder mb(17);
  mb.opset("com.microsoft", 1);
  mb.input("x", {-1, 6, kIn});
  if (f.cross) mb.input("x2", {-1, 6, kIn});
  if (f.mask) mb.input("mask", {-1, 1, 1, 6});
  mb.output("y", {-1, 6, kWidth});
  if (f.q_is_output) mb.output("q", {-1, 6, kWidth});
  const char* names[3] = {"q", "k", "v"};
  for (int p = 0; p < 3; ++p) {
    const std::string n = names[p], w = "w" + n;
    std::vector<float> values;
    for (int64_t r = 0; r < kIn; ++r)
      for (int64_t c = 0; c < kWidth; ++c) values.push_back(weight(p, r, c));
    if (f.weights_are_inputs && p == 1) mb.input(w, {kIn, kWidth});
    else mb.initializer(w, {kIn, kWidth}, values);
    const std::string x = f.cross && p > 0 ? "x2" : "x";
    std::string out = n;
    if (f.bias[p] || (f.relu_on_v && p == 2)) out = n + "_mm";
    mb.node("MatMul", {x, w}, {out}, n + "_mm");
    if (f.bias[p]) {
      std::vector<float> b;
      for (int64_t c = 0; c < kWidth; ++c) b.push_back(bias_value(p, c));
      mb.initializer("b" + n, {kWidth}, b);
      const std::string sum = f.relu_on_v && p == 2 ? n + "_sum" : n;
      mb.node("Add", {out, "b" + n}, {sum}, n + "_add");
      if (f.relu_on_v && p == 2) mb.node("Relu", {sum}, {n}, "v_relu");
    }
  }
  std::vector<std::string> in = {"q", "k", "v"};
  if (f.mask) in.insert(in.end(), {"", "", "mask"});
  mb.node("MultiHeadAttention", in, {"y"}, "attention", "com.microsoft");
  attr_int(mb, "num_heads", kHeads);
  return mb.bytes();
}

const ProviderRank kAll = [](const ir::Graph&, const ir::Node&) { return 0; };

ir::Model optimized(const Form& f, OptimizationReport* report, const ProviderRank& providers = kAll) {
  const std::string bytes = model(f);
  auto m = ir::load_model_from_bytes(bytes.data(), bytes.size(), "");
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  ir::Model out = std::move(m).value();
  EXPECT_TRUE(optimize_graph(*out.graph, GraphOptimization::kAll, report, providers).ok());
  return out;
}

const ir::Node* find(const ir::Graph& g, const std::string& op) {
  for (const ir::Node& n : g.nodes)
    if (n.op_type == op) return &n;
  return nullptr;
}

void expect_packed(const Form& f) {
  OptimizationReport report;
  ir::Model m = optimized(f, &report);
  const ir::Graph& g = *m.graph;
  EXPECT_EQ(report.fused_patterns["packed QKV"], 1);
  ASSERT_EQ(g.nodes.size(), 3u);
  const bool any_bias = f.bias[0] || f.bias[1] || f.bias[2];
  const ir::Node& product = g.nodes[0];
  EXPECT_EQ(product.op_type, any_bias ? "MatMulBias" : "MatMul");
  ASSERT_EQ(product.inputs.size(), any_bias ? 3u : 2u);
  EXPECT_EQ(g.values[size_t(product.inputs[0])].name, "x");
  // Column block (h, j) of the weights and bias is projection j's head h.
  const Tensor& w = *g.values[size_t(product.inputs[1])].constant;
  ASSERT_EQ(w.shape(), (Shape{kIn, 3 * kWidth}));
  for (int64_t h = 0; h < kHeads; ++h)
    for (int j = 0; j < 3; ++j)
      for (int64_t c = 0; c < kSize; ++c) {
        const int64_t col = (h * 3 + j) * kSize + c, from = h * kSize + c;
        for (int64_t r = 0; r < kIn; ++r)
          ASSERT_EQ(w.data_as<float>()[r * 3 * kWidth + col], weight(j, r, from)) << "row " << r << " column " << col;
        if (any_bias) {
          ASSERT_EQ(g.values[size_t(product.inputs[2])].constant->data_as<float>()[col],
                    f.bias[j] ? bias_value(j, from) : 0.0f);
        }
      }
  const ir::Node& reshape = g.nodes[1];
  EXPECT_EQ(reshape.op_type, "Reshape");
  EXPECT_EQ(reshape.inputs[0], product.outputs[0]);
  const Tensor& shape = *g.values[size_t(reshape.inputs[1])].constant;
  EXPECT_EQ(std::vector<int64_t>(shape.data_as<int64_t>(), shape.data_as<int64_t>() + shape.size()),
            (std::vector<int64_t>{0, 0, kHeads, 3, kSize}));
  const ir::Node& attention = g.nodes[2];
  EXPECT_EQ(attention.op_type, "MultiHeadAttention");
  EXPECT_EQ(attention.attr_int("num_heads", 0), kHeads);
  ASSERT_GE(attention.inputs.size(), 3u);
  EXPECT_EQ(attention.inputs[0], reshape.outputs[0]);
  EXPECT_EQ(attention.inputs[1], -1);
  EXPECT_EQ(attention.inputs[2], -1);
  if (f.mask) {
    EXPECT_EQ(g.values[size_t(attention.inputs[5])].name, "mask");
  }
  EXPECT_EQ(g.values[size_t(attention.outputs[0])].name, "y");
}

void expect_unpacked(const Form& f, const ProviderRank& providers = kAll) {
  OptimizationReport report;
  ir::Model m = optimized(f, &report, providers);
  EXPECT_EQ(report.fused_patterns["packed QKV"], 0);
  EXPECT_EQ(find(*m.graph, "Reshape"), nullptr);
}

TEST(QkvPacking, SelfAttentionProjectionsArePacked) {
  expect_packed(Form{});
  Form no_bias;
  no_bias.bias[0] = no_bias.bias[1] = no_bias.bias[2] = false;
  expect_packed(no_bias);
  Form some_bias;
  some_bias.bias[0] = false;  // its block of the packed bias is zeros
  expect_packed(some_bias);
  Form masked;
  masked.mask = true;
  expect_packed(masked);
}

TEST(QkvPacking, OtherGraphsStayAsWritten) {
  Form f;
  f.cross = true;
  expect_unpacked(f);
  f = {};
  f.q_is_output = true;
  expect_unpacked(f);
  f = {};
  f.relu_on_v = true;
  expect_unpacked(f);
  f = {};
  f.weights_are_inputs = true;
  expect_unpacked(f);
  // Not when a provider that ranks first would not run the packed form.
  const ProviderRank no_packed = [](const ir::Graph&, const ir::Node& n) {
    return n.op_type == "MultiHeadAttention" && n.inputs.size() > 1 && n.inputs[1] < 0 ? 1 : 0;
  };
  expect_unpacked(Form{}, no_packed);
}

// On the CPU provider: the packed graph computes what the graph as written
// computes. The products sum the same terms in the same order (one GEMM of
// a wider B); the attention reads the same values with other strides: equal
// up to float32 rounding of reordered sums, 1e-5 on outputs of ~1.
TEST(QkvPacking, PackedGraphComputesWhatTheGraphDoes) {
  ProviderRegistry registry;
  registry.add_search_dir(ONYX_PROVIDER_DIR);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1, 1);
  for (bool mask : {false, true}) {
    Form f;
    f.mask = mask;
    f.bias[1] = false;
    const std::string bytes = model(f);
    Tensor x = Tensor::allocate(ONYX_DTYPE_FLOAT32, {2, 6, kIn});
    for (int64_t i = 0; i < x.size(); ++i) x.data_as<float>()[i] = uniform(rng);
    std::vector<std::pair<std::string, Tensor>> feed = {{"x", x}};
    if (mask) {
      Tensor m = Tensor::allocate(ONYX_DTYPE_FLOAT32, {2, 1, 1, 6});
      for (int64_t i = 0; i < m.size(); ++i) m.data_as<float>()[i] = i % 6 == 5 ? -10000.f : 0.f;
      feed.emplace_back("mask", m);
    }
    std::vector<Tensor> results;
    for (GraphOptimization level : {GraphOptimization::kAll, GraphOptimization::kOff}) {
      std::unique_ptr<Session> session = cpu_session(registry, bytes, level);
      ASSERT_NE(session, nullptr);
      EXPECT_EQ(session->partition_report().optimization.fused_patterns.count("packed QKV"),
                level == GraphOptimization::kAll ? 1u : 0u);
      auto out = session->run(feed);
      ASSERT_TRUE(out.ok()) << out.status().to_string();
      results.push_back(out.value()[0]);
    }
    ASSERT_EQ(results[0].shape(), (Shape{2, 6, kWidth}));
    ASSERT_EQ(results[0].shape(), results[1].shape());
    for (int64_t i = 0; i < results[0].size(); ++i)
      ASSERT_NEAR(results[0].data_as<float>()[i], results[1].data_as<float>()[i], 1e-5) << "mask " << mask << " element " << i;
  }
}

}  // namespace
}  // namespace onyx::runtime
