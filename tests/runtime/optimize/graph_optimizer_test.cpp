// The provider-neutral graph rewrites (runtime/optimize): each test builds a
// small model, checks what the optimized session's graph kept, and checks its
// outputs against a float64 reference computed here or against the same
// model run with optimization off.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "ir/onnx_import.h"
#include "model_builder.h"
#include "session/session.h"

namespace onyx::runtime {
namespace {

namespace pb = ONNX_NAMESPACE;
using testing::ModelBuilder;

// A Constant node holding an int64 or bool tensor.
void constant_node(ModelBuilder& b, const std::string& out, std::vector<int64_t> dims, const std::vector<int64_t>& v,
                   int dtype = pb::TensorProto::INT64) {
  b.node("Constant", {}, {out}, out + "_node");
  auto* a = last_node(b).add_attribute();
  a->set_name("value");
  a->set_type(pb::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(dtype);
  for (int64_t d : dims) a->mutable_t()->add_dims(d);
  for (int64_t x : v) {
    if (dtype == pb::TensorProto::INT64) a->mutable_t()->add_int64_data(x);
    else a->mutable_t()->add_int32_data(int32_t(x));
  }
}

std::vector<float> random_floats(size_t n, std::mt19937& rng, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

class GraphOptimizerTest : public ::testing::Test {
 protected:
  void SetUp() override { registry_.add_search_dir(ONYX_PROVIDER_DIR); }

  std::unique_ptr<Session> session(const std::string& bytes, GraphOptimization level) {
    auto model = ir::load_model_from_bytes(bytes.data(), bytes.size(), "");
    EXPECT_TRUE(model.ok()) << model.status().to_string();
    SessionOptions options;
    options.providers.push_back({"cpu", {}});
    options.fallback = FallbackPolicy::kFail;
    options.intra_op_threads = 1;
    options.graph_optimization = level;
    auto s = Session::create(registry_, std::move(model).value(), options);
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  static std::vector<std::string> ops(const Session& s) {
    std::vector<std::string> out;
    for (const ir::Node& n : s.graph().nodes) out.push_back(n.op_type);
    return out;
  }

  static Tensor run_one(Session& s, const std::string& name, const Tensor& x) {
    auto out = s.run({{name, x}});
    EXPECT_TRUE(out.ok()) << out.status().to_string();
    return out.ok() ? out.value()[0] : Tensor();
  }

  ProviderRegistry registry_;
};

// Conv (3x3, pads 1) -> BatchNormalization -> Relu, checked against float64.
TEST_F(GraphOptimizerTest, FoldsInferenceBatchNormIntoConv) {
  std::mt19937 rng(7);
  const int64_t C = 3, M = 4, H = 6, W = 5;
  const std::vector<float> w = random_floats(size_t(M * C * 9), rng, -1, 1), b = random_floats(size_t(M), rng, -1, 1);
  const std::vector<float> scale = random_floats(size_t(M), rng, 0.5f, 2), shift = random_floats(size_t(M), rng, -1, 1);
  const std::vector<float> mean = random_floats(size_t(M), rng, -1, 1), var = random_floats(size_t(M), rng, 0.1f, 3);
  const float eps = 1e-3f;
  ModelBuilder mb;
  mb.input("x", {1, C, H, W}).output("y", {1, M, H, W});
  mb.initializer("w", {M, C, 3, 3}, w).initializer("b", {M}, b).initializer("scale", {M}, scale);
  mb.initializer("shift", {M}, shift).initializer("mean", {M}, mean).initializer("var", {M}, var);
  mb.node("Conv", {"x", "w", "b"}, {"c"}, "conv");
  attr_ints(mb, "pads", {1, 1, 1, 1});
  mb.node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"n"}, "bn");
  attr_float(mb, "epsilon", eps);
  mb.node("Relu", {"n"}, {"y"}, "relu");

  auto folded = session(mb.bytes(), GraphOptimization::kBasic);
  auto plain = session(mb.bytes(), GraphOptimization::kOff);
  ASSERT_TRUE(folded && plain);
  // The folded Conv then takes the Relu in too (activation_fusion.cpp).
  EXPECT_EQ(ops(*folded), (std::vector<std::string>{"FusedConv"}));
  EXPECT_EQ(ops(*plain), (std::vector<std::string>{"Conv", "BatchNormalization", "Relu"}));
  EXPECT_EQ(folded->partition_report().optimization.batchnorms_folded, 1);

  Tensor x = Tensor::allocate(ONYX_DTYPE_FLOAT32, {1, C, H, W});
  const std::vector<float> xs = random_floats(size_t(C * H * W), rng, -2, 2);
  std::copy(xs.begin(), xs.end(), x.data_as<float>());
  Tensor got = run_one(*folded, "x", x), want_plain = run_one(*plain, "x", x);
  ASSERT_EQ(got.shape(), (Shape{1, M, H, W}));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t i = 0; i < H; ++i)
      for (int64_t j = 0; j < W; ++j) {
        double acc = b[size_t(m)], magnitude = std::abs(b[size_t(m)]);
        for (int64_t c = 0; c < C; ++c)
          for (int64_t di = 0; di < 3; ++di)
            for (int64_t dj = 0; dj < 3; ++dj) {
              const int64_t ii = i + di - 1, jj = j + dj - 1;
              if (ii < 0 || ii >= H || jj < 0 || jj >= W) continue;
              const double term = double(xs[size_t((c * H + ii) * W + jj)]) * w[size_t(((m * C + c) * 3 + di) * 3 + dj)];
              acc += term;
              magnitude += std::abs(term);
            }
        const double f = scale[size_t(m)] / std::sqrt(double(var[size_t(m)]) + eps);
        const double want = std::max(0.0, (acc - mean[size_t(m)]) * f + shift[size_t(m)]);
        // float32 accumulation over 28 terms: a few ulps of the terms' magnitude, scaled by f.
        const double tolerance = 1e-6 * (magnitude + std::abs(mean[size_t(m)])) * std::abs(f) + 1e-6;
        const size_t k = size_t((m * H + i) * W + j);
        EXPECT_NEAR(got.data_as<float>()[k], want, tolerance) << "m=" << m << " i=" << i << " j=" << j;
        EXPECT_NEAR(want_plain.data_as<float>()[k], want, tolerance);
      }
}

// Folding is refused where it would change the meaning: BatchNormalization
// in training mode, or a parameter the caller may override (a graph input
// with an initializer default).
TEST_F(GraphOptimizerTest, KeepsBatchNormThatCannotBeFolded) {
  for (int variant = 0; variant < 2; ++variant) {
    ModelBuilder mb(15);
    mb.input("x", {1, 2, 3, 3}).output("y", {1, 2, 3, 3});
    if (variant == 1) mb.input("mean", {2});
    mb.initializer("w", {2, 2, 1, 1}, {1, 2, 3, 4}).initializer("scale", {2}, {1, 1}).initializer("shift", {2}, {0, 0});
    mb.initializer("mean", {2}, {0.5f, -0.5f}).initializer("var", {2}, {1, 1});
    mb.node("Conv", {"x", "w"}, {"c"}, "conv");
    if (variant == 0) {
      mb.node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"y", "rm", "rv"}, "bn");
      attr_int(mb, "training_mode", 1);
    } else {
      mb.node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"y"}, "bn");
    }
    auto s = session(mb.bytes(), GraphOptimization::kAll);
    ASSERT_TRUE(s);
    EXPECT_EQ(ops(*s), (std::vector<std::string>{"Conv", "BatchNormalization"})) << "variant " << variant;
    EXPECT_EQ(s->partition_report().optimization.batchnorms_folded, 0);
  }
}

// Constant nodes become initializers; with kAll the shape arithmetic that the
// declared input shape fixes (Shape -> Gather -> Unsqueeze -> Concat) goes too,
// leaving one Reshape.
TEST_F(GraphOptimizerTest, HoistsConstantsAndFoldedShapeArithmetic) {
  ModelBuilder mb;
  mb.input("x", {2, 3, 4}).output("y", {2, 12});
  constant_node(mb, "one", {}, {1});
  constant_node(mb, "minus_one", {1}, {-1});
  constant_node(mb, "axes", {1}, {0});
  mb.node("Shape", {"x"}, {"shape"}, "shape");
  mb.node("Gather", {"shape", "one"}, {"dim0"}, "gather");  // 3: not the batch
  mb.node("Sub", {"dim0", "one"}, {"dim0m1"}, "sub");        // 2
  mb.node("Unsqueeze", {"dim0m1", "axes"}, {"dim0v"}, "unsqueeze");
  mb.node("Concat", {"dim0v", "minus_one"}, {"target"}, "concat");
  attr_int(mb, "axis", 0);
  mb.node("Reshape", {"x", "target"}, {"y"}, "reshape");

  Tensor x = Tensor::allocate(ONYX_DTYPE_FLOAT32, {2, 3, 4});
  for (int i = 0; i < 24; ++i) x.data_as<float>()[i] = float(i) * 0.5f;
  auto all = session(mb.bytes(), GraphOptimization::kAll);
  auto basic = session(mb.bytes(), GraphOptimization::kBasic);
  ASSERT_TRUE(all && basic);
  EXPECT_EQ(ops(*all), (std::vector<std::string>{"Reshape"}));
  EXPECT_EQ(ops(*basic), (std::vector<std::string>{"Shape", "Gather", "Sub", "Unsqueeze", "Concat", "Reshape"}));
  EXPECT_EQ(basic->partition_report().optimization.constants_hoisted, 3);
  for (Session* s : {all.get(), basic.get()}) {
    Tensor y = run_one(*s, "x", x);
    ASSERT_EQ(y.shape(), (Shape{2, 12}));
    for (int i = 0; i < 24; ++i) EXPECT_EQ(y.data_as<float>()[i], float(i) * 0.5f);
  }
  // The folded shape relied on the declared [2, 3, 4]: another shape is refused, not misread.
  Tensor other = Tensor::allocate(ONYX_DTYPE_FLOAT32, {2, 4, 3});
  auto refused = all->run({{"x", other}});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("input 'x' has shape"), std::string::npos) << refused.status().to_string();
}

// Identity, Cast to the same type and inference Dropout are bypassed; the one
// whose output is a graph output stays, and so does a training Dropout.
TEST_F(GraphOptimizerTest, BypassesPassThroughNodesButNotGraphOutputs) {
  ModelBuilder mb;
  mb.input("x", {4}).output("y", {4}).output("z", {4}).output("d", {4}).output("mask", {4}, pb::TensorProto::BOOL);
  mb.node("Identity", {"x"}, {"i"}, "identity");
  mb.node("Cast", {"i"}, {"c"}, "cast");
  attr_int(mb, "to", pb::TensorProto::FLOAT);
  mb.node("Dropout", {"c"}, {"dr"}, "dropout");
  mb.node("Relu", {"dr"}, {"y"}, "relu");
  mb.node("Identity", {"y"}, {"z"}, "visible_identity");
  constant_node(mb, "training", {}, {1}, pb::TensorProto::BOOL);
  mb.initializer("ratio", {}, {0.0f});  // ratio 0: training Dropout keeps every element
  mb.node("Dropout", {"x", "ratio", "training"}, {"d", "mask"}, "training_dropout");

  auto s = session(mb.bytes(), GraphOptimization::kAll);
  ASSERT_TRUE(s);
  EXPECT_EQ(ops(*s), (std::vector<std::string>{"Relu", "Identity", "Dropout"}));
  EXPECT_EQ(s->partition_report().optimization.nodes_bypassed, 3);
  Tensor x = Tensor::allocate(ONYX_DTYPE_FLOAT32, {4});
  for (int i = 0; i < 4; ++i) x.data_as<float>()[i] = float(i) - 1.5f;
  auto out = s->run({{"x", x}});
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(out.value()[0].data_as<float>()[i], std::max(0.f, float(i) - 1.5f));
    EXPECT_EQ(out.value()[1].data_as<float>()[i], std::max(0.f, float(i) - 1.5f));
    EXPECT_EQ(out.value()[2].data_as<float>()[i], float(i) - 1.5f);
  }
}

// A value an If branch reads by name keeps its producer and its name, and
// nodes nothing reads are removed.
TEST_F(GraphOptimizerTest, KeepsValuesSubgraphsReadByNameAndDropsUnreadNodes) {
  ModelBuilder mb;
  mb.input("x", {3}).input("cond", {}, pb::TensorProto::BOOL).output("y", {3});
  mb.node("Identity", {"x"}, {"captured"}, "identity");
  mb.node("Neg", {"x"}, {"unread"}, "unread_neg");
  auto branch = [](const std::string& name, const std::string& op) {
    pb::GraphProto g;
    g.set_name(name);
    auto* n = g.add_node();
    n->set_op_type(op);
    n->add_input("captured");
    n->add_output(name + "_out");
    auto* o = g.add_output();
    o->set_name(name + "_out");
    o->mutable_type()->mutable_tensor_type()->set_elem_type(pb::TensorProto::FLOAT);
    o->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(3);
    return g;
  };
  mb.node("If", {"cond"}, {"y"}, "if");
  for (auto [attr, op] : {std::pair<const char*, const char*>{"then_branch", "Abs"}, {"else_branch", "Neg"}}) {
    auto* a = last_node(mb).add_attribute();
    a->set_name(attr);
    a->set_type(pb::AttributeProto::GRAPH);
    *a->mutable_g() = branch(attr, op);
  }
  auto s = session(mb.bytes(), GraphOptimization::kAll);
  ASSERT_TRUE(s);
  EXPECT_EQ(ops(*s), (std::vector<std::string>{"Identity", "If"}));
  EXPECT_EQ(s->partition_report().optimization.nodes_removed, 1);
  Tensor x = Tensor::allocate(ONYX_DTYPE_FLOAT32, {3});
  for (int i = 0; i < 3; ++i) x.data_as<float>()[i] = float(i) - 1;
  Tensor cond = Tensor::allocate(ONYX_DTYPE_BOOL, {});
  for (bool c : {true, false}) {
    cond.data_as<uint8_t>()[0] = c;
    auto out = s->run({{"x", x}, {"cond", cond}});
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    for (int i = 0; i < 3; ++i)
      EXPECT_EQ(out.value()[0].data_as<float>()[i], c ? std::abs(float(i) - 1) : -(float(i) - 1));
  }
}

TEST_F(GraphOptimizerTest, PartitionReportSaysWhatWasDone) {
  ModelBuilder mb;
  mb.input("x", {2}).output("y", {2});
  mb.node("Identity", {"x"}, {"i"}, "identity");
  mb.node("Relu", {"i"}, {"y"}, "relu");
  auto s = session(mb.bytes(), GraphOptimization::kBasic);
  ASSERT_TRUE(s);
  const std::string json = s->partition_report().to_json(s->graph());
  EXPECT_NE(json.find("\"graph_optimization\":{\"level\":\"basic\",\"constants_hoisted\":0,\"nodes_bypassed\":1"),
            std::string::npos)
      << json;
}

}  // namespace
}  // namespace onyx::runtime
