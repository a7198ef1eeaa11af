// communicator.h: one rank's connection to a training job, through a
// collectives plugin (provider_api/onyx_collectives.h) loaded from disk.
//
// The core names no communication library: `Communicator::load("mpi")`
// opens libonyx_collectives_mpi.so like a provider. Every wait is bounded
// (CollectiveOptions::timeout): a collective that does not complete in time
// is an UNAVAILABLE error naming the collective, its size, the label the
// caller gave it (e.g. "step 12, gradient bucket 3") and, where the plugin
// can tell (ABI 1.1 peer_states), the ranks that did not arrive ("rank 1
// did not arrive: its process has exited"), never a hang. After such a
// failure the communicator is broken: no collective can be matched any
// more, further waits fail at once, and a pending collective destroyed
// unfinished ends the job with the first failure's message. The
// communicator counts the calls and bytes of each kind of collective, which
// the training session reports.
//
// Not thread-safe: one thread uses a communicator at a time.
#pragma once

#include <onyx_collectives.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "plugin/plugin_library.h"

namespace onyx::runtime {

// Collectives plugins as plugin_library.h finds and opens them.
extern const PluginKind kCollectivesPluginKind;

enum class Collective { kAllReduce, kReduceScatter, kAllGather, kBroadcast, kBarrier };
inline constexpr size_t kCollectiveKinds = 5;
const char* collective_name(Collective c);  // "all_reduce", ...

// Calls and bytes per kind of collective. Bytes are what this rank
// contributes: all_reduce `count` elements, reduce_scatter size*count
// (its whole send buffer), all_gather size*count (the gathered result),
// broadcast `count`, barrier 0.
struct CollectiveCounters {
  std::array<uint64_t, kCollectiveKinds> calls{};
  std::array<uint64_t, kCollectiveKinds> bytes{};
  double wait_seconds = 0;  // time this rank spent blocked in wait()
  uint64_t calls_of(Collective c) const { return calls[size_t(c)]; }
  uint64_t bytes_of(Collective c) const { return bytes[size_t(c)]; }
  std::string to_string() const;  // "all_reduce 2 calls 16 B, reduce_scatter ..., waited 0.012 s"
};

struct CollectiveOptions {
  // How long one collective may take before the job is declared broken.
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
};

class Communicator;

// A started collective. Complete it with wait() (bounded) or poll test().
// Destroying a pending one waits for it (bounded), since the plugin may still
// write its buffers; a timeout there aborts the job.
class PendingCollective {
 public:
  PendingCollective() = default;
  PendingCollective(PendingCollective&& other) noexcept { *this = std::move(other); }
  PendingCollective& operator=(PendingCollective&& other) noexcept;
  ~PendingCollective();

  bool pending() const { return request_ != nullptr; }
  // True when done (ok() or the operation's error in *status), and also
  // when it can never complete (the error in *status; it stays pending, and
  // destroying it ends the job).
  bool test(Status* status);
  // Waits up to the communicator's timeout. An error names the missing
  // ranks where the plugin can tell; the request then stays pending.
  Status wait();

 private:
  friend class Communicator;
  void finish();  // waits for a pending request; aborts the job if it stays stuck
  PendingCollective(Communicator* comm, OnyxCollectiveRequest* request, std::string what, std::string label)
      : comm_(comm), request_(request), what_(std::move(what)), label_(std::move(label)) {}
  Communicator* comm_ = nullptr;
  OnyxCollectiveRequest* request_ = nullptr;
  std::string what_;   // "all_reduce of 8 float32 (step 3)": for messages
  std::string label_;  // "step 3"
};

class Communicator {
 public:
  // Finds the plugin (a name: libonyx_collectives_<name>.so in the plugin
  // folders, or a path), checks its entry and joins the job. UNAVAILABLE
  // when the plugin's library or device is absent, with its reason.
  static StatusOr<std::unique_ptr<Communicator>> load(const std::string& name_or_path,
                                                      const std::vector<std::string>& extra_dirs = {},
                                                      CollectiveOptions options = {});
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::string& name() const { return library_.name(); }
  const CollectiveCounters& counters() const { return counters_; }
  const CollectiveOptions& options() const { return options_; }

  // Non-blocking starts; `label` says what the collective is for in error
  // messages ("step 3, bucket 1"). Buffers stay valid until completion.
  StatusOr<PendingCollective> start_all_reduce(const void* send, void* recv, size_t count, int32_t dtype,
                                               OnyxReduceOp op, const std::string& label = {});
  StatusOr<PendingCollective> start_reduce_scatter(const void* send, void* recv, size_t count, int32_t dtype,
                                                   OnyxReduceOp op, const std::string& label = {});
  StatusOr<PendingCollective> start_all_gather(const void* send, void* recv, size_t count, int32_t dtype,
                                               const std::string& label = {});
  StatusOr<PendingCollective> start_broadcast(void* buffer, size_t count, int32_t dtype, int root,
                                              const std::string& label = {});
  StatusOr<PendingCollective> start_barrier(const std::string& label = {});

  // Blocking forms: start, then wait (bounded).
  Status all_reduce(const void* send, void* recv, size_t count, int32_t dtype, OnyxReduceOp op,
                    const std::string& label = {});
  Status reduce_scatter(const void* send, void* recv, size_t count, int32_t dtype, OnyxReduceOp op,
                        const std::string& label = {});
  Status all_gather(const void* send, void* recv, size_t count, int32_t dtype, const std::string& label = {});
  Status broadcast(void* buffer, size_t count, int32_t dtype, int root, const std::string& label = {});
  Status barrier(const std::string& label = {});

  // Ends the whole job (every rank exits non-zero) after logging `reason`.
  [[noreturn]] void abort(const std::string& reason);

  // Where every rank stands with `pending`'s collective (OnyxPeerState per
  // rank, this one ARRIVED), asking the others for at most `bound`: ranks
  // answer only while they wait in a collective themselves. UNIMPLEMENTED
  // where the plugin cannot tell (ABI 1.0, nccl). `pending` must be this
  // communicator's and still pending.
  StatusOr<std::vector<int32_t>> peer_states(const PendingCollective& pending, std::chrono::milliseconds bound);
  // The first failure that broke the job ("" while none did).
  const std::string& broken() const { return broken_; }

 private:
  friend class PendingCollective;
  explicit Communicator(PluginLibrary library) : library_(std::move(library)) {}
  StatusOr<PendingCollective> started(OnyxStatus* status, OnyxCollectiveRequest* request, Collective kind,
                                      uint64_t bytes, std::string what, const std::string& label);
  std::string describe(Collective kind, size_t count, int32_t dtype, const std::string& label) const;
  // "; rank 1 did not arrive: its process has exited" (peer_states), or a
  // generic cause where the plugin cannot tell.
  std::string who_is_missing(OnyxCollectiveRequest* request);
  // Records the failure that breaks the job (with the label of the last
  // collective this rank completed); returns it as the error.
  Status break_job(const std::string& message);

  PluginLibrary library_;  // destroyed last: unloads the code
  OnyxHostApi host_{};
  OnyxCommunicator* comm_ = nullptr;
  const OnyxCollectivesApi* api_ = nullptr;
  int rank_ = 0, size_ = 1;
  CollectiveOptions options_;
  CollectiveCounters counters_;
  bool has_peer_states_ = false;  // ABI 1.1 and the plugin's table has it
  std::string broken_;
  std::string last_completed_;  // the label of the last labelled collective completed here
};

}  // namespace onyx::runtime
