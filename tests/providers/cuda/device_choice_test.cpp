// Devices of a GPU provider chosen by index or stable id (provider ABI 1.3),
// one provider on two devices, copies between a GPU and the CPU and between
// two GPUs, and device policies. On the emulated GPU ("gpuemu": two devices,
// "EMU:0" and "EMU:1", each refusing copies of another's memory) all of it
// runs; on a real GPU plugin the two-device cases need two devices, and the
// counting checks the emulation's counters.
#include <gtest/gtest.h>
#include <onyx/onyx.hpp>
#include <unistd.h>

#include <filesystem>
#include <span>
#include <stdexcept>
#include <string>

#include "emulation_stats.h"
#include "model_builder.h"

namespace {

namespace fs = std::filesystem;
using namespace onyx::gpu_test;
const std::string kGpu = ONYX_TEST_GPU_PROVIDER;
using Options = std::vector<std::pair<std::string, std::string>>;
using Request = std::pair<std::string, Options>;

onyx::Env make_env() {
  onyx::Env env;
  env.add_provider_dir(ONYX_PROVIDER_DIR);
  env.add_provider_dir(ONYX_GPU_PLUGIN_DIR);
  return env;
}

// x[4,8] -> MatMul(w) -> Relu -> Softmax -> Add(b) -> y[4,8]
std::string model_bytes() {
  std::vector<float> w(64), b(8);
  for (int i = 0; i < 64; ++i) w[size_t(i)] = float((i * 37) % 17 - 8) / 8.f;
  for (int i = 0; i < 8; ++i) b[size_t(i)] = float(i) / 10.f - 0.3f;
  onyx::testing::ModelBuilder m;
  m.input("x", {4, 8}).output("y", {4, 8}).initializer("w", {8, 8}, w).initializer("b", {8}, b)
      .node("MatMul", {"x", "w"}, {"xw"}, "matmul0")
      .node("Relu", {"xw"}, {"r"}, "relu0")
      .node("Softmax", {"r"}, {"s"}, "softmax0")
      .node("Add", {"s", "b"}, {"y"}, "add0");
  return m.bytes();
}

onyx::Session make_session(onyx::Env& env, const std::vector<Request>& providers,
                           OnyxFallbackPolicy fallback = ONYX_FALLBACK_FAIL) {
  const std::string bytes = model_bytes();
  onyx::SessionOptions options;
  for (const auto& [name, device_options] : providers) options.provider(name, device_options);
  options.fallback(fallback).threads(1);
  return onyx::Session(env, std::as_bytes(std::span(bytes.data(), bytes.size())), options);
}

std::vector<float> run(onyx::Session& s) {
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[size_t(i)] = float((i * 13) % 11 - 5) / 3.f;
  onyx::Tensor input = onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, {4, 8}, x);
  std::vector<onyx::Tensor> out = s.run({{"x", &input}});
  onyx::Tensor& y = out[0];
  return {y.data<float>(), y.data<float>() + y.size()};
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;  // 8-term dot products
}

std::vector<float> cpu_result(onyx::Env& env) {
  onyx::Session cpu = make_session(env, {{"cpu", {}}});
  return run(cpu);
}

// How many devices the GPU provider has here (0 when unavailable).
size_t gpu_devices(onyx::Env& env) {
  const std::string json = env.providers_json();
  const size_t at = json.find("\"name\":\"" + kGpu + "\"");
  if (at == std::string::npos || json.find("\"available\":true", at) != json.find("\"available\":", at)) return 0;
  const size_t end = json.find("]}", at);
  size_t count = 0;
  for (size_t p = json.find("\"stable_id\":", at); p < end; p = json.find("\"stable_id\":", p + 1)) ++count;
  return count;
}

std::string error_of(onyx::Env& env, const std::vector<Request>& providers) {
  try {
    make_session(env, providers);
  } catch (const onyx::Error& e) {
    EXPECT_EQ(e.code(), ONYX_STATUS_INVALID_ARGUMENT) << e.what();
    return e.what();
  }
  return "(created)";
}

TEST(DeviceChoice, ProvidersJsonListsEveryDeviceWithItsStableIdAndFreeMemory) {
  onyx::Env env = make_env();
  const std::string json = env.providers_json();
  EXPECT_NE(json.find("\"kind\":\"cpu\",\"stable_id\":\"cpu:0\""), std::string::npos) << json;
  if (kGpu != "gpuemu") return;
  for (const char* id : {"EMU:0", "EMU:1"})
    EXPECT_NE(json.find(std::string("\"kind\":\"gpu\",\"stable_id\":\"") + id + "\",\"memory_bytes\":8589934592,"
                        "\"free_memory_bytes\":"),
              std::string::npos)
        << json;
  const size_t gpu = json.find("\"name\":\"" + kGpu + "\"");
  const std::string devices = json.substr(gpu, json.find("]}", gpu) - gpu);
  EXPECT_EQ(devices.find("\"free_memory_bytes\":0}"), std::string::npos) << devices;
}

TEST(DeviceChoice, TheDeviceNamedByIndexOrStableIdRunsTheKernels) {
  onyx::Env env = make_env();
  if (gpu_devices(env) < 2) GTEST_SKIP() << kGpu << " has fewer than two devices here";
  const std::vector<float> want = cpu_result(env);
  StatsFn stats = stats_function(ONYX_GPU_PLUGIN_DIR, kGpu);
  const std::string id = kGpu == "gpuemu" ? "EMU:1" : "";
  for (const std::string& which : {std::string("1"), id}) {
    if (which.empty()) continue;
    onyx::Session s = make_session(env, {{kGpu, {{"device", which}}}});
    EXPECT_NE(s.partition_report().find("\"devices\":[\"" + kGpu + ":1\"]"), std::string::npos)
        << s.partition_report();
    const Stats before = stats ? read_stats(stats) : Stats{};
    expect_near(run(s), want);
    if (!stats) continue;
    const Stats d = delta(read_stats(stats), before);
    EXPECT_EQ(d[kKernelsOnDevice0], 0u) << which;
    EXPECT_GE(d[kKernelsOnDevice1], 4u) << which;  // MatMul, Relu, Softmax, Add: one launch or more each
  }
}

TEST(DeviceChoice, AnUnknownIndexOrIdIsRefusedListingTheDevices) {
  onyx::Env env = make_env();
  if (gpu_devices(env) == 0) GTEST_SKIP() << kGpu << " is unavailable here";
  std::string m = error_of(env, {{kGpu, {{"device", "7"}}}});
  EXPECT_NE(m.find("provider '" + kGpu + "' has no device 7"), std::string::npos) << m;
  EXPECT_NE(m.find("\n  0: "), std::string::npos) << m;
  m = error_of(env, {{kGpu, {{"device", "PCI:0000:ff:1f.7"}}}});
  EXPECT_NE(m.find("has no device with stable id 'PCI:0000:ff:1f.7'"), std::string::npos) << m;
  m = error_of(env, {{kGpu, {{"device", "0"}}}, {kGpu, {}}});
  EXPECT_NE(m.find("device 0 is listed twice"), std::string::npos) << m;
}

// Softmax excluded on device 0 runs on device 1: r goes 0 -> 1 and s 1 -> 0,
// each staged through host memory, and each device runs its own kernels.
TEST(DeviceChoice, OneProviderOnTwoDevicesRunsKernelsOnEachAndCopiesThroughTheHost) {
  onyx::Env env = make_env();
  if (gpu_devices(env) < 2) GTEST_SKIP() << kGpu << " has fewer than two devices here";
  const std::vector<float> want = cpu_result(env);
  onyx::Session s = make_session(env, {{kGpu, {{"device", "0"}, {"exclude_ops", "Softmax"}}}, {kGpu, {{"device", "1"}}}},
                                 ONYX_FALLBACK_ALLOW);
  const std::string report = s.partition_report();
  EXPECT_NE(report.find("\"devices\":[\"" + kGpu + ":0\",\"" + kGpu + ":1\"]"), std::string::npos) << report;
  EXPECT_NE(report.find("{\"node\":\"softmax0\",\"op\":\"Softmax\",\"domain\":\"\",\"device\":\"" + kGpu + ":1\""),
            std::string::npos)
      << report;
  for (const std::string& hop : {"\"value\":\"r\",\"from\":\"" + kGpu + ":0\",\"to\":\"host\"",
                                 "\"value\":\"r\",\"from\":\"host\",\"to\":\"" + kGpu + ":1\"",
                                 "\"value\":\"s\",\"from\":\"" + kGpu + ":1\",\"to\":\"host\"",
                                 "\"value\":\"s\",\"from\":\"host\",\"to\":\"" + kGpu + ":0\""})
    EXPECT_NE(report.find(hop), std::string::npos) << hop << "\n" << report;
  StatsFn stats = stats_function(ONYX_GPU_PLUGIN_DIR, kGpu);
  const Stats before = stats ? read_stats(stats) : Stats{};
  for (int k = 0; k < 3; ++k) expect_near(run(s), want);
  if (!stats) return;
  const Stats d = delta(read_stats(stats), before);
  EXPECT_GE(d[kKernelsOnDevice0], 3u * 3);  // MatMul, Relu, Add per run (one launch or more each)
  EXPECT_GE(d[kKernelsOnDevice1], 1u * 3);  // Softmax
  EXPECT_EQ(d[kD2D], 0u) << "no copy within or across devices";
}

// Softmax on the CPU provider: the GPU copies r into the CPU's memory
// (device-to-host, on its own stream); the CPU never reads GPU memory.
TEST(DeviceChoice, AValueTheCpuProviderReadsIsCopiedOutByTheGpu) {
  onyx::Env env = make_env();
  if (gpu_devices(env) == 0) GTEST_SKIP() << kGpu << " is unavailable here";
  const std::vector<float> want = cpu_result(env);
  onyx::Session s = make_session(env, {{kGpu, {{"exclude_ops", "Softmax"}}}, {"cpu", {}}}, ONYX_FALLBACK_ALLOW);
  const std::string report = s.partition_report();
  EXPECT_NE(report.find("\"value\":\"r\",\"from\":\"" + kGpu + "\",\"to\":\"cpu\""), std::string::npos) << report;
  EXPECT_NE(report.find("Softmax is excluded by the device option exclude_ops"), std::string::npos) << report;
  StatsFn stats = stats_function(ONYX_GPU_PLUGIN_DIR, kGpu);
  const Stats before = stats ? read_stats(stats) : Stats{};
  expect_near(run(s), want);
  if (!stats) return;
  const Stats d = delta(read_stats(stats), before);
  EXPECT_EQ(d[kD2H], 2u) << "r to the CPU, y to the host";
  EXPECT_EQ(d[kH2D], 2u) << "x, and s back to the GPU";
  EXPECT_EQ(d[kD2D], 0u);
}

// The file make_env() loads provider `name` from ("path" of its listing), so
// that a test run from a staged tree (scripts/gpu-check.sh) finds it too.
std::string plugin_path(const std::string& name) {
  onyx::Env env = make_env();
  const std::string json = env.providers_json();
  const size_t at = json.find("\"name\":\"" + name + "\"");
  const size_t key = at == std::string::npos ? at : json.rfind("\"path\":\"", at);  // {"path":...,"name":...}
  if (key == std::string::npos) throw std::runtime_error("no provider " + name + ": " + json);
  const size_t begin = key + 8;
  return json.substr(begin, json.find('"', begin) - begin);
}

// A folder holding only the CPU and this GPU plugin, for the policies.
struct PluginFolder {
  fs::path dir = fs::temp_directory_path() / ("onyx_gpu_policy_" + std::to_string(::getpid()));
  PluginFolder() {
    fs::create_directories(dir);
    fs::create_symlink(plugin_path("cpu"), dir / "libonyx_provider_cpu.so");
    fs::create_symlink(plugin_path(kGpu), dir / ("libonyx_provider_" + kGpu + ".so"));
  }
  ~PluginFolder() { fs::remove_all(dir); }
};

onyx::Session policy_session(onyx::Env& env, OnyxDevicePolicy policy) {
  const std::string bytes = model_bytes();
  onyx::SessionOptions options;
  options.device_policy(policy).threads(1);
  return onyx::Session(env, std::as_bytes(std::span(bytes.data(), bytes.size())), options);
}

TEST(DevicePolicy, PreferGpuPicksTheGpuAndPreferCpuTheCpu) {
  PluginFolder folder;
  onyx::Env env;
  env.add_provider_dir(folder.dir.string());
  const bool available = gpu_devices(env) > 0;
  onyx::Session gpu = policy_session(env, ONYX_DEVICE_POLICY_PREFER_GPU);
  const std::string report = gpu.partition_report();
  if (available) {
    EXPECT_NE(report.find("\"device_policy\":{\"policy\":\"prefer-gpu\",\"chosen\":[\"" + kGpu), std::string::npos)
        << report;
    EXPECT_NE(report.find("\",\"cpu\"],"), std::string::npos) << report;
  } else {  // no device: cpu alone, and the GPU listed with its reason
    EXPECT_NE(report.find("\"chosen\":[\"cpu\"]"), std::string::npos) << report;
    EXPECT_NE(report.find("\"skipped\":[{\"provider\":\"" + kGpu + "\""), std::string::npos) << report;
  }
  expect_near(run(gpu), cpu_result(env));
  onyx::Session cpu = policy_session(env, ONYX_DEVICE_POLICY_PREFER_CPU);
  EXPECT_NE(cpu.partition_report().find("\"device_policy\":{\"policy\":\"prefer-cpu\",\"chosen\":[\"cpu\"]"),
            std::string::npos)
      << cpu.partition_report();
}

// The fastest policy times each candidate and keeps the one with the
// smallest median; the report lists every candidate's time.
TEST(DevicePolicy, FastestKeepsTheCandidateWithTheSmallestMeasuredMedian) {
  PluginFolder folder;
  onyx::Env env;
  env.add_provider_dir(folder.dir.string());
  const bool available = gpu_devices(env) > 0;
  onyx::Session s = policy_session(env, ONYX_DEVICE_POLICY_FASTEST);
  const std::string report = s.partition_report();
  const size_t at = report.find("\"device_policy\":");
  ASSERT_NE(at, std::string::npos) << report;
  std::vector<std::pair<std::string, double>> times;  // candidate's devices -> median ms
  for (size_t p = report.find("{\"devices\":[", at); p != std::string::npos; p = report.find("{\"devices\":[", p + 1)) {
    const size_t list_end = report.find(']', p);
    const size_t ms = report.find("\"median_ms\":", list_end) + 12;
    times.emplace_back(report.substr(p + 12, list_end - p - 12), std::stod(report.substr(ms)));
  }
  // gpu+cpu and cpu alone (and a GPU plugin beside the executable on a GPU machine).
  ASSERT_GE(times.size(), available ? 2u : 1u) << report;
  size_t best = 0;
  for (size_t k = 0; k < times.size(); ++k) {
    EXPECT_GE(times[k].second, 0.0) << times[k].first;
    if (times[k].second < times[best].second) best = k;
  }
  EXPECT_NE(report.find("\"chosen\":[" + times[best].first + "]"), std::string::npos) << report;
  std::printf("fastest: %s\n", report.substr(at).c_str());
  expect_near(run(s), cpu_result(env));
}

}  // namespace
