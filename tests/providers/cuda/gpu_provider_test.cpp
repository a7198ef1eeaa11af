// A GPU provider plugin (ONYX_TEST_GPU_PROVIDER: "cuda" or "rocm") loaded
// from disk through the runtime, as applications load it:
//  - it always loads; without a device it reports "unavailable" with the
//    runtime's reason and no devices;
//  - with a device, a small model of the ops it claims runs like the CPU
//    provider (skipped here with the reason otherwise);
//  - a session preferring it with the CPU as fallback runs on any machine,
//    and the partition report says why each node went where.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/onnx_import.h"
#include "model_builder.h"
#include "session/session.h"
#include "test_models.h"

namespace onyx::runtime {
namespace {

const std::string kGpu = ONYX_TEST_GPU_PROVIDER;

// x[4,8] -> MatMul(w) -> Add(b) -> Relu -> Softmax -> LayerNormalization -> y[4,8]
//                                              \-> ReduceMean(axis 1) -> m[4,1]
std::string model_bytes() {
  std::vector<float> w(64), b(8), scale(8, 1.5f), bias(8, 0.25f);
  for (int i = 0; i < 64; ++i) w[size_t(i)] = float((i * 37) % 17 - 8) / 8.f;
  for (int i = 0; i < 8; ++i) b[size_t(i)] = float(i) / 10.f - 0.3f;
  testing::ModelBuilder m;
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

StatusOr<std::unique_ptr<Session>> make_session(ProviderRegistry& registry,
                                                std::vector<std::string> providers,
                                                FallbackPolicy policy) {
  registry.add_search_dir(ONYX_PROVIDER_DIR);
  registry.add_search_dir(ONYX_GPU_PLUGIN_DIR);
  std::string bytes = model_bytes();
  auto model = ir::load_model_from_bytes(bytes.data(), bytes.size(), "");
  if (!model.ok()) return model.status();
  SessionOptions options;
  for (auto& p : providers) options.providers.push_back({p, {}});
  options.fallback = policy;
  options.intra_op_threads = 1;
  return Session::create(registry, std::move(model).value(), options);
}

std::vector<Tensor> run(Session& s) {
  Tensor x = Tensor::allocate(ONYX_DTYPE_FLOAT32, {4, 8});
  for (int i = 0; i < 32; ++i) x.data_as<float>()[i] = float((i * 13) % 11 - 5) / 3.f;
  auto out = s.run({{"x", x}});
  EXPECT_TRUE(out.ok()) << out.status().to_string();
  return out.ok() ? std::move(out).value() : std::vector<Tensor>{};
}

// "" when the provider has a usable device, else its reason.
std::string unavailable_reason() {
  ProviderRegistry registry;
  registry.add_search_dir(ONYX_PROVIDER_DIR);
  registry.add_search_dir(ONYX_GPU_PLUGIN_DIR);
  auto provider = registry.get(kGpu);
  if (!provider.ok()) return provider.status().to_string();
  Status st = (*provider)->availability();
  return st.ok() ? std::string() : st.message();
}

TEST(GpuProvider, LoadsAndReportsAvailabilityWithTheRuntimeReason) {
  ProviderRegistry registry;
  registry.add_search_dir(ONYX_PROVIDER_DIR);
  registry.add_search_dir(ONYX_GPU_PLUGIN_DIR);
  auto provider = registry.get(kGpu);
  ASSERT_TRUE(provider.ok()) << provider.status().to_string();
  EXPECT_EQ((*provider)->name(), kGpu);
  Status st = (*provider)->availability();
  if (st.ok()) {
    EXPECT_GE((*provider)->device_count(), 1u);
    return;
  }
  EXPECT_EQ(st.code(), ONYX_STATUS_UNAVAILABLE);
  EXPECT_EQ((*provider)->device_count(), 0u);
  // The reason names what failed: the device query or a library.
  const std::string& m = st.message();
  EXPECT_TRUE(m.find("GetDeviceCount returned") != std::string::npos ||
              m.find("no CUDA device") != std::string::npos ||
              m.find("no HIP device") != std::string::npos || m.find("cannot load") != std::string::npos)
      << m;
  std::printf("%s provider unavailable here: %s\n", kGpu.c_str(), m.c_str());
}

TEST(GpuProvider, RunsItsClaimedOpsLikeTheCpuProvider) {
  std::string why = unavailable_reason();
  if (!why.empty()) GTEST_SKIP() << kGpu << " provider unavailable: " << why;
  ProviderRegistry registry;
  auto gpu = make_session(registry, {kGpu}, FallbackPolicy::kFail);
  ASSERT_TRUE(gpu.ok()) << gpu.status().to_string();
  auto cpu = make_session(registry, {"cpu"}, FallbackPolicy::kFail);
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  std::vector<Tensor> got = run(**gpu), want = run(**cpu);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    ASSERT_EQ(got[k].size(), want[k].size());
    for (int64_t i = 0; i < got[k].size(); ++i)
      // Different summation orders in float32 over 8-term dot products and rows.
      EXPECT_NEAR(got[k].data_as<float>()[i], want[k].data_as<float>()[i], 1e-4) << k << "," << i;
  }
}

TEST(GpuProvider, MixedSessionPreferringItFallsBackToCpuAndTheReportSaysWhy) {
  ProviderRegistry registry;
  auto mixed = make_session(registry, {kGpu, "cpu"}, FallbackPolicy::kWarn);
  ASSERT_TRUE(mixed.ok()) << mixed.status().to_string();
  auto cpu = make_session(registry, {"cpu"}, FallbackPolicy::kFail);
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  const PartitionReport& r = (*mixed)->partition_report();
  std::string json = r.to_json((*mixed)->graph());
  std::string why = unavailable_reason();
  if (!why.empty()) {
    // No device here: every node runs on the CPU and says the GPU was unavailable, and why.
    ASSERT_EQ(r.unavailable.size(), 1u) << json;
    EXPECT_EQ(r.unavailable[0].name, kGpu);
    EXPECT_EQ(r.unavailable[0].reason, why);
    for (const NodePlacement& place : r.nodes) {
      EXPECT_EQ(r.devices[size_t(place.device)], "cpu") << json;
      EXPECT_TRUE(r.is_fallback(place));
      ASSERT_FALSE(place.declined.empty()) << json;
      EXPECT_EQ(place.declined[0].first, kGpu);
      EXPECT_NE(place.declined[0].second.find(why), std::string::npos) << json;
    }
    EXPECT_NE(json.find("\"fallback\":true"), std::string::npos) << json;
    std::printf("partition report: %s\n", json.c_str());
  } else {
    // With a device every node of this model is claimed by the GPU.
    for (const NodePlacement& place : r.nodes) EXPECT_EQ(r.devices[size_t(place.device)], kGpu) << json;
  }
  std::vector<Tensor> got = run(**mixed), want = run(**cpu);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k)
    for (int64_t i = 0; i < got[k].size(); ++i)
      EXPECT_NEAR(got[k].data_as<float>()[i], want[k].data_as<float>()[i], 1e-4);
}

// The MLP and the CNN entirely on the GPU (fallback "fail": every node must be
// claimed), against their float64 references, at batch 1 and 8.
TEST(GpuProvider, RunsTheMlpAndCnnLikeTheFloat64Reference) {
  std::string why = unavailable_reason();
  if (!why.empty()) GTEST_SKIP() << kGpu << " provider unavailable: " << why;
  namespace tm = onyx::test_models;
  for (bool cnn : {false, true}) {
    tm::MlpWeights mlp = tm::make_mlp_weights();
    tm::CnnWeights conv = tm::make_cnn_weights();
    std::string bytes = (cnn ? tm::build_cnn(conv) : tm::build_mlp(mlp)).SerializeAsString();
    auto model = ir::load_model_from_bytes(bytes.data(), bytes.size(), "");
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    ProviderRegistry registry;
    registry.add_search_dir(ONYX_PROVIDER_DIR);
    registry.add_search_dir(ONYX_GPU_PLUGIN_DIR);
    SessionOptions options;
    options.providers.push_back({kGpu, {}});
    options.fallback = FallbackPolicy::kFail;
    options.intra_op_threads = 1;
    auto session = Session::create(registry, std::move(model).value(), options);
    ASSERT_TRUE(session.ok()) << session.status().to_string();
    for (int64_t batch : {1, 8}) {
      std::vector<float> x = tm::random_input(size_t(batch * 784), uint64_t(batch));
      Shape dims = cnn ? Shape{batch, 1, 28, 28} : Shape{batch, 784};
      Tensor input = Tensor::allocate(ONYX_DTYPE_FLOAT32, dims);
      std::copy(x.begin(), x.end(), input.data_as<float>());
      auto out = (*session)->run({{"x", input}});
      ASSERT_TRUE(out.ok()) << out.status().to_string();
      std::vector<double> ref = cnn ? tm::cnn_reference(conv, x, batch) : tm::mlp_reference(mlp, x, batch);
      ASSERT_EQ(size_t(out.value()[0].size()), ref.size());
      double scale = 0;
      for (double r : ref) scale = std::max(scale, std::fabs(r));
      ASSERT_GT(scale, 0.1) << "degenerate reference";
      // float32 accumulation over up to 784-term dot products: 1e-4 of the
      // largest logit is ~40x the expected rounding error.
      for (size_t i = 0; i < ref.size(); ++i)
        EXPECT_NEAR(out.value()[0].data_as<float>()[i], ref[i], 1e-4 * scale)
            << (cnn ? "cnn" : "mlp") << " batch " << batch << " element " << i;
    }
  }
}

TEST(GpuProvider, FailPolicyRefusesAnUnavailableGpuNamingIt) {
  std::string why = unavailable_reason();
  if (why.empty()) GTEST_SKIP() << kGpu << " is available here: nothing to refuse";
  ProviderRegistry registry;
  auto s = make_session(registry, {kGpu, "cpu"}, FallbackPolicy::kFail);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), ONYX_STATUS_UNAVAILABLE);
  EXPECT_NE(s.status().message().find("'" + kGpu + "'"), std::string::npos) << s.status().message();
}

}  // namespace
}  // namespace onyx::runtime
