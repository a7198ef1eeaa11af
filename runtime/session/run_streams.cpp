#include "session/run_streams.h"

#include "core/abi_status.h"
#include "session/run_state.h"

namespace onyx::runtime {

bool drives_streams(const Device& device) {
  const OnyxProviderApi& api = device.provider->api();
  return device.provider->abi_version() >= ONYX_ABI_VERSION(1, 2) && device.properties.asynchronous &&
         api.stream_create && api.stream_destroy && api.stream_synchronize && api.event_create &&
         api.event_destroy && api.event_record && api.stream_wait_event && api.event_synchronize;
}

RunStreams& RunStreams::operator=(RunStreams&& other) noexcept {
  if (this == &other) return *this;
  release();
  pool_ = other.pool_;
  devices_ = other.devices_;
  blocks_ = other.blocks_;
  streams_ = std::move(other.streams_);
  other.pool_ = nullptr;
  other.streams_.clear();
  return *this;
}

RunStreams::~RunStreams() { release(); }

void RunStreams::release() {
  if (!pool_) return;
  (void)finish();  // a failed run still waits before its buffers are freed
  StreamPool::Set set;
  for (PerDevice& d : streams_) {
    set.streams.push_back(d.stream);
    set.events.push_back(d.event);
  }
  pool_->give_back(std::move(set));
  pool_ = nullptr;
}

void RunStreams::wrote(int device, RunSlot& slot) {
  if (!stream(device)) return;
  slot.writer = device;
  slot.write_seq = ++streams_[size_t(device)].enqueued;
}

Status RunStreams::signal(int producer, OnyxStream* waiter) {
  PerDevice& p = streams_[size_t(producer)];
  const OnyxProviderApi& api = (*devices_)[size_t(producer)]->provider->api();
  ONYX_RETURN_IF_ERROR(take_status(api.event_record(p.event, p.stream)));
  if (waiter) return take_status(api.stream_wait_event(waiter, p.event));
  return take_status(api.event_synchronize(p.event));
}

Status RunStreams::wait_for(const RunSlot& slot, int consumer) {
  const int producer = slot.writer;
  if (producer < 0 || producer == consumer || !stream(producer)) return Status();
  PerDevice& p = streams_[size_t(producer)];
  if (OnyxStream* waiter = stream(consumer)) {
    uint64_t& waited = streams_[size_t(consumer)].waited[size_t(producer)];
    if (waited >= slot.write_seq) return Status();
    ONYX_RETURN_IF_ERROR(signal(producer, waiter));
    waited = p.enqueued;
    return Status();
  }
  if (p.host_has >= slot.write_seq) return Status();
  ONYX_RETURN_IF_ERROR(signal(producer, nullptr));
  p.host_has = p.enqueued;
  return Status();
}

void RunStreams::free(int device, void* block) {
  if (!block) return;
  if (stream(device)) {
    streams_[size_t(device)].frees.push_back(block);
    return;
  }
  blocks_->give_back(device, block);
}

Status RunStreams::finish() {
  Status first;
  for (size_t d = 0; d < streams_.size(); ++d) {
    PerDevice& p = streams_[d];
    if (!p.stream) continue;
    const Device& device = *(*devices_)[d];
    if (p.host_has < p.enqueued || !p.frees.empty()) {
      Status s = take_status(device.provider->api().stream_synchronize(p.stream));
      if (first.ok() && !s.ok()) first = s.with_context("synchronizing the run's stream on '" + device.label + "'");
      p.host_has = p.enqueued;
    }
    for (void* block : p.frees) blocks_->give_back(int(d), block);
    p.frees.clear();
  }
  return first;
}

StatusOr<RunStreams> StreamPool::lease() {
  RunStreams run;
  Set set;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_.empty()) {
      set = std::move(free_.back());
      free_.pop_back();
    }
  }
  if (set.streams.empty()) {
    set.streams.assign(devices_.size(), nullptr);
    set.events.assign(devices_.size(), nullptr);
    for (size_t d = 0; d < devices_.size(); ++d) {
      const Device& device = *devices_[d];
      if (!drives_streams(device)) continue;
      const OnyxProviderApi& api = device.provider->api();
      Status s = take_status(api.stream_create(device.handle, &set.streams[d]));
      if (s.ok()) s = take_status(api.event_create(device.handle, &set.events[d]));
      if (!s.ok()) {
        destroy(set);
        return s.with_context("creating a stream on '" + device.label + "'");
      }
    }
  }
  run.pool_ = this;
  run.devices_ = &devices_;
  run.blocks_ = &blocks_;
  run.streams_.resize(devices_.size());
  for (size_t d = 0; d < devices_.size(); ++d) {
    run.streams_[d].stream = set.streams[d];
    run.streams_[d].event = set.events[d];
    run.streams_[d].waited.assign(devices_.size(), 0);
  }
  return run;
}

void StreamPool::give_back(Set set) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(std::move(set));
}

void StreamPool::destroy(Set& set) {
  for (size_t d = 0; d < set.streams.size(); ++d) {
    const OnyxProviderApi& api = devices_[d]->provider->api();
    if (set.events[d]) api.event_destroy(set.events[d]);
    if (set.streams[d]) api.stream_destroy(set.streams[d]);
  }
  set = Set{};
}

StreamPool::~StreamPool() {
  for (Set& set : free_) destroy(set);
}

}  // namespace onyx::runtime
