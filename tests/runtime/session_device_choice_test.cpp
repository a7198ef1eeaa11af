// Which device a session opens (session/device_choice.h: the host's option
// "device", by index or stable id) and device policies (device_policy.h)
// with the CPU provider and ABI 1.0 test plugins. Two devices of one
// provider and the GPU side: tests/providers/cuda/device_choice_test.cpp.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "ir/onnx_import.h"
#include "model_builder.h"
#include "session/session.h"

namespace onyx::runtime {
namespace {
namespace fs = std::filesystem;

std::string test_plugin(const std::string& name) {
  return std::string(ONYX_TEST_PLUGIN_DIR) + "/libonyx_provider_" + name + ".so";
}

std::string relu_model(std::vector<int64_t> dims = {2, 3}) {
  return testing::ModelBuilder().input("x", dims).output("y", dims).node("Relu", {"x"}, {"y"}, "relu0").bytes();
}

StatusOr<std::unique_ptr<Session>> create(ProviderRegistry& registry, const SessionOptions& options,
                                          const std::string& bytes = relu_model()) {
  return Session::create_from_bytes(registry, bytes.data(), bytes.size(), options);
}

ProviderRegistry& registry_with_test_plugins() {
  static ProviderRegistry* registry = [] {
    auto* r = new ProviderRegistry();
    r->add_search_dir(ONYX_PROVIDER_DIR);
    r->add_search_dir(ONYX_TEST_PLUGIN_DIR);
    return r;
  }();
  return *registry;
}

TEST(DeviceChoice, TheCpuProviderHasAStableIdAndFreeMemory) {
  auto cpu = registry_with_test_plugins().get("cpu");
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  auto props = (*cpu)->device_properties(0);
  ASSERT_TRUE(props.ok()) << props.status().to_string();
  EXPECT_STREQ(props->stable_id, "cpu:0");
  EXPECT_GT(props->free_memory_bytes, 0u);
}

// decliner speaks ABI 1.0 only, though built with this SDK (which fills the
// 1.3 fields): the host reads neither from it, and still opens its device.
TEST(DeviceChoice, AnAbi10PluginOpensWithoutTheNewFields) {
  auto p = Provider::load(test_plugin("decliner"));
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ((*p)->abi_version(), ONYX_ABI_VERSION(1, 0));
  auto props = (*p)->device_properties(0);
  ASSERT_TRUE(props.ok()) << props.status().to_string();
  EXPECT_STREQ(props->stable_id, "");
  EXPECT_EQ(props->free_memory_bytes, 0u);
  SessionOptions options;
  options.providers = {{"decliner", {{"device", "0"}}}, {"cpu", {}}};
  auto s = create(registry_with_test_plugins(), options);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ((*s)->devices()[0]->label, "decliner");
  options.providers = {{"decliner", {{"device", "cpu:0"}}}, {"cpu", {}}};
  s = create(registry_with_test_plugins(), options);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), ONYX_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(s.status().message().find("provider 'decliner' has no device with stable id 'cpu:0'"), std::string::npos)
      << s.status().message();
  EXPECT_NE(s.status().message().find("0: (no stable id)"), std::string::npos) << s.status().message();
}

TEST(DeviceChoice, ADeviceNamedByIdOrIndexOpensAndTheOptionStaysTheHosts) {
  for (const char* which : {"cpu:0", "0"}) {
    SessionOptions options;
    options.providers = {{"cpu", {{"device", which}, {"threads", "1"}}}};
    auto s = create(registry_with_test_plugins(), options);
    ASSERT_TRUE(s.ok()) << which << ": " << s.status().to_string();
    const Device& device = *(*s)->devices()[0];
    EXPECT_EQ(device.label, "cpu");
    EXPECT_EQ(device.index, 0u);
    // device_open got the plugin's options only.
    ASSERT_EQ(device.open_options.size(), 1u);
    EXPECT_EQ(device.open_options[0].first, "threads");
    auto y = (*s)->run({{"x", Tensor::allocate(ONYX_DTYPE_FLOAT32, {2, 3})}});
    ASSERT_TRUE(y.ok()) << y.status().to_string();
  }
}

TEST(DeviceChoice, AnUnknownIndexOrIdIsRefusedListingTheDevices) {
  for (const char* which : {"1", "18446744073709551616", "cpu:1", ""}) {
    SessionOptions options;
    options.providers = {{"cpu", {{"device", which}}}};
    auto s = create(registry_with_test_plugins(), options);
    ASSERT_FALSE(s.ok()) << which;
    EXPECT_EQ(s.status().code(), ONYX_STATUS_INVALID_ARGUMENT) << which;
    const std::string& m = s.status().message();
    EXPECT_NE(m.find("provider 'cpu' has no device"), std::string::npos) << m;
    EXPECT_NE(m.find("\n  0: cpu:0, "), std::string::npos) << m;
  }
}

TEST(DeviceChoice, TheSameDeviceTwiceIsRefused) {
  SessionOptions options;
  options.providers = {{"cpu", {}}, {"cpu", {{"device", "cpu:0"}}}};
  auto s = create(registry_with_test_plugins(), options);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), ONYX_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(s.status().message().find("provider 'cpu' device 0 is listed twice"), std::string::npos)
      << s.status().message();
}

// A folder holding only the given plugins, as the policies search folders.
struct PluginFolder {
  fs::path dir;
  explicit PluginFolder(const std::vector<std::string>& plugins) {
    dir = fs::temp_directory_path() / ("onyx_policy_" + std::to_string(::getpid()) + "_" +
                                       std::to_string(reinterpret_cast<uintptr_t>(this)));
    fs::create_directories(dir);
    for (const std::string& p : plugins) fs::create_symlink(p, dir / fs::path(p).filename());
  }
  ~PluginFolder() { fs::remove_all(dir); }
};

TEST(DevicePolicy, NamingProvidersAndAPolicyIsRefused) {
  SessionOptions options;
  options.providers = {{"cpu", {}}};
  options.device_policy = DevicePolicy::kPreferGpu;
  auto s = create(registry_with_test_plugins(), options);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), ONYX_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(s.status().message().find("name providers or set a policy, not both"), std::string::npos);
}

// The reason a policy lists an unusable plugin with, or "" when not listed.
std::string skipped_reason(const DevicePolicyReport& report, const std::string& name_or_path) {
  for (const UnavailableProvider& u : report.skipped)
    if (u.name == name_or_path) return u.reason;
  return "";
}

// ghost loads but has no device; decliner is a CPU-kind device: prefer-gpu
// ends with cpu (a GPU plugin beside the executable may come first on a GPU
// machine) and lists ghost with its reason.
TEST(DevicePolicy, PreferGpuWithoutAGpuFallsBackToTheCpuAndSaysWhy) {
  PluginFolder folder({std::string(ONYX_PROVIDER_DIR) + "/libonyx_provider_cpu.so", test_plugin("ghost"),
                       test_plugin("decliner")});
  ProviderRegistry registry;
  registry.add_search_dir(folder.dir.string());
  for (DevicePolicy policy : {DevicePolicy::kPreferGpu, DevicePolicy::kPreferCpu}) {
    SessionOptions options;
    options.device_policy = policy;
    auto s = create(registry, options);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    const DevicePolicyReport& report = (*s)->partition_report().device_policy;
    EXPECT_EQ(report.policy, device_policy_name(policy));
    ASSERT_FALSE(report.chosen.empty());
    EXPECT_EQ(report.chosen.back(), "cpu");
    if (policy == DevicePolicy::kPreferCpu) {
      EXPECT_EQ(report.chosen, std::vector<std::string>{"cpu"});
    }
    EXPECT_NE(skipped_reason(report, "ghost").find("ghost accelerator not found"), std::string::npos);
    EXPECT_EQ(std::count(report.chosen.begin(), report.chosen.end(), "decliner"), 0);  // a CPU-kind device
    const std::string json = (*s)->partition_report().to_json((*s)->graph());
    EXPECT_NE(json.find("\"device_policy\":{\"policy\":\"" + report.policy + "\",\"chosen\":["), std::string::npos)
        << json;
    EXPECT_NE(json.find("{\"provider\":\"ghost\",\"reason\":\"ghost accelerator not found"), std::string::npos)
        << json;
  }
}

TEST(DevicePolicy, FastestMeasuresSymbolicDimsAsOneAndRefusesAnUnknownRank) {
  PluginFolder folder({std::string(ONYX_PROVIDER_DIR) + "/libonyx_provider_cpu.so"});
  ProviderRegistry registry;
  registry.add_search_dir(folder.dir.string());
  SessionOptions options;
  options.device_policy = DevicePolicy::kFastest;
  auto s = create(registry, options, relu_model({-1, 3}));
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const DevicePolicyReport& report = (*s)->partition_report().device_policy;
  // cpu alone is always the last candidate (a GPU plugin beside the
  // executable adds one before it on a GPU machine).
  ASSERT_FALSE(report.candidates.empty());
  EXPECT_EQ(report.candidates.back().devices, std::vector<std::string>{"cpu"});
  EXPECT_GE(report.candidates.back().median_ms, 0.0);
  ASSERT_FALSE(report.chosen.empty());
  EXPECT_EQ(report.chosen.back(), "cpu");
  EXPECT_EQ(report.note, "measured with the symbolic dims of 'x' set to 1");

  testing::ModelBuilder unranked;
  unranked.input("x", {2, 3}).output("y", {2, 3}).node("Relu", {"x"}, {"y"}, "relu0");
  unranked.proto().mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  auto refused = create(registry, options, unranked.bytes());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), ONYX_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(refused.status().message().find("input 'x' has an unknown rank"), std::string::npos)
      << refused.status().message();
}

// Plugins that fail to load (another ABI major, a short table) are listed
// with the reason; the policy goes on without them.
TEST(DevicePolicy, PluginsThatDoNotLoadAreListedNotFatal) {
  PluginFolder folder({std::string(ONYX_PROVIDER_DIR) + "/libonyx_provider_cpu.so", test_plugin("major_two"),
                       test_plugin("short_table")});
  ProviderRegistry registry;
  registry.add_search_dir(folder.dir.string());
  SessionOptions options;
  options.device_policy = DevicePolicy::kPreferCpu;
  auto s = create(registry, options);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const DevicePolicyReport& report = (*s)->partition_report().device_policy;
  EXPECT_EQ(report.chosen, std::vector<std::string>{"cpu"});
  for (const char* name : {"major_two", "short_table"}) {
    const std::string why = skipped_reason(report, (folder.dir / ("libonyx_provider_" + std::string(name) + ".so")).string());
    EXPECT_EQ(why.rfind("not loaded: ", 0), 0u) << name << ": '" << why << "'";
  }
}

}  // namespace
}  // namespace onyx::runtime
