// The `nccl` collectives plugin: onyx_collectives.h over NVIDIA's NCCL.
//
// The 1.0 ABI hands the plugin host buffers, so each collective stages its
// data through device memory on the communicator's stream (copy in, NCCL
// collective, copy out) and completes when an event after the copy out has
// fired. Device-resident buffers come with a later ABI minor version.
//
// Joining the job: rank and size come from the launcher's environment
// (Open MPI's OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK, else RANK/WORLD_SIZE/
// LOCAL_RANK as torchrun sets them; neither: one rank). With more than one
// rank, rank 0 writes NCCL's unique id to the file named by the option
// "id_file" or ONYX_NCCL_ID_FILE (on a filesystem every rank sees), and
// the others read it, waiting at most 60 s. The communicator is
// non-blocking (ncclConfig_t.blocking = 0), so that no call can hang: waits
// poll ncclCommGetAsyncError and end at their deadline.
//
// Without a CUDA device (or driver) `create` reports UNAVAILABLE with the
// CUDA runtime's reason, as the CUDA provider does.
#include <cuda_runtime.h>
#include <nccl.h>
#include <onyx_collectives.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <string>
#include <thread>

struct OnyxCommunicator {
  const OnyxHostApi* host = nullptr;
  int rank = 0, size = 1, device = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
};

struct OnyxCollectiveRequest {
  cudaEvent_t done = nullptr;
  void* device_send = nullptr;  // staging buffers, freed on completion
  void* device_recv = nullptr;
};

namespace {

using Clock = std::chrono::steady_clock;

OnyxStatus* error(const OnyxHostApi* host, int32_t code, const std::string& message) {
  return host->status_create(code, ("nccl: " + message).c_str());
}

OnyxStatus* cuda_error(const OnyxHostApi* host, const char* call, cudaError_t rc) {
  return error(host, ONYX_STATUS_INTERNAL, std::string(call) + " failed: " + cudaGetErrorString(rc));
}

OnyxStatus* nccl_error(const OnyxHostApi* host, const char* call, ncclResult_t rc, ncclComm_t comm) {
  std::string m = std::string(call) + " failed: " + ncclGetErrorString(rc);
  if (comm) {
    const char* last = ncclGetLastError(comm);
    if (last && *last) m += std::string(" (") + last + ")";
  }
  return error(host, ONYX_STATUS_INTERNAL, m);
}

int env_int(const char* a, const char* b, int fallback) {
  for (const char* name : {a, b}) {
    const char* v = name ? std::getenv(name) : nullptr;
    if (v && *v) return std::atoi(v);
  }
  return fallback;
}

bool nccl_type(int32_t dtype, ncclDataType_t* out) {
  switch (dtype) {
    case ONYX_DTYPE_FLOAT32: *out = ncclFloat32; return true;
    case ONYX_DTYPE_FLOAT64: *out = ncclFloat64; return true;
    case ONYX_DTYPE_FLOAT16: *out = ncclFloat16; return true;
    case ONYX_DTYPE_BFLOAT16: *out = ncclBfloat16; return true;
    case ONYX_DTYPE_INT32: *out = ncclInt32; return true;
    case ONYX_DTYPE_INT64: *out = ncclInt64; return true;
    case ONYX_DTYPE_UINT32: *out = ncclUint32; return true;
    case ONYX_DTYPE_UINT64: *out = ncclUint64; return true;
    case ONYX_DTYPE_INT8: *out = ncclInt8; return true;
    case ONYX_DTYPE_UINT8: case ONYX_DTYPE_BOOL: *out = ncclUint8; return true;
    default: return false;
  }
}

bool nccl_op(int32_t op, ncclRedOp_t* out) {
  switch (op) {
    case ONYX_REDUCE_SUM: *out = ncclSum; return true;
    case ONYX_REDUCE_MAX: *out = ncclMax; return true;
    case ONYX_REDUCE_MIN: *out = ncclMin; return true;
    default: return false;
  }
}

// Waits for a non-blocking NCCL call to leave ncclInProgress, until `deadline`.
ncclResult_t settle(ncclComm_t comm, Clock::time_point deadline) {
  ncclResult_t state = ncclInProgress;
  while (ncclCommGetAsyncError(comm, &state) == ncclSuccess && state == ncclInProgress) {
    if (Clock::now() >= deadline) return ncclInProgress;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return state;
}

void free_staging(OnyxCollectiveRequest* r) {
  if (r->device_send && r->device_send != r->device_recv) cudaFree(r->device_send);
  if (r->device_recv) cudaFree(r->device_recv);
  if (r->done) cudaEventDestroy(r->done);
  delete r;
}

// One staged collective: copy `send_bytes` in, run `launch` on the device
// buffers, copy `recv_bytes` out to `recv`, record the completion event.
template <typename Launch>
OnyxStatus* staged(OnyxCommunicator* c, const char* what, const void* send, size_t send_bytes, void* recv,
                   size_t recv_bytes, bool in_place, OnyxCollectiveRequest** request, Launch launch) {
  *request = nullptr;
  cudaSetDevice(c->device);
  auto* r = new (std::nothrow) OnyxCollectiveRequest;
  if (!r) return error(c->host, ONYX_STATUS_OUT_OF_MEMORY, "no memory for a request");
  cudaError_t rc = cudaEventCreateWithFlags(&r->done, cudaEventDisableTiming);
  if (rc == cudaSuccess && recv_bytes) rc = cudaMalloc(&r->device_recv, std::max(recv_bytes, send_bytes));
  if (rc == cudaSuccess && send_bytes) {
    if (in_place) r->device_send = r->device_recv;
    else rc = cudaMalloc(&r->device_send, send_bytes);
  }
  if (rc == cudaSuccess && send_bytes)
    rc = cudaMemcpyAsync(r->device_send, send, send_bytes, cudaMemcpyHostToDevice, c->stream);
  if (rc != cudaSuccess) {
    free_staging(r);
    return cuda_error(c->host, what, rc);
  }
  ncclResult_t nr = launch(r->device_send, r->device_recv);
  if (nr != ncclSuccess && nr != ncclInProgress) {
    cudaStreamSynchronize(c->stream);
    free_staging(r);
    return nccl_error(c->host, what, nr, c->comm);
  }
  if (recv_bytes) rc = cudaMemcpyAsync(recv, r->device_recv, recv_bytes, cudaMemcpyDeviceToHost, c->stream);
  if (rc == cudaSuccess) rc = cudaEventRecord(r->done, c->stream);
  if (rc != cudaSuccess) {
    cudaStreamSynchronize(c->stream);
    free_staging(r);
    return cuda_error(c->host, what, rc);
  }
  *request = r;
  return nullptr;
}

OnyxStatus* resolve(OnyxCommunicator* c, const char* what, int32_t dtype, bool reduce, int32_t op,
                    ncclDataType_t* type, ncclRedOp_t* red) {
  if (!nccl_type(dtype, type)) {
    const char* name = onyx_dtype_name(dtype);
    return error(c->host, ONYX_STATUS_UNIMPLEMENTED,
                 std::string(what) + " of " + (name ? name : "an unknown dtype") + " is not supported");
  }
  if (reduce && !nccl_op(op, red))
    return error(c->host, ONYX_STATUS_INVALID_ARGUMENT, std::string(what) + ": unknown reduction");
  return nullptr;
}

int32_t rank_of(const OnyxCommunicator* c) { return c->rank; }
int32_t size_of(const OnyxCommunicator* c) { return c->size; }

OnyxStatus* all_reduce(OnyxCommunicator* c, const void* send, void* recv, size_t count, int32_t dtype, int32_t op,
                       OnyxCollectiveRequest** request) {
  ncclDataType_t type;
  ncclRedOp_t red;
  if (OnyxStatus* st = resolve(c, "all_reduce", dtype, true, op, &type, &red)) return st;
  size_t bytes = count * onyx_dtype_size(dtype);
  return staged(c, "ncclAllReduce", send, bytes, recv, bytes, true, request, [&](void* s, void* r) {
    return ncclAllReduce(s, r, count, type, red, c->comm, c->stream);
  });
}

OnyxStatus* reduce_scatter(OnyxCommunicator* c, const void* send, void* recv, size_t count, int32_t dtype,
                           int32_t op, OnyxCollectiveRequest** request) {
  ncclDataType_t type;
  ncclRedOp_t red;
  if (OnyxStatus* st = resolve(c, "reduce_scatter", dtype, true, op, &type, &red)) return st;
  size_t bytes = count * onyx_dtype_size(dtype);
  return staged(c, "ncclReduceScatter", send, bytes * c->size, recv, bytes, false, request,
                [&](void* s, void* r) { return ncclReduceScatter(s, r, count, type, red, c->comm, c->stream); });
}

OnyxStatus* all_gather(OnyxCommunicator* c, const void* send, void* recv, size_t count, int32_t dtype,
                       OnyxCollectiveRequest** request) {
  ncclDataType_t type;
  if (!nccl_type(dtype, &type)) {
    // Any fixed-size type moves as bytes.
    if (onyx_dtype_size(dtype) == 0) return resolve(c, "all_gather", dtype, false, 0, &type, nullptr);
    count *= onyx_dtype_size(dtype);
    type = ncclUint8;
    dtype = ONYX_DTYPE_UINT8;
  }
  size_t bytes = count * onyx_dtype_size(dtype);
  return staged(c, "ncclAllGather", send, bytes, recv, bytes * c->size, false, request,
                [&](void* s, void* r) { return ncclAllGather(s, r, count, type, c->comm, c->stream); });
}

OnyxStatus* broadcast(OnyxCommunicator* c, void* buffer, size_t count, int32_t dtype, int32_t root,
                      OnyxCollectiveRequest** request) {
  size_t bytes = count * onyx_dtype_size(dtype);
  if (onyx_dtype_size(dtype) == 0) {
    ncclDataType_t type;
    return resolve(c, "broadcast", dtype, false, 0, &type, nullptr);
  }
  if (root < 0 || root >= c->size)
    return error(c->host, ONYX_STATUS_INVALID_ARGUMENT, "broadcast: root " + std::to_string(root) + " out of range");
  return staged(c, "ncclBroadcast", buffer, bytes, buffer, bytes, true, request, [&](void* s, void* r) {
    return ncclBroadcast(s, r, bytes, ncclUint8, root, c->comm, c->stream);
  });
}

OnyxStatus* barrier(OnyxCommunicator* c, OnyxCollectiveRequest** request) {
  // NCCL has no barrier: an all_reduce of one byte is one.
  static const uint8_t zero = 0;
  static thread_local uint8_t sink;
  return all_reduce(c, &zero, &sink, 1, ONYX_DTYPE_UINT8, ONYX_REDUCE_SUM, request);
}

OnyxStatus* wait(OnyxCommunicator* c, OnyxCollectiveRequest* r, uint32_t timeout_ms, bool* done) {
  *done = false;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    cudaError_t rc = cudaEventQuery(r->done);
    if (rc == cudaSuccess || rc != cudaErrorNotReady) {
      *done = true;
      free_staging(r);
      return rc == cudaSuccess ? nullptr : cuda_error(c->host, "the collective's stream", rc);
    }
    ncclResult_t state = ncclSuccess;
    ncclCommGetAsyncError(c->comm, &state);
    if (state != ncclSuccess && state != ncclInProgress) return nccl_error(c->host, "the communicator", state, c->comm);
    if (Clock::now() >= deadline) return nullptr;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

void abort_job(OnyxCommunicator* c, const char* reason) {
  std::string line = std::string("nccl: rank ") + std::to_string(c ? c->rank : -1) + " ends the job: " +
                     (reason ? reason : "");
  if (c && c->host) c->host->log(ONYX_LOG_ERROR, line.c_str());
  // Frees this rank's NCCL resources and unblocks its kernels; the other
  // ranks' bounded waits then fail and end their processes the same way.
  if (c && c->comm) ncclCommAbort(c->comm);
  std::_Exit(1);
}

void destroy(OnyxCommunicator* c) {
  if (c->comm) {
    ncclCommFinalize(c->comm);
    settle(c->comm, Clock::now() + std::chrono::seconds(60));
    ncclCommDestroy(c->comm);
  }
  if (c->stream) cudaStreamDestroy(c->stream);
  delete c;
}

// NCCL has no side channel to ask the other ranks where they are.
OnyxStatus* peer_states(OnyxCommunicator* c, const OnyxCollectiveRequest*, uint32_t, int32_t*) {
  return error(c->host, ONYX_STATUS_UNIMPLEMENTED, "cannot tell which rank is missing");
}

const OnyxCollectivesApi kApi = {
    sizeof(OnyxCollectivesApi), rank_of, size_of, all_reduce, reduce_scatter, all_gather, broadcast, barrier,
    wait, abort_job, destroy, peer_states,
};

// Rank 0 creates the id and publishes it by an atomic rename; others poll.
OnyxStatus* exchange_id(const OnyxHostApi* host, int rank, const std::string& path, ncclUniqueId* id) {
  if (rank == 0) {
    ncclResult_t nr = ncclGetUniqueId(id);
    if (nr != ncclSuccess) return nccl_error(host, "ncclGetUniqueId", nr, nullptr);
    std::string tmp = path + ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(id), sizeof *id);
      if (!out) return error(host, ONYX_STATUS_UNAVAILABLE, "cannot write the NCCL id file " + tmp);
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
      return error(host, ONYX_STATUS_UNAVAILABLE, "cannot rename " + tmp + " to " + path);
    return nullptr;
  }
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  for (;;) {
    std::ifstream in(path, std::ios::binary);
    if (in.read(reinterpret_cast<char*>(id), sizeof *id)) return nullptr;
    if (Clock::now() >= deadline)
      return error(host, ONYX_STATUS_UNAVAILABLE, "rank 0 did not publish the NCCL id in " + path + " within 60 s");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

OnyxStatus* create(const OnyxCollectivesCreateArgs* args, OnyxCommunicator** out, const OnyxCollectivesApi** api) {
  if (!args || !args->host || !out || !api) return nullptr;
  *out = nullptr;
  *api = nullptr;
  const OnyxHostApi* host = args->host;
  int devices = 0;
  cudaError_t rc = cudaGetDeviceCount(&devices);
  if (rc != cudaSuccess)
    return error(host, ONYX_STATUS_UNAVAILABLE, std::string("no CUDA device: ") + cudaGetErrorString(rc));
  if (devices == 0) return error(host, ONYX_STATUS_UNAVAILABLE, "no CUDA device");

  auto* c = new (std::nothrow) OnyxCommunicator;
  if (!c) return error(host, ONYX_STATUS_OUT_OF_MEMORY, "no memory for a communicator");
  c->host = host;
  c->rank = env_int("OMPI_COMM_WORLD_RANK", "RANK", 0);
  c->size = env_int("OMPI_COMM_WORLD_SIZE", "WORLD_SIZE", 1);
  c->device = env_int("OMPI_COMM_WORLD_LOCAL_RANK", "LOCAL_RANK", 0) % devices;
  if (c->size < 1 || c->rank < 0 || c->rank >= c->size) {
    delete c;
    return error(host, ONYX_STATUS_INVALID_ARGUMENT, "the launcher's rank and size are inconsistent");
  }
  std::string id_file;
  for (size_t k = 0; k < args->option_count; ++k)
    if (args->options[k].key && !std::strcmp(args->options[k].key, "id_file") && args->options[k].value)
      id_file = args->options[k].value;
  if (id_file.empty() && std::getenv("ONYX_NCCL_ID_FILE")) id_file = std::getenv("ONYX_NCCL_ID_FILE");

  ncclUniqueId id;
  OnyxStatus* st = nullptr;
  if (c->size == 1) {
    ncclResult_t nr = ncclGetUniqueId(&id);
    if (nr != ncclSuccess) st = nccl_error(host, "ncclGetUniqueId", nr, nullptr);
  } else if (id_file.empty()) {
    st = error(host, ONYX_STATUS_FAILED_PRECONDITION,
               "more than one rank needs a shared id file (option id_file or ONYX_NCCL_ID_FILE)");
  } else {
    st = exchange_id(host, c->rank, id_file, &id);
  }
  if (!st && (rc = cudaSetDevice(c->device)) != cudaSuccess) st = cuda_error(host, "cudaSetDevice", rc);
  if (!st && (rc = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking)) != cudaSuccess)
    st = cuda_error(host, "cudaStreamCreate", rc);
  if (!st) {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t nr = ncclCommInitRankConfig(&c->comm, c->size, id, c->rank, &config);
    if (nr == ncclInProgress) nr = settle(c->comm, Clock::now() + std::chrono::seconds(60));
    if (nr == ncclInProgress) st = error(host, ONYX_STATUS_UNAVAILABLE, "ncclCommInitRank did not finish in 60 s");
    else if (nr != ncclSuccess) st = nccl_error(host, "ncclCommInitRankConfig", nr, c->comm);
  }
  if (st) {
    if (c->comm) ncclCommAbort(c->comm);
    c->comm = nullptr;
    destroy(c);
    return st;
  }
  *out = c;
  *api = &kApi;
  return nullptr;
}

char g_version[64];

const char* version_string() {
  int v = 0;
  ncclGetVersion(&v);
  std::snprintf(g_version, sizeof g_version, "0.1.0 (NCCL %d.%d.%d)", v / 10000, (v / 100) % 100, v % 100);
  return g_version;
}

}  // namespace

extern "C" ONYX_PLUGIN_EXPORT const OnyxCollectivesEntry* OnyxGetCollectivesEntry(void) {
  static const OnyxCollectivesEntry entry = {
      ONYX_COLLECTIVES_MAGIC, sizeof(OnyxCollectivesEntry), ONYX_ABI_VERSION(1, 0),
      ONYX_ABI_VERSION(ONYX_COLLECTIVES_ABI_VERSION_MAJOR, ONYX_COLLECTIVES_ABI_VERSION_MINOR),
      "nccl", version_string(), create,
  };
  return &entry;
}
