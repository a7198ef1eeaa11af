// The `mpi` collectives plugin: onyx_collectives.h over MPI-3's
// non-blocking collectives (Open MPI from Debian). It joins the job mpirun
// started (or runs as a one-rank singleton without mpirun), duplicates
// MPI_COMM_WORLD and makes MPI errors return codes, so that they become
// statuses instead of killing the process.
//
// Open MPI progresses a non-blocking collective only inside MPI calls:
// `wait` polls MPI_Test until the deadline, sleeping briefly between polls
// so that a long wait does not spin a core the other ranks need.
//
// Who is missing (peer_states, ABI 1.1). A second duplicate of
// MPI_COMM_WORLD carries small probes: while a rank is inside `wait` or
// `peer_states` it answers every "where are you?" with the number of
// collectives it has started, so a rank asking about collective number s
// learns who has started it (ARRIVED), who is alive in an earlier one
// (LATE) and who did not answer in time (SILENT). Every MPI call there is
// non-blocking and every loop has a deadline. Ranks on the same kernel
// (same boot id) whose process this rank can see (same pid and start time
// in /proc) are also looked up directly: EXITED or STOPPED.
//
// Dead ranks under mpirun. When a rank dies, Open MPI 4.1's mpirun ends the
// job itself: SIGCONT, then SIGTERM a second later, then SIGKILL a second
// after that. So that the survivors can say who died before they go, the
// plugin (with a 1.1 host) catches SIGTERM while this process is inside
// `wait` or `peer_states`: the wait then fails at once with UNAVAILABLE,
// the host asks peer_states (cut to 300 ms) and reports, and `abort` ends
// the process by SIGTERM as the launcher asked. Outside those calls SIGTERM
// does what it did before (the previous disposition: by default the
// process ends); one caught inside them and not reported ends the process
// at the plugin's next call.
#include <mpi.h>
#include <onyx_collectives.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <new>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

// One probe message in flight (its buffer must outlive the request).
struct ProbeMessage {
  MPI_Request request = MPI_REQUEST_NULL;
  int64_t data[2] = {0, 0};
};

// What every rank tells the others at create, to look each other up in
// /proc where they share a kernel.
struct Identity {
  char boot_id[40] = {};  // /proc/sys/kernel/random/boot_id; empty when unknown
  int64_t pid = -1;
  uint64_t start_time = 0;  // /proc/PID/stat field 22: tells a reused pid apart
};

}  // namespace

struct OnyxCommunicator {
  const OnyxHostApi* host = nullptr;
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm probes = MPI_COMM_NULL;  // liveness probes (size > 1)
  int rank = 0, size = 1;
  bool finalize = false;  // this plugin initialized MPI, so it finalizes it
  int64_t started = 0;    // collectives started on `comm`: the next one's number is started + 1
  int64_t queries = 0;    // peer_states calls: their probes carry the number
  std::vector<Identity> identities;
  std::vector<bool> visible;  // rank r's process can be looked up in this /proc
  std::vector<std::unique_ptr<ProbeMessage>> in_flight;
};

struct OnyxCollectiveRequest {
  MPI_Request request = MPI_REQUEST_NULL;
  int64_t number = 0;  // its place among the collectives this rank started (1, 2, ...)
};

namespace {

bool g_created = false;  // one communicator per process (create's contract)

// --- SIGTERM while waiting ---------------------------------------------------

std::atomic<int> g_waiting{0};                // threads inside wait or peer_states
volatile sig_atomic_t g_terminating = 0;      // SIGTERM came while one was
struct sigaction g_previous_sigterm;          // the disposition before ours
bool g_sigterm_installed = false;
static_assert(std::atomic<int>::is_always_lock_free, "the SIGTERM handler needs a lock-free counter");

// Ends the process by SIGTERM with the default action (as the sender asked).
[[noreturn]] void die_by_sigterm() {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(SIGTERM, &dfl, nullptr);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  raise(SIGTERM);
  _exit(128 + SIGTERM);
}

// Async-signal-safe: an atomic, a flag, sigaction and raise.
void on_sigterm(int sig, siginfo_t* info, void* context) {
  if (g_waiting.load() > 0) {
    g_terminating = 1;  // the waiting thread reports and ends the process
    return;
  }
  const struct sigaction& prev = g_previous_sigterm;
  if (prev.sa_flags & SA_SIGINFO) {
    if (prev.sa_sigaction) prev.sa_sigaction(sig, info, context);
  } else if (prev.sa_handler == SIG_DFL) {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(SIGTERM, &dfl, nullptr);
    raise(SIGTERM);  // blocked until this handler returns, then the default action ends the process
  } else if (prev.sa_handler != SIG_IGN) {
    prev.sa_handler(sig);
  }
}

void install_sigterm_handler() {
  struct sigaction ours {};
  ours.sa_sigaction = on_sigterm;
  ours.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&ours.sa_mask);
  if (sigaction(SIGTERM, &ours, &g_previous_sigterm) == 0) g_sigterm_installed = true;
}

void remove_sigterm_handler() {
  if (!g_sigterm_installed) return;
  struct sigaction current {};
  sigaction(SIGTERM, nullptr, &current);
  if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == on_sigterm)
    sigaction(SIGTERM, &g_previous_sigterm, nullptr);
  g_sigterm_installed = false;
}

// A SIGTERM caught inside wait that no failure reported: obey it now.
void obey_pending_sigterm() {
  if (g_terminating) die_by_sigterm();
}

// Counts this thread as waiting while it lives.
struct Waiting {
  Waiting() { g_waiting.fetch_add(1); }
  ~Waiting() { g_waiting.fetch_sub(1); }
  Waiting(const Waiting&) = delete;
  Waiting& operator=(const Waiting&) = delete;
};

// --- processes on this kernel ------------------------------------------------

std::string read_boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  in >> id;
  return id;
}

// State letter and start time (clock ticks after boot) of a process, from
// /proc/PID/stat; false when there is no such process (or no /proc).
bool read_process(int64_t pid, char* state, uint64_t* start_time) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  if (!in) return false;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t paren = text.rfind(')');  // the command name may hold spaces and parentheses
  if (paren == std::string::npos) return false;
  std::istringstream fields(text.substr(paren + 1));
  std::string field;
  for (int k = 3; k <= 22 && (fields >> field); ++k) {  // fields 3 (state) .. 22 (starttime)
    if (k == 3) *state = field.empty() ? '?' : field[0];
    if (k == 22) {
      *start_time = std::strtoull(field.c_str(), nullptr, 10);
      return true;
    }
  }
  return false;
}

// EXITED or STOPPED for a rank whose process this rank can see; -1 when it
// is running (or cannot be seen).
int32_t local_state(const OnyxCommunicator* c, int r) {
  if (r >= int(c->visible.size()) || !c->visible[r]) return -1;
  char state = '?';
  uint64_t start = 0;
  if (!read_process(c->identities[r].pid, &state, &start) || start != c->identities[r].start_time ||
      state == 'Z' || state == 'X' || state == 'x')
    return ONYX_PEER_EXITED;
  if (state == 'T' || state == 't') return ONYX_PEER_STOPPED;
  return -1;
}

// Every rank's identity (at create, a collective) and whom this rank can see.
int learn_identities(OnyxCommunicator* c) {
  Identity me;
  std::string boot = read_boot_id();
  char state = '?';
  if (boot.size() < sizeof me.boot_id && read_process(int64_t(::getpid()), &state, &me.start_time)) {
    std::memcpy(me.boot_id, boot.data(), boot.size());
    me.pid = int64_t(::getpid());
  }
  c->identities.assign(size_t(c->size), Identity{});
  int rc = MPI_Allgather(&me, int(sizeof me), MPI_BYTE, c->identities.data(), int(sizeof me), MPI_BYTE, c->comm);
  if (rc != MPI_SUCCESS) return rc;
  c->visible.assign(size_t(c->size), false);
  for (int r = 0; r < c->size; ++r) {
    const Identity& peer = c->identities[r];
    uint64_t start = 0;
    c->visible[r] = me.pid > 0 && peer.pid > 0 && std::strncmp(me.boot_id, peer.boot_id, sizeof me.boot_id) == 0 &&
                    read_process(peer.pid, &state, &start) && start == peer.start_time;
  }
  return MPI_SUCCESS;
}

// --- probes --------------------------------------------------------------------

constexpr int kAskTag = 1;     // {query, collective number}: "where are you?"
constexpr int kAnswerTag = 2;  // {query, collectives started}

// Completes what it can of the probe messages in flight.
void reap(OnyxCommunicator* c) {
  auto& list = c->in_flight;
  for (size_t k = 0; k < list.size();) {
    int flag = 0;
    int rc = MPI_Test(&list[k]->request, &flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS || flag) {
      list[k] = std::move(list.back());
      list.pop_back();
    } else {
      ++k;
    }
  }
}

// Sends two numbers without waiting (a few bytes: sent eagerly). Dropped
// when too many are in flight (peers that never take them).
void post(OnyxCommunicator* c, int peer, int tag, int64_t a, int64_t b) {
  if (c->in_flight.size() >= size_t(4 * c->size + 64)) return;
  auto m = std::make_unique<ProbeMessage>();
  m->data[0] = a;
  m->data[1] = b;
  if (MPI_Isend(m->data, 2, MPI_INT64_T, peer, tag, c->probes, &m->request) == MPI_SUCCESS)
    c->in_flight.push_back(std::move(m));
}

// Takes one arrived message with `tag`, if any. The message is matched
// before it is received, so the receive completes at once; one that does
// not within a few polls is left to complete in the background and lost.
bool take(OnyxCommunicator* c, int tag, int64_t out[2], int* source) {
  int flag = 0;
  MPI_Message message;
  MPI_Status status;
  if (MPI_Improbe(MPI_ANY_SOURCE, tag, c->probes, &flag, &message, &status) != MPI_SUCCESS || !flag) return false;
  auto m = std::make_unique<ProbeMessage>();
  if (MPI_Imrecv(m->data, 2, MPI_INT64_T, &message, &m->request) != MPI_SUCCESS) return false;
  for (int poll = 0; poll < 100; ++poll) {
    int done = 0;
    if (MPI_Test(&m->request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return false;
    if (done) {
      out[0] = m->data[0];
      out[1] = m->data[1];
      *source = status.MPI_SOURCE;
      return true;
    }
  }
  c->in_flight.push_back(std::move(m));
  return false;
}

// Answers the probes that have arrived: how many collectives this rank has
// started. Best effort: without memory a question goes unanswered.
void answer_probes(OnyxCommunicator* c) noexcept {
  if (c->probes == MPI_COMM_NULL) return;
  try {
    reap(c);
    int64_t ask[2];
    int source = -1;
    for (int k = 0; k < 16 && take(c, kAskTag, ask, &source); ++k) post(c, source, kAnswerTag, ask[0], c->started);
  } catch (...) {
  }
}


OnyxStatus* error(const OnyxHostApi* host, int32_t code, const std::string& message) {
  return host->status_create(code, ("mpi: " + message).c_str());
}

OnyxStatus* mpi_error(const OnyxHostApi* host, const char* call, int rc) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(rc, text, &length);
  return error(host, ONYX_STATUS_INTERNAL, std::string(call) + " failed: " + text);
}

// The MPI type carrying `dtype`: a native one where MPI has it (reductions
// need it), else bytes (*scale: bytes per element) for moving data only.
MPI_Datatype mpi_type(int32_t dtype, bool reduce, int* scale) {
  *scale = 1;
  switch (dtype) {
    case ONYX_DTYPE_FLOAT32: return MPI_FLOAT;
    case ONYX_DTYPE_FLOAT64: return MPI_DOUBLE;
    case ONYX_DTYPE_INT32: return MPI_INT32_T;
    case ONYX_DTYPE_INT64: return MPI_INT64_T;
    case ONYX_DTYPE_UINT8: return MPI_UINT8_T;
    case ONYX_DTYPE_INT8: return MPI_INT8_T;
    case ONYX_DTYPE_UINT32: return MPI_UINT32_T;
    case ONYX_DTYPE_UINT64: return MPI_UINT64_T;
    default: break;
  }
  size_t bytes = onyx_dtype_size(dtype);
  if (reduce || bytes == 0) return MPI_DATATYPE_NULL;
  *scale = int(bytes);
  return MPI_BYTE;
}

MPI_Op mpi_op(int32_t op) {
  switch (op) {
    case ONYX_REDUCE_SUM: return MPI_SUM;
    case ONYX_REDUCE_MAX: return MPI_MAX;
    case ONYX_REDUCE_MIN: return MPI_MIN;
    default: return MPI_OP_NULL;
  }
}

// Checks the arguments every collective shares and resolves type and count.
OnyxStatus* prepare(OnyxCommunicator* c, const char* what, size_t count, int32_t dtype, bool reduce, int32_t op,
                    OnyxCollectiveRequest** request, MPI_Datatype* type, int* mpi_count) {
  if (!c || !request) return nullptr;  // unreachable through the host; checked by callers
  *request = nullptr;
  obey_pending_sigterm();
  int scale = 1;
  *type = mpi_type(dtype, reduce, &scale);
  const char* name = onyx_dtype_name(dtype);
  if (*type == MPI_DATATYPE_NULL)
    return error(c->host, ONYX_STATUS_UNIMPLEMENTED,
                 std::string(what) + " of " + (name ? name : "dtype " + std::to_string(dtype)) + " is not supported");
  if (reduce && mpi_op(op) == MPI_OP_NULL)
    return error(c->host, ONYX_STATUS_INVALID_ARGUMENT, std::string(what) + ": unknown reduction " + std::to_string(op));
  if (count > size_t(INT_MAX) / size_t(scale))
    return error(c->host, ONYX_STATUS_INVALID_ARGUMENT,
                 std::string(what) + " of " + std::to_string(count) + " elements: more than MPI's int count");
  *mpi_count = int(count) * scale;
  return nullptr;
}

OnyxStatus* started(OnyxCommunicator* c, const char* call, int rc, MPI_Request req, OnyxCollectiveRequest** out) {
  if (rc != MPI_SUCCESS) return mpi_error(c->host, call, rc);
  c->started += 1;  // started, so matched by the other ranks' collective of this number
  *out = new (std::nothrow) OnyxCollectiveRequest{req, c->started};
  if (!*out) {
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    return error(c->host, ONYX_STATUS_OUT_OF_MEMORY, "no memory for a request");
  }
  return nullptr;
}

int32_t rank_of(const OnyxCommunicator* c) { return c->rank; }
int32_t size_of(const OnyxCommunicator* c) { return c->size; }

OnyxStatus* all_reduce(OnyxCommunicator* c, const void* send, void* recv, size_t count, int32_t dtype, int32_t op,
                       OnyxCollectiveRequest** request) {
  MPI_Datatype type;
  int n = 0;
  if (OnyxStatus* st = prepare(c, "all_reduce", count, dtype, true, op, request, &type, &n)) return st;
  MPI_Request req;
  int rc = MPI_Iallreduce(send == recv ? MPI_IN_PLACE : send, recv, n, type, mpi_op(op), c->comm, &req);
  return started(c, "MPI_Iallreduce", rc, req, request);
}

OnyxStatus* reduce_scatter(OnyxCommunicator* c, const void* send, void* recv, size_t count, int32_t dtype,
                           int32_t op, OnyxCollectiveRequest** request) {
  MPI_Datatype type;
  int n = 0;
  if (OnyxStatus* st = prepare(c, "reduce_scatter", count, dtype, true, op, request, &type, &n)) return st;
  MPI_Request req;
  int rc = MPI_Ireduce_scatter_block(send, recv, n, type, mpi_op(op), c->comm, &req);
  return started(c, "MPI_Ireduce_scatter_block", rc, req, request);
}

OnyxStatus* all_gather(OnyxCommunicator* c, const void* send, void* recv, size_t count, int32_t dtype,
                       OnyxCollectiveRequest** request) {
  MPI_Datatype type;
  int n = 0;
  if (OnyxStatus* st = prepare(c, "all_gather", count, dtype, false, 0, request, &type, &n)) return st;
  MPI_Request req;
  int rc = MPI_Iallgather(send, n, type, recv, n, type, c->comm, &req);
  return started(c, "MPI_Iallgather", rc, req, request);
}

OnyxStatus* broadcast(OnyxCommunicator* c, void* buffer, size_t count, int32_t dtype, int32_t root,
                      OnyxCollectiveRequest** request) {
  MPI_Datatype type;
  int n = 0;
  if (OnyxStatus* st = prepare(c, "broadcast", count, dtype, false, 0, request, &type, &n)) return st;
  if (root < 0 || root >= c->size)
    return error(c->host, ONYX_STATUS_INVALID_ARGUMENT, "broadcast: root " + std::to_string(root) + " out of range");
  MPI_Request req;
  int rc = MPI_Ibcast(buffer, n, type, root, c->comm, &req);
  return started(c, "MPI_Ibcast", rc, req, request);
}

OnyxStatus* barrier(OnyxCommunicator* c, OnyxCollectiveRequest** request) {
  *request = nullptr;
  obey_pending_sigterm();
  MPI_Request req;
  int rc = MPI_Ibarrier(c->comm, &req);
  return started(c, "MPI_Ibarrier", rc, req, request);
}

OnyxStatus* wait(OnyxCommunicator* c, OnyxCollectiveRequest* r, uint32_t timeout_ms, bool* done) {
  *done = false;
  obey_pending_sigterm();
  Waiting waiting;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  auto pause = std::chrono::microseconds(20);
  for (;;) {
    int flag = 0;
    int rc = MPI_Test(&r->request, &flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS || flag) {
      *done = true;
      delete r;
      if (rc != MPI_SUCCESS) return mpi_error(c->host, "MPI_Test", rc);
      obey_pending_sigterm();  // done, but this process was told to end
      return nullptr;
    }
    // Only a 1.1 host installs the handler, so only it sees this form.
    if (g_terminating)
      return error(c->host, ONYX_STATUS_UNAVAILABLE,
                   "this process got SIGTERM, as mpirun sends when a rank has died or called MPI_Abort");
    answer_probes(c);  // still waiting: others may ask where this rank is
    if (std::chrono::steady_clock::now() >= deadline) return nullptr;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
}

OnyxStatus* ask_peers(OnyxCommunicator* c, const OnyxCollectiveRequest* r, uint32_t timeout_ms, int32_t* states);

OnyxStatus* peer_states(OnyxCommunicator* c, const OnyxCollectiveRequest* r, uint32_t timeout_ms,
                        int32_t* states) noexcept {
  if (!r || !states) return error(c->host, ONYX_STATUS_INVALID_ARGUMENT, "peer_states: no request or no states");
  try {
    return ask_peers(c, r, timeout_ms, states);
  } catch (const std::bad_alloc&) {
    return c->host->status_create(ONYX_STATUS_OUT_OF_MEMORY, "mpi: peer_states: out of memory");
  } catch (...) {
    return c->host->status_create(ONYX_STATUS_INTERNAL, "mpi: peer_states failed");
  }
}

OnyxStatus* ask_peers(OnyxCommunicator* c, const OnyxCollectiveRequest* r, uint32_t timeout_ms, int32_t* states) {
  Waiting waiting;
  using Clock = std::chrono::steady_clock;
  const auto begin = Clock::now();
  const auto deadline = begin + std::chrono::milliseconds(timeout_ms);
  const auto terminating_deadline = begin + std::chrono::milliseconds(std::min<uint32_t>(timeout_ms, 300));
  const auto again = std::chrono::milliseconds(5);  // a late rank is asked again this often
  const int64_t query = ++c->queries;
  // Final: arrived, or its process exited or stopped. A late rank may still
  // arrive, so it is asked again until the deadline.
  std::vector<bool> final(size_t(c->size), false), asked(size_t(c->size), false);
  std::vector<Clock::time_point> ask_at(size_t(c->size), begin);
  int open = 0;
  for (int p = 0; p < c->size; ++p) {
    states[p] = p == c->rank ? ONYX_PEER_ARRIVED : ONYX_PEER_SILENT;
    final[p] = p == c->rank;
    if (p == c->rank) continue;
    int32_t local = local_state(c, p);
    if (local >= 0) {
      states[p] = local;
      final[p] = true;
      continue;
    }
    ++open;
  }
  auto pause = std::chrono::microseconds(50);
  while (open > 0) {
    auto now = Clock::now();
    for (int p = 0; p < c->size; ++p) {
      if (final[p] || asked[p] || now < ask_at[p]) continue;
      post(c, p, kAskTag, query, r->number);
      asked[p] = true;
    }
    answer_probes(c);  // the others may be asking this rank at the same time
    int64_t answer[2];
    int source = -1;
    while (take(c, kAnswerTag, answer, &source)) {
      if (answer[0] != query || source < 0 || source >= c->size || final[source]) continue;  // an old question's
      asked[source] = false;
      if (answer[1] >= r->number) {
        states[source] = ONYX_PEER_ARRIVED;
        final[source] = true;
        --open;
      } else {
        states[source] = ONYX_PEER_LATE;
        ask_at[source] = Clock::now() + again;
      }
    }
    now = Clock::now();
    if (open == 0 || now >= deadline || (g_terminating && now >= terminating_deadline)) break;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
  // One that did not answer may have died or stopped meanwhile.
  for (int p = 0; p < c->size; ++p) {
    if (final[p] || states[p] != ONYX_PEER_SILENT) continue;
    int32_t local = local_state(c, p);
    if (local >= 0) states[p] = local;
  }
  reap(c);
  return nullptr;
}

void abort_job(OnyxCommunicator* c, const char* reason) {
  std::string line = std::string("mpi: rank ") + std::to_string(c ? c->rank : -1) + " ends the job: " +
                     (reason ? reason : "");
  if (c && c->host) {
    c->host->log(ONYX_LOG_ERROR, line.c_str());
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
  }
  std::fflush(stdout);
  std::fflush(stderr);
  if (g_terminating) die_by_sigterm();  // mpirun is ending the job already
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);  // MPI_Abort should not return
}

void destroy(OnyxCommunicator* c) {
  remove_sigterm_handler();
  reap(c);
  for (auto& m : c->in_flight) MPI_Request_free(&m->request);  // completes (or not) in the background
  c->in_flight.clear();
  if (c->probes != MPI_COMM_NULL) MPI_Comm_free(&c->probes);
  if (c->comm != MPI_COMM_NULL) MPI_Comm_free(&c->comm);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (c->finalize && !finalized) MPI_Finalize();
  delete c;
  g_created = false;
}

const OnyxCollectivesApi kApi = {
    sizeof(OnyxCollectivesApi), rank_of, size_of, all_reduce, reduce_scatter, all_gather, broadcast, barrier,
    wait, abort_job, destroy, peer_states,
};

OnyxStatus* create(const OnyxCollectivesCreateArgs* args, OnyxCommunicator** out, const OnyxCollectivesApi** api) {
  if (!args || !args->host || !out || !api) return nullptr;  // nothing to report with
  *out = nullptr;
  *api = nullptr;
  const OnyxHostApi* host = args->host;
  if (g_created)
    return error(host, ONYX_STATUS_FAILED_PRECONDITION, "this process already has an mpi communicator");
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized) return error(host, ONYX_STATUS_FAILED_PRECONDITION, "MPI was finalized in this process");
  auto* c = new (std::nothrow) OnyxCommunicator;
  if (!c) return error(host, ONYX_STATUS_OUT_OF_MEMORY, "no memory for a communicator");
  c->host = host;
  if (!initialized) {
    int provided = 0;
    int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    if (rc != MPI_SUCCESS) {
      delete c;
      return error(host, ONYX_STATUS_UNAVAILABLE, "MPI_Init_thread failed (is this process started by mpirun?)");
    }
    c->finalize = true;
  }
  // Errors on our communicator return codes (statuses) instead of aborting.
  int rc = MPI_Comm_dup(MPI_COMM_WORLD, &c->comm);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_rank(c->comm, &c->rank);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_size(c->comm, &c->size);
  if (rc == MPI_SUCCESS && c->size > 1) {
    rc = MPI_Comm_dup(c->comm, &c->probes);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_set_errhandler(c->probes, MPI_ERRORS_RETURN);
    if (rc == MPI_SUCCESS) {
      try {
        rc = learn_identities(c);
      } catch (...) {
        rc = MPI_ERR_NO_MEM;
      }
    }
  }
  if (rc != MPI_SUCCESS) {
    OnyxStatus* st = mpi_error(host, "joining MPI_COMM_WORLD", rc);
    destroy(c);
    return st;
  }
  // A 1.1 host is told (wait's UNAVAILABLE) when mpirun ends the job while
  // this rank waits, so that it can say who is missing first.
  if (c->size > 1 && args->abi_version >= ONYX_ABI_VERSION(1, 1)) install_sigterm_handler();
  g_created = true;
  *out = c;
  *api = &kApi;
  return nullptr;
}

char g_version[64];

const char* version_string() {
  int major = 0, minor = 0;
  MPI_Get_version(&major, &minor);
  std::snprintf(g_version, sizeof g_version, "0.1.0 (MPI %d.%d)", major, minor);
  return g_version;
}

}  // namespace

extern "C" ONYX_PLUGIN_EXPORT const OnyxCollectivesEntry* OnyxGetCollectivesEntry(void) {
  static const OnyxCollectivesEntry entry = {
      ONYX_COLLECTIVES_MAGIC, sizeof(OnyxCollectivesEntry), ONYX_ABI_VERSION(1, 0),
      ONYX_ABI_VERSION(ONYX_COLLECTIVES_ABI_VERSION_MAJOR, ONYX_COLLECTIVES_ABI_VERSION_MINOR),
      "mpi", version_string(), create,
  };
  return &entry;
}
