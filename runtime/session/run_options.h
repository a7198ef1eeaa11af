// run_options.h: what a caller chooses per run rather than per session: a
// tag for the run's log lines and a switch that cancels just the runs made
// with these options (Session::cancel_runs stops every run of a session).
//
// A RunOptionsScope names the options of the runs a thread makes; the
// executor reads it when a run starts. Control-flow subgraphs run on the
// same thread, so they see the same options and stop with their run.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "core/log.h"

namespace onyx::runtime {

class RunOptions {
 public:
  // Lines logged during the runs start with "[tag] " (core/log.h LogTag).
  // Not thread-safe with runs using these options.
  void set_tag(std::string tag) { tag_ = std::move(tag); }
  const std::string& tag() const { return tag_; }

  // Stops every run using these options now in progress at its next step or
  // loop iteration; runs that start later are not affected. Thread-safe.
  void cancel();
  // Changes whenever cancel() is called: a run remembers it at its start.
  uint64_t cancel_generation() const { return cancels_.load(std::memory_order_relaxed); }

  // While alive, cancel() of `options` also calls `hook` (how a run in an
  // isolated worker process is stopped); null `options`: does nothing.
  class CancelHook {
   public:
    CancelHook(const RunOptions* options, std::function<void()> hook);
    ~CancelHook();
    CancelHook(const CancelHook&) = delete;
    CancelHook& operator=(const CancelHook&) = delete;

   private:
    const RunOptions* options_;
    uint64_t id_ = 0;
  };

 private:
  std::string tag_;
  std::atomic<uint64_t> cancels_{0};
  // Registered by runs on options they only read: not part of their value.
  mutable std::mutex hooks_mutex_;
  mutable std::map<uint64_t, std::function<void()>> hooks_;
  mutable uint64_t next_hook_ = 0;
};

// The options of the runs this thread makes until destroyed (scopes nest;
// null leaves the current ones). Also tags the thread's log lines. `options`
// must outlive the scope.
class RunOptionsScope {
 public:
  explicit RunOptionsScope(const RunOptions* options);
  ~RunOptionsScope();
  RunOptionsScope(const RunOptionsScope&) = delete;
  RunOptionsScope& operator=(const RunOptionsScope&) = delete;

  // The thread's options, or null when none are set.
  static const RunOptions* current();

 private:
  const RunOptions* previous_;
  LogTag tag_;
};

}  // namespace onyx::runtime
