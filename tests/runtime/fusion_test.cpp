// Fused groups: the host keeps the ABI's promises (session/fused_groups.h),
// with the purpose-built "fuser" plugin (tests/plugins/fuser_plugin.cpp),
// which claims nodes named "g<k>.*" as fused group k.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/onnx_import.h"
#include "model_builder.h"
#include "session/session.h"

namespace onyx::runtime {
namespace {

StatusOr<std::unique_ptr<Session>> make_session(ProviderRegistry& registry, const std::string& bytes,
                                                std::vector<std::string> providers,
                                                FallbackPolicy policy = FallbackPolicy::kAllow) {
  registry.add_search_dir(ONYX_PROVIDER_DIR);
  registry.add_search_dir(ONYX_TEST_PLUGIN_DIR);
  SessionOptions options;
  for (auto& p : providers) options.providers.push_back({p, {}});
  options.fallback = policy;
  options.intra_op_threads = 1;
  return Session::create_from_bytes(registry, bytes.data(), bytes.size(), options);
}

Tensor input_x() {
  Tensor x = Tensor::allocate(ONYX_DTYPE_FLOAT32, {2, 3});
  const float values[] = {-1.5f, 2, -3, 4, 0.25f, -6};
  std::copy(values, values + 6, x.data_as<float>());
  return x;
}

std::vector<Tensor> run(Session& s) {
  auto out = s.run({{"x", input_x()}});
  EXPECT_TRUE(out.ok()) << out.status().to_string();
  return out.ok() ? std::move(out).value() : std::vector<Tensor>{};
}

void expect_same(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    ASSERT_EQ(a[k].shape(), b[k].shape()) << "output " << k;
    for (int64_t i = 0; i < a[k].size(); ++i)
      EXPECT_FLOAT_EQ(a[k].data_as<float>()[i], b[k].data_as<float>()[i]) << "output " << k << " at " << i;
  }
}

const NodePlacement& placement(const Session& s, const std::string& node) {
  const ir::Graph& g = s.graph();
  for (size_t n = 0; n < g.nodes.size(); ++n)
    if (g.nodes[n].name == node) return s.partition_report().nodes[n];
  throw std::runtime_error("no node " + node);
}

size_t kernel_steps(const Session& s, size_t nodes) {
  size_t count = 0;
  for (const Step& step : s.steps()) count += step.kind == Step::kKernel && step.nodes.size() == nodes;
  return count;
}

// x -> Neg 'pre' -> p; g1.add(p, p) -> t; g1.relu(t) -> r; Neg 'post'(r) -> y
std::string chain_model() {
  return testing::ModelBuilder()
      .input("x", {2, 3})
      .output("y", {2, 3})
      .node("Neg", {"x"}, {"p"}, "pre")
      .node("Add", {"p", "p"}, {"t"}, "g1.add")
      .node("Relu", {"t"}, {"r"}, "g1.relu")
      .node("Neg", {"r"}, {"y"}, "post")
      .bytes();
}

TEST(Fusion, AGroupRunsAsOneStepAndMatchesTheUnfusedResult) {
  ProviderRegistry registry;
  auto fused = make_session(registry, chain_model(), {"fuser"});
  ASSERT_TRUE(fused.ok()) << fused.status().to_string();
  Session& s = **fused;
  EXPECT_EQ(placement(s, "g1.add").fused_group, 1u);
  EXPECT_EQ(placement(s, "g1.relu").fused_group, 1u);
  EXPECT_TRUE(s.partition_report().dissolved.empty());
  EXPECT_EQ(kernel_steps(s, 2), 1u);
  EXPECT_EQ(kernel_steps(s, 1), 2u);
  std::vector<Tensor> got = run(s);

  auto unfused = make_session(registry, chain_model(), {"cpu"});
  ASSERT_TRUE(unfused.ok()) << unfused.status().to_string();
  std::vector<Tensor> want = run(**unfused);
  expect_same(got, want);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_FLOAT_EQ(got[0].data_as<float>()[0], -3.f);  // -relu(2 * -(-1.5))
  EXPECT_FLOAT_EQ(got[0].data_as<float>()[1], 0.f);

  // The group's kernel_output_memory is honoured: its output r overwrites p,
  // which nothing reads afterwards.
  auto report = s.memory_report({});
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  ASSERT_EQ(report->size(), 1u);
  EXPECT_EQ((*report)[0].in_place, 1u);
}

TEST(Fusion, APreemptedGroupDissolvesIntoSingleNodesAndTheReportSaysWhy) {
  std::string bytes = testing::ModelBuilder()
                          .input("x", {2, 3})
                          .output("y", {2, 3})
                          .node("Add", {"x", "x"}, {"t"}, "g1.add")
                          .node("Relu", {"t"}, {"y"}, "g1.relu")
                          .bytes();
  ProviderRegistry registry;
  auto created = make_session(registry, bytes, {"decliner", "fuser"});  // the decliner takes Relu
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  Session& s = **created;
  const PartitionReport& r = s.partition_report();
  EXPECT_EQ(r.devices[size_t(placement(s, "g1.relu").device)], "decliner");
  const NodePlacement& add = placement(s, "g1.add");
  EXPECT_EQ(r.devices[size_t(add.device)], "fuser");
  EXPECT_EQ(add.fused_group, 0u);
  EXPECT_EQ(add.dissolved_group, 1u);
  ASSERT_EQ(r.dissolved.size(), 1u);
  EXPECT_EQ(r.dissolved[0].device, "fuser");
  EXPECT_EQ(r.dissolved[0].nodes, std::vector<std::string>{"g1.add"});
  EXPECT_NE(r.dissolved[0].reason.find("Relu 'g1.relu' went to decliner"), std::string::npos) << r.dissolved[0].reason;
  std::string json = r.to_json(s.graph());
  EXPECT_NE(json.find("\"dissolved_groups\":[{\"device\":\"fuser\",\"group\":1"), std::string::npos) << json;
  EXPECT_NE(json.find("went to decliner"), std::string::npos) << json;
  EXPECT_NE(json.find("\"dissolved_group\":1"), std::string::npos) << json;
  EXPECT_EQ(kernel_steps(s, 2), 0u);
  std::vector<Tensor> y = run(s);
  ASSERT_EQ(y.size(), 1u);
  for (int i = 0; i < 6; ++i)
    EXPECT_FLOAT_EQ(y[0].data_as<float>()[i], std::max(2 * input_x().data_as<float>()[i], 0.f));
}

TEST(Fusion, AnIntermediateReadOutsideTheGroupDissolvesIt) {
  // t passes from g1.add to g1.relu; a node outside reads it too, and then
  // a graph output is t itself.
  std::string read_by_node = testing::ModelBuilder()
                                 .input("x", {2, 3})
                                 .output("y", {2, 3})
                                 .output("z", {2, 3})
                                 .node("Add", {"x", "x"}, {"t"}, "g1.add")
                                 .node("Relu", {"t"}, {"y"}, "g1.relu")
                                 .node("Neg", {"t"}, {"z"}, "outside")
                                 .bytes();
  std::string graph_output = testing::ModelBuilder()
                                 .input("x", {2, 3})
                                 .output("y", {2, 3})
                                 .output("t", {2, 3})
                                 .node("Add", {"x", "x"}, {"t"}, "g1.add")
                                 .node("Relu", {"t"}, {"y"}, "g1.relu")
                                 .bytes();
  for (const auto& [bytes, why] : {std::pair{read_by_node, std::string("is also read by Neg 'outside' on fuser")},
                                   std::pair{graph_output, std::string("is also a graph output")}}) {
    ProviderRegistry registry;
    auto created = make_session(registry, bytes, {"fuser"});
    ASSERT_TRUE(created.ok()) << created.status().to_string();
    Session& s = **created;
    const PartitionReport& r = s.partition_report();
    ASSERT_EQ(r.dissolved.size(), 1u) << why;
    EXPECT_NE(r.dissolved[0].reason.find("value 't' passes between its nodes and " + why), std::string::npos)
        << r.dissolved[0].reason;
    EXPECT_EQ(kernel_steps(s, 2), 0u);
    auto cpu = make_session(registry, bytes, {"cpu"});
    ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
    expect_same(run(s), run(**cpu));
  }
}

TEST(Fusion, ANonConvexGroupDissolves) {
  // g1.add -> mid (outside the group) -> g1.relu: the path leaves and re-enters.
  std::string bytes = testing::ModelBuilder()
                          .input("x", {2, 3})
                          .output("y", {2, 3})
                          .output("a", {2, 3})
                          .node("Add", {"x", "x"}, {"a"}, "g1.add")
                          .node("Neg", {"a"}, {"b"}, "mid")
                          .node("Relu", {"b"}, {"y"}, "g1.relu")
                          .bytes();
  ProviderRegistry registry;
  auto created = make_session(registry, bytes, {"fuser"});
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  Session& s = **created;
  const PartitionReport& r = s.partition_report();
  ASSERT_EQ(r.dissolved.size(), 1u);
  EXPECT_NE(r.dissolved[0].reason.find("not convex"), std::string::npos) << r.dissolved[0].reason;
  EXPECT_NE(r.dissolved[0].reason.find("Neg 'mid'"), std::string::npos) << r.dissolved[0].reason;
  EXPECT_EQ(kernel_steps(s, 2), 0u);
  auto cpu = make_session(registry, bytes, {"cpu"});
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  expect_same(run(s), run(**cpu));
}

TEST(Fusion, GroupsThatDependOnEachOtherKeepOneAndDissolveTheOther) {
  // g1 = {g1.a, g1.d}, g2 = {g2.b, g2.c}: each is convex, but g1.a feeds
  // g2.b and g2.c feeds g1.d, so neither group can run before the other.
  std::string bytes = testing::ModelBuilder()
                          .input("x", {2, 3})
                          .output("vb", {2, 3})
                          .output("vd", {2, 3})
                          .node("Add", {"x", "x"}, {"va"}, "g1.a")
                          .node("Relu", {"va"}, {"vb"}, "g2.b")
                          .node("Neg", {"x"}, {"vc"}, "g2.c")
                          .node("Relu", {"vc"}, {"vd"}, "g1.d")
                          .bytes();
  ProviderRegistry registry;
  auto created = make_session(registry, bytes, {"fuser"});
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  Session& s = **created;
  const PartitionReport& r = s.partition_report();
  ASSERT_EQ(r.dissolved.size(), 1u);
  EXPECT_NE(r.dissolved[0].reason.find("depend on each other"), std::string::npos) << r.dissolved[0].reason;
  EXPECT_EQ(kernel_steps(s, 2), 1u);
  auto cpu = make_session(registry, bytes, {"cpu"});
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  expect_same(run(s), run(**cpu));
}

TEST(Fusion, ADissolvedGroupIsWarnedAboutUnderWarn) {
  std::string bytes = testing::ModelBuilder()
                          .input("x", {2, 3})
                          .output("y", {2, 3})
                          .output("t", {2, 3})
                          .node("Add", {"x", "x"}, {"t"}, "g1.add")
                          .node("Relu", {"t"}, {"y"}, "g1.relu")
                          .bytes();
  ProviderRegistry registry;
  std::vector<std::string> lines;
  registry.logger()->set(
      [](void* user, int32_t, const char* m) { static_cast<std::vector<std::string>*>(user)->push_back(m); },
      &lines, ONYX_LOG_WARNING);
  auto created = make_session(registry, bytes, {"fuser"}, FallbackPolicy::kWarn);
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("fused group 1 of fuser (g1.add, g1.relu) runs as single-node kernels"),
            std::string::npos)
      << lines[0];
}

// The plan says what shape inference knows; a kernel that disagrees is an
// error naming both shapes, and a shape the plan does not know is allocated
// when the kernel asks for it.
TEST(Fusion, AKernelContradictingThePlannedShapeIsAnError) {
  auto model = [](std::vector<int64_t> declared) {
    return testing::ModelBuilder()
        .opset("onyx.test", 1)
        .input("x", {2, 3})
        .output("y", declared)
        .node("SwapDims", {"x"}, {"y"}, "swap", "onyx.test")
        .bytes();
  };
  ProviderRegistry registry;
  auto wrong = make_session(registry, model({2, 3}), {"fuser"});
  ASSERT_TRUE(wrong.ok()) << wrong.status().to_string();
  auto out = (*wrong)->run({{"x", input_x()}});
  ASSERT_FALSE(out.ok());
  const std::string& m = out.status().message();
  EXPECT_EQ(out.status().code(), ONYX_STATUS_INTERNAL);
  EXPECT_NE(m.find("SwapDims 'swap'"), std::string::npos) << m;
  EXPECT_NE(m.find("output 0 ('y') is planned as float32 [2, 3]"), std::string::npos) << m;
  EXPECT_NE(m.find("the kernel asked for float32 [3, 2]"), std::string::npos) << m;

  auto unknown = make_session(registry, model({-1, -1}), {"fuser"});
  ASSERT_TRUE(unknown.ok()) << unknown.status().to_string();
  std::vector<Tensor> y = run(**unknown);
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0].shape(), (Shape{3, 2}));
  EXPECT_FLOAT_EQ(y[0].data_as<float>()[1], 4.f);  // x[1][0]
}

}  // namespace
}  // namespace onyx::runtime
