/*
 * onyx_collectives.h: the collective-communication plugin C ABI, version 1.1
 * (1.1 adds `peer_states` and lets `wait` report a collective that can never
 * complete; provider_api/CHANGELOG.md).
 *
 * A collectives plugin is a shared library (libonyx_collectives_<name>.so)
 * that connects the processes of one training job ("ranks") through a
 * communication library (Open MPI, NCCL, ...). The core never names such a
 * library: it loads the plugin the application names and calls it through
 * this table, as it does providers.
 *
 * Rules, the same as onyx_provider.h's (which this header includes for
 * OnyxStatus, OnyxHostApi, OnyxKeyValue and OnyxDataType):
 *  - One exported symbol, OnyxGetCollectivesEntry, returning a static entry
 *    whose first six fields (magic ONYX_COLLECTIVES_MAGIC, struct_size,
 *    min/max ABI version, name, version) are frozen across major versions;
 *    the host negotiates the newest version both ranges contain and refuses
 *    a plugin whose range does not overlap its own, naming both.
 *  - Every other struct starts with `size_t struct_size`, grows only at the
 *    end, and ONYX_COLLECTIVES_*_SIZE_1_0 give the 1.0 sizes.
 *  - Statuses are created with the host's status_create (args->host); NULL
 *    is success; no C++ exception crosses the ABI.
 *
 * Every collective is non-blocking: it starts the operation and returns a
 * request, which the host completes with `wait`, always with a timeout
 * (0 polls). A blocking collective is a start followed by a wait; the host
 * never waits without a deadline, so a dead or stuck rank surfaces as an
 * error naming the collective, never as a hang.
 *
 * Buffers are host memory in 1.0 (a device-memory plugin such as NCCL says
 * so in a later minor version). The caller keeps a request's buffers alive
 * and unchanged (send) or untouched (receive) until the request completes.
 *
 * Collective calls are matched across ranks by order: every rank of a
 * communicator must start the same collectives, with the same counts, dtype
 * and operation, in the same order. A plugin need not detect a mismatch.
 *
 * Standalone C99 with onyx_provider.h.
 */
#ifndef ONYX_COLLECTIVES_H_
#define ONYX_COLLECTIVES_H_

#include "onyx_provider.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ONYX_COLLECTIVES_ABI_VERSION_MAJOR 1
#define ONYX_COLLECTIVES_ABI_VERSION_MINOR 1
/* "OCOL" read as a little-endian uint32. */
#define ONYX_COLLECTIVES_MAGIC 0x4C4F434Fu

typedef struct OnyxCommunicator OnyxCommunicator;   /* plugin-owned: one rank's view of the job */
typedef struct OnyxCollectiveRequest OnyxCollectiveRequest; /* plugin-owned: one started collective */

/* Where a rank stands with a collective another rank is waiting for
 * (OnyxCollectivesApi.peer_states, 1.1). A host reads a value it does not
 * know as ONYX_PEER_SILENT. */
typedef enum OnyxPeerState {
  ONYX_PEER_ARRIVED = 0,  /* has started this collective (the asking rank always has) */
  ONYX_PEER_LATE = 1,     /* answered, so alive and inside a collective, but has not started this one */
  ONYX_PEER_SILENT = 2,   /* did not answer in time: dead, stopped, hung or busy outside collectives */
  ONYX_PEER_STOPPED = 3,  /* its process exists but is stopped (SIGSTOP, a debugger); same host only */
  ONYX_PEER_EXITED = 4    /* its process has ended; same host only */
} OnyxPeerState;

typedef enum OnyxReduceOp {
  ONYX_REDUCE_SUM = 0,
  ONYX_REDUCE_MAX = 1,
  ONYX_REDUCE_MIN = 2
} OnyxReduceOp;

/* Given to `create`; read during the call only, except `host`, which stays
 * valid until `destroy` returns. */
typedef struct OnyxCollectivesCreateArgs {
  size_t struct_size;
  uint32_t abi_version;          /* negotiated: inside both ranges */
  const OnyxHostApi* host;       /* status_create/_release/_code/_message and log only */
  const char* plugin_path;       /* absolute path of the loaded library */
  const OnyxKeyValue* options;   /* key=value options; unknown keys are ignored */
  size_t option_count;
  const OnyxExtension* extensions; /* always NULL from a 1.0 host */
} OnyxCollectivesCreateArgs;
#define ONYX_COLLECTIVES_CREATE_ARGS_SIZE_1_0 ONYX_STRUCT_SIZE(OnyxCollectivesCreateArgs, extensions)

/* The plugin's functions. `comm` is always a communicator this table's
 * `create` returned and `destroy` has not destroyed. Thread-safety: a
 * communicator is used by one thread at a time (the host serializes its
 * calls); distinct communicators may be used from different threads. */
typedef struct OnyxCollectivesApi {
  size_t struct_size;

  /* This process's rank in [0, size) and the number of ranks. Constant for
   * the communicator's life. */
  int32_t (*rank)(const OnyxCommunicator* comm);
  int32_t (*size)(const OnyxCommunicator* comm);

  /* Start a collective over `count` elements of `dtype` (OnyxDataType);
   * *request receives the started operation (owned by the plugin, released
   * when `wait` reports it done). On an error status nothing was started and *request is NULL.
   * Reductions support at least FLOAT32, FLOAT64, INT32 and INT64, and may
   * refuse other types with UNIMPLEMENTED; all_gather and broadcast move
   * any fixed-size type. send and recv may be the same pointer only where
   * noted ("in place"). */

  /* recv[i] = op over ranks of send[i], i < count, on every rank. In place
   * allowed (send == recv). */
  OnyxStatus* (*all_reduce)(OnyxCommunicator* comm, const void* send, void* recv, size_t count,
                            int32_t dtype, int32_t op, OnyxCollectiveRequest** request);
  /* send holds size*count elements; rank r receives in recv[0..count) the
   * reduction over ranks of send[r*count .. (r+1)*count). Not in place. */
  OnyxStatus* (*reduce_scatter)(OnyxCommunicator* comm, const void* send, void* recv, size_t count,
                                int32_t dtype, int32_t op, OnyxCollectiveRequest** request);
  /* recv holds size*count elements; rank r's send[0..count) lands at
   * recv[r*count ..) on every rank. Not in place. */
  OnyxStatus* (*all_gather)(OnyxCommunicator* comm, const void* send, void* recv, size_t count,
                            int32_t dtype, OnyxCollectiveRequest** request);
  /* buffer[0..count) of rank `root` is copied into every rank's buffer. */
  OnyxStatus* (*broadcast)(OnyxCommunicator* comm, void* buffer, size_t count, int32_t dtype, int32_t root,
                           OnyxCollectiveRequest** request);
  /* Completes when every rank has started its barrier. */
  OnyxStatus* (*barrier)(OnyxCommunicator* comm, OnyxCollectiveRequest** request);

  /* Waits up to `timeout_ms` (0: only polls) for a request. Completed:
   * *done = true, the request is released, and the returned status is the
   * operation's result. Not completed in time: *done = false, NULL status,
   * and the request stays pending (wait again, or abort).
   * From 1.1 (negotiated): *done = false with a non-NULL status (UNAVAILABLE,
   * saying why) means the collective can never complete, e.g. the process
   * is being terminated by its launcher because a rank died; the request
   * stays pending and the host should end the job with `abort`, after
   * `peer_states` if it wants to say who is missing. A 1.0 host never sees
   * that form. */
  OnyxStatus* (*wait)(OnyxCommunicator* comm, OnyxCollectiveRequest* request, uint32_t timeout_ms, bool* done);

  /* Ends the whole job: every rank's process terminates with a non-zero
   * exit status (MPI_Abort, ncclCommAbort and exit). `reason` is logged
   * first. Called when the host gives up on a collective (a rank is gone)
   * so that no rank is left waiting. Does not return. Callable from any
   * thread at any time. (1.1: when the launcher is already terminating the
   * job, a plugin may end this process only, as the launcher asked.) */
  void (*abort)(OnyxCommunicator* comm, const char* reason);

  /* Destroys the communicator after its pending requests completed (the
   * host waits for them first). May be collective (every rank destroys its
   * communicator); the host calls it on every rank, or aborts. */
  void (*destroy)(OnyxCommunicator* comm);

  /* ---- 1.1 ---------------------------------------------------------------
   * A host reads the fields below only when the negotiated version is 1.1
   * or later and struct_size covers them. */

  /* OPTIONAL (NULL, or a status with code UNIMPLEMENTED, where the plugin
   * cannot tell). Says which ranks have not reached the collective of
   * `request`, a request this communicator started that `wait` has not yet
   * reported done; the host asks after such a wait failed, to name the
   * missing ranks in its error. Fills states[r] (OnyxPeerState) for every
   * rank r in [0, size): states is the caller's array of size() entries,
   * written during the call only; `request` stays pending and the
   * plugin's. Ranks answer such questions only while they are themselves
   * inside `wait` or `peer_states`, so a rank busy elsewhere for longer
   * than `timeout_ms` reads as ONYX_PEER_SILENT. Returns within
   * `timeout_ms` (sooner when every rank answered or the process is being
   * terminated); never blocks on another rank. On an error status `states`
   * is unspecified. Thread-safety: as the collectives (one thread per
   * communicator at a time). */
  OnyxStatus* (*peer_states)(OnyxCommunicator* comm, const OnyxCollectiveRequest* request, uint32_t timeout_ms,
                             int32_t* states);
} OnyxCollectivesApi;
#define ONYX_COLLECTIVES_API_SIZE_1_0 ONYX_STRUCT_SIZE(OnyxCollectivesApi, destroy)
#define ONYX_COLLECTIVES_API_SIZE_1_1 ONYX_STRUCT_SIZE(OnyxCollectivesApi, peer_states)

/* The static description a plugin exports (immutable, static storage). */
typedef struct OnyxCollectivesEntry {
  uint32_t magic;               /* ONYX_COLLECTIVES_MAGIC */
  uint32_t struct_size;         /* sizeof(OnyxCollectivesEntry) as the plugin was built */
  uint32_t min_abi_version;     /* oldest ONYX_ABI_VERSION(1, x) of this header the plugin speaks */
  uint32_t max_abi_version;     /* newest */
  const char* name;             /* "mpi": lowercase, matches the file name */
  const char* version;          /* the plugin's own version */
  /* Joins the job the launcher started (mpirun's environment for MPI) and
   * returns this rank's communicator and the plugin's function table (static
   * storage, valid while the library is loaded). UNAVAILABLE with the
   * reason when the library, driver or device is absent (NCCL without a
   * GPU); then *comm and *api are NULL. Call once per process per plugin:
   * a second communicator of the same plugin may be refused with
   * FAILED_PRECONDITION. */
  OnyxStatus* (*create)(const OnyxCollectivesCreateArgs* args, OnyxCommunicator** comm,
                        const OnyxCollectivesApi** api);
} OnyxCollectivesEntry;
#define ONYX_COLLECTIVES_ENTRY_SIZE_1_0 ONYX_STRUCT_SIZE(OnyxCollectivesEntry, create)

/* The one exported symbol. Returns static data (never NULL). Thread-safe. */
typedef const OnyxCollectivesEntry* (*OnyxGetCollectivesEntryFn)(void);
#define ONYX_COLLECTIVES_ENTRY_SYMBOL "OnyxGetCollectivesEntry"

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ONYX_COLLECTIVES_H_ */
