// Streams the host drives (provider ABI 1.2) on a GPU provider: kernels and
// copies of a run go on the run's stream, a run synchronizes once, values
// that cross to the CPU are waited for with events, and concurrent runs get
// streams of their own. The emulated device defers stream work until it is
// waited for (emulation/stream.cpp), so a missing wait shows as wrong
// results here; its counters (emulation_stats.h) say where work ran. On a
// real GPU the counting checks are skipped and results are still compared.
#include <gtest/gtest.h>
#include <onyx/onyx.hpp>

#include <span>
#include <thread>

#include "emulation_stats.h"
#include "model_builder.h"
#include "test_models.h"

namespace {

namespace tm = onyx::test_models;
using namespace onyx::gpu_test;
const std::string kGpu = ONYX_TEST_GPU_PROVIDER;

onyx::Env make_env() {
  onyx::Env env;
  env.add_provider_dir(ONYX_PROVIDER_DIR);
  env.add_provider_dir(ONYX_GPU_PLUGIN_DIR);
  return env;
}

// A session of `bytes` on `providers`, or "" in *skip when the GPU is unavailable.
std::unique_ptr<onyx::Session> make_session(onyx::Env& env, const std::string& bytes,
                                            const std::vector<std::string>& providers, std::string* skip) {
  onyx::SessionOptions options;
  for (const std::string& p : providers) options.provider(p);
  options.fallback(providers.size() > 1 ? ONYX_FALLBACK_ALLOW : ONYX_FALLBACK_FAIL).threads(1);
  try {
    return std::make_unique<onyx::Session>(env, std::as_bytes(std::span(bytes.data(), bytes.size())), options);
  } catch (const onyx::Error& e) {
    if (e.code() != ONYX_STATUS_UNAVAILABLE) throw;
    *skip = e.what();
    return nullptr;
  }
}

std::vector<float> values(onyx::Tensor& t) { return {t.data<float>(), t.data<float>() + t.size()}; }

onyx::Tensor mlp_input(int64_t batch, uint64_t seed) {
  return onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, {batch, 784}, tm::random_input(size_t(batch * 784), seed));
}

TEST(Streams, KernelsAndCopiesRunOnTheRunsStreamWithOneSyncPerRun) {
  onyx::Env env = make_env();
  std::string skip;
  auto session = make_session(env, tm::build_mlp(tm::make_mlp_weights()).SerializeAsString(), {kGpu}, &skip);
  if (!session) GTEST_SKIP() << skip;
  StatsFn stats = stats_function(ONYX_GPU_PLUGIN_DIR, kGpu);
  if (!stats) GTEST_SKIP() << "the " << kGpu << " plugin has no emulation counters";
  onyx::Tensor x = mlp_input(4, 3);
  std::vector<float> first = values(session->run({{"x", &x}})[0]);  // creates the run's stream
  const Stats before = read_stats(stats);
  constexpr uint64_t kRuns = 10;
  for (uint64_t r = 0; r < kRuns; ++r) EXPECT_EQ(values(session->run({{"x", &x}})[0]), first);
  const Stats d = delta(read_stats(stats), before);
  EXPECT_EQ(d[kKernelsWithoutStream], 0u) << "every kernel gets the run's stream";
  EXPECT_GE(d[kKernelsOnStream], 5 * kRuns) << "three Gemm and two Relu per run";
  EXPECT_EQ(d[kH2D], kRuns) << "the input, on the stream";
  EXPECT_EQ(d[kD2H], kRuns) << "the output, on the stream";
  EXPECT_EQ(d[kStreamSyncs], kRuns) << "one synchronization per run";
  EXPECT_EQ(d[kEventSyncs], 0u) << "nothing crosses to another device";
  EXPECT_EQ(d[kDeviceSyncs], 0u) << "no free waited for the device: freed after the run's sync";
  EXPECT_EQ(d[kStreamsCreated], 0u) << "later runs reuse the stream";
}

// x -> MatMul (GPU) -> Sin (CPU: the GPU declines it) -> Relu (GPU) -> y:
// each crossing waits on an event of the producing stream.
TEST(Streams, ValuesCrossingToTheCpuAreWaitedForWithEvents) {
  std::vector<float> w(64);
  for (int i = 0; i < 64; ++i) w[size_t(i)] = float((i * 29) % 13 - 6) / 6.f;
  onyx::testing::ModelBuilder m;
  m.input("x", {4, 8}).output("y", {4, 8}).initializer("w", {8, 8}, w)
      .node("MatMul", {"x", "w"}, {"xw"}, "matmul0")
      .node("Sin", {"xw"}, {"s"}, "sin0")
      .node("Relu", {"s"}, {"y"}, "relu0");
  onyx::Env env = make_env();
  std::string skip;
  auto mixed = make_session(env, m.bytes(), {kGpu, "cpu"}, &skip);
  if (!mixed) GTEST_SKIP() << skip;
  auto cpu = make_session(env, m.bytes(), {"cpu"}, &skip);
  std::vector<float> xs(32);
  for (int i = 0; i < 32; ++i) xs[size_t(i)] = float(i % 7) / 3.f - 1.f;
  onyx::Tensor x = onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, {4, 8}, xs);
  std::vector<float> want = values(cpu->run({{"x", &x}})[0]);
  StatsFn stats = stats_function(ONYX_GPU_PLUGIN_DIR, kGpu);
  const Stats before = stats ? read_stats(stats) : Stats{};
  std::vector<float> got = values(mixed->run({{"x", &x}})[0]);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
  if (!stats) return;
  const Stats d = delta(read_stats(stats), before);
  EXPECT_EQ(d[kKernelsWithoutStream], 0u);
  EXPECT_EQ(d[kEventSyncs], 1u) << "the CPU's Sin waits for the copy of MatMul's output";
  EXPECT_EQ(d[kDeviceSyncs], 0u);
  EXPECT_LE(d[kStreamSyncs], 1u);
}

TEST(Streams, ConcurrentRunsUseStreamsOfTheirOwn) {
  onyx::Env env = make_env();
  std::string skip;
  auto session = make_session(env, tm::build_mlp(tm::make_mlp_weights()).SerializeAsString(), {kGpu}, &skip);
  if (!session) GTEST_SKIP() << skip;
  std::vector<onyx::Tensor> inputs;
  std::vector<std::vector<float>> want;
  for (uint64_t t = 0; t < 4; ++t) {
    inputs.push_back(mlp_input(2, 10 + t));
    want.push_back(values(session->run({{"x", &inputs.back()}})[0]));
  }
  std::vector<int> wrong(4, 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < 25; ++r) wrong[t] += values(session->run({{"x", &inputs[t]}})[0]) != want[t];
    });
  for (std::thread& t : threads) t.join();
  for (size_t t = 0; t < 4; ++t) EXPECT_EQ(wrong[t], 0) << "thread " << t;
}

}  // namespace
