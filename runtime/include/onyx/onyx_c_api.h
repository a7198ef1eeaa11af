/*
 * onyx_c_api.h: the Onyx application API (C).
 *
 * Objects: OnyxEnv (provider search and loaded plugins) -> OnyxSessionOptions
 * (ordered providers, fallback policy, threads) -> OnyxSession (a model placed
 * on devices) -> onyx_session_run with OnyxTensor inputs and outputs.
 *
 * Conventions, for every function below:
 *  - Functions returning OnyxStatus* return NULL on success. A non-NULL status
 *    belongs to the caller: read it with onyx_status_code/onyx_status_message
 *    and free it with onyx_status_release.
 *  - `out` parameters are written only on success.
 *  - Objects created by onyx_*_create belong to the caller until their
 *    onyx_*_release. Release functions accept NULL.
 *  - Strings returned as `const char*` stay valid as long as the object they
 *    came from; strings returned as `char**` belong to the caller
 *    (onyx_string_release).
 *  - Thread-safety: an OnyxEnv and an OnyxSession may be used from several
 *    threads at once (concurrent runs are supported). OnyxSessionOptions and
 *    OnyxTensor are not synchronized: don't modify one from two threads.
 *    An OnyxValue never changes once made: it may be read from several
 *    threads at once.
 *  - No C++ exception crosses this API.
 */
#ifndef ONYX_C_API_H_
#define ONYX_C_API_H_

#include <onyx_provider.h> /* OnyxStatus, OnyxStatusCode, OnyxDataType */

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define ONYX_API __declspec(dllexport)
#else
#define ONYX_API __attribute__((visibility("default")))
#endif

typedef struct OnyxEnv OnyxEnv;
typedef struct OnyxSessionOptions OnyxSessionOptions;
typedef struct OnyxSession OnyxSession;
typedef struct OnyxTensor OnyxTensor;
typedef struct OnyxValue OnyxValue;
typedef struct OnyxIoBinding OnyxIoBinding;
typedef struct OnyxRunOptions OnyxRunOptions;

/* ---- status ------------------------------------------------------------ */

ONYX_API OnyxStatusCode onyx_status_code(const OnyxStatus* status);
/* Valid until the status is released. "" for NULL. */
ONYX_API const char* onyx_status_message(const OnyxStatus* status);
ONYX_API void onyx_status_release(OnyxStatus* status);
ONYX_API void onyx_string_release(char* string);

/* "0.1.0" */
ONYX_API const char* onyx_version(void);

/* ---- environment --------------------------------------------------------- */

/* Creates an environment. Providers are searched in folders added with
 * onyx_env_add_provider_dir, then ONYX_PROVIDER_PATH (':'-separated), then
 * the executable's folder, <exe>/../lib/onyx/providers and
 * <folder of libonyx>/onyx/providers (an installed tree, the Python package). */
ONYX_API OnyxStatus* onyx_env_create(OnyxEnv** out);
/* Release after every session created from it. */
ONYX_API void onyx_env_release(OnyxEnv* env);
ONYX_API OnyxStatus* onyx_env_add_provider_dir(OnyxEnv* env, const char* dir);

/* Lists the provider plugins found on disk (loading each) as JSON:
 * [{"name","path","version","abi","available","reason","devices":[...]}],
 * each device {"index","name","vendor","kind" ("cpu", "gpu", "accelerator"),
 * "stable_id" ("" when the plugin has none, or speaks ABI < 1.3),
 * "memory_bytes","free_memory_bytes" (0: unknown; free memory as of this
 * call)}. *json belongs to the caller (release with onyx_string_release).
 * Thread-safe. */
ONYX_API OnyxStatus* onyx_env_list_providers(OnyxEnv* env, char** json);

/* ---- logging --------------------------------------------------------------- */

/* One message: `level` is an OnyxLogLevel (onyx_provider.h: DEBUG, INFO,
 * WARNING, ERROR); `message` is one line without a trailing newline, valid
 * only during the call. */
typedef void (*OnyxLogCallback)(void* user, int32_t level, const char* message);

/* Sends this environment's messages to `callback`: the core's warnings for
 * every session created from `env` (a provider skipped as unavailable, a node
 * falling back to a later provider, a fused group run as single nodes), and
 * the lines provider plugins log (OnyxHostApi.log) while this env loads them
 * or they work for its sessions. Messages below `min_level` (an
 * OnyxLogLevel) are dropped, plugin lines included. A NULL callback drops
 * every message. Until the first call: "onyx [level] message" lines on
 * stderr for ONYX_LOG_INFO and above.
 * Errors: INVALID_ARGUMENT for a NULL env or a min_level that is not an
 * OnyxLogLevel.
 * Lifetime: `user` is not owned and must stay valid until the logger is
 * replaced or the env released. Once this function returns, the previous
 * callback is not running and is never called again.
 * Thread-safety: may be called at any time, also while sessions of the env
 * run. The callback may run on several threads at once (concurrent runs,
 * the intra-op pool), must not call onyx_env_set_logger, and must not throw
 * or longjmp. Lines a plugin logs from threads of its own carry no env and
 * go to stderr as by default. */
ONYX_API OnyxStatus* onyx_env_set_logger(OnyxEnv* env, OnyxLogCallback callback, void* user,
                                         int32_t min_level);

/* ---- session options ------------------------------------------------------ */

typedef enum OnyxFallbackPolicy {
  ONYX_FALLBACK_FAIL = 0,  /* a node the first provider declines fails session creation */
  ONYX_FALLBACK_WARN = 1,  /* falls back to the next provider and logs a warning (default) */
  ONYX_FALLBACK_ALLOW = 2  /* falls back silently (the partition report still says so) */
} OnyxFallbackPolicy;
/* Under WARN and ALLOW the CPU provider follows the listed providers when
 * none of them is the CPU provider (as in ONNX Runtime), so a node none of
 * them takes still runs; FAIL adds no provider. */

ONYX_API OnyxStatus* onyx_session_options_create(OnyxSessionOptions** out);
ONYX_API void onyx_session_options_release(OnyxSessionOptions* options);
/* Appends a provider (a name such as "cpu", or a path to a plugin file) in
 * priority order, with `count` key/value options for its device (copied).
 * With no provider appended, sessions use {"cpu"}.
 * The key "device" is the host's, never given to the plugin: which of the
 * provider's devices to open, by index ("1") or stable id ("PCI:0000:3b:00.0",
 * as onyx_env_list_providers shows); default device 0. A provider may be
 * appended once per device (two devices of one provider: append it twice with
 * different "device" values; the same device twice fails session creation).
 * A device other than device 0, or one of a provider appended twice, is
 * labelled "name:index" ("cuda:1") in the partition report, logs and
 * onyx_tensor_create_on_device; otherwise by the provider's name. An unknown
 * index or id fails session creation with INVALID_ARGUMENT listing the
 * provider's devices. Not thread-safe with other uses of the same options
 * object. */
ONYX_API OnyxStatus* onyx_session_options_append_provider(OnyxSessionOptions* options,
                                                          const char* name_or_path,
                                                          const char* const* keys,
                                                          const char* const* values, size_t count);
ONYX_API OnyxStatus* onyx_session_options_set_fallback(OnyxSessionOptions* options,
                                                       OnyxFallbackPolicy policy);
/* How a session chooses its devices when no provider was appended
 * (docs/architecture.md, "Device policies"). Only plugins found in the env's
 * search folders that load and are available are considered (the others are
 * listed, with the reason, in the partition report's "device_policy"); per
 * provider the device with the most free memory.
 *  NONE (default): the "cpu" provider.
 *  PREFER_GPU: every GPU provider's device, then every ACCELERATOR's, then
 *    "cpu" as the fallback, in that priority order.
 *  PREFER_CPU: the "cpu" provider alone.
 *  FASTEST: builds a session per candidate (each GPU or ACCELERATOR device
 *    with "cpu" behind it, and "cpu" alone), times runs on zero inputs of the
 *    model's declared shapes (symbolic dims set to 1; an input of unknown
 *    rank or not a numeric tensor fails with INVALID_ARGUMENT naming it),
 *    and keeps the one with the smallest median run time; the partition
 *    report lists each candidate's time and the log says which was chosen.
 * Session creation fails with INVALID_ARGUMENT when providers were also
 * appended. Not thread-safe with other uses of the same options object. */
typedef enum OnyxDevicePolicy {
  ONYX_DEVICE_POLICY_NONE = 0,
  ONYX_DEVICE_POLICY_PREFER_GPU = 1,
  ONYX_DEVICE_POLICY_PREFER_CPU = 2,
  ONYX_DEVICE_POLICY_FASTEST = 3
} OnyxDevicePolicy;
ONYX_API OnyxStatus* onyx_session_options_set_device_policy(OnyxSessionOptions* options,
                                                            OnyxDevicePolicy policy);
/* Threads for intra-op parallelism; 0 (default) = one per core. */
ONYX_API OnyxStatus* onyx_session_options_set_intra_op_threads(OnyxSessionOptions* options,
                                                               size_t threads);
/* Lets providers compute in reduced precision where they can (e.g. bf16
 * matrix products with float32 accumulation on CPUs with native bf16); off by
 * default. Every provider's device gets the option allow_reduced_precision=1
 * unless that provider was appended with its own value for the key.
 * Not thread-safe with other uses of the same options object. */
ONYX_API OnyxStatus* onyx_session_options_set_allow_reduced_precision(OnyxSessionOptions* options,
                                                                      bool allow);

typedef enum OnyxGraphOptimization {
  ONYX_GRAPH_OPTIMIZATION_OFF = 0,   /* the graph runs as written */
  ONYX_GRAPH_OPTIMIZATION_BASIC = 1, /* rewrites that hold for any input shape */
  ONYX_GRAPH_OPTIMIZATION_ALL = 2    /* basic, plus values folded from declared input shapes (default) */
} OnyxGraphOptimization;

/* Provider-neutral graph rewrites done before partitioning (docs/
 * architecture.md, "Graph optimization"): Constant nodes become initializers,
 * Identity / same-type Cast / inference Dropout are bypassed, inference
 * BatchNormalization is folded into the Conv before it, unread nodes are
 * removed; ALL also replaces nodes whose outputs follow from the declared
 * input shapes (Shape -> Gather -> Concat) by their values. Results may differ
 * from OFF by float rounding (BatchNormalization folding). The partition
 * report's "graph_optimization" says what was done. Default ALL. Not
 * thread-safe with other uses of the same options object. */
ONYX_API OnyxStatus* onyx_session_options_set_graph_optimization(OnyxSessionOptions* options,
                                                                 OnyxGraphOptimization level);

/* The most host memory one run of the session may place tensors in: its
 * arena of planned tensors, and each tensor a kernel sizes at run time. A run
 * that would need more fails with ONYX_STATUS_OUT_OF_MEMORY naming the value
 * or plan, before allocating it. 0 (the default): the machine's physical
 * memory; a larger limit is lowered to it. Bounds what one request can make a
 * server hold. Not thread-safe with other uses of the same options object. */
ONYX_API OnyxStatus* onyx_session_options_set_host_memory_limit(OnyxSessionOptions* options, size_t bytes);

/* Out-of-process mode, for providers not trusted to not crash or hang (off by
 * default). With `isolate` true, sessions created with these options also
 * start a worker process (the onyx-worker executable, found in
 * <folder of libonyx>/onyx/workers, <exe>/../lib/onyx/workers or the folders
 * of ONYX_WORKER_PATH) that loads the same model with the same options and
 * providers; onyx_session_run and onyx_session_run_values then run there, with
 * inputs and outputs copied over a socket (tensors of fixed-size element
 * types only). When a kernel crashes the worker, or a run takes longer than
 * `run_timeout_seconds` (> 0; 0: no limit) and the worker is killed, the run
 * fails with ONYX_STATUS_UNAVAILABLE and a message naming the provider and
 * node; the application goes on, and the next run starts a new worker.
 * onyx_session_cancel_runs kills the worker of a run in flight. Runs of one
 * isolated session are serialized. The worker creates its session first: a
 * provider that crashes, hangs or exits while loading, opening its device,
 * claiming nodes or creating kernels makes session creation fail with
 * ONYX_STATUS_UNAVAILABLE naming it and the phase, before this process loads
 * it; then the session is also created in this process (metadata, partition
 * and memory reports). Profiling (onyx_session_start_profiling) sees only
 * runs in this process, i.e. none of the isolated ones. With a timeout of 0 a hung
 * kernel (or a worker that never finishes loading) waits until
 * onyx_session_cancel_runs. A negative or NaN timeout is INVALID_ARGUMENT.
 * Ownership: nothing is retained but the two values. Not thread-safe with
 * other uses of the same options object. */
ONYX_API OnyxStatus* onyx_session_options_set_isolation(OnyxSessionOptions* options, bool isolate,
                                                        double run_timeout_seconds);

/* The compiled-partition cache (docs/architecture.md, "Compiled-partition
 * cache"): with a folder set, sessions created with these options store what a
 * provider compiled for each kernel (node or fused group) in that folder, one
 * file per kernel, when the provider can serialize it (provider ABI 1.2), and
 * later sessions load it instead of compiling again. An entry is used only for
 * the same plugin name and version, device properties and options, the
 * provider's compatibility string and the same group (ops, attributes, types,
 * shapes and constant bytes); a stale, incompatible or corrupt entry is logged
 * (a warning naming the file and why), recompiled and replaced. The folder is
 * created when first written; one that cannot be created or written is a
 * warning, not an error. The partition report's "compiled_cache" says per
 * kernel whether it was a "hit", "stored", "rebuilt", "not stored" or "not
 * cached". `folder` (copied) NULL or "" turns the cache off (the default).
 * Several processes may share a folder. Not thread-safe with other uses of the
 * same options object. */
ONYX_API OnyxStatus* onyx_session_options_set_compiled_cache(OnyxSessionOptions* options, const char* folder);

/* ---- sessions -------------------------------------------------------------- */

/* Loads a model file (external data resolved in its folder) and prepares it.
 * `options` may be NULL; it is not retained. */
ONYX_API OnyxStatus* onyx_session_create(OnyxEnv* env, const char* model_path,
                                         const OnyxSessionOptions* options, OnyxSession** out);
/* Same from a serialized model in memory (copied; external data refused). */
ONYX_API OnyxStatus* onyx_session_create_from_buffer(OnyxEnv* env, const void* data, size_t size,
                                                     const OnyxSessionOptions* options,
                                                     OnyxSession** out);
ONYX_API void onyx_session_release(OnyxSession* session);

/* What the model declares for an input or output. dims has `rank` entries,
 * -1 for a symbolic or unknown dim; rank is -1 when unknown. Pointers are
 * valid while the session lives. */
typedef struct OnyxValueMetadata {
  size_t struct_size;
  const char* name;
  int32_t dtype; /* OnyxDataType; UNDEFINED for a sequence or optional */
  int32_t rank;
  const int64_t* dims;
  /* Since 2026-11-26 (read when struct_size covers it): what the value is,
   * an OnyxValueKind. Sequences and optionals are run with
   * onyx_session_run_values. */
  int32_t kind;
} OnyxValueMetadata;

ONYX_API size_t onyx_session_input_count(const OnyxSession* session);
ONYX_API size_t onyx_session_output_count(const OnyxSession* session);
/* `out->struct_size` must be set by the caller. */
ONYX_API OnyxStatus* onyx_session_input_metadata(const OnyxSession* session, size_t index,
                                                 OnyxValueMetadata* out);
ONYX_API OnyxStatus* onyx_session_output_metadata(const OnyxSession* session, size_t index,
                                                  OnyxValueMetadata* out);

/* Runs the model. Inputs are matched by name (host tensors, or device
 * tensors of this session: see onyx_tensor_create_on_device); outputs[k]
 * receives a new host tensor for output_names[k] (the caller releases it). With output_names NULL,
 * output_count must equal onyx_session_output_count and outputs come in
 * model order. Thread-safe: concurrent runs on one session are allowed. */
ONYX_API OnyxStatus* onyx_session_run(OnyxSession* session, const char* const* input_names,
                                      const OnyxTensor* const* inputs, size_t input_count,
                                      const char* const* output_names, size_t output_count,
                                      OnyxTensor** outputs);

/* As onyx_session_run, with OnyxValue inputs and outputs: for models whose
 * inputs or outputs are sequences or optionals (tensors work too). outputs[k]
 * receives a new value (the caller releases it). A model input declared
 * optional and not given is an empty optional. Thread-safe as
 * onyx_session_run. */
ONYX_API OnyxStatus* onyx_session_run_values(OnyxSession* session, const char* const* input_names,
                                             const OnyxValue* const* inputs, size_t input_count,
                                             const char* const* output_names, size_t output_count,
                                             OnyxValue** outputs);

/* Stops every run of `session` now in progress (and the control-flow
 * subgraphs they run) at its next step or loop iteration: each returns
 * ONYX_STATUS_FAILED_PRECONDITION saying "run cancelled" and where. Runs that
 * start later are not affected. The way to bound a valid but too long run (a
 * Loop of 3^25 iterations): call it from a watchdog thread. Thread-safe;
 * NULL is ignored. */
ONYX_API void onyx_session_cancel_runs(OnyxSession* session);

/* ---- run options ------------------------------------------------------------
 * What a caller chooses per run: a tag that starts each line logged during
 * the run ("[tag] message", also the plugins' lines and those of the run's
 * worker threads), and a cancel switch that stops only the runs made with
 * these options. One object may serve many runs, also concurrent ones. */

/* Creates options with no tag. They belong to the caller until
 * onyx_run_options_release, which must come after every run using them has
 * returned. */
ONYX_API OnyxStatus* onyx_run_options_create(OnyxRunOptions** out);
ONYX_API void onyx_run_options_release(OnyxRunOptions* options);
/* Sets the tag (copied; NULL or "" for none). Not thread-safe with runs
 * using these options. */
ONYX_API OnyxStatus* onyx_run_options_set_tag(OnyxRunOptions* options, const char* tag);
/* Stops every run using `options` now in progress at its next step or loop
 * iteration (an isolated session's worker is stopped at once): each returns
 * ONYX_STATUS_FAILED_PRECONDITION saying "run cancelled (its run options)".
 * Runs that start later are not affected. Thread-safe, e.g. from a watchdog;
 * NULL is ignored. */
ONYX_API void onyx_run_options_cancel(OnyxRunOptions* options);
/* onyx_session_run with `options` (NULL: as onyx_session_run). Thread-safe
 * as onyx_session_run. */
ONYX_API OnyxStatus* onyx_session_run_with_options(OnyxSession* session, const OnyxRunOptions* options,
                                                   const char* const* input_names,
                                                   const OnyxTensor* const* inputs, size_t input_count,
                                                   const char* const* output_names, size_t output_count,
                                                   OnyxTensor** outputs);
/* onyx_session_run_values with `options` (NULL: as onyx_session_run_values).
 * Thread-safe as onyx_session_run_values. */
ONYX_API OnyxStatus* onyx_session_run_values_with_options(OnyxSession* session, const OnyxRunOptions* options,
                                                          const char* const* input_names,
                                                          const OnyxValue* const* inputs, size_t input_count,
                                                          const char* const* output_names, size_t output_count,
                                                          OnyxValue** outputs);

/* Which node went to which provider and why, and the copies inserted, as JSON
 * (see docs/architecture.md, "Partition report"). *json belongs to the caller. */
ONYX_API OnyxStatus* onyx_session_partition_report(const OnyxSession* session, char** json);
/* The static memory plan for the given input shapes (NULL/0: declared shapes
 * with unknown dims set to 1) as JSON: per device planned arena bytes, lower
 * bound and tensor counts. */
ONYX_API OnyxStatus* onyx_session_memory_report(OnyxSession* session, const char* const* input_names,
                                                const int64_t* const* input_dims,
                                                const size_t* input_ranks, size_t input_count,
                                                char** json);

/* Profiling: from start to end, every run of the session records one timing
 * event per step (a kernel, which may be a fused group of nodes; a copy
 * between devices; a control-flow node) with its provider, ops and input
 * shapes, and one event per run. end stops and returns what was recorded as
 * a Chrome trace (Trace Event Format, "X" events, ts and dur in
 * microseconds), which chrome://tracing and Perfetto load; *json belongs to
 * the caller. start while profiling restarts with an empty trace; end when
 * not profiling is FAILED_PRECONDITION. Profiling costs two clock reads and
 * one locked append per step. Thread-safe, also while runs are in flight: a
 * run records into the trace that was current when it began. */
ONYX_API OnyxStatus* onyx_session_start_profiling(OnyxSession* session);
ONYX_API OnyxStatus* onyx_session_end_profiling(OnyxSession* session, char** json);

/* ---- tensors (host memory) ------------------------------------------------- */

/* A new zero-filled tensor. dims may be NULL when rank is 0 (a scalar). */
ONYX_API OnyxStatus* onyx_tensor_create(int32_t dtype, const int64_t* dims, size_t rank,
                                        OnyxTensor** out);
/* A tensor over caller memory (not copied): `data` must hold `bytes` bytes,
 * exactly the tensor's size, and outlive the tensor. */
ONYX_API OnyxStatus* onyx_tensor_create_borrowed(int32_t dtype, const int64_t* dims, size_t rank,
                                                 void* data, size_t bytes, OnyxTensor** out);
ONYX_API void onyx_tensor_release(OnyxTensor* tensor);
ONYX_API int32_t onyx_tensor_dtype(const OnyxTensor* tensor);
ONYX_API size_t onyx_tensor_rank(const OnyxTensor* tensor);
/* rank entries, valid while the tensor lives. */
ONYX_API const int64_t* onyx_tensor_dims(const OnyxTensor* tensor);
ONYX_API int64_t onyx_tensor_element_count(const OnyxTensor* tensor);
ONYX_API size_t onyx_tensor_byte_size(const OnyxTensor* tensor);
/* The tensor's bytes, row-major; valid while the tensor lives. STRING
 * tensors have no dense bytes (onyx_tensor_byte_size is 0): read their
 * elements with onyx_tensor_string. */
ONYX_API void* onyx_tensor_data(OnyxTensor* tensor);
/* A STRING tensor of `rank` dims with one string per element, copied:
 * strings[k] has lengths[k] bytes (lengths NULL: NUL-terminated strings).
 * Every string must be valid UTF-8 (ONNX strings are): otherwise
 * INVALID_ARGUMENT naming the element and byte. The tensor belongs to the
 * caller; it is never written by a run, so it may be read concurrently. */
ONYX_API OnyxStatus* onyx_tensor_create_strings(const char* const* strings, const size_t* lengths,
                                                const int64_t* dims, size_t rank, OnyxTensor** out);
/* Element `index` (row-major) of a STRING tensor: *data points to its bytes
 * (NUL-terminated, but the string may hold NULs: use *length), valid while
 * the tensor lives. INVALID_ARGUMENT for other types or an index out of
 * range. Thread-safe for concurrent readers. */
ONYX_API OnyxStatus* onyx_tensor_string(const OnyxTensor* tensor, int64_t index, const char** data,
                                        size_t* length);

/* ---- device-resident values and I/O binding ------------------------------
 *
 * A tensor may live in the memory of one of a session's devices, so that a
 * loop of runs keeps its inputs and outputs there and moves no bytes through
 * the host (docs/architecture.md, "Device-resident values"). Such a tensor is
 * an OnyxTensor like any other (released with onyx_tensor_release; dtype,
 * rank, dims and sizes read as usual), except that onyx_tensor_data returns
 * a device pointer the host must not dereference unless the device's memory
 * is host-readable, and that it cannot become an OnyxValue. A device tensor
 * keeps its device open: it may outlive its session (not its env), but runs
 * of other sessions do not accept it. */

/* A tensor of `dtype` and `dims` in the memory of `session`'s device of
 * provider `provider` (the device's label: the name it was appended with,
 * e.g. "cuda", or "cuda:1" as onyx_session_options_append_provider says); contents
 * unspecified until written (onyx_tensor_copy or a run). On a device whose
 * memory the host can read (the CPU), an ordinary host tensor.
 * INVALID_ARGUMENT when the session has no such device (the message lists
 * its devices) or for STRING. Ownership: *out belongs to the caller.
 * Thread-safe. */
ONYX_API OnyxStatus* onyx_tensor_create_on_device(OnyxSession* session, const char* provider, int32_t dtype,
                                                  const int64_t* dims, size_t rank, OnyxTensor** out);
/* The provider name of the device holding `tensor`, or NULL for host memory.
 * Valid while the tensor lives. Thread-safe. */
ONYX_API const char* onyx_tensor_device(const OnyxTensor* tensor);
/* Copies all of `src` into `dst` (equal dtype and shape): host to device,
 * device to host, within one device, or host to host; complete on return.
 * Between two different devices: UNIMPLEMENTED (copy through a host tensor).
 * Borrows both during the call. Not thread-safe with other uses of `dst`. */
ONYX_API OnyxStatus* onyx_tensor_copy(OnyxTensor* dst, const OnyxTensor* src);

/* An I/O binding: the inputs and outputs of runs of one session, given once
 * and kept across runs (the incumbent's IOBinding). Ownership: *out belongs
 * to the caller (onyx_io_binding_release) and must not outlive the session.
 * Thread-safety: a binding is not synchronized; one run at a time per
 * binding, and no bind_* while it runs. Distinct bindings of one session may
 * run concurrently. UNIMPLEMENTED for an isolated session. */
ONYX_API OnyxStatus* onyx_io_binding_create(OnyxSession* session, OnyxIoBinding** out);
ONYX_API void onyx_io_binding_release(OnyxIoBinding* binding);
/* Binds input `name` to `tensor` (host, or a device tensor of this session):
 * shared, not copied; the binding keeps the memory alive, and the caller
 * must not write it while a run reads it. Binding a name again replaces it.
 * A device tensor read only by nodes on its device is read there; otherwise
 * the run copies it through the host first. */
ONYX_API OnyxStatus* onyx_io_binding_bind_input(OnyxIoBinding* binding, const char* name, const OnyxTensor* tensor);
/* Binds output `name` to `tensor`, which each run fills in place (shared:
 * the binding keeps it alive). Its dtype and shape must be the output's,
 * else the run fails with INVALID_ARGUMENT naming both. An output computed
 * on the device that holds `tensor` is copied within that device. */
ONYX_API OnyxStatus* onyx_io_binding_bind_output(OnyxIoBinding* binding, const char* name, OnyxTensor* tensor);
/* Binds output `name` to a new tensor per run on the session's device of
 * `provider` (NULL: host memory), read with onyx_io_binding_output. */
ONYX_API OnyxStatus* onyx_io_binding_bind_output_to_device(OnyxIoBinding* binding, const char* name,
                                                           const char* provider);
/* Runs with the binding's inputs; computes only its bound outputs, in order.
 * On failure the outputs keep their previous results. Thread-safe as
 * onyx_session_run, within the binding's rule above. */
ONYX_API OnyxStatus* onyx_session_run_binding(OnyxSession* session, OnyxIoBinding* binding);
/* The last run's result for bound output `name` as a new OnyxTensor sharing
 * it (the bound tensor itself, or the one the run made); the caller releases
 * it. FAILED_PRECONDITION before the first run. */
ONYX_API OnyxStatus* onyx_io_binding_output(const OnyxIoBinding* binding, const char* name, OnyxTensor** out);

/* ---- values: tensors, sequences, optionals, maps (host memory) -------------- */

/* What an OnyxValue holds. Maps are ai.onnx.ml's map(K, V): int64 or string
 * keys, float32/float64/int64/string values; sequences may hold tensors or
 * maps (ZipMap's output). */
typedef enum OnyxValueKind {
  ONYX_VALUE_TENSOR = 0,
  ONYX_VALUE_SEQUENCE = 1,
  ONYX_VALUE_OPTIONAL = 2,
  ONYX_VALUE_MAP = 3
} OnyxValueKind;

/* Ownership: every OnyxValue** out receives a new value that belongs to the
 * caller (onyx_value_release). Values given to these functions are not
 * retained: what they hold is shared, so they may be released right after.
 * Values are immutable, and thread-safe to read concurrently. */

/* A value holding `tensor`. The value shares the tensor's memory: don't
 * write to the tensor while the value (or a run reading it) lives. */
ONYX_API OnyxStatus* onyx_value_create_tensor(const OnyxTensor* tensor, OnyxValue** out);
/* A map from two 1-D tensors of equal length: `keys` (int64 or STRING, each
 * at most once) and `values` (float32, float64, int64 or STRING), shared as
 * onyx_value_create_tensor shares. A repeated key or a wrong type is an
 * INVALID_ARGUMENT naming it. */
ONYX_API OnyxStatus* onyx_value_create_map(const OnyxTensor* keys, const OnyxTensor* values, OnyxValue** out);
/* A map's keys and values as new OnyxTensors sharing its memory (both the
 * caller's to release; read them, don't write). INVALID_ARGUMENT for other
 * kinds. */
ONYX_API OnyxStatus* onyx_value_map_columns(const OnyxValue* value, OnyxTensor** keys, OnyxTensor** values);
/* A sequence of `count` tensor values (items may be NULL only when count is
 * 0). `elem_dtype` is the tensors' element type: every item must have it
 * (ONYX_DTYPE_UNDEFINED: take item 0's); a mismatch is an
 * INVALID_ARGUMENT naming the item. */
ONYX_API OnyxStatus* onyx_value_create_sequence(int32_t elem_dtype, const OnyxValue* const* items, size_t count,
                                                OnyxValue** out);
/* An optional holding `element` (a tensor or sequence value), or an empty
 * optional when `element` is NULL. */
ONYX_API OnyxStatus* onyx_value_create_optional(const OnyxValue* element, OnyxValue** out);
ONYX_API void onyx_value_release(OnyxValue* value);
/* The value's OnyxValueKind (ONYX_VALUE_TENSOR for NULL). */
ONYX_API int32_t onyx_value_kind(const OnyxValue* value);
/* Sequence: the element type of its tensors; optional: its element's
 * (UNDEFINED when not known); map: its values'; tensor: the tensor's. */
ONYX_API int32_t onyx_value_elem_dtype(const OnyxValue* value);
/* Sequence: its item count; optional: 1 when it holds a value, else 0;
 * map: its entries; tensor: 0. */
ONYX_API size_t onyx_value_count(const OnyxValue* value);
/* Item `index` of a sequence, or an optional's element (index 0), as a new
 * value. INVALID_ARGUMENT when out of range, and for a map
 * (onyx_value_map_columns reads it). */
ONYX_API OnyxStatus* onyx_value_item(const OnyxValue* value, size_t index, OnyxValue** out);
/* The tensor of a tensor value, as a new OnyxTensor sharing its memory
 * (read it; don't write to it). INVALID_ARGUMENT for other kinds. */
ONYX_API OnyxStatus* onyx_value_tensor(const OnyxValue* value, OnyxTensor** out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ONYX_C_API_H_ */
