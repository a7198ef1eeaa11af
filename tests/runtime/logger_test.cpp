// The logger: where the core's warnings and the plugins' lines go.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/log.h"
#include "ir/onnx_import.h"
#include "model_builder.h"
#include "plugin/host_api.h"
#include "session/session.h"

namespace onyx::runtime {
namespace {

struct Collected {
  std::vector<std::pair<int32_t, std::string>> lines;
  bool contains(const std::string& part) const {
    for (const auto& [level, line] : lines)
      if (line.find(part) != std::string::npos) return true;
    return false;
  }
};

void collect(void* user, int32_t level, const char* message) {
  static_cast<Collected*>(user)->lines.emplace_back(level, message);
}

// x -> Relu -> Add(x) -> y: the decliner plugin takes Relu, declines Add.
StatusOr<std::unique_ptr<Session>> fallback_session(ProviderRegistry& registry) {
  std::string bytes = testing::ModelBuilder()
                          .input("x", {2, 3})
                          .output("y", {2, 3})
                          .node("Relu", {"x"}, {"r"}, "relu0")
                          .node("Add", {"r", "x"}, {"y"}, "add0")
                          .bytes();
  registry.add_search_dir(ONYX_PROVIDER_DIR);
  registry.add_search_dir(ONYX_TEST_PLUGIN_DIR);
  SessionOptions options;
  options.providers = {{"decliner", {}}, {"cpu", {}}};
  options.fallback = FallbackPolicy::kWarn;
  options.intra_op_threads = 1;
  return Session::create_from_bytes(registry, bytes.data(), bytes.size(), options);
}

TEST(Logger, FiltersByLevelAndANullCallbackSilences) {
  Logger logger;
  Collected got;
  logger.set(collect, &got, ONYX_LOG_WARNING);
  logger.log(ONYX_LOG_INFO, "dropped");
  logger.warning("kept");
  ASSERT_EQ(got.lines.size(), 1u);
  EXPECT_EQ(got.lines[0], std::make_pair(int32_t(ONYX_LOG_WARNING), std::string("kept")));
  EXPECT_FALSE(logger.enabled(ONYX_LOG_INFO));
  logger.set(nullptr, nullptr, ONYX_LOG_DEBUG);
  EXPECT_FALSE(logger.enabled(ONYX_LOG_ERROR));
  logger.log(ONYX_LOG_ERROR, "silenced");
  EXPECT_EQ(got.lines.size(), 1u);
}

TEST(Logger, DefaultWritesWarningLinesToStderr) {
  Logger logger;
  ::testing::internal::CaptureStderr();
  logger.warning("something to say");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "onyx [warning] something to say\n");
}

TEST(Logger, FallbackWarningGoesToTheRegistrysLogger) {
  ProviderRegistry registry;
  Collected got;
  registry.logger()->set(collect, &got, ONYX_LOG_INFO);
  ::testing::internal::CaptureStderr();
  auto s = fallback_session(registry);
  std::string printed = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_TRUE(got.contains("node 'add0' (op Add) falls back to cpu")) << got.lines.size();
  for (const auto& [level, line] : got.lines) {
    if (line.find("falls back") != std::string::npos) {
      EXPECT_EQ(level, ONYX_LOG_WARNING);
    }
  }
  EXPECT_EQ(printed, "");  // routed, not printed
}

TEST(Logger, SilencedRegistryPrintsNothing) {
  ProviderRegistry registry;
  registry.logger()->set(nullptr, nullptr, ONYX_LOG_DEBUG);
  ::testing::internal::CaptureStderr();
  auto s = fallback_session(registry);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  ASSERT_TRUE(s.ok()) << s.status().to_string();
}

// A plugin's host->log call goes to the logger routed on its thread, with
// that logger's threshold; without a route, to the default logger.
TEST(Logger, PluginLinesFollowTheThreadsRoute) {
  const OnyxHostApi& host = *host_api();
  Logger logger;
  Collected got;
  logger.set(collect, &got, ONYX_LOG_WARNING);
  {
    LogRoute route(&logger);
    host.log(ONYX_LOG_INFO, "below the threshold");
    host.log(ONYX_LOG_ERROR, "from a plugin");
    {
      LogRoute keep(nullptr);  // a null route keeps the current one
      host.log(ONYX_LOG_WARNING, "nested");
    }
  }
  ASSERT_EQ(got.lines.size(), 2u);
  EXPECT_EQ(got.lines[0].second, "from a plugin");
  EXPECT_EQ(got.lines[1].second, "nested");
  EXPECT_EQ(LogRoute::route(), nullptr);
  ::testing::internal::CaptureStderr();
  host.log(ONYX_LOG_WARNING, "unrouted");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "onyx [warning] unrouted\n");
  EXPECT_EQ(got.lines.size(), 2u);
}

// The fuser plugin logs its "say" option at INFO from device_open, which
// runs during session creation: the line reaches the registry's logger
// when its threshold lets INFO through.
TEST(Logger, APluginsLineReachesTheRegistrysLoggerAboveItsThreshold) {
  std::string bytes = testing::ModelBuilder()
                          .input("x", {2, 3})
                          .output("y", {2, 3})
                          .node("Relu", {"x"}, {"y"}, "relu0")
                          .bytes();
  for (int32_t threshold : {ONYX_LOG_INFO, ONYX_LOG_WARNING}) {
    ProviderRegistry registry;
    registry.add_search_dir(ONYX_TEST_PLUGIN_DIR);
    Collected got;
    registry.logger()->set(collect, &got, threshold);
    SessionOptions options;
    options.providers = {{"fuser", {{"say", "hello from the fuser"}}}};
    ::testing::internal::CaptureStderr();
    auto s = Session::create_from_bytes(registry, bytes.data(), bytes.size(), options);
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    EXPECT_EQ(got.contains("hello from the fuser"), threshold == ONYX_LOG_INFO);
  }
}

}  // namespace
}  // namespace onyx::runtime
