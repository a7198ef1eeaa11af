#include "distributed/communicator.h"

#include <onyx_dtype.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "core/abi_status.h"
#include "plugin/host_api.h"
#include "plugin/search_dirs.h"

namespace onyx::runtime {

const PluginKind kCollectivesPluginKind = {
    .noun = "collectives",
    .file_prefix = "libonyx_collectives_",
    .path_variable = "ONYX_COLLECTIVES_PATH",
    .folder = "collectives",
    .entry_symbol = ONYX_COLLECTIVES_ENTRY_SYMBOL,
    .magic = ONYX_COLLECTIVES_MAGIC,
    .min_entry_size = ONYX_COLLECTIVES_ENTRY_SIZE_1_0,
    .host_min_abi = ONYX_ABI_VERSION(1, 0),
    .host_max_abi = ONYX_ABI_VERSION(ONYX_COLLECTIVES_ABI_VERSION_MAJOR, ONYX_COLLECTIVES_ABI_VERSION_MINOR),
    .call_entry = call_entry<OnyxCollectivesEntry>,
};

const char* collective_name(Collective c) {
  switch (c) {
    case Collective::kAllReduce: return "all_reduce";
    case Collective::kReduceScatter: return "reduce_scatter";
    case Collective::kAllGather: return "all_gather";
    case Collective::kBroadcast: return "broadcast";
    case Collective::kBarrier: return "barrier";
  }
  return "?";
}

std::string CollectiveCounters::to_string() const {
  std::string s;
  for (size_t k = 0; k < kCollectiveKinds; ++k) {
    if (!calls[k]) continue;
    s += std::string(s.empty() ? "" : ", ") + collective_name(Collective(k)) + " " + std::to_string(calls[k]) +
         " call" + (calls[k] == 1 ? "" : "s") + " " + std::to_string(bytes[k]) + " B";
  }
  if (s.empty()) return "no collectives";
  char waited[48];
  std::snprintf(waited, sizeof waited, ", waited %.3f s", wait_seconds);
  return s + waited;
}

namespace {

// Functions every 1.0 collectives plugin provides.
Status check_table(const OnyxCollectivesApi& a, const std::string& who) {
  if (a.struct_size < ONYX_COLLECTIVES_API_SIZE_1_0)
    return incompatible(who + ": collectives table is " + std::to_string(a.struct_size) +
                        " bytes, smaller than ABI 1.0's " + std::to_string(ONYX_COLLECTIVES_API_SIZE_1_0));
  const void* required[] = {(void*)a.rank,    (void*)a.size,    (void*)a.all_reduce, (void*)a.reduce_scatter,
                            (void*)a.all_gather, (void*)a.broadcast, (void*)a.barrier, (void*)a.wait,    (void*)a.abort,   (void*)a.destroy};
  for (const void* f : required)
    if (!f) return incompatible(who + ": a required function of the collectives table is NULL");
  return Status();
}

}  // namespace

StatusOr<std::unique_ptr<Communicator>> Communicator::load(const std::string& name_or_path,
                                                           const std::vector<std::string>& extra_dirs,
                                                           CollectiveOptions options) {
  ONYX_ASSIGN_OR_RETURN(std::string path, find_plugin_file(kCollectivesPluginKind, name_or_path, extra_dirs));
  ONYX_ASSIGN_OR_RETURN(PluginLibrary library, PluginLibrary::open(kCollectivesPluginKind, path));
  std::unique_ptr<Communicator> c(new Communicator(std::move(library)));
  c->options_ = options;
  const OnyxCollectivesEntry& entry = c->library_.entry<OnyxCollectivesEntry>();
  const std::string who = c->library_.describe();
  if (!entry.create) return incompatible(who + ": the entry's create function is NULL");

  c->host_ = *host_api();
  c->host_.abi_version = c->library_.abi_version();
  OnyxCollectivesCreateArgs args{};
  args.struct_size = sizeof args;
  args.abi_version = c->library_.abi_version();
  args.host = &c->host_;
  args.plugin_path = c->library_.path().c_str();
  Status created = take_status(entry.create(&args, &c->comm_, &c->api_));
  if (!created.ok()) return created.with_context(who);
  if (!c->comm_ || !c->api_) return internal_error(who + ": create returned no communicator");
  Status table = check_table(*c->api_, who);
  if (!table.ok()) {
    if (c->api_->struct_size >= ONYX_COLLECTIVES_API_SIZE_1_0 && c->api_->destroy) c->api_->destroy(c->comm_);
    c->comm_ = nullptr;
    return table;
  }
  c->has_peer_states_ = c->library_.abi_version() >= ONYX_ABI_VERSION(1, 1) &&
                        c->api_->struct_size >= ONYX_COLLECTIVES_API_SIZE_1_1 && c->api_->peer_states;
  c->rank_ = c->api_->rank(c->comm_);
  c->size_ = c->api_->size(c->comm_);
  if (c->size_ < 1 || c->rank_ < 0 || c->rank_ >= c->size_)
    return internal_error(who + ": rank " + std::to_string(c->rank_) + " of " + std::to_string(c->size_));
  return c;
}

Communicator::~Communicator() {
  if (comm_ && api_) api_->destroy(comm_);
}

std::string Communicator::describe(Collective kind, size_t count, int32_t dtype, const std::string& label) const {
  const char* type = onyx_dtype_name(dtype);
  std::string s = std::string(collective_name(kind));
  if (kind != Collective::kBarrier) s += " of " + std::to_string(count) + " " + (type ? type : "?");
  s += " on rank " + std::to_string(rank_) + " of " + std::to_string(size_);
  if (!label.empty()) s += " (" + label + ")";
  return s;
}

StatusOr<PendingCollective> Communicator::started(OnyxStatus* status, OnyxCollectiveRequest* request,
                                                  Collective kind, uint64_t bytes, std::string what,
                                                  const std::string& label) {
  Status st = take_status(status);
  if (!st.ok()) return st.with_context(what);
  if (!request) return internal_error(what + ": the plugin started no request");
  counters_.calls[size_t(kind)] += 1;
  counters_.bytes[size_t(kind)] += bytes;
  return PendingCollective(this, request, std::move(what), label);
}

StatusOr<PendingCollective> Communicator::start_all_reduce(const void* send, void* recv, size_t count,
                                                           int32_t dtype, OnyxReduceOp op, const std::string& label) {
  OnyxCollectiveRequest* r = nullptr;
  OnyxStatus* st = api_->all_reduce(comm_, send, recv, count, dtype, op, &r);
  return started(st, r, Collective::kAllReduce, onyx_dtype_storage_bytes(dtype, int64_t(count)),
                 describe(Collective::kAllReduce, count, dtype, label), label);
}

StatusOr<PendingCollective> Communicator::start_reduce_scatter(const void* send, void* recv, size_t count,
                                                               int32_t dtype, OnyxReduceOp op,
                                                               const std::string& label) {
  OnyxCollectiveRequest* r = nullptr;
  OnyxStatus* st = api_->reduce_scatter(comm_, send, recv, count, dtype, op, &r);
  return started(st, r, Collective::kReduceScatter, onyx_dtype_storage_bytes(dtype, int64_t(count) * size_),
                 describe(Collective::kReduceScatter, count, dtype, label), label);
}

StatusOr<PendingCollective> Communicator::start_all_gather(const void* send, void* recv, size_t count,
                                                           int32_t dtype, const std::string& label) {
  OnyxCollectiveRequest* r = nullptr;
  OnyxStatus* st = api_->all_gather(comm_, send, recv, count, dtype, &r);
  return started(st, r, Collective::kAllGather, onyx_dtype_storage_bytes(dtype, int64_t(count) * size_),
                 describe(Collective::kAllGather, count, dtype, label), label);
}

StatusOr<PendingCollective> Communicator::start_broadcast(void* buffer, size_t count, int32_t dtype, int root,
                                                          const std::string& label) {
  if (root < 0 || root >= size_)
    return invalid_argument("broadcast: root " + std::to_string(root) + " is not a rank of " +
                            std::to_string(size_));
  OnyxCollectiveRequest* r = nullptr;
  OnyxStatus* st = api_->broadcast(comm_, buffer, count, dtype, root, &r);
  return started(st, r, Collective::kBroadcast, onyx_dtype_storage_bytes(dtype, int64_t(count)),
                 describe(Collective::kBroadcast, count, dtype, label), label);
}

StatusOr<PendingCollective> Communicator::start_barrier(const std::string& label) {
  OnyxCollectiveRequest* r = nullptr;
  OnyxStatus* st = api_->barrier(comm_, &r);
  return started(st, r, Collective::kBarrier, 0, describe(Collective::kBarrier, 0, 0, label), label);
}

namespace {

Status wait_for(StatusOr<PendingCollective> started) {
  if (!started.ok()) return started.status();
  return started.value().wait();
}

}  // namespace

Status Communicator::all_reduce(const void* send, void* recv, size_t count, int32_t dtype, OnyxReduceOp op,
                                const std::string& label) {
  return wait_for(start_all_reduce(send, recv, count, dtype, op, label));
}
Status Communicator::reduce_scatter(const void* send, void* recv, size_t count, int32_t dtype, OnyxReduceOp op,
                                    const std::string& label) {
  return wait_for(start_reduce_scatter(send, recv, count, dtype, op, label));
}
Status Communicator::all_gather(const void* send, void* recv, size_t count, int32_t dtype,
                                const std::string& label) {
  return wait_for(start_all_gather(send, recv, count, dtype, label));
}
Status Communicator::broadcast(void* buffer, size_t count, int32_t dtype, int root, const std::string& label) {
  return wait_for(start_broadcast(buffer, count, dtype, root, label));
}
Status Communicator::barrier(const std::string& label) { return wait_for(start_barrier(label)); }

namespace {

// "rank 3", "ranks 1 and 3", "ranks 1, 2 and 3", at most 8 named.
std::string rank_list(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  const size_t named = std::min<size_t>(ranks.size(), 8);
  for (size_t k = 0; k < named; ++k) {
    if (k > 0) s += k + 1 == ranks.size() ? " and " : ", ";
    s += std::to_string(ranks[k]);
  }
  if (named < ranks.size()) s += " and " + std::to_string(ranks.size() - named) + " more";
  return s;
}

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", seconds);
  return text;
}

}  // namespace

StatusOr<std::vector<int32_t>> Communicator::peer_states(const PendingCollective& pending,
                                                         std::chrono::milliseconds bound) {
  if (pending.comm_ != this || !pending.request_)
    return invalid_argument("peer_states: the collective is not pending on this communicator");
  if (!has_peer_states_) return unimplemented(library_.describe() + ": cannot tell where the other ranks are");
  auto ms = std::clamp<int64_t>(bound.count(), 0, 0xFFFFFFFF);
  std::vector<int32_t> states(size_t(size_), ONYX_PEER_SILENT);
  Status st = take_status(api_->peer_states(comm_, pending.request_, uint32_t(ms), states.data()));
  if (!st.ok()) return st.with_context(pending.what_);
  return states;
}

std::string Communicator::who_is_missing(OnyxCollectiveRequest* request) {
  const std::string unknown = ": a rank has died or stopped calling collectives";
  if (!has_peer_states_) return unknown;
  // Long enough for ranks waiting in the same collective to answer.
  const auto bound = std::clamp<std::chrono::milliseconds>(options_.timeout / 10, std::chrono::milliseconds(500),
                                                           std::chrono::milliseconds(5000));
  std::vector<int32_t> states(size_t(size_), ONYX_PEER_SILENT);
  const auto start = std::chrono::steady_clock::now();
  Status st = take_status(api_->peer_states(comm_, request, uint32_t(bound.count()), states.data()));
  const double asked = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!st.ok()) return unknown + (st.code() == ONYX_STATUS_UNIMPLEMENTED ? "" : " (" + st.message() + ")");
  std::map<int32_t, std::vector<int>> missing;  // by state
  for (int r = 0; r < size_; ++r) {
    int32_t state = states[size_t(r)];
    if (r == rank_ || state == ONYX_PEER_ARRIVED) continue;
    if (state != ONYX_PEER_LATE && state != ONYX_PEER_STOPPED && state != ONYX_PEER_EXITED) state = ONYX_PEER_SILENT;
    missing[state].push_back(r);
  }
  if (missing.empty()) return ": every rank answered that it has started this collective";
  std::string out;
  for (int32_t state : {ONYX_PEER_EXITED, ONYX_PEER_STOPPED, ONYX_PEER_SILENT, ONYX_PEER_LATE}) {
    auto it = missing.find(state);
    if (it == missing.end()) continue;
    const bool one = it->second.size() == 1;
    out += "; " + rank_list(it->second);
    switch (state) {
      case ONYX_PEER_EXITED: out += one ? " did not arrive: its process has exited" : " did not arrive: their processes have exited"; break;
      case ONYX_PEER_STOPPED: out += one ? " did not arrive: its process is stopped" : " did not arrive: their processes are stopped"; break;
      case ONYX_PEER_SILENT:
        out += " did not respond within " + seconds_text(asked) + " s (dead, hung, or busy outside collectives)";
        break;
      default: out += one ? " is alive but has not reached this collective" : " are alive but have not reached this collective";
    }
  }
  return out;
}

Status Communicator::break_job(const std::string& message) {
  // Where this rank was, for collectives whose own label names no step.
  std::string text = message;
  if (!last_completed_.empty()) text += "; this rank's last completed collective: " + last_completed_;
  if (broken_.empty()) broken_ = text;
  return unavailable(text);
}

void Communicator::abort(const std::string& reason) {
  api_->abort(comm_, reason.c_str());
  std::fprintf(stderr, "onyx: %s\n", reason.c_str());  // the plugin's abort does not return; if it did:
  std::_Exit(134);
}

// --- PendingCollective ------------------------------------------------------

PendingCollective& PendingCollective::operator=(PendingCollective&& other) noexcept {
  if (this != &other) {
    finish();
    comm_ = std::exchange(other.comm_, nullptr);
    request_ = std::exchange(other.request_, nullptr);
    what_ = std::move(other.what_);
    label_ = std::move(other.label_);
  }
  return *this;
}

PendingCollective::~PendingCollective() { finish(); }

void PendingCollective::finish() {
  if (!request_) return;
  Status st = wait();
  // Still pending: the buffers are about to go away while the plugin may
  // still write them; the only safe way out of a stuck collective is to end
  // the job, with the failure that broke it.
  if (request_) comm_->abort(comm_->broken_.empty() ? st.message() : comm_->broken_);
}

bool PendingCollective::test(Status* status) {
  *status = Status();
  if (!request_) return true;
  if (!comm_->broken_.empty()) {
    *status = unavailable(what_ + ": not waited for, the job is broken: " + comm_->broken_);
    return true;
  }
  bool done = false;
  Status st = take_status(comm_->api_->wait(comm_->comm_, request_, 0, &done));
  if (!done) {
    if (st.ok()) return false;
    // 1.1: it can never complete (the plugin says why).
    *status = comm_->break_job(what_ + ": " + st.message() + comm_->who_is_missing(request_));
    return true;
  }
  request_ = nullptr;  // released by the plugin
  if (!st.ok()) *status = st.with_context(what_);
  if (st.ok() && !label_.empty()) comm_->last_completed_ = label_;
  return true;
}

Status PendingCollective::wait() {
  if (!request_) return Status();
  // No collective can be matched after a failure: waiting would only delay the end.
  if (!comm_->broken_.empty()) return unavailable(what_ + ": not waited for, the job is broken: " + comm_->broken_);
  auto timeout = comm_->options_.timeout.count();
  uint32_t ms = timeout < 0 ? 0 : timeout > 0xFFFFFFFF ? 0xFFFFFFFFu : uint32_t(timeout);
  bool done = false;
  const auto start = std::chrono::steady_clock::now();
  Status st = take_status(comm_->api_->wait(comm_->comm_, request_, ms, &done));
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  comm_->counters_.wait_seconds += waited;
  if (!done) {
    // Timed out (OK status), or (1.1) the plugin knows it can never complete.
    std::string cause = st.ok() ? "not complete after " + seconds_text(timeout / 1000.0) + " s"
                                : "not complete after " + seconds_text(waited) + " s: " + st.message();
    return comm_->break_job(what_ + ": " + cause + comm_->who_is_missing(request_));
  }
  request_ = nullptr;
  if (st.ok() && !label_.empty()) comm_->last_completed_ = label_;
  return st.ok() ? st : st.with_context(what_);
}

}  // namespace onyx::runtime
