// A GPU provider plugin (ONYX_TEST_GPU_PROVIDER: "cuda", "rocm", or
// "gpuemu", the same code on an emulated device) loaded from disk through the
// public C++ API (onyx.hpp), as applications load it:
//  - it always loads; without a device it reports "unavailable" with the
//    runtime's reason and no devices;
//  - with a device, a small model of the ops it claims runs like the CPU
//    provider, and the MLP and the CNN like their float64 references
//    (skipped here with the reason otherwise);
//  - a session preferring it with the CPU as fallback runs on any machine,
//    and the partition report says why each node went where.
#include <gtest/gtest.h>
#include <onyx/onyx.hpp>

#include <algorithm>
#include <cmath>
#include <span>

#include "emulation_stats.h"
#include "model_builder.h"
#include "test_models.h"
#include "transformer_block.h"

namespace {

const std::string kGpu = ONYX_TEST_GPU_PROVIDER;
const std::vector<std::string> kNodes = {"matmul0", "add0", "relu0", "softmax0", "layernorm0", "reducemean0"};

// x[4,8] -> MatMul(w) -> Add(b) -> Relu -> Softmax -> LayerNormalization -> y[4,8]
//                                              \-> ReduceMean(axis 1) -> m[4,1]
std::string model_bytes() {
  std::vector<float> w(64), b(8), scale(8, 1.5f), bias(8, 0.25f);
  for (int i = 0; i < 64; ++i) w[size_t(i)] = float((i * 37) % 17 - 8) / 8.f;
  for (int i = 0; i < 8; ++i) b[size_t(i)] = float(i) / 10.f - 0.3f;
  onyx::testing::ModelBuilder m;
  m.input("x", {4, 8})
      .output("y", {4, 8})
      .output("m", {4, 1})
      .initializer("w", {8, 8}, w)
      .initializer("b", {8}, b)
      .initializer("scale", {8}, scale)
      .initializer("ln_bias", {8}, bias)
      .node("MatMul", {"x", "w"}, {"xw"}, "matmul0")
      .node("Add", {"xw", "b"}, {"h"}, "add0")
      .node("Relu", {"h"}, {"r"}, "relu0")
      .node("Softmax", {"r"}, {"s"}, "softmax0")
      .node("LayerNormalization", {"s", "scale", "ln_bias"}, {"y"}, "layernorm0")
      .node("ReduceMean", {"r"}, {"m"}, "reducemean0");
  auto* reduce = m.proto().mutable_graph()->mutable_node(5);
  auto* axes = reduce->add_attribute();
  axes->set_name("axes");
  axes->set_type(ONNX_NAMESPACE::AttributeProto::INTS);
  axes->add_ints(1);
  return m.bytes();
}

onyx::Env make_env() {
  onyx::Env env;
  env.add_provider_dir(ONYX_PROVIDER_DIR);
  env.add_provider_dir(ONYX_GPU_PLUGIN_DIR);
  return env;
}

onyx::Session make_session(onyx::Env& env, const std::string& bytes, const std::vector<std::string>& providers,
                           OnyxFallbackPolicy policy,
                           OnyxGraphOptimization optimization = ONYX_GRAPH_OPTIMIZATION_ALL) {
  onyx::SessionOptions options;
  for (const std::string& p : providers) options.provider(p);
  options.fallback(policy).threads(1).graph_optimization(optimization);
  return onyx::Session(env, std::as_bytes(std::span(bytes.data(), bytes.size())), options);
}

std::vector<onyx::Tensor> run(onyx::Session& s) {
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[size_t(i)] = float((i * 13) % 11 - 5) / 3.f;
  onyx::Tensor input = onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, {4, 8}, x);
  return s.run({{"x", &input}});
}

// The text of `"key":...` in a JSON object's text, as written (a string
// stays JSON-escaped, without its quotes).
std::string field(const std::string& object, const std::string& key) {
  size_t at = object.find("\"" + key + "\":");
  if (at == std::string::npos) return {};
  at += key.size() + 3;
  if (object[at] != '"') return object.substr(at, object.find_first_of(",}", at) - at);
  size_t end = at + 1;
  while (end < object.size() && object[end] != '"') end += object[end] == '\\' ? 2 : 1;
  return object.substr(at + 1, end - at - 1);
}

// The provider as onyx_env_list_providers reports it.
struct ProviderEntry {
  bool listed = false, available = false;
  std::string reason;  // JSON-escaped, as the reports write it
  size_t devices = 0;
};
ProviderEntry provider_entry(onyx::Env& env) {
  const std::string json = env.providers_json();
  ProviderEntry e;
  const size_t at = json.find("\"name\":\"" + kGpu + "\"");
  if (at == std::string::npos) return e;
  const size_t begin = json.rfind("{\"path\"", at);
  const size_t end = json.find("]}", at);
  const std::string object = json.substr(begin, end - begin);
  e.listed = true;
  e.available = field(object, "available") == "true";
  e.reason = field(object, "reason");
  for (size_t p = object.find("\"vendor\":"); p != std::string::npos; p = object.find("\"vendor\":", p + 1)) ++e.devices;
  return e;
}

// "" when the provider has a usable device, else its reason.
std::string unavailable_reason() {
  onyx::Env env = make_env();
  ProviderEntry e = provider_entry(env);
  if (!e.listed) return "no " + kGpu + " provider in " + ONYX_PROVIDER_DIR + " or " + ONYX_GPU_PLUGIN_DIR;
  return e.available ? std::string() : e.reason;
}

// The part of a partition report about node `name`.
std::string node_object(const std::string& report, const std::string& name) {
  size_t at = report.find("{\"node\":\"" + name + "\"");
  if (at == std::string::npos) return {};
  return report.substr(at, report.find("]}", at) + 2 - at);
}

void expect_near_outputs(std::vector<onyx::Tensor>& got, std::vector<onyx::Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    ASSERT_EQ(got[k].size(), want[k].size());
    for (int64_t i = 0; i < got[k].size(); ++i)
      // Different summation orders in float32 over 8-term dot products and rows.
      EXPECT_NEAR(got[k].data<float>()[i], want[k].data<float>()[i], 1e-4) << k << "," << i;
  }
}

TEST(GpuProvider, LoadsAndReportsAvailabilityWithTheRuntimeReason) {
  onyx::Env env = make_env();
  ProviderEntry e = provider_entry(env);
  ASSERT_TRUE(e.listed) << env.providers_json();
  if (e.available) {
    EXPECT_GE(e.devices, 1u);
    return;
  }
  EXPECT_EQ(e.devices, 0u);
  // The reason names what failed: the device query or a library.
  const std::string& m = e.reason;
  EXPECT_TRUE(m.find("GetDeviceCount returned") != std::string::npos ||
              m.find("no CUDA device") != std::string::npos ||
              m.find("no HIP device") != std::string::npos || m.find("cannot load") != std::string::npos)
      << m;
  std::printf("%s provider unavailable here: %s\n", kGpu.c_str(), m.c_str());
}

TEST(GpuProvider, RunsItsClaimedOpsLikeTheCpuProvider) {
  std::string why = unavailable_reason();
  if (!why.empty()) GTEST_SKIP() << kGpu << " provider unavailable: " << why;
  onyx::Env env = make_env();
  const std::string bytes = model_bytes();
  onyx::Session gpu = make_session(env, bytes, {kGpu}, ONYX_FALLBACK_FAIL);
  onyx::Session cpu = make_session(env, bytes, {"cpu"}, ONYX_FALLBACK_FAIL);
  std::vector<onyx::Tensor> got = run(gpu), want = run(cpu);
  expect_near_outputs(got, want);
}

TEST(GpuProvider, MixedSessionPreferringItFallsBackToCpuAndTheReportSaysWhy) {
  onyx::Env env = make_env();
  const std::string bytes = model_bytes();
  // The graph as written: the report is checked node by node, and with no
  // GPU the optimizer would fuse matmul0 -> add0 -> relu0 for the CPU.
  onyx::Session mixed = make_session(env, bytes, {kGpu, "cpu"}, ONYX_FALLBACK_WARN, ONYX_GRAPH_OPTIMIZATION_OFF);
  onyx::Session cpu = make_session(env, bytes, {"cpu"}, ONYX_FALLBACK_FAIL);
  const std::string report = mixed.partition_report();
  std::string why = unavailable_reason();
  if (!why.empty()) {
    // No device here: every node runs on the CPU and says the GPU was unavailable, and why.
    EXPECT_NE(report.find("\"unavailable\":[{\"provider\":\"" + kGpu + "\",\"reason\":\"" + why + "\"}]"),
              std::string::npos)
        << report;
    for (const std::string& node : kNodes) {
      const std::string object = node_object(report, node);
      EXPECT_EQ(field(object, "device"), "cpu") << report;
      EXPECT_EQ(field(object, "fallback"), "true") << report;
      const std::string declined = object.substr(object.find("\"declined_by\""));
      EXPECT_EQ(field(declined, "device"), kGpu) << report;
      EXPECT_NE(field(declined, "reason").find(why), std::string::npos) << report;
    }
    std::printf("partition report: %s\n", report.c_str());
  } else {
    // With a device every node of this model is claimed by the GPU.
    for (const std::string& node : kNodes) EXPECT_EQ(field(node_object(report, node), "device"), kGpu) << report;
  }
  std::vector<onyx::Tensor> got = run(mixed), want = run(cpu);
  expect_near_outputs(got, want);
}

// The MLP and the CNN entirely on the GPU (fallback "fail": every node must be
// claimed), against their float64 references, at batch 1 and 8.
TEST(GpuProvider, RunsTheMlpAndCnnLikeTheFloat64Reference) {
  std::string why = unavailable_reason();
  if (!why.empty()) GTEST_SKIP() << kGpu << " provider unavailable: " << why;
  namespace tm = onyx::test_models;
  onyx::Env env = make_env();
  for (bool cnn : {false, true}) {
    tm::MlpWeights mlp = tm::make_mlp_weights();
    tm::CnnWeights conv = tm::make_cnn_weights();
    const std::string bytes = (cnn ? tm::build_cnn(conv) : tm::build_mlp(mlp)).SerializeAsString();
    onyx::Session session = make_session(env, bytes, {kGpu}, ONYX_FALLBACK_FAIL);
    for (int64_t batch : {1, 8}) {
      std::vector<float> x = tm::random_input(size_t(batch * 784), uint64_t(batch));
      std::vector<int64_t> dims = cnn ? std::vector<int64_t>{batch, 1, 28, 28} : std::vector<int64_t>{batch, 784};
      onyx::Tensor input = onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, dims, x);
      std::vector<onyx::Tensor> out = session.run({{"x", &input}});
      std::vector<double> ref = cnn ? tm::cnn_reference(conv, x, batch) : tm::mlp_reference(mlp, x, batch);
      ASSERT_EQ(size_t(out[0].size()), ref.size());
      double scale = 0;
      for (double r : ref) scale = std::max(scale, std::fabs(r));
      ASSERT_GT(scale, 0.1) << "degenerate reference";
      // float32 accumulation over up to 784-term dot products: 1e-4 of the
      // largest logit is ~40x the expected rounding error.
      for (size_t i = 0; i < ref.size(); ++i)
        EXPECT_NEAR(out[0].data<float>()[i], ref[i], 1e-4 * scale)
            << (cnn ? "cnn" : "mlp") << " batch " << batch << " element " << i;
    }
  }
}

// The benchmarks' transformer block (tests/models/transformer_block.h) on the
// GPU, the nodes it declines on the CPU (streams on for an asynchronous
// device, with events at each crossing), against the CPU provider alone.
TEST(GpuProvider, RunsTheTransformerBlockLikeTheCpuProvider) {
  std::string why = unavailable_reason();
  if (!why.empty()) GTEST_SKIP() << kGpu << " provider unavailable: " << why;
  namespace tm = onyx::test_models;
  onyx::Env env = make_env();
  const std::string bytes = tm::build_transformer_block(/*seq=*/16, /*dim=*/32).SerializeAsString();
  onyx::Session gpu = make_session(env, bytes, {kGpu, "cpu"}, ONYX_FALLBACK_ALLOW);
  onyx::Session cpu = make_session(env, bytes, {"cpu"}, ONYX_FALLBACK_FAIL);
  EXPECT_NE(gpu.partition_report().find("\"device\":\"" + kGpu + "\""), std::string::npos)
      << "no node of the block ran on " << kGpu;
  for (int64_t batch : {1, 3}) {
    std::vector<float> x = tm::random_input(size_t(batch * 16 * 32), uint64_t(batch) + 11);
    onyx::Tensor input = onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, {batch, 16, 32}, x);
    std::vector<onyx::Tensor> got = gpu.run({{"x", &input}}), want = cpu.run({{"x", &input}});
    ASSERT_EQ(got.size(), 1u);
    ASSERT_EQ(got[0].size(), want[0].size());
    double scale = 0;
    for (int64_t i = 0; i < want[0].size(); ++i) scale = std::max(scale, double(std::fabs(want[0].data<float>()[i])));
    ASSERT_GT(scale, 0.1) << "degenerate output";
    // float32 both ways, with different summation orders over 32- and
    // 128-term dot products, a softmax and two layer norms: 1e-4 of the
    // largest output is well above their rounding differences.
    for (int64_t i = 0; i < want[0].size(); ++i)
      EXPECT_NEAR(got[0].data<float>()[i], want[0].data<float>()[i], 1e-4 * scale) << "batch " << batch << " element " << i;
  }
}

TEST(GpuProvider, FailPolicyRefusesAnUnavailableGpuNamingIt) {
  std::string why = unavailable_reason();
  if (why.empty()) GTEST_SKIP() << kGpu << " is available here: nothing to refuse";
  onyx::Env env = make_env();
  try {
    make_session(env, model_bytes(), {kGpu, "cpu"}, ONYX_FALLBACK_FAIL);
    FAIL() << "the session was created";
  } catch (const onyx::Error& e) {
    EXPECT_EQ(e.code(), ONYX_STATUS_UNAVAILABLE);
    EXPECT_NE(std::string(e.what()).find("'" + kGpu + "'"), std::string::npos) << e.what();
  }
}

// A kernel's bad-input check (Gather's index range) is read when the run
// synchronizes its stream at the end, not in mid-run: the run still fails
// with INVALID_ARGUMENT naming the node, and the next run on the same
// session (and pooled stream) is clean.
TEST(GpuProvider, AnIndexOutOfRangeFailsTheRunNamingTheNodeAndTheNextRunIsClean) {
  onyx::Env env = make_env();
  if (!unavailable_reason().empty()) GTEST_SKIP() << kGpu << " is unavailable: " << unavailable_reason();
  onyx::testing::ModelBuilder m;
  m.input("x", {4, 3})
      .input("i", {2}, ONNX_NAMESPACE::TensorProto::INT64)
      .output("y", {2, 3})
      .node("Gather", {"x", "i"}, {"rows"}, "gather0")
      .node("Relu", {"rows"}, {"y"}, "relu0");
  onyx::Session s = make_session(env, m.bytes(), {kGpu}, ONYX_FALLBACK_FAIL);
  std::vector<float> x = {1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, -12};
  onyx::Tensor xt = onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, {4, 3}, x);
  for (int64_t bad : {int64_t{4}, int64_t{-5}}) {
    std::vector<int64_t> rows = {1, bad};
    onyx::Tensor it = onyx::Tensor::from<int64_t>(ONYX_DTYPE_INT64, {2}, rows);
    try {
      s.run({{"x", &xt}, {"i", &it}});
      ADD_FAILURE() << "index " << bad << " of 4 rows ran";
    } catch (const onyx::Error& e) {
      EXPECT_EQ(e.code(), ONYX_STATUS_INVALID_ARGUMENT) << e.what();
      EXPECT_NE(std::string(e.what()).find("gather0"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("outside [-4, 4)"), std::string::npos) << e.what();
    }
  }
  std::vector<int64_t> rows = {3, -4};
  onyx::Tensor it = onyx::Tensor::from<int64_t>(ONYX_DTYPE_INT64, {2}, rows);
  auto stats = onyx::gpu_test::stats_function(ONYX_GPU_PLUGIN_DIR, kGpu);  // the emulated device's counters
  const auto before = stats ? onyx::gpu_test::read_stats(stats) : onyx::gpu_test::Stats{};
  std::vector<onyx::Tensor> y = s.run({{"x", &xt}, {"i", &it}});
  if (stats) {
    const auto d = onyx::gpu_test::delta(onyx::gpu_test::read_stats(stats), before);
    EXPECT_EQ(d[onyx::gpu_test::kStreamSyncs], 1u) << "the run's one synchronization, none for the check";
  }
  ASSERT_EQ(y.size(), 1u);
  const float* got = y[0].data<float>();
  const std::vector<float> want = {0, 11, 0, 1, 0, 3};  // Relu of rows 3 and 0
  for (size_t k = 0; k < want.size(); ++k) EXPECT_EQ(got[k], want[k]) << "element " << k;
}

}  // namespace
