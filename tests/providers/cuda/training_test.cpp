// Training on a GPU provider (ONYX_TEST_GPU_PROVIDER): the MLP and the CNN of
// the README's job take the same AdamW steps on the GPU alone (no node falls
// back: the losses, gradients and fused updates all have GPU kernels) as on
// the CPU provider, from the same checkpoint and batches. Runs on the emulated
// device everywhere and on the real GPU in scripts/gpu-check.sh.
#include <gtest/gtest.h>
#include <onyx/onyx_training.hpp>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "test_models.h"

namespace {

namespace fs = std::filesystem;
namespace tm = onyx::test_models;
const std::string kGpu = ONYX_TEST_GPU_PROVIDER;

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("onyx_gpu_training_" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

onyx::Env make_env() {
  onyx::Env env;
  env.add_provider_dir(ONYX_PROVIDER_DIR);
  env.add_provider_dir(ONYX_GPU_PLUGIN_DIR);
  return env;
}

bool gpu_available(onyx::Env& env) {
  const std::string json = env.providers_json();
  const size_t at = json.find("\"name\":\"" + kGpu + "\"");
  return at != std::string::npos && json.find("\"available\":true", at) == json.find("\"available\":", at);
}

struct Run {
  std::vector<float> losses;
  std::vector<unsigned char> parameters;
};

// `steps` AdamW steps on `provider` alone (fallback fail) on one random batch.
Run train(onyx::Env& env, const fs::path& artifacts, const std::string& provider, const std::vector<int64_t>& x_dims,
          int steps) {
  onyx::SessionOptions options;
  options.provider(provider).fallback(ONYX_FALLBACK_FAIL).threads(1);
  auto state = onyx::CheckpointState::load((artifacts / "checkpoint.ckpt").string());
  onyx::TrainingSession session(env, state, (artifacts / "training.onnx").string(), (artifacts / "eval.onnx").string(),
                                (artifacts / "optimizer.onnx").string(), options);
  int64_t count = 1;
  for (int64_t d : x_dims) count *= d;
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> pixel(0.f, 1.f);
  // One batch, every step: the loss must fall as the model fits it.
  std::vector<float> x(static_cast<size_t>(count));
  for (float& v : x) v = pixel(gen);
  std::vector<int64_t> labels(static_cast<size_t>(x_dims[0]));
  for (auto& l : labels) l = int64_t(gen() % 10);
  onyx::Tensor xt = onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, x_dims, x);
  onyx::Tensor yt = onyx::Tensor::from<int64_t>(ONYX_DTYPE_INT64, {x_dims[0]}, labels);
  Run run;
  for (int step = 0; step < steps; ++step) {
    session.lazy_reset_grad();
    std::vector<onyx::Tensor> out = session.train_step({&xt, &yt});
    run.losses.push_back(out[0].data<float>()[0]);
    session.optimizer_step();
  }
  run.parameters = session.parameters_to_buffer();
  return run;
}

void expect_same_training(const onnx::ModelProto& model, const std::vector<std::pair<std::string, std::string>>& options,
                          const std::vector<int64_t>& x_dims) {
  onyx::Env env = make_env();
  if (!gpu_available(env)) GTEST_SKIP() << kGpu << " is unavailable here";
  TempDir tmp;
  tm::write_model(model, tmp.path / "model.onnx");
  onyx::generate_artifacts((tmp.path / "model.onnx").string(), options, (tmp.path / "artifacts").string());
  const int steps = 6;
  Run gpu = train(env, tmp.path / "artifacts", kGpu, x_dims, steps);
  Run cpu = train(env, tmp.path / "artifacts", "cpu", x_dims, steps);
  // float32 sums in other orders (GEMM tiles, blocks), a few ulp per step,
  // carried through 6 AdamW steps of lr 1e-3: 1e-4 relative on the loss, and
  // 1e-5 absolute on parameters of magnitude ~0.1 that moved ~6e-3.
  for (int s = 0; s < steps; ++s) EXPECT_NEAR(gpu.losses[size_t(s)], cpu.losses[size_t(s)], 1e-4 * cpu.losses[size_t(s)]) << "step " << s;
  ASSERT_EQ(gpu.parameters.size(), cpu.parameters.size());
  const float* g = reinterpret_cast<const float*>(gpu.parameters.data());
  const float* c = reinterpret_cast<const float*>(cpu.parameters.data());
  size_t differ = 0;
  for (size_t i = 0; i < gpu.parameters.size() / sizeof(float); ++i) differ += !(std::fabs(g[i] - c[i]) <= 1e-5f);
  EXPECT_EQ(differ, 0u) << "parameters that differ by more than 1e-5 after " << steps << " steps";
  EXPECT_LT(gpu.losses.back(), gpu.losses.front()) << "the loss should fall";
}

TEST(GpuTraining, TheMlpTakesTheCpuProvidersStepsOnTheGpuAlone) {
  expect_same_training(tm::build_mlp(tm::make_mlp_weights()), {{"loss", "crossentropy"}, {"optimizer", "adamw"}},
                       {16, 784});
}

TEST(GpuTraining, TheCnnTakesTheCpuProvidersStepsOnTheGpuAlone) {
  expect_same_training(tm::build_cnn(tm::make_cnn_weights()),
                       {{"loss", "crossentropy"}, {"optimizer", "adamw"}, {"frozen", "bn1.mean"}, {"frozen", "bn1.var"},
                        {"frozen", "bn2.mean"}, {"frozen", "bn2.var"}},
                       {16, 1, 28, 28});
}

}  // namespace
