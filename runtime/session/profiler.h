// profiler.h: timings of a session's runs, one event per step (kernel, copy,
// control-flow node), per chunk of a kernel's parallel loop (its thread), per
// event a plugin reports (ABI 1.1 ctx_profile_event) and per run, written as a Chrome trace (the Trace
// Event Format's complete "X" events), which chrome://tracing and Perfetto
// load. Session::start_profiling/end_profiling switch it on and off.
//
// Thread-safety: record() may be called from concurrent runs; chrome_trace()
// at any time.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace onyx::runtime {

class Profiler {
 public:
  struct Event {
    std::string name;      // "Relu 'relu0'", "run"
    std::string category;  // "kernel", "copy", "control_flow", "thread", "provider", "run"
    int64_t start_ns = 0;  // since the profiler started
    int64_t duration_ns = 0;
    uint32_t thread = 0;   // thread_id() of the thread that ran it
    std::vector<std::pair<std::string, std::string>> args;  // shown in the viewer's details
  };

  Profiler() : origin_(std::chrono::steady_clock::now()) {}
  // Nanoseconds since the profiler started.
  int64_t now_ns() const;
  // The same scale for a time read from the monotonic clock (steady_clock's
  // nanoseconds since its epoch: CLOCK_MONOTONIC on Linux), as plugins give it.
  int64_t from_monotonic_ns(int64_t monotonic_ns) const;
  void record(Event event);
  size_t event_count() const;
  // A copy of the events recorded so far, for summaries.
  std::vector<Event> events() const;
  // {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}; ts
  // and dur in microseconds (with fractions) as the format asks.
  std::string chrome_trace() const;

  // A small number naming the calling thread, stable for its lifetime.
  static uint32_t thread_id();

 private:
  std::chrono::steady_clock::time_point origin_;
  mutable std::mutex mutex_;
  std::vector<Event> events_;
};

}  // namespace onyx::runtime
