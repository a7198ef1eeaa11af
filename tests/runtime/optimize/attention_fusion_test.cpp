// The attention fusion (runtime/optimize/attention_fusion.cpp): the forms
// exporters write become one com.microsoft MultiHeadAttention with the
// right heads and scale; graphs that differ in meaning stay as written.
// The rewrite is checked alone (fake provider ranks), then on the CPU
// provider: the fused node's outputs against the graph run as written.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "ir/onnx_import.h"
#include "model_builder.h"
#include "optimize/cpu_session.h"
#include "optimize/graph_optimizer.h"

namespace onyx::runtime {
namespace {

namespace pb = ONNX_NAMESPACE;
using testing::ModelBuilder;

constexpr int64_t kHeads = 3, kSize = 4, kWidth = kHeads * kSize;

struct AttentionForm {
  int64_t opset = 17;
  std::vector<int64_t> split = {0, 0, kHeads, kSize};  // the head-split Reshape's shape
  std::vector<int64_t> merge = {0, 0, kWidth};         // the head-merge Reshape's shape
  int64_t batch = 2;                                   // -1: symbolic
  bool key_in_two_steps = false;  // Transpose [0, 2, 1, 3] then [0, 1, 3, 2]
  std::string scale_op = "Div";   // "Div", "Mul" (constant first), or "" (none)
  float scale_constant = 2.f;
  bool scale_per_key = false;  // divided by a vector, not a scalar
  int64_t softmax_axis = -1;
  bool scores_is_output = false;  // an intermediate the caller reads
  bool mask = false;              // an Add of a mask before the Softmax
  std::vector<int64_t> mask_dims = {5};
  bool mask_first = false;  // Add(mask, scores)
  bool mask_before_scale = false;
  std::string mask_name() const { return mask_dims.size() == 4 ? "mask4" : "mask"; }
};

void shape_constant(ModelBuilder& mb, const std::string& name, const std::vector<int64_t>& v) {
  auto* t = mb.proto().mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(pb::TensorProto::INT64);
  t->add_dims(int64_t(v.size()));
  for (int64_t x : v) t->add_int64_data(x);
}

std::string attention_model(const AttentionForm& f) {
  ModelBuilder mb(f.opset);
  const std::vector<int64_t> dims = {f.batch, 5, kWidth};
  mb.input("q", dims).input("k", dims).input("v", dims);
  mb.output("y", f.merge.size() == 3 ? dims : std::vector<int64_t>{f.batch, 5 * kWidth});
  if (f.scores_is_output) mb.output("scaled", {f.batch, kHeads, 5, 5});
  shape_constant(mb, "split", f.split);
  shape_constant(mb, "merge", f.merge);
  if (f.scale_per_key) mb.initializer("c", {5}, {1, 2, 3, 4, 5});
  else mb.initializer("c", {}, {f.scale_constant});
  if (f.mask_dims.size() == 4) {
    mb.input("mask4", f.mask_dims);
  } else {
    int64_t n = 1;
    for (int64_t d : f.mask_dims) n *= d;
    mb.initializer("mask", f.mask_dims, std::vector<float>(size_t(n), -1.f));
  }
  for (const char* x : {"q", "k", "v"}) {
    const std::string s = std::string(x);
    mb.node("Reshape", {s, "split"}, {s + "_split"}, s + "_split");
    if (s == "k" && !f.key_in_two_steps) {
      mb.node("Transpose", {"k_split"}, {"k_heads"}, "k_heads");
      attr_ints(mb, "perm", {0, 2, 3, 1});
      continue;
    }
    mb.node("Transpose", {s + "_split"}, {s + "_heads"}, s + "_heads");
    attr_ints(mb, "perm", {0, 2, 1, 3});
  }
  std::string kt = "k_heads";
  if (f.key_in_two_steps) {
    mb.node("Transpose", {"k_heads"}, {"k_t"}, "k_t");
    attr_ints(mb, "perm", {0, 1, 3, 2});
    kt = "k_t";
  }
  mb.node("MatMul", {"q_heads", kt}, {"scores"}, "scores");
  std::string scaled = "scores";
  auto add_mask = [&] {
    std::vector<std::string> in = {scaled, f.mask_name()};
    if (f.mask_first) std::swap(in[0], in[1]);
    mb.node("Add", in, {"masked"}, "mask_add");
    scaled = "masked";
  };
  if (f.mask && f.mask_before_scale) add_mask();
  if (f.scale_op == "Div") mb.node("Div", {scaled, "c"}, {"scaled"}, "scale"), scaled = "scaled";
  if (f.scale_op == "Mul") mb.node("Mul", {"c", scaled}, {"scaled"}, "scale"), scaled = "scaled";
  if (f.mask && !f.mask_before_scale) add_mask();
  mb.node("Softmax", {scaled}, {"probs"}, "softmax");
  if (f.softmax_axis != -1 || f.opset < 13) attr_int(mb, "axis", f.softmax_axis);
  mb.node("MatMul", {"probs", "v_heads"}, {"context"}, "context");
  mb.node("Transpose", {"context"}, {"merged_heads"}, "merge_heads");
  attr_ints(mb, "perm", {0, 2, 1, 3});
  mb.node("Reshape", {"merged_heads", "merge"}, {"y"}, "merge");
  return mb.bytes();
}

const ProviderRank kAll = [](const ir::Graph&, const ir::Node&) { return 0; };

// The optimized graph of `f` with every node claimed by one provider.
ir::Model optimized(const AttentionForm& f, OptimizationReport* report, const ProviderRank& providers = kAll) {
  const std::string bytes = attention_model(f);
  auto m = ir::load_model_from_bytes(bytes.data(), bytes.size(), "");
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  ir::Model model = std::move(m).value();
  EXPECT_TRUE(optimize_graph(*model.graph, GraphOptimization::kAll, report, providers).ok());
  return model;
}

// Checks `f` fuses into one MultiHeadAttention(q, k, v) with `scale`.
void expect_fused(const AttentionForm& f, float scale) {
  OptimizationReport report;
  ir::Model m = optimized(f, &report);
  const ir::Graph& g = *m.graph;
  ASSERT_EQ(g.nodes.size(), 1u);
  const ir::Node& n = g.nodes[0];
  EXPECT_EQ(n.domain, "com.microsoft");
  EXPECT_EQ(n.op_type, "MultiHeadAttention");
  ASSERT_EQ(n.inputs.size(), f.mask ? 6u : 3u);
  if (f.mask) {  // attention_bias (input 5); bias and key_padding_mask omitted
    EXPECT_EQ(n.inputs[3], -1);
    EXPECT_EQ(n.inputs[4], -1);
    EXPECT_EQ(g.values[size_t(n.inputs[5])].name, f.mask_name());
  }
  EXPECT_EQ(g.values[size_t(n.inputs[0])].name, "q");
  EXPECT_EQ(g.values[size_t(n.inputs[1])].name, "k");
  EXPECT_EQ(g.values[size_t(n.inputs[2])].name, "v");
  ASSERT_EQ(n.outputs.size(), 1u);
  EXPECT_EQ(g.values[size_t(n.outputs[0])].name, "y");
  EXPECT_EQ(n.attr_int("num_heads", 0), kHeads);
  ASSERT_NE(n.attr("scale"), nullptr);
  EXPECT_FLOAT_EQ(n.attr("scale")->f, scale);
  EXPECT_EQ(report.fused_patterns["MultiHeadAttention"], 1);
  EXPECT_EQ(g.opset("com.microsoft"), 1);
}

// Checks `f` keeps its Softmax (nothing fused).
void expect_unfused(const AttentionForm& f) {
  OptimizationReport report;
  ir::Model m = optimized(f, &report);
  EXPECT_EQ(report.fused_patterns["MultiHeadAttention"], 0);
  bool softmax = false;
  for (const ir::Node& n : m.graph->nodes) softmax |= n.op_type == "Softmax";
  EXPECT_TRUE(softmax);
}

TEST(AttentionFusion, ExporterFormsBecomeMultiHeadAttention) {
  AttentionForm f;
  expect_fused(f, 0.5f);  // Div by 2
  f.key_in_two_steps = true;
  expect_fused(f, 0.5f);
  f.scale_op = "Mul";
  f.scale_constant = 0.25f;
  expect_fused(f, 0.25f);
  f.scale_op = "";
  expect_fused(f, 1.f);
  // Literal sizes where the input's dims are known, -1 for the rest.
  AttentionForm literal;
  literal.split = {2, -1, kHeads, kSize};
  literal.merge = {2, 5, -1};
  expect_fused(literal, 0.5f);
  literal.split = {0, 0, -1, kSize};
  expect_fused(literal, 0.5f);
  // A symbolic batch: 0 copies it, whatever it is.
  AttentionForm symbolic;
  symbolic.batch = -1;
  expect_fused(symbolic, 0.5f);
  // An additive mask after the scale: attention_bias. BERT's [B, 1, 1, L]
  // with symbolic dims, checked when the node runs.
  AttentionForm masked;
  masked.mask = true;
  expect_fused(masked, 0.5f);
  masked.mask_first = true;
  masked.mask_dims = {-1, 1, 1, -1};
  expect_fused(masked, 0.5f);
  masked.scale_op = "";
  expect_fused(masked, 1.f);
  // Opset 11: Softmax's axis 3 of a rank-4 input flattens nothing after it.
  AttentionForm old;
  old.opset = 11;
  old.softmax_axis = 3;
  expect_fused(old, 0.5f);
}

TEST(AttentionFusion, GraphsThatMeanSomethingElseStayAsWritten) {
  AttentionForm f;
  f.scores_is_output = true;  // the caller reads the scaled scores
  expect_unfused(f);
  f = {};
  f.mask = true;
  f.mask_before_scale = true;  // (Q K^T + mask) / c scales the mask too
  expect_unfused(f);
  f = {};
  f.softmax_axis = 2;  // softmax over the queries
  expect_unfused(f);
  f = {};
  f.opset = 11;  // Softmax's default axis 1 before opset 13: over heads, queries and keys
  f.softmax_axis = 1;
  expect_unfused(f);
  f = {};
  f.scale_per_key = true;  // each key's score scaled differently
  expect_unfused(f);
  f = {};
  f.batch = -1;
  f.split = {2, 0, kHeads, kSize};  // a literal batch where the input's is symbolic
  expect_unfused(f);
  f = {};
  f.merge = {0, -1};  // merged to rank 2
  expect_unfused(f);
}

TEST(AttentionFusion, NothingIsFusedThatNoProviderClaimsFirst) {
  const ProviderRank none = [](const ir::Graph&, const ir::Node&) { return -1; };
  const ProviderRank later = [](const ir::Graph&, const ir::Node& n) {
    return n.op_type == "MultiHeadAttention" ? 1 : 0;
  };
  for (const ProviderRank* providers : {&none, &later}) {
    OptimizationReport report;
    ir::Model m = optimized(AttentionForm{}, &report, *providers);
    EXPECT_EQ(report.fused_patterns["MultiHeadAttention"], 0);
    EXPECT_EQ(m.graph->nodes.size(), 12u);
  }
}

// On the CPU provider, which claims MultiHeadAttention: the fused node
// computes what the graph as written computes (a padding mask included),
// within float32 rounding: both sum 4-term dot products and 5-term softmax
// and context sums in different orders, ~1e-7 relative to outputs of ~1.
TEST(AttentionFusion, FusedNodeComputesWhatTheGraphDoes) {
  ProviderRegistry registry;
  registry.add_search_dir(ONYX_PROVIDER_DIR);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uniform(-2, 2);
  auto random_tensor = [&](const Shape& shape) {
    Tensor t = Tensor::allocate(ONYX_DTYPE_FLOAT32, shape);
    for (int64_t i = 0; i < t.size(); ++i) t.data_as<float>()[i] = uniform(rng);
    return t;
  };
  for (bool mask : {false, true}) {
    AttentionForm f;
    f.batch = -1;
    f.mask = mask;
    if (mask) f.mask_dims = {-1, 1, 1, 5};
    const std::string bytes = attention_model(f);
    std::vector<std::pair<std::string, Tensor>> feed = {
        {"q", random_tensor({3, 5, kWidth})}, {"k", random_tensor({3, 5, kWidth})}, {"v", random_tensor({3, 5, kWidth})}};
    if (mask) {
      Tensor m = Tensor::allocate(ONYX_DTYPE_FLOAT32, {3, 1, 1, 5});
      for (int64_t i = 0; i < m.size(); ++i) m.data_as<float>()[i] = i % 5 == 4 ? -10000.f : 0.f;
      feed.emplace_back("mask4", m);
    }
    std::vector<Tensor> results;
    for (GraphOptimization level : {GraphOptimization::kAll, GraphOptimization::kOff}) {
      std::unique_ptr<Session> session = cpu_session(registry, bytes, level);
      ASSERT_NE(session, nullptr);
      EXPECT_EQ(session->partition_report().optimization.fused_patterns.count("MultiHeadAttention"),
                level == GraphOptimization::kAll ? 1u : 0u);
      auto out = session->run(feed);
      ASSERT_TRUE(out.ok()) << out.status().to_string();
      results.push_back(out.value()[0]);
    }
    ASSERT_EQ(results[0].shape(), results[1].shape());
    for (int64_t i = 0; i < results[0].size(); ++i)
      ASSERT_NEAR(results[0].data_as<float>()[i], results[1].data_as<float>()[i], 1e-5) << "mask " << mask << " element " << i;
  }
}

}  // namespace
}  // namespace onyx::runtime
