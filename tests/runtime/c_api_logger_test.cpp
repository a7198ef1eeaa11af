// onyx_env_set_logger through the public C API and its C++ wrapper. This
// binary links libonyx only (never the static core beside it).
#include <gtest/gtest.h>

#include <onyx/onyx.hpp>

#include <string>
#include <vector>

#include "model_builder.h"

namespace {

// x -> Relu -> Add(x) -> y: the decliner plugin takes Relu, declines Add.
std::string relu_add_model() {
  return onyx::testing::ModelBuilder()
      .input("x", {2, 3})
      .output("y", {2, 3})
      .node("Relu", {"x"}, {"r"}, "relu0")
      .node("Add", {"r", "x"}, {"y"}, "add0")
      .bytes();
}

onyx::Session fallback_session(onyx::Env& env, const std::string& model) {
  env.add_provider_dir(ONYX_PROVIDER_DIR);
  env.add_provider_dir(ONYX_TEST_PLUGIN_DIR);
  onyx::SessionOptions options;
  options.provider("decliner").provider("cpu").fallback(ONYX_FALLBACK_WARN);
  return onyx::Session(env, std::as_bytes(std::span<const char>(model.data(), model.size())), options);
}

struct Lines {
  std::vector<std::string> text;
  std::vector<int32_t> levels;
};

void collect(void* user, int32_t level, const char* message) {
  static_cast<Lines*>(user)->text.emplace_back(message);
  static_cast<Lines*>(user)->levels.push_back(level);
}

TEST(CApiLogger, FallbackWarningArrivesThroughTheCallback) {
  onyx::Env env;
  Lines lines;
  onyx::check(onyx_env_set_logger(env.get(), collect, &lines, ONYX_LOG_WARNING));
  std::string model = relu_add_model();
  ::testing::internal::CaptureStderr();
  onyx::Session session = fallback_session(env, model);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  ASSERT_EQ(lines.text.size(), 1u);
  EXPECT_NE(lines.text[0].find("node 'add0' (op Add) falls back to cpu"), std::string::npos) << lines.text[0];
  EXPECT_EQ(lines.levels[0], ONYX_LOG_WARNING);
}

TEST(CApiLogger, NullCallbackSilencesAndBadArgumentsAreRefused) {
  onyx::Env env;
  onyx::check(onyx_env_set_logger(env.get(), nullptr, nullptr, ONYX_LOG_DEBUG));
  std::string model = relu_add_model();
  ::testing::internal::CaptureStderr();
  onyx::Session session = fallback_session(env, model);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");

  OnyxStatus* st = onyx_env_set_logger(env.get(), collect, nullptr, ONYX_LOG_ERROR + 1);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(onyx_status_code(st), ONYX_STATUS_INVALID_ARGUMENT);
  onyx_status_release(st);
  st = onyx_env_set_logger(nullptr, collect, nullptr, ONYX_LOG_INFO);
  ASSERT_NE(st, nullptr);
  onyx_status_release(st);
}

TEST(CApiLogger, DefaultIsStderr) {
  onyx::Env env;
  std::string model = relu_add_model();
  ::testing::internal::CaptureStderr();
  onyx::Session session = fallback_session(env, model);
  std::string printed = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(printed.find("onyx [warning] node 'add0' (op Add) falls back to cpu"), std::string::npos) << printed;
}

TEST(CApiLogger, WrapperTakesAFunctionAndReplacesIt) {
  onyx::Env env;
  std::vector<std::string> first, second;
  env.set_logger([&](OnyxLogLevel, const std::string& m) { first.push_back(m); }, ONYX_LOG_WARNING);
  std::string model = relu_add_model();
  { onyx::Session session = fallback_session(env, model); }
  env.set_logger([&](OnyxLogLevel, const std::string& m) { second.push_back(m); }, ONYX_LOG_WARNING);
  { onyx::Session session = fallback_session(env, model); }
  EXPECT_EQ(first.size(), 1u);
  EXPECT_EQ(second.size(), 1u);
  env.set_logger(nullptr);
  ::testing::internal::CaptureStderr();
  { onyx::Session session = fallback_session(env, model); }
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

}  // namespace
