#include "session/profiler.h"

#include <onyx/util/json_writer.h>

#include <atomic>

namespace onyx::runtime {

int64_t Profiler::now_ns() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - origin_).count();
}

int64_t Profiler::from_monotonic_ns(int64_t monotonic_ns) const {
  return monotonic_ns - std::chrono::duration_cast<std::chrono::nanoseconds>(origin_.time_since_epoch()).count();
}

void Profiler::record(Event event) {
  std::lock_guard<std::mutex> lock(mutex_);
  events_.push_back(std::move(event));
}

size_t Profiler::event_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_.size();
}

std::vector<Profiler::Event> Profiler::events() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_;
}

uint32_t Profiler::thread_id() {
  static std::atomic<uint32_t> next{1};
  thread_local uint32_t id = next++;
  return id;
}

std::string Profiler::chrome_trace() const {
  std::lock_guard<std::mutex> lock(mutex_);
  util::JsonWriter w(2);
  w.begin_object().key("traceEvents").begin_array();
  for (const Event& e : events_) {
    w.begin_object()
        .key("name").value(e.name)
        .key("cat").value(e.category)
        .key("ph").value("X")
        .key("ts").value(double(e.start_ns) / 1e3, 15)
        .key("dur").value(double(e.duration_ns) / 1e3, 15)
        .key("pid").value(1)
        .key("tid").value(e.thread);
    if (!e.args.empty()) {
      w.key("args").begin_object();
      for (const auto& [k, v] : e.args) w.key(k).value(v);
      w.end_object();
    }
    w.end_object();
  }
  w.end_array().key("displayTimeUnit").value("ns");
  w.key("otherData").begin_object().key("producer").value("onyx").end_object();
  w.end_object();
  return w.str();
}

}  // namespace onyx::runtime
