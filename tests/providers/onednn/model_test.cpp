// The MLP and CNN test models on the oneDNN provider (cpu fallback for what it
// declines): placement and fusion in the partition report, and outputs
// against the float64 reference and the CPU provider.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <thread>

#include "onednn_test_util.h"
#include "test_models.h"

namespace onyx::onednn_test {
namespace {

namespace tm = onyx::test_models;

// Normalized max error, max_i |out_i - ref_i| / max(max_j |ref_j|, 1e-3), as in
// tests/e2e. In float32 a length-K dot product is off by at most ~K*u of its
// terms' magnitude (u = 6e-8, K <= 784: 4.7e-5), typically ~sqrt(K)*u; folding
// BatchNormalization into the conv weights adds one rounding per weight.
// 1e-4 is above that, and far below what a wrong kernel gives (>= 1e-2).
constexpr double kFloat32Tolerance = 1e-4;
// bf16 keeps 8 significant bits: each product's inputs are rounded to 2^-9
// relative, so a product is off by up to ~2^-8 = 3.9e-3 of its magnitude;
// over K terms of random sign that grows like sqrt(K) in the sum but the
// result is a sum of as many terms, so the normalized error stays near 1e-2.
constexpr double kBf16Tolerance = 3e-2;

double normalized_error(const std::vector<float>& out, const std::vector<double>& ref) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    scale = std::max(scale, std::fabs(ref[i]));
    double e = std::fabs(double(out[i]) - ref[i]);
    err = std::isnan(e) ? INFINITY : std::max(err, e);
  }
  return err / std::max(scale, 1e-3);
}

std::vector<float> run_model(onyx::Session& session, const std::vector<int64_t>& dims, const std::vector<float>& x) {
  onyx::Tensor input = onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, dims, x);
  std::vector<onyx::Tensor> out = session.run({{"x", &input}});
  EXPECT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{dims[0], 10}));
  return std::vector<float>(out[0].data<float>(), out[0].data<float>() + out[0].size());
}

// Runs batch 1, 8 and 1 again on the oneDNN session and the CPU session.
void check_against_reference_and_cpu(onyx::Session& onednn, onyx::Session& cpu, bool cnn,
                                     const std::function<std::vector<double>(const std::vector<float>&, int64_t)>& ref,
                                     double tolerance, const char* label) {
  uint64_t seed = 100;
  for (int64_t batch : {1, 8, 1}) {
    std::vector<int64_t> dims = cnn ? std::vector<int64_t>{batch, 1, 28, 28} : std::vector<int64_t>{batch, 784};
    std::vector<float> x = tm::random_input(size_t(batch * 784), seed++);
    std::vector<float> got = run_model(onednn, dims, x);
    std::vector<float> on_cpu = run_model(cpu, dims, x);
    std::vector<double> want = ref(x, batch);
    std::vector<double> cpu_as_ref(on_cpu.begin(), on_cpu.end());
    double vs_ref = normalized_error(got, want), vs_cpu = normalized_error(got, cpu_as_ref);
    std::printf("[ accuracy ] %s batch %lld: normalized error %.3g vs float64 reference, %.3g vs cpu provider "
                "(tolerance %.0e)\n",
                label, (long long)batch, vs_ref, vs_cpu, tolerance);
    EXPECT_LE(vs_ref, tolerance) << label << " batch " << batch;
    EXPECT_LE(vs_cpu, tolerance) << label << " batch " << batch;
  }
}

TEST(OnednnModels, MlpRunsFusedOnOnednnAndMatchesCpu) {
  onyx::Env env;
  tm::MlpWeights w = tm::make_mlp_weights();
  onnx::ModelProto model = tm::build_mlp(w);
  onyx::Session onednn = make_session(env, model, onednn_then_cpu());
  onyx::Session cpu = make_session(env, model, cpu_only());
  std::string report = onednn.partition_report();
  for (const char* node : {"fc1", "relu1", "fc2", "relu2", "fc3"}) EXPECT_EQ(node_device(report, node), "onednn") << node;
  // Gemm + Relu run as one kernel.
  EXPECT_NE(node_fused_group(report, "fc1"), 0) << report;
  EXPECT_EQ(node_fused_group(report, "fc1"), node_fused_group(report, "relu1"));
  EXPECT_NE(node_fused_group(report, "fc1"), node_fused_group(report, "fc2"));
  check_against_reference_and_cpu(
      onednn, cpu, false, [&](const std::vector<float>& x, int64_t b) { return tm::mlp_reference(w, x, b); },
      kFloat32Tolerance, "mlp onednn");
}

// With graph optimization off the provider sees BatchNormalization and fuses
// Conv + BatchNormalization + Relu itself; with the default, the core has
// already folded BatchNormalization into the Conv and the provider fuses
// Conv + Relu.
TEST(OnednnModels, CnnRunsFusedOnOnednnAndMatchesCpu) {
  onyx::Env env;
  tm::CnnWeights w = tm::make_cnn_weights();
  onnx::ModelProto model = tm::build_cnn(w);
  for (bool optimized : {false, true}) {
    onyx::SessionOptions onednn_options = onednn_then_cpu();
    if (!optimized) onednn_options.graph_optimization(ONYX_GRAPH_OPTIMIZATION_OFF);
    onyx::Session onednn = make_session(env, model, onednn_options);
    onyx::Session cpu = make_session(env, model, cpu_only());
    std::string report = onednn.partition_report();
    std::vector<const char*> nodes = {"conv1", "relu1", "pool1", "conv2", "relu2", "pool2", "flatten", "fc1", "fc2"};
    if (!optimized) nodes.insert(nodes.end(), {"bn1", "bn2"});
    for (const char* node : nodes) EXPECT_EQ(node_device(report, node), "onednn") << node;
    // The convolutional part is one blocked-layout group.
    for (const char* node : {"pool1", "conv2", "relu2", "pool2"})
      EXPECT_EQ(node_fused_group(report, node), node_fused_group(report, "conv1")) << node;
    EXPECT_EQ(report.find("\"node\":\"bn1\"") == std::string::npos, optimized) << report;
    int group = node_fused_group(report, "conv1");
    EXPECT_NE(group, 0) << report;
    if (!optimized) {
      EXPECT_EQ(node_fused_group(report, "bn1"), group);
    }
    EXPECT_EQ(node_fused_group(report, "relu1"), group);
    check_against_reference_and_cpu(
        onednn, cpu, true, [&](const std::vector<float>& x, int64_t b) { return tm::cnn_reference(w, x, b); },
        kFloat32Tolerance, optimized ? "cnn onednn (optimized)" : "cnn onednn");
  }
}

// The whole CNN runs on oneDNN: listing it alone, with fallback "fail", works.
TEST(OnednnModels, CnnRunsOnOnednnAlone) {
  onyx::Env env;
  tm::CnnWeights w = tm::make_cnn_weights();
  onyx::SessionOptions alone;
  alone.provider("onednn").fallback(ONYX_FALLBACK_FAIL);
  onyx::Session onednn = make_session(env, tm::build_cnn(w), alone);
  onyx::Session cpu = make_session(env, tm::build_cnn(w), cpu_only());
  check_against_reference_and_cpu(
      onednn, cpu, true, [&](const std::vector<float>& x, int64_t b) { return tm::cnn_reference(w, x, b); },
      kFloat32Tolerance, "cnn onednn alone");
}

// Concurrent runs of one session (the ABI allows them): each thread's results
// equal those of the same inputs run alone. Shapes differ per thread, so
// primitives are built while other threads run.
TEST(OnednnModels, ConcurrentRunsOfOneSessionAgree) {
  onyx::Env env;
  onyx::Session session = make_session(env, tm::build_cnn(tm::make_cnn_weights()), onednn_then_cpu());
  const std::vector<int64_t> batches = {1, 3, 8};
  std::vector<std::vector<float>> inputs, alone;
  for (size_t t = 0; t < batches.size(); ++t) {
    inputs.push_back(tm::random_input(size_t(batches[t] * 784), 200 + t));
    alone.push_back(run_model(session, {batches[t], 1, 28, 28}, inputs[t]));
  }
  onyx::Session fresh = make_session(env, tm::build_cnn(tm::make_cnn_weights()), onednn_then_cpu());
  std::vector<double> worst(batches.size(), 0.0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < batches.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 10; ++k) {
        onyx::Tensor input = onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, {batches[t], 1, 28, 28}, inputs[t]);
        std::vector<onyx::Tensor> out = fresh.run({{"x", &input}});
        std::vector<float> got(out[0].data<float>(), out[0].data<float>() + out[0].size());
        std::vector<double> want(alone[t].begin(), alone[t].end());
        worst[t] = std::max(worst[t], got.size() == want.size() ? normalized_error(got, want) : INFINITY);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  // Same shapes, same primitives and thread counts: only a different
  // split of work could change the rounding, by a few ulp.
  for (size_t t = 0; t < batches.size(); ++t) EXPECT_LE(worst[t], 1e-6) << "batch " << batches[t];
}

// With reduced precision allowed, on a CPU with native bf16, MatMul/Gemm/Conv
// run in bf16: results stay within the bf16 tolerance, and differ from the
// float32 run (so the switch is real).
TEST(OnednnModels, ReducedPrecisionUsesBf16WhenAllowed) {
  onyx::Env env;
  std::string providers = env.providers_json();
  if (providers.find("native bf16") == std::string::npos) GTEST_SKIP() << "this CPU has no native bf16";
  tm::MlpWeights mw = tm::make_mlp_weights();
  tm::CnnWeights cw = tm::make_cnn_weights();
  onnx::ModelProto mlp = tm::build_mlp(mw), cnn = tm::build_cnn(cw);
  onyx::Session mlp_bf16 = make_session(env, mlp, onednn_then_cpu({{"allow_reduced_precision", "1"}}));
  // The session-wide switch reaches the device like the provider option does.
  onyx::Session cnn_bf16 = make_session(env, cnn, onednn_then_cpu().allow_reduced_precision());
  onyx::Session mlp_cpu = make_session(env, mlp, cpu_only()), cnn_cpu = make_session(env, cnn, cpu_only());
  check_against_reference_and_cpu(
      mlp_bf16, mlp_cpu, false, [&](const std::vector<float>& x, int64_t b) { return tm::mlp_reference(mw, x, b); },
      kBf16Tolerance, "mlp onednn bf16");
  check_against_reference_and_cpu(
      cnn_bf16, cnn_cpu, true, [&](const std::vector<float>& x, int64_t b) { return tm::cnn_reference(cw, x, b); },
      kBf16Tolerance, "cnn onednn bf16");
  std::vector<float> x = tm::random_input(784, 7);
  std::vector<float> reduced = run_model(mlp_bf16, {1, 784}, x);
  onyx::Session mlp_f32 = make_session(env, mlp, onednn_then_cpu());
  std::vector<float> full = run_model(mlp_f32, {1, 784}, x);
  std::vector<double> full_d(full.begin(), full.end());
  EXPECT_GT(normalized_error(reduced, full_d), 1e-5) << "allow_reduced_precision=1 changed nothing";
}

}  // namespace
}  // namespace onyx::onednn_test
