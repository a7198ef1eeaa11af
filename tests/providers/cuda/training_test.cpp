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
#include <functional>
#include <random>

#include "emulation_stats.h"
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

// Learning rate and hyperparameters set on a session before its steps.
using Configure = std::function<void(onyx::TrainingSession&)>;

onyx::Tensor random_pixels(const std::vector<int64_t>& dims, std::mt19937& gen) {
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  std::uniform_real_distribution<float> pixel(0.f, 1.f);
  std::vector<float> x(static_cast<size_t>(count));
  for (float& v : x) v = pixel(gen);
  return onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, dims, x);
}

onyx::Tensor random_labels(int64_t n, std::mt19937& gen) {
  std::vector<int64_t> labels(static_cast<size_t>(n));
  for (auto& l : labels) l = int64_t(gen() % 10);
  return onyx::Tensor::from<int64_t>(ONYX_DTYPE_INT64, {n}, labels);
}

// A training session of the artifacts in `dir` on `provider` alone
// (fallback fail), and one random batch it trains on at every step.
struct Job {
  std::mt19937 gen;
  onyx::CheckpointState state;
  onyx::TrainingSession session;
  onyx::Tensor x, y;
  Job(onyx::Env& env, const fs::path& dir, const std::string& provider, const std::vector<int64_t>& x_dims,
      unsigned seed)
      : gen(seed),
        state(onyx::CheckpointState::load((dir / "checkpoint.ckpt").string())),
        session(env, state, (dir / "training.onnx").string(), (dir / "eval.onnx").string(),
                (dir / "optimizer.onnx").string(),
                onyx::SessionOptions().provider(provider).fallback(ONYX_FALLBACK_FAIL).threads(1)),
        x(random_pixels(x_dims, gen)),
        y(random_labels(x_dims[0], gen)) {}
};

// `steps` optimizer steps on `provider` alone on one batch: the loss must
// fall as the model fits it.
Run train(onyx::Env& env, const fs::path& artifacts, const std::string& provider, const std::vector<int64_t>& x_dims,
          int steps, const Configure& configure = {}) {
  Job job(env, artifacts, provider, x_dims, 5);
  onyx::TrainingSession& session = job.session;
  onyx::Tensor &xt = job.x, &yt = job.y;
  if (configure) configure(session);
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

// Writes `model` and its training artifacts (generate_artifacts with
// `options`) under `dir`; returns the artifacts' folder.
fs::path artifacts_of(const onnx::ModelProto& model, const std::vector<std::pair<std::string, std::string>>& options,
                      const fs::path& dir) {
  tm::write_model(model, dir / "model.onnx");
  onyx::generate_artifacts((dir / "model.onnx").string(), options, (dir / "artifacts").string());
  return dir / "artifacts";
}

void expect_same_training(const onnx::ModelProto& model, const std::vector<std::pair<std::string, std::string>>& options,
                          const std::vector<int64_t>& x_dims) {
  onyx::Env env = make_env();
  if (!gpu_available(env)) GTEST_SKIP() << kGpu << " is unavailable here";
  TempDir tmp;
  artifacts_of(model, options, tmp.path);
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

// Parameters `a` and `b` (flat float buffers) agree to 1e-5 (SGD below:
// each step moves a parameter by lr times its gradient, so float32 sums of
// the gradient in another order differ there by ~lr * 1e-7 * |g| per step).
void expect_near_parameters(const std::vector<unsigned char>& a, const std::vector<unsigned char>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  const float* x = reinterpret_cast<const float*>(a.data());
  const float* y = reinterpret_cast<const float*>(b.data());
  size_t differ = 0, worst = 0;
  for (size_t i = 0; i < a.size() / sizeof(float); ++i) {
    differ += !(std::fabs(x[i] - y[i]) <= 1e-5f);
    if (std::fabs(x[i] - y[i]) > std::fabs(x[worst] - y[worst])) worst = i;
  }
  EXPECT_EQ(differ, 0u) << what << ": parameters that differ by more than 1e-5; the most at float " << worst << ": "
                        << x[worst] << " vs " << y[worst];
}

// The scripted steps' optimizer: SGD with momentum, whose update is linear
// in the gradient (AdamW divides each gradient by its own running size, so
// one whose terms nearly cancel moves by up to lr either way on rounding);
// the momentum buffer is the state a save and resume must carry.
void sgd_with_momentum(onyx::TrainingSession& session) {
  session.set_learning_rate(0.1);
  session.set_hyperparameter("momentum", 0.9f);
}

// Steps that move the state between the device, where a GPU session keeps
// it between steps, and the host: plain steps, an eval, accumulating,
// weighted and averaged steps (summed and scaled on the device by the GPU
// session, on the host by the CPU's), a parameter written through
// the checkpoint while the device holds the state, and the checkpoint saved
// to `saved`. Returns the losses (train and eval) and the final parameters.
Run scripted_steps(onyx::Env& env, const fs::path& artifacts, const std::string& provider,
                   const std::vector<int64_t>& x_dims, const fs::path& saved) {
  Job job(env, artifacts, provider, x_dims, 7);
  onyx::TrainingSession& session = job.session;
  onyx::CheckpointState& state = job.state;
  onyx::Tensor &xt = job.x, &yt = job.y;
  sgd_with_momentum(session);
  Run run;
  auto train = [&](bool accumulate) {
    if (!accumulate) session.lazy_reset_grad();
    run.losses.push_back(session.train_step({&xt, &yt})[0].data<float>()[0]);
  };
  auto eval = [&] { run.losses.push_back(session.eval_step({&xt, &yt})[0].data<float>()[0]); };
  train(false);
  session.optimizer_step();
  eval();
  train(false);
  train(true);
  session.optimizer_step();
  train(false);
  session.optimizer_step();
  // Weighted micro-batches, averaged: 0.5 g + 3 g over 3.5, then a weighted
  // step of its own.
  session.set_gradient_accumulation_mean(true);
  session.set_step_weight(0.5);
  train(false);
  session.set_step_weight(3.0);
  train(true);
  session.optimizer_step();
  session.set_gradient_accumulation_mean(false);
  session.set_step_weight(0.25);
  train(false);
  session.optimizer_step();
  const std::string name = state.trainable()[0].name;
  onyx::Tensor halved = state.parameter(name);
  for (int64_t i = 0; i < halved.size(); ++i) halved.data<float>()[i] *= 0.5f;
  state.update_parameter(name, halved);
  train(false);
  session.optimizer_step();
  eval();
  state.save(saved.string());
  run.parameters = session.parameters_to_buffer();
  return run;
}

// Two more steps on the CPU provider from a checkpoint file: they depend on
// its parameters, optimizer slots and step count.
Run resume_on_cpu(onyx::Env& env, const fs::path& artifacts, const fs::path& saved, const std::vector<int64_t>& x_dims) {
  fs::path copy = saved.parent_path() / "resume";
  fs::create_directories(copy);
  for (const char* f : {"training.onnx", "eval.onnx", "optimizer.onnx"})
    fs::copy_file(artifacts / f, copy / f, fs::copy_options::overwrite_existing);
  fs::copy_file(saved, copy / "checkpoint.ckpt", fs::copy_options::overwrite_existing);
  return train(env, copy, "cpu", x_dims, 2, sgd_with_momentum);
}

void expect_same_scripted_steps(const onnx::ModelProto& model,
                                const std::vector<std::pair<std::string, std::string>>& options,
                                const std::vector<int64_t>& x_dims) {
  onyx::Env env = make_env();
  if (!gpu_available(env)) GTEST_SKIP() << kGpu << " is unavailable here";
  TempDir tmp;
  artifacts_of(model, options, tmp.path);
  Run gpu = scripted_steps(env, tmp.path / "artifacts", kGpu, x_dims, tmp.path / "gpu.ckpt");
  Run cpu = scripted_steps(env, tmp.path / "artifacts", "cpu", x_dims, tmp.path / "cpu.ckpt");
  ASSERT_EQ(gpu.losses.size(), cpu.losses.size());
  for (size_t s = 0; s < gpu.losses.size(); ++s)
    EXPECT_NEAR(gpu.losses[s], cpu.losses[s], 1e-4 * cpu.losses[s]) << "loss " << s;
  expect_near_parameters(gpu.parameters, cpu.parameters, "after the scripted steps");
  // The saved files hold what the device held: the same two steps from each.
  Run from_gpu = resume_on_cpu(env, tmp.path / "artifacts", tmp.path / "gpu.ckpt", x_dims);
  Run from_cpu = resume_on_cpu(env, tmp.path / "artifacts", tmp.path / "cpu.ckpt", x_dims);
  for (size_t s = 0; s < from_gpu.losses.size(); ++s)
    EXPECT_NEAR(from_gpu.losses[s], from_cpu.losses[s], 1e-4 * from_cpu.losses[s]) << "resumed loss " << s;
  expect_near_parameters(from_gpu.parameters, from_cpu.parameters, "resumed from the saved checkpoints");
}

TEST(GpuTraining, StateHeldOnTheDeviceReachesTheCheckpointAndAccumulation) {
  expect_same_scripted_steps(tm::build_mlp(tm::make_mlp_weights()),
                             {{"loss", "crossentropy"}, {"optimizer", "sgd"}}, {16, 784});
}

// Between steps the device keeps parameters, gradients and AdamW's slots: a
// step copies its batch and the optimizer's scalars in and its loss out.
// Counted on the emulated device (its copy counters); the H200 shows the
// time this saves in gpu-check's onyx_train_bench.
TEST(GpuTraining, AStepOnTheDeviceCopiesItsBatchInAndItsLossOut) {
  onyx::Env env = make_env();
  if (!gpu_available(env)) GTEST_SKIP() << kGpu << " is unavailable here";
  auto stats = onyx::gpu_test::stats_function(ONYX_GPU_PLUGIN_DIR, kGpu);
  TempDir tmp;
  Job job(env, artifacts_of(tm::build_mlp(tm::make_mlp_weights()), {{"loss", "crossentropy"}, {"optimizer", "adamw"}},
                            tmp.path),
          kGpu, {16, 784}, 3);
  onyx::TrainingSession& session = job.session;
  onyx::CheckpointState& state = job.state;
  onyx::Tensor &xt = job.x, &yt = job.y;
  if (!stats) GTEST_SKIP() << "copies are counted on the emulated device only";
  auto step = [&] {
    session.lazy_reset_grad();
    session.train_step({&xt, &yt});
    session.optimizer_step();
  };
  // (Read before the steps: reading the checkpoint brings the state to the
  // host, and the next step uploads it again.)
  const size_t parameters = state.trainable().size();  // 6: three weights, three biases
  step();  // uploads the parameters, makes the slots
  const auto before = onyx::gpu_test::read_stats(stats);
  step();
  const auto d = onyx::gpu_test::delta(onyx::gpu_test::read_stats(stats), before);
  // In: x, labels and AdamW's 7 scalars (lr, step, max_grad_norm, betas,
  // epsilon, weight decay), where host-held state added 6 parameters to
  // each model and 6 gradients and 12 slots to the optimizer's (40 in all).
  EXPECT_LE(d[onyx::gpu_test::kH2D], 2u + 7u) << parameters << " parameters";
  // Two micro-batches, weighted and averaged, sum and scale on the device
  // (+1 copy in per gradient arithmetic run: its weight).
  const auto before_accumulation = onyx::gpu_test::read_stats(stats);
  session.set_gradient_accumulation_mean(true);
  session.lazy_reset_grad();
  session.set_step_weight(2.0);
  session.train_step({&xt, &yt});
  session.train_step({&xt, &yt});
  session.optimizer_step();
  const auto acc = onyx::gpu_test::delta(onyx::gpu_test::read_stats(stats), before_accumulation);
  EXPECT_LE(acc[onyx::gpu_test::kH2D], 2u * 2u + 7u + 3u) << "an accumulating step";
  EXPECT_LE(acc[onyx::gpu_test::kD2H], 2 * (session.output_names().size() + 3)) << "an accumulating step";
  // Out: the train step's own outputs (the loss, the logits) and what the
  // kernels read back themselves (the label checks of the loss and its
  // gradient, copied without waiting; the Reshape of the logits' gradient
  // reading its shape), where 6 gradients, 6 parameters and 12 slots came
  // back too.
  EXPECT_LE(d[onyx::gpu_test::kD2H], session.output_names().size() + 3);
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
