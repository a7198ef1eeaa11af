// Run options through the public C API's C++ wrapper: a tag on the lines a
// run logs, and a cancel switch that stops only the runs made with it.
// Links libonyx only.
#include <gtest/gtest.h>

#include <onyx/onyx.hpp>

#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "model_builder.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Lines {
  std::mutex mutex;  // concurrent runs log at once
  std::vector<std::string> text;
};

void collect(void* user, int32_t, const char* message) {
  auto* lines = static_cast<Lines*>(user);
  std::lock_guard lock(lines->mutex);
  lines->text.emplace_back(message);
}

// Ten Relus in a chain on the slow_kernel plugin: 50 ms each, and a debug
// line from each.
onyx::Session slow_session(onyx::Env& env) {
  env.add_provider_dir(ONYX_PROVIDER_DIR);
  env.add_provider_dir(ONYX_TEST_PLUGIN_DIR);
  onyx::testing::ModelBuilder model;
  model.input("x", {2, 3}).output("y", {2, 3});
  for (int k = 0; k < 10; ++k)
    model.node("Relu", {k == 0 ? "x" : "h" + std::to_string(k - 1)}, {k == 9 ? "y" : "h" + std::to_string(k)},
               "relu" + std::to_string(k));
  const std::string bytes = model.bytes();
  onyx::SessionOptions options;
  options.provider("slow_kernel").fallback(ONYX_FALLBACK_FAIL);
  return onyx::Session(env, std::as_bytes(std::span<const char>(bytes.data(), bytes.size())), options);
}

onyx::Tensor ones() {
  const std::vector<float> v(6, 1.0f);
  return onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, {2, 3}, v);
}

TEST(CApiRunOptions, EachLineARunLogsCarriesItsTag) {
  onyx::Env env;
  Lines lines;
  onyx::check(onyx_env_set_logger(env.get(), collect, &lines, ONYX_LOG_DEBUG));
  onyx::Session session = slow_session(env);
  const onyx::Tensor x = ones();
  onyx::RunOptions a, b;
  a.tag("request-a");
  b.tag("request-b");
  auto run_a = std::async(std::launch::async, [&] { return session.run({{"x", &x}}, {}, &a); });
  auto run_b = std::async(std::launch::async, [&] { return session.run({{"x", &x}}, {}, &b); });
  run_a.get();
  run_b.get();
  session.run({{"x", &x}});  // no options: no tag
  size_t tagged_a = 0, tagged_b = 0, untagged = 0;
  for (const std::string& line : lines.text) {
    if (line.find("slow Relu") == std::string::npos) continue;
    if (line.rfind("[request-a] slow Relu", 0) == 0) ++tagged_a;
    else if (line.rfind("[request-b] slow Relu", 0) == 0) ++tagged_b;
    else if (line.rfind("slow Relu", 0) == 0) ++untagged;
    else ADD_FAILURE() << "unexpected line: " << line;
  }
  EXPECT_EQ(tagged_a, 10u);
  EXPECT_EQ(tagged_b, 10u);
  EXPECT_EQ(untagged, 10u);
}

// Two concurrent runs of one session; cancelling one's options ends it
// within the kernel in flight (<= 50 ms) + 100 ms, and the other finishes.
TEST(CApiRunOptions, CancellingARunsOptionsStopsThatRunOnly) {
  onyx::Env env;
  onyx::check(onyx_env_set_logger(env.get(), nullptr, nullptr, ONYX_LOG_ERROR));
  onyx::Session session = slow_session(env);
  const onyx::Tensor x = ones();
  onyx::RunOptions cancelled, kept;
  Clock::time_point cancelled_at, ended;
  auto victim = std::async(std::launch::async, [&] {
    try {
      session.run({{"x", &x}}, {}, &cancelled);
      ended = Clock::now();
      return std::string("finished");
    } catch (const onyx::Error& e) {
      ended = Clock::now();
      return std::string(e.what());
    }
  });
  auto survivor = std::async(std::launch::async, [&] { return session.run({{"x", &x}}, {}, &kept); });
  std::this_thread::sleep_for(std::chrono::milliseconds(120));  // inside the third kernel
  cancelled_at = Clock::now();
  cancelled.cancel();
  const std::string outcome = victim.get();
  EXPECT_NE(outcome.find("run cancelled (its run options) before node Relu"), std::string::npos) << outcome;
  const double ms = std::chrono::duration<double, std::milli>(ended - cancelled_at).count();
  EXPECT_LT(ms, 150.0) << "the run ended " << ms << " ms after cancel";
  std::vector<onyx::Tensor> out = survivor.get();  // throws if it was cancelled too
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].data<float>()[5], 1.0f);
  // The options stay usable: a run started after the cancel is not affected.
  EXPECT_EQ(session.run({{"x", &x}}, {}, &cancelled).size(), 1u);
}

TEST(CApiRunOptions, NullArgumentsAreRefusedOrIgnored) {
  OnyxStatus* st = onyx_run_options_create(nullptr);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(onyx_status_code(st), ONYX_STATUS_INVALID_ARGUMENT);
  onyx_status_release(st);
  st = onyx_run_options_set_tag(nullptr, "t");
  ASSERT_NE(st, nullptr);
  onyx_status_release(st);
  onyx_run_options_cancel(nullptr);
  onyx_run_options_release(nullptr);
}

}  // namespace
