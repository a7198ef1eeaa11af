// The `loopback` collectives plugin: a job of one rank, whatever launched
// it. Every collective completes when it starts (a copy where send and
// receive differ), so training code runs its distributed path in a single
// process: tests of the core's collective logic need no launcher.
#include <onyx_collectives.h>

#include <cstring>
#include <new>
#include <string>

struct OnyxCommunicator {
  const OnyxHostApi* host = nullptr;
};

namespace {

// Every request is complete when returned; this one object stands for all.
char g_done_request;
OnyxCollectiveRequest* done_request() { return reinterpret_cast<OnyxCollectiveRequest*>(&g_done_request); }

OnyxStatus* check(OnyxCommunicator* c, const char* what, int32_t dtype, bool reduce, int32_t op,
                  OnyxCollectiveRequest** request) {
  *request = nullptr;
  bool reducible = dtype == ONYX_DTYPE_FLOAT32 || dtype == ONYX_DTYPE_FLOAT64 || dtype == ONYX_DTYPE_INT32 ||
                   dtype == ONYX_DTYPE_INT64 || dtype == ONYX_DTYPE_UINT8 || dtype == ONYX_DTYPE_INT8 ||
                   dtype == ONYX_DTYPE_UINT32 || dtype == ONYX_DTYPE_UINT64;
  if (onyx_dtype_size(dtype) == 0 || (reduce && !reducible)) {
    const char* name = onyx_dtype_name(dtype);
    std::string m = std::string("loopback: ") + what + " of " + (name ? name : "an unknown dtype") +
                    " is not supported";
    return c->host->status_create(ONYX_STATUS_UNIMPLEMENTED, m.c_str());
  }
  if (reduce && (op < ONYX_REDUCE_SUM || op > ONYX_REDUCE_MIN))
    return c->host->status_create(ONYX_STATUS_INVALID_ARGUMENT, "loopback: unknown reduction");
  return nullptr;
}

// With one rank every collective is a copy of count elements (or nothing).
OnyxStatus* copy(OnyxCommunicator* c, const char* what, const void* send, void* recv, size_t count, int32_t dtype,
                 bool reduce, int32_t op, OnyxCollectiveRequest** request) {
  if (OnyxStatus* st = check(c, what, dtype, reduce, op, request)) return st;
  if (send != recv && count) std::memmove(recv, send, count * onyx_dtype_size(dtype));
  *request = done_request();
  return nullptr;
}

int32_t rank_of(const OnyxCommunicator*) { return 0; }
int32_t size_of(const OnyxCommunicator*) { return 1; }

OnyxStatus* all_reduce(OnyxCommunicator* c, const void* send, void* recv, size_t count, int32_t dtype, int32_t op,
                       OnyxCollectiveRequest** request) {
  return copy(c, "all_reduce", send, recv, count, dtype, true, op, request);
}
OnyxStatus* reduce_scatter(OnyxCommunicator* c, const void* send, void* recv, size_t count, int32_t dtype,
                           int32_t op, OnyxCollectiveRequest** request) {
  return copy(c, "reduce_scatter", send, recv, count, dtype, true, op, request);
}
OnyxStatus* all_gather(OnyxCommunicator* c, const void* send, void* recv, size_t count, int32_t dtype,
                       OnyxCollectiveRequest** request) {
  return copy(c, "all_gather", send, recv, count, dtype, false, 0, request);
}
OnyxStatus* broadcast(OnyxCommunicator* c, void* buffer, size_t count, int32_t dtype, int32_t root,
                      OnyxCollectiveRequest** request) {
  if (root != 0) {
    *request = nullptr;
    return c->host->status_create(ONYX_STATUS_INVALID_ARGUMENT, "loopback: broadcast root must be rank 0");
  }
  return copy(c, "broadcast", buffer, buffer, count, dtype, false, 0, request);
}
OnyxStatus* barrier(OnyxCommunicator*, OnyxCollectiveRequest** request) {
  *request = done_request();
  return nullptr;
}
OnyxStatus* wait(OnyxCommunicator*, OnyxCollectiveRequest*, uint32_t, bool* done) {
  *done = true;
  return nullptr;
}
void abort_job(OnyxCommunicator* c, const char* reason) {
  std::string line = std::string("loopback: the job ends: ") + (reason ? reason : "");
  if (c && c->host) c->host->log(ONYX_LOG_ERROR, line.c_str());
  std::_Exit(1);
}
void destroy(OnyxCommunicator* c) { delete c; }
// One rank, and it has started every collective it asks about.
OnyxStatus* peer_states(OnyxCommunicator*, const OnyxCollectiveRequest*, uint32_t, int32_t* states) {
  states[0] = ONYX_PEER_ARRIVED;
  return nullptr;
}

const OnyxCollectivesApi kApi = {
    sizeof(OnyxCollectivesApi), rank_of, size_of, all_reduce, reduce_scatter, all_gather, broadcast, barrier,
    wait, abort_job, destroy, peer_states,
};

OnyxStatus* create(const OnyxCollectivesCreateArgs* args, OnyxCommunicator** out, const OnyxCollectivesApi** api) {
  if (!args || !args->host || !out || !api) return nullptr;
  *out = new (std::nothrow) OnyxCommunicator{args->host};
  *api = *out ? &kApi : nullptr;
  return *out ? nullptr : args->host->status_create(ONYX_STATUS_OUT_OF_MEMORY, "loopback: no memory");
}

const OnyxCollectivesEntry kEntry = {
    ONYX_COLLECTIVES_MAGIC, sizeof(OnyxCollectivesEntry), ONYX_ABI_VERSION(1, 0),
    ONYX_ABI_VERSION(ONYX_COLLECTIVES_ABI_VERSION_MAJOR, ONYX_COLLECTIVES_ABI_VERSION_MINOR),
    "loopback", "0.1.0", create,
};

}  // namespace

extern "C" ONYX_PLUGIN_EXPORT const OnyxCollectivesEntry* OnyxGetCollectivesEntry(void) { return &kEntry; }
