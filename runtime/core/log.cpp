#include "core/log.h"

#include <cstdio>
#include <mutex>

namespace onyx::runtime {
namespace {
thread_local const Logger* thread_route = nullptr;
thread_local const std::string* thread_tag = nullptr;
}  // namespace

const char* log_level_name(int32_t level) {
  switch (level) {
    case ONYX_LOG_DEBUG: return "debug";
    case ONYX_LOG_INFO: return "info";
    case ONYX_LOG_WARNING: return "warning";
    default: return "error";
  }
}

void log_to_stderr(void*, int32_t level, const char* message) {
  // One write per line, so that lines from concurrent runs do not interleave.
  std::string line = std::string("onyx [") + log_level_name(level) + "] " + (message ? message : "") + "\n";
  std::fputs(line.c_str(), stderr);
}

void Logger::set(LogCallback callback, void* user, int32_t min_level) {
  std::unique_lock lock(mutex_);
  callback_ = callback;
  user_ = user;
  min_level_ = min_level;
}

bool Logger::enabled(int32_t level) const {
  std::shared_lock lock(mutex_);
  return callback_ && level >= min_level_;
}

void Logger::log(int32_t level, const std::string& message) const {
  std::shared_lock lock(mutex_);
  if (!callback_ || level < min_level_) return;
  if (thread_tag) {
    const std::string tagged = "[" + *thread_tag + "] " + message;
    callback_(user_, level, tagged.c_str());
  } else {
    callback_(user_, level, message.c_str());
  }
}

Logger& default_logger() {
  static Logger logger;
  return logger;
}

LogRoute::LogRoute(const Logger* logger) : previous_(thread_route) {
  if (logger) thread_route = logger;
}

LogRoute::~LogRoute() { thread_route = previous_; }

const Logger* LogRoute::route() { return thread_route; }

const Logger& LogRoute::current() { return thread_route ? *thread_route : default_logger(); }

LogTag::LogTag(const std::string* tag) : previous_(thread_tag) {
  if (tag && !tag->empty()) thread_tag = tag;
}

LogTag::~LogTag() { thread_tag = previous_; }

const std::string* LogTag::current() { return thread_tag; }

}  // namespace onyx::runtime
