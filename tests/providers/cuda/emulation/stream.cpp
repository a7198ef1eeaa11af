// stream.cpp: the emulated runtime's streams and events (host_runtime.h).
// A stream is a queue of deferred work; waiting for a point of it runs the
// queue up to that point on the waiting thread. Every wait is explicit, so a
// missing one leaves work undone and a test sees it.
#include <deque>
#include <mutex>
#include <set>

#include "host_runtime.h"

struct EmulatedStream {
  std::mutex mutex;  // held while running work: one runner at a time
  std::deque<std::function<void()>> queue;
  uint64_t enqueued = 0;
  // Read without the mutex: a stream waiting for a point this stream has
  // passed returns at once. Two streams waiting for each other's earlier
  // points (a value going device 0 -> 1 and another 1 -> 0) run one inside
  // the other, and the inner wait must not lock the outer runner's mutex.
  std::atomic<uint64_t> completed{0};

  // Runs queued work until `ticket` items have completed.
  void run_until(uint64_t ticket) {
    if (completed.load() >= ticket) return;
    std::unique_lock<std::mutex> lock(mutex);
    while (completed.load() < ticket && !queue.empty()) {
      std::function<void()> work = std::move(queue.front());
      queue.pop_front();
      work();  // may wait for another stream (stream_wait_event): never for this one
      completed.fetch_add(1);
    }
  }
  uint64_t ticket() {
    std::lock_guard<std::mutex> lock(mutex);
    return enqueued;
  }
  uint64_t completed_count() { return completed.load(); }
};

struct EmulatedEvent {
  EmulatedStream* stream = nullptr;  // null: nothing recorded, complete
  uint64_t ticket = 0;
};

namespace {

// Live streams, which gpuFree drains as cudaFree synchronizes the device.
std::mutex g_streams_mutex;
std::set<EmulatedStream*>& live_streams() {
  static std::set<EmulatedStream*> streams;
  return streams;
}

}  // namespace

void emulation_enqueue(gpuStream_t stream, std::function<void()> work) {
  if (!stream) {
    work();
    return;
  }
  std::lock_guard<std::mutex> lock(stream->mutex);
  stream->queue.push_back(std::move(work));
  ++stream->enqueued;
}

gpuError_t gpuFree(void* p) {
  std::lock_guard<std::mutex> lock(g_streams_mutex);  // no stream is destroyed meanwhile
  bool pending = false;
  for (EmulatedStream* s : live_streams()) {
    const uint64_t ticket = s->ticket();
    pending = pending || s->completed_count() < ticket;
    s->run_until(ticket);
  }
  if (pending) emulation_count(kDeviceSyncs);
  emulation_forget(p);
  std::free(p);
  return gpuSuccess;
}

gpuError_t gpuStreamCreateWithFlags(gpuStream_t* s, unsigned) {
  *s = new EmulatedStream;
  std::lock_guard<std::mutex> lock(g_streams_mutex);
  live_streams().insert(*s);
  emulation_count(kStreamsCreated);
  return gpuSuccess;
}

gpuError_t gpuStreamDestroy(gpuStream_t s) {
  if (!s) return gpuSuccess;
  s->run_until(s->ticket());  // queued work still completes
  {
    std::lock_guard<std::mutex> lock(g_streams_mutex);
    live_streams().erase(s);
  }
  delete s;
  return gpuSuccess;
}

gpuError_t gpuStreamSynchronize(gpuStream_t s) {
  if (!s) return gpuSuccess;  // the default stream: its copies ran when issued
  emulation_count(kStreamSyncs);
  s->run_until(s->ticket());
  return gpuSuccess;
}

gpuError_t gpuEventCreateWithFlags(gpuEvent_t* e, unsigned) {
  *e = new EmulatedEvent;
  return gpuSuccess;
}

gpuError_t gpuEventDestroy(gpuEvent_t e) {
  delete e;
  return gpuSuccess;
}

gpuError_t gpuEventRecord(gpuEvent_t e, gpuStream_t s) {
  e->stream = s;
  e->ticket = s ? s->ticket() : 0;
  return gpuSuccess;
}

gpuError_t gpuEventSynchronize(gpuEvent_t e) {
  emulation_count(kEventSyncs);
  if (e->stream) e->stream->run_until(e->ticket);
  return gpuSuccess;
}

gpuError_t gpuStreamWaitEvent(gpuStream_t s, gpuEvent_t e, unsigned) {
  EmulatedStream* other = e->stream;
  const uint64_t ticket = e->ticket;
  if (!other || other == s) return gpuSuccess;  // nothing recorded, or already in order
  emulation_enqueue(s, [other, ticket] { other->run_until(ticket); });
  return gpuSuccess;
}
