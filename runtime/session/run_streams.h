// run_streams.h: the streams one run drives on asynchronous devices (ABI 1.2).
//
// A device gets a stream per run when its provider negotiated ABI 1.2 or
// later, says it is asynchronous, and implements the stream and event
// functions; other devices run synchronously as before. On a stream:
//  - kernels get it from ctx_stream and copies are enqueued on it;
//  - each value remembers the stream that writes it; a step that reads it
//    elsewhere waits on an event of that stream: another stream with
//    stream_wait_event (the host does not block), the host (a synchronous
//    device, a host kernel, control flow) with event_synchronize;
//  - device memory freed during the run (scratch, dynamic buffers) is kept
//    until the stream has passed its last use, i.e. until finish(), then
//    goes back to the session's BlockCache (at once on a synchronous device);
//  - finish() synchronizes each stream once, at the end of the run (also
//    when a step failed, before anything the stream uses is freed).
// Streams and events come from the session's StreamPool and go back to it,
// so later runs reuse them; concurrent runs lease distinct streams.
// Thread-safety: a RunStreams belongs to one run; the pool is thread-safe.
#pragma once

#include <onyx_provider.h>

#include <mutex>
#include <vector>

#include "core/status.h"
#include "session/block_cache.h"
#include "session/device.h"

namespace onyx::runtime {

struct RunSlot;
class StreamPool;

// Whether the host drives streams on `device` (see above).
bool drives_streams(const Device& device);

class RunStreams {
 public:
  RunStreams() = default;
  RunStreams(RunStreams&& other) noexcept { *this = std::move(other); }
  RunStreams& operator=(RunStreams&& other) noexcept;
  ~RunStreams();

  // The run's stream on `device`; nullptr where the device is synchronous.
  OnyxStream* stream(int device) const {
    return device >= 0 && size_t(device) < streams_.size() ? streams_[size_t(device)].stream : nullptr;
  }
  // Records that a step on `device` enqueued the write of `slot`.
  void wrote(int device, RunSlot& slot);
  // Makes `consumer` (a device; -1 for the host) wait until `slot` is written.
  Status wait_for(const RunSlot& slot, int consumer);
  // Gives `block` (BlockCache::take's, of `device`) back to the cache now, or
  // after finish() when a stream may still use it.
  void free(int device, void* block);
  // Synchronizes every stream once, then gives back what free() kept. Idempotent
  // until the next wrote().
  Status finish();

 private:
  friend class StreamPool;
  struct PerDevice {
    OnyxStream* stream = nullptr;
    OnyxEvent* event = nullptr;
    uint64_t enqueued = 0;         // writes recorded with wrote()
    uint64_t host_has = 0;         // writes the host has waited for
    std::vector<uint64_t> waited;  // per other device: writes its stream waited for
    std::vector<void*> frees;      // kept until finish()
  };
  Status signal(int producer, OnyxStream* waiter);
  void release();  // finish() and return the streams to the pool

  StreamPool* pool_ = nullptr;
  const DeviceList* devices_ = nullptr;
  BlockCache* blocks_ = nullptr;
  std::vector<PerDevice> streams_;
};

// The session's streams and events, one set per concurrent run. Owned by the
// Session, destroyed before its devices close. Thread-safe.
class StreamPool {
 public:
  StreamPool(const DeviceList& devices, BlockCache& blocks) : devices_(devices), blocks_(blocks) {}
  ~StreamPool();
  StreamPool(const StreamPool&) = delete;
  StreamPool& operator=(const StreamPool&) = delete;

  StatusOr<RunStreams> lease();

 private:
  friend class RunStreams;
  struct Set {
    std::vector<OnyxStream*> streams;
    std::vector<OnyxEvent*> events;
  };
  void give_back(Set set);
  void destroy(Set& set);

  const DeviceList& devices_;
  BlockCache& blocks_;
  std::mutex mutex_;
  std::vector<Set> free_;
};

}  // namespace onyx::runtime
