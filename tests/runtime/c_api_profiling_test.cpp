// Profiling through the public C API: one event per kernel and per run, a
// plugin's own events (ABI 1.1 ctx_profile_event) in the same trace, and a
// 1.0 plugin that knows nothing of them still running in this 1.1 host.
// Links libonyx only.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <onyx/onyx.hpp>

#include <regex>
#include <string>

#include "model_builder.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// x -> Relu -> Add(x) -> y: test plugins take Relu, the CPU provider Add.
std::string relu_add_model() {
  return onyx::testing::ModelBuilder()
      .input("x", {2, 3})
      .output("y", {2, 3})
      .node("Relu", {"x"}, {"r"}, "relu0")
      .node("Add", {"r", "x"}, {"y"}, "add0")
      .bytes();
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string profile_two_runs(const std::string& first_provider) {
  onyx::Env env;
  env.add_provider_dir(ONYX_PROVIDER_DIR);
  env.add_provider_dir(ONYX_TEST_PLUGIN_DIR);
  onyx::SessionOptions options;
  options.provider(first_provider).provider("cpu").fallback(ONYX_FALLBACK_ALLOW);
  std::string model = relu_add_model();
  onyx::Session session(env, std::as_bytes(std::span<const char>(model.data(), model.size())), options);
  auto x = onyx::Tensor::zeros(ONYX_DTYPE_FLOAT32, {2, 3});
  session.run({{"x", &x}});  // not profiled
  session.start_profiling();
  session.run({{"x", &x}});
  session.run({{"x", &x}});
  return session.end_profiling();
}

TEST(CApiProfiling, OneEventPerKernelAndRunAndThePluginsOwn) {
  std::string trace = profile_two_runs("profiler_events");
  EXPECT_EQ(trace.rfind("{", 0), 0u);
  EXPECT_THAT(trace, HasSubstr("\"traceEvents\""));
  EXPECT_EQ(count(trace, "\"cat\": \"run\""), 2u) << trace;
  EXPECT_EQ(count(trace, "\"name\": \"Relu 'relu0'\", \"cat\": \"kernel\""), 2u) << trace;
  EXPECT_EQ(count(trace, "\"name\": \"Add 'add0'\", \"cat\": \"kernel\""), 2u) << trace;
  // The plugin's own event, once per run, tagged with its provider and kernel.
  EXPECT_EQ(count(trace, "\"name\": \"test device: Relu\", \"cat\": \"provider\""), 2u) << trace;
  EXPECT_THAT(trace, HasSubstr("\"provider\": \"profiler_events\", \"kernel\": \"Relu 'relu0'\""));
}

TEST(CApiProfiling, AnAbi10PluginRunsAndReportsNothingOfItsOwn) {
  std::string trace = profile_two_runs("decliner");
  EXPECT_EQ(count(trace, "\"name\": \"Relu 'relu0'\", \"cat\": \"kernel\""), 2u) << trace;
  EXPECT_THAT(trace, Not(HasSubstr("\"cat\": \"provider\"")));
}

TEST(CApiProfiling, EndWithoutStartIsRefused) {
  onyx::Env env;
  env.add_provider_dir(ONYX_PROVIDER_DIR);
  std::string model = relu_add_model();
  onyx::Session session(env, std::as_bytes(std::span<const char>(model.data(), model.size())));
  try {
    session.end_profiling();
    FAIL() << "end_profiling without start must fail";
  } catch (const onyx::Error& e) {
    EXPECT_EQ(e.code(), ONYX_STATUS_FAILED_PRECONDITION);
    EXPECT_THAT(e.what(), HasSubstr("not profiling"));
  }
}

}  // namespace
