// The `mpi` collectives plugin: onyx_collectives.h over MPI-3's
// non-blocking collectives (Open MPI from Debian). It joins the job mpirun
// started (or runs as a one-rank singleton without mpirun), duplicates
// MPI_COMM_WORLD and makes MPI errors return codes, so that they become
// statuses instead of killing the process.
//
// Open MPI progresses a non-blocking collective only inside MPI calls:
// `wait` polls MPI_Test until the deadline, sleeping briefly between polls
// so that a long wait does not spin a core the other ranks need.
#include <mpi.h>
#include <onyx_collectives.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <thread>

struct OnyxCommunicator {
  const OnyxHostApi* host = nullptr;
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1;
  bool finalize = false;  // this plugin initialized MPI, so it finalizes it
};

struct OnyxCollectiveRequest {
  MPI_Request request = MPI_REQUEST_NULL;
};

namespace {

bool g_created = false;  // one communicator per process (create's contract)

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
  *out = new (std::nothrow) OnyxCollectiveRequest{req};
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
  MPI_Request req;
  int rc = MPI_Ibarrier(c->comm, &req);
  return started(c, "MPI_Ibarrier", rc, req, request);
}

OnyxStatus* wait(OnyxCommunicator* c, OnyxCollectiveRequest* r, uint32_t timeout_ms, bool* done) {
  *done = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  auto pause = std::chrono::microseconds(20);
  for (;;) {
    int flag = 0;
    int rc = MPI_Test(&r->request, &flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS || flag) {
      *done = true;
      delete r;
      return rc == MPI_SUCCESS ? nullptr : mpi_error(c->host, "MPI_Test", rc);
    }
    if (std::chrono::steady_clock::now() >= deadline) return nullptr;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
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
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);  // MPI_Abort should not return
}

void destroy(OnyxCommunicator* c) {
  if (c->comm != MPI_COMM_NULL) MPI_Comm_free(&c->comm);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (c->finalize && !finalized) MPI_Finalize();
  delete c;
  g_created = false;
}

const OnyxCollectivesApi kApi = {
    sizeof(OnyxCollectivesApi), rank_of, size_of, all_reduce, reduce_scatter, all_gather, broadcast, barrier,
    wait, abort_job, destroy,
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
  if (rc != MPI_SUCCESS) {
    OnyxStatus* st = mpi_error(host, "joining MPI_COMM_WORLD", rc);
    destroy(c);
    return st;
  }
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
