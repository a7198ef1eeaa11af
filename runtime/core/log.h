// log.h: where the runtime's messages go.
//
// A Logger belongs to an environment (ProviderRegistry, the C API's OnyxEnv)
// and is shared by the sessions created from it; the core's warnings (an
// unavailable provider skipped, a node falling back, a fused group
// dissolved) go to it. By default it writes "onyx [warning] message" lines
// to stderr for ONYX_LOG_INFO and above; onyx_env_set_logger replaces the
// destination and the threshold, and a null callback silences it.
//
// Plugins' log lines (OnyxHostApi.log) carry no environment, so the host
// routes them by thread: around its calls into plugins it sets a LogRoute
// naming the logger of the work at hand (loading, session creation, a run,
// and the run's parallel_for chunks). Lines from a thread without a route
// (a plugin's own threads) go to default_logger().
#pragma once

#include <onyx_provider.h>

#include <cstdint>
#include <shared_mutex>
#include <string>

namespace onyx::runtime {

// `message` is one line without a trailing newline, valid during the call.
using LogCallback = void (*)(void* user, int32_t level, const char* message);

// "debug", "info", "warning", "error" (levels outside the enum: "error").
const char* log_level_name(int32_t level);
// The default destination: one "onyx [level] message" line on stderr.
void log_to_stderr(void* user, int32_t level, const char* message);

// Thread-safe. The callback runs under the logger's read lock, possibly on
// several threads at once; once set() returns, the previous callback is no
// longer running and is never called again, so its `user` may be freed. A
// callback must not call set() on the logger that calls it.
class Logger {
 public:
  Logger() = default;  // stderr, ONYX_LOG_INFO and above
  Logger(const Logger&) = delete;
  Logger& operator=(const Logger&) = delete;

  // Messages at `min_level` or above go to callback(user, ...); a null
  // callback drops every message.
  void set(LogCallback callback, void* user, int32_t min_level);
  bool enabled(int32_t level) const;
  void log(int32_t level, const std::string& message) const;
  void warning(const std::string& message) const { log(ONYX_LOG_WARNING, message); }

 private:
  mutable std::shared_mutex mutex_;
  LogCallback callback_ = log_to_stderr;
  void* user_ = nullptr;
  int32_t min_level_ = ONYX_LOG_INFO;
};

// The logger of messages that belong to no environment.
Logger& default_logger();

// Prefixes every line logged on this thread (by any Logger) with "[tag] "
// until destroyed: a run's tag from its RunOptions, so that an application
// tells apart the lines of concurrent runs. KernelContext::parallel_for
// carries it to the pool's threads like the route. Scopes nest; a null or
// empty tag leaves the current one in place. `tag` must outlive the scope.
class LogTag {
 public:
  explicit LogTag(const std::string* tag);
  ~LogTag();
  LogTag(const LogTag&) = delete;
  LogTag& operator=(const LogTag&) = delete;

  // The thread's tag, or null when none is set.
  static const std::string* current();

 private:
  const std::string* previous_;
};

// Routes plugin log lines on this thread to `logger` until destroyed
// (scopes nest; a null logger leaves the current route in place).
class LogRoute {
 public:
  explicit LogRoute(const Logger* logger);
  ~LogRoute();
  LogRoute(const LogRoute&) = delete;
  LogRoute& operator=(const LogRoute&) = delete;

  // The thread's routed logger, or null when none is set.
  static const Logger* route();
  // The logger a plugin line from this thread goes to.
  static const Logger& current();

 private:
  const Logger* previous_;
};

}  // namespace onyx::runtime
