// Placement over [preferred, fallback] providers and the fallback policies.
#include <gtest/gtest.h>

#include "ir/onnx_import.h"
#include "model_builder.h"
#include "session/session.h"

namespace onyx::runtime {
namespace {

// x -> Relu -> Add(x) -> y: the decliner plugin takes Relu, declines Add.
std::string relu_add_model() {
  return testing::ModelBuilder()
      .input("x", {2, 3})
      .output("y", {2, 3})
      .node("Relu", {"x"}, {"r"}, "relu0")
      .node("Add", {"r", "x"}, {"y"}, "add0")
      .bytes();
}

StatusOr<std::unique_ptr<Session>> make_session(const std::string& bytes,
                                                std::vector<std::string> providers,
                                                FallbackPolicy policy, ProviderRegistry& registry) {
  registry.add_search_dir(ONYX_PROVIDER_DIR);
  registry.add_search_dir(ONYX_TEST_PLUGIN_DIR);
  auto model = ir::load_model_from_bytes(bytes.data(), bytes.size(), "");
  if (!model.ok()) return model.status();
  SessionOptions options;
  for (auto& p : providers) options.providers.push_back({p, {}});
  options.fallback = policy;
  options.intra_op_threads = 1;
  return Session::create(registry, std::move(model).value(), options);
}

TEST(Partition, AllowFallsBackAndTheReportSaysWhy) {
  ProviderRegistry registry;
  auto s = make_session(relu_add_model(), {"decliner", "cpu"}, FallbackPolicy::kAllow, registry);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const PartitionReport& r = (*s)->partition_report();
  ASSERT_EQ(r.nodes.size(), 2u);
  EXPECT_EQ(r.devices[r.nodes[0].device], "decliner");
  EXPECT_EQ(r.devices[r.nodes[1].device], "cpu");
  ASSERT_EQ(r.nodes[1].declined.size(), 1u);
  EXPECT_EQ(r.nodes[1].declined[0].first, "decliner");
  EXPECT_NE(r.nodes[1].declined[0].second.find("Add"), std::string::npos);
  std::string json = r.to_json((*s)->graph());
  EXPECT_NE(json.find("\"node\":\"add0\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"fallback\":true"), std::string::npos) << json;

  // And it runs: y = relu(x) + x.
  Tensor x = Tensor::allocate(ONYX_DTYPE_FLOAT32, {2, 3});
  float values[] = {-1, 2, -3, 4, -5, 6};
  std::copy(values, values + 6, x.data_as<float>());
  auto out = (*s)->run({{"x", x}});
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  for (int i = 0; i < 6; ++i)
    EXPECT_FLOAT_EQ(out.value()[0].data_as<float>()[i], std::max(values[i], 0.f) + values[i]);
}

TEST(Partition, FailPolicyNamesOpNodeAndReason) {
  ProviderRegistry registry;
  auto s = make_session(relu_add_model(), {"decliner", "cpu"}, FallbackPolicy::kFail, registry);
  ASSERT_FALSE(s.ok());
  const std::string& m = s.status().message();
  EXPECT_NE(m.find("add0"), std::string::npos) << m;
  EXPECT_NE(m.find("Add"), std::string::npos) << m;
  EXPECT_NE(m.find("decliner: no kernel for op Add"), std::string::npos) << m;
}

// The ABI's rule for element types (onyx_provider.h): a plugin meeting a
// dtype code its header does not define declines with a reason naming it.
// The decliner speaks exactly ABI 1.0; code 40 is beyond every 1.x table.
TEST(Partition, PluginDeclinesAnElementTypeItDoesNotKnow) {
  std::string bytes = testing::ModelBuilder()
                          .input("x", {2}, 40)
                          .output("y", {2}, 40)
                          .node("Relu", {"x"}, {"y"}, "relu_future")
                          .bytes();
  ProviderRegistry registry;
  auto s = make_session(bytes, {"decliner"}, FallbackPolicy::kFail, registry);
  ASSERT_FALSE(s.ok());
  const std::string& m = s.status().message();
  EXPECT_NE(m.find("relu_future"), std::string::npos) << m;
  EXPECT_NE(m.find("decliner: input 0 has element type 40, which this plugin's ABI header does not define"),
            std::string::npos)
      << m;
}

// int2 (ONNX 26) is known to a 1.0 plugin: the decliner reaches its own
// check (float32 only) instead of the unknown-type rule.
TEST(Partition, Int2IsAKnownElementTypeForAnAbi10Plugin) {
  std::string bytes = testing::ModelBuilder()
                          .input("x", {4}, ONYX_DTYPE_INT2)
                          .output("y", {4}, ONYX_DTYPE_INT2)
                          .node("Relu", {"x"}, {"y"}, "relu_int2")
                          .bytes();
  ProviderRegistry registry;
  auto s = make_session(bytes, {"decliner"}, FallbackPolicy::kFail, registry);
  ASSERT_FALSE(s.ok());
  const std::string& m = s.status().message();
  EXPECT_NE(m.find("test plugin: Relu is float32 only"), std::string::npos) << m;
  EXPECT_EQ(m.find("does not define"), std::string::npos) << m;
}

TEST(Partition, OpNoProviderSupportsAlwaysFails) {
  std::string bytes = testing::ModelBuilder()
                          .opset("com.example", 1)
                          .input("x", {2})
                          .output("y", {2})
                          .node("Frobnicate", {"x"}, {"y"}, "frob0", "com.example")
                          .bytes();
  for (FallbackPolicy policy : {FallbackPolicy::kAllow, FallbackPolicy::kFail}) {
    ProviderRegistry registry;
    auto s = make_session(bytes, {"decliner", "cpu"}, policy, registry);
    ASSERT_FALSE(s.ok());
    const std::string& m = s.status().message();
    EXPECT_NE(m.find("Frobnicate"), std::string::npos) << m;
    EXPECT_NE(m.find("frob0"), std::string::npos) << m;
  }
}

TEST(Partition, UnavailableProviderFailsSessionCreationClearlyUnderFail) {
  ProviderRegistry registry;
  auto s = make_session(relu_add_model(), {"ghost", "cpu"}, FallbackPolicy::kFail, registry);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), ONYX_STATUS_UNAVAILABLE);
  EXPECT_NE(s.status().message().find("libghost.so.1"), std::string::npos) << s.status().message();
}

// Under a fallback policy an unavailable preferred provider is skipped; every
// node records it as a decline with its reason, and the session runs.
TEST(Partition, UnavailableProviderFallsBackUnderAllowAndTheReportSaysWhy) {
  ProviderRegistry registry;
  auto s = make_session(relu_add_model(), {"ghost", "cpu"}, FallbackPolicy::kAllow, registry);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const PartitionReport& r = (*s)->partition_report();
  ASSERT_EQ(r.unavailable.size(), 1u);
  EXPECT_EQ(r.unavailable[0].name, "ghost");
  for (const NodePlacement& place : r.nodes) {
    EXPECT_EQ(r.devices[place.device], "cpu");
    EXPECT_TRUE(r.is_fallback(place));
    ASSERT_EQ(place.declined.size(), 1u);
    EXPECT_EQ(place.declined[0].first, "ghost");
    EXPECT_NE(place.declined[0].second.find("libghost.so.1"), std::string::npos);
  }
  std::string json = r.to_json((*s)->graph());
  EXPECT_NE(json.find("\"unavailable\":[{\"provider\":\"ghost\""), std::string::npos) << json;
  Tensor x = Tensor::allocate(ONYX_DTYPE_FLOAT32, {2, 3});
  std::fill(x.data_as<float>(), x.data_as<float>() + 6, 1.f);
  auto out = (*s)->run({{"x", x}});
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_FLOAT_EQ(out.value()[0].data_as<float>()[0], 2.f);
}

// Under 'warn' and 'allow' the CPU provider follows the listed providers
// when none of them is the CPU provider (as ONNX Runtime's does): the node
// the decliner declines runs there; 'fail' adds nothing and names the node.
TEST(Partition, TheCpuProviderFollowsTheListedOnesUnlessThePolicyIsFail) {
  for (FallbackPolicy policy : {FallbackPolicy::kWarn, FallbackPolicy::kAllow}) {
    ProviderRegistry registry;
    registry.logger()->set(nullptr, nullptr, ONYX_LOG_ERROR);
    auto s = make_session(relu_add_model(), {"decliner"}, policy, registry);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    const PartitionReport& r = (*s)->partition_report();
    EXPECT_EQ(r.devices[r.nodes[0].device], "decliner");
    EXPECT_EQ(r.devices[r.nodes[1].device], "cpu");
    EXPECT_TRUE(r.is_fallback(r.nodes[1]));
  }
  ProviderRegistry registry;
  auto s = make_session(relu_add_model(), {"decliner"}, FallbackPolicy::kFail, registry);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("decliner: no kernel for op Add"), std::string::npos) << s.status().message();
}

// Every listed provider unavailable: under 'allow' the model runs on the CPU
// provider that follows them, and the report says why each was skipped.
TEST(Partition, OnlyUnavailableProvidersFallBackToTheCpuProviderUnderAllow) {
  ProviderRegistry registry;
  auto s = make_session(relu_add_model(), {"ghost"}, FallbackPolicy::kAllow, registry);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const PartitionReport& r = (*s)->partition_report();
  ASSERT_EQ(r.unavailable.size(), 1u);
  EXPECT_NE(r.unavailable[0].reason.find("libghost.so.1"), std::string::npos) << r.unavailable[0].reason;
  for (const NodePlacement& place : r.nodes) EXPECT_EQ(r.devices[place.device], "cpu");
}

}  // namespace
}  // namespace onyx::runtime
