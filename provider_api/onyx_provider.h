/*
 * onyx_provider.h: the Onyx provider plugin ABI, version 1.
 *
 * A provider plugin is a shared library that exports exactly one symbol,
 * ONYX_PLUGIN_ENTRY_SYMBOL ("OnyxGetPluginEntry"), a function returning a pointer
 * to a static OnyxPluginEntry. Everything else is reached through the function
 * tables exchanged during the handshake:
 *
 *   host                                   plugin
 *   ----                                   ------
 *   dlopen, OnyxGetPluginEntry() ------->  returns OnyxPluginEntry (static)
 *   negotiate [min,max] ranges
 *   entry->create(&args)       ---------->  reads args->host (OnyxHostApi),
 *                              <----------  returns OnyxPlugin* and OnyxProviderApi*
 *   api->device_open(...)      ---------->  OnyxDevice*
 *   api->get_capability(...)   ---------->  claims nodes of a graph view
 *   api->kernel_create(...)    ---------->  OnyxKernel*
 *   api->kernel_compute(kernel, ctx) ---->  reads inputs, asks the host for
 *                              <----------  outputs through OnyxHostApi
 *
 * Rules that make this ABI stable (read docs/architecture.md, "The ABI"):
 *  - Only stdint.h, stddef.h, stdbool.h and onyx_dtype.h are included. C99.
 *  - Entry structs (OnyxPluginEntry here, OnyxOptimizerEntry in
 *    onyx_optimizer.h) start with the same six fields: `uint32_t magic`
 *    naming the kind of plugin, `uint32_t struct_size`, `uint32_t
 *    min_abi_version`, `uint32_t max_abi_version`, `const char* name`,
 *    `const char* version`. These are frozen across all major versions, so
 *    any host can identify any plugin and refuse it with a readable reason.
 *  - Every other struct starts with `size_t struct_size`. Structs only grow
 *    at the end. A reader checks ONYX_HAS_FIELD(ptr, Type, field) before
 *    touching a field added after the reader's minimum version, or compares
 *    struct_size with the ONYX_<TYPE>_SIZE_<major>_<minor> constant of that
 *    version (defined after each struct).
 *  - Function tables are structs too: a table whose struct_size does not cover
 *    a function means "not implemented". A function marked OPTIONAL may also be
 *    NULL. Returning a status with code ONYX_STATUS_UNIMPLEMENTED is always a
 *    legal answer for optional features and extensions.
 *  - Errors are OnyxStatus objects created by the host (OnyxHostApi.status_create);
 *    NULL means success. A function returning a non-NULL status transfers its
 *    ownership to the caller. No C++ exception may cross this boundary.
 *  - Ownership, lifetime and thread-safety are stated on every function.
 *
 * What a 1.0 host does (the runtime in this tree; other hosts may do more):
 * it opens device index 0 of each provider only; it runs kernels
 * synchronously and calls no stream or event function (ctx_stream returns
 * NULL, copies pass no stream); it frees scratch memory as soon as
 * kernel_compute returns; loops of concurrent runs take turns in
 * ctx_parallel_for; it defines and passes no extensions. Each of these is
 * repeated where the function is declared.
 *
 * What a 1.2 host does beyond that (this tree's runtime): with a plugin
 * that negotiated 1.2 or later, whose device says `asynchronous` and which
 * implements all eight stream and event functions, it drives streams: each
 * run gets a stream of its own on the device; ctx_stream returns it;
 * every memory_copy of the run is enqueued on it; values read on another
 * device or by the host are waited for with events (event_record, then
 * stream_wait_event or event_synchronize), never a whole-device sync;
 * scratch and other device memory released during the run is freed after
 * the stream passed it, once the run's one stream_synchronize per stream at
 * its end returned. With a 1.0 or 1.1 plugin it behaves as a 1.0 host.
 *
 * What a 1.3 host does beyond 1.2 (this tree's runtime): it opens the
 * device index the application names (by index or stable_id), with any
 * plugin, and may open two devices of one plugin in one session (see
 * device_count); it reads the 1.3 device properties (stable_id,
 * free_memory_bytes) where the plugin filled them.
 *
 * Version history is in provider_api/CHANGELOG.md.
 */
#ifndef ONYX_PROVIDER_H_
#define ONYX_PROVIDER_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "onyx_dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Versions                                                                 */
/* ------------------------------------------------------------------------ */

/* The ABI version this header describes. A minor version only appends fields
 * and functions; a major version may change anything. */
#define ONYX_ABI_VERSION_MAJOR 1
#define ONYX_ABI_VERSION_MINOR 3

/* Packs a version into one comparable integer. */
#define ONYX_ABI_VERSION(major, minor) (((uint32_t)(major) << 16) | (uint32_t)(minor))
#define ONYX_ABI_VERSION_GET_MAJOR(v) ((uint32_t)(v) >> 16)
#define ONYX_ABI_VERSION_GET_MINOR(v) ((uint32_t)(v)&0xFFFFu)

/* The size of `Type` up to and including `last_field`: the struct_size of a
 * version whose last field of Type is `last_field` (as PJRT's
 * PJRT_DEFINE_STRUCT_TRAITS). Used for the ONYX_<TYPE>_SIZE_<version>
 * constants below; sizeof(Type) is the size in the version of this header. */
#define ONYX_STRUCT_SIZE(Type, last_field) \
  (offsetof(Type, last_field) + sizeof(((Type*)0)->last_field))

/* True when the struct at `ptr` (which starts with struct_size) is large
 * enough to contain `field`. */
#define ONYX_HAS_FIELD(ptr, Type, field) \
  ((ptr)->struct_size >= ONYX_STRUCT_SIZE(Type, field))

#if defined(_WIN32)
#define ONYX_PLUGIN_EXPORT __declspec(dllexport)
#else
#define ONYX_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* ------------------------------------------------------------------------ */
/* Opaque handles                                                           */
/* ------------------------------------------------------------------------ */

typedef struct OnyxStatus OnyxStatus;             /* host-owned error object */
typedef struct OnyxPlugin OnyxPlugin;             /* plugin instance */
typedef struct OnyxDevice OnyxDevice;             /* an opened device */
typedef struct OnyxStream OnyxStream;             /* ordered work queue on a device */
typedef struct OnyxEvent OnyxEvent;               /* a point in a stream */
typedef struct OnyxKernel OnyxKernel;             /* compiled node or fused group */
typedef struct OnyxComputeContext OnyxComputeContext; /* one kernel invocation */

/* ------------------------------------------------------------------------ */
/* Status                                                                   */
/* ------------------------------------------------------------------------ */

typedef enum OnyxStatusCode {
  ONYX_STATUS_OK = 0,
  ONYX_STATUS_INVALID_ARGUMENT = 1,  /* caller passed something wrong */
  ONYX_STATUS_NOT_FOUND = 2,
  ONYX_STATUS_UNIMPLEMENTED = 3,     /* feature or op not provided: always legal */
  ONYX_STATUS_UNAVAILABLE = 4,       /* device or vendor runtime absent */
  ONYX_STATUS_OUT_OF_MEMORY = 5,
  ONYX_STATUS_INCOMPATIBLE = 6,      /* version or struct negotiation failed */
  ONYX_STATUS_FAILED_PRECONDITION = 7,
  ONYX_STATUS_DATA_LOSS = 8,         /* corrupt data detected */
  ONYX_STATUS_INTERNAL = 9
} OnyxStatusCode;

/* ------------------------------------------------------------------------ */
/* Data types: OnyxDataType and its size/name table are in onyx_dtype.h.    */
/* ------------------------------------------------------------------------ */

/* Unknown element types. A later ABI minor may add codes to OnyxDataType
 * (as ONNX adds types). A plugin that meets a code its onyx_dtype.h does not
 * define (onyx_dtype_name returns NULL) in a node's inputs or outputs MUST
 * decline that node in get_capability with a reason naming the code, and
 * never size or read such a value (the SDK's registry does this for every
 * plugin built with it). The host then places the node elsewhere or fails
 * with that reason under the session's fallback policy.
 *
 * Values that are not numeric tensors (ABI 1.x). Sequences, optionals, maps
 * and STRING tensors are carried by the host only: a node that reads or
 * writes one runs on the host's built-in kernels, like If/Loop/Scan. Such
 * nodes may appear in the graph view given to get_capability (a value that
 * is not a tensor has dtype UNDEFINED and rank -1; a string tensor has
 * ONYX_DTYPE_STRING and no constant data), but the host ignores any claim of
 * them and never creates a kernel for them, so no ctx_* call ever hands a
 * plugin such a value. The partition report names their device "host". */

/* Where a buffer lives. Device memory may not be readable by the host: the
 * host only touches it through OnyxProviderApi.copy. */
typedef enum OnyxMemoryKind {
  ONYX_MEMORY_HOST = 0,        /* ordinary host memory, host-readable */
  ONYX_MEMORY_DEVICE = 1,      /* device-local, not host-readable unless the
                                  device says host_can_read_device_memory */
  ONYX_MEMORY_HOST_PINNED = 2  /* host memory the device can DMA from/to */
} OnyxMemoryKind;

typedef enum OnyxCopyDirection {
  ONYX_COPY_HOST_TO_DEVICE = 0,
  ONYX_COPY_DEVICE_TO_HOST = 1,
  ONYX_COPY_DEVICE_TO_DEVICE = 2
} OnyxCopyDirection;

/* ------------------------------------------------------------------------ */
/* Extension chain                                                          */
/* ------------------------------------------------------------------------ */

/* Args structs carry `const OnyxExtension* extensions`: a singly linked list
 * of optional, typed additions. A reader skips types it does not know. Types
 * 0..0xFFFF are reserved for Onyx; vendors use their own range above.
 * No extension types are defined in ABI 1.0: a 1.0 host always passes
 * `extensions` == NULL and never calls query_extension. The chain is kept so
 * that a minor version can add the first one without a new field. */
typedef struct OnyxExtension {
  size_t struct_size;
  uint32_t type;
  const struct OnyxExtension* next;
} OnyxExtension;
#define ONYX_EXTENSION_SIZE_1_0 ONYX_STRUCT_SIZE(OnyxExtension, next)

/* ------------------------------------------------------------------------ */
/* Tensors                                                                  */
/* ------------------------------------------------------------------------ */

/* A borrowed view of a tensor: nothing here is owned by the view's holder.
 * Elements are dense, row-major (C order), little-endian. Sub-byte types
 * pack several elements per byte, lowest bits first (int4, uint4, float4e2m1:
 * two; int2, uint2: four); onyx_dtype_storage_bytes gives the byte size. */
typedef struct OnyxTensorView {
  size_t struct_size;
  int32_t dtype;          /* OnyxDataType */
  int32_t memory_kind;    /* OnyxMemoryKind */
  size_t rank;
  const int64_t* dims;    /* rank entries; NULL when rank == 0 */
  void* data;             /* may be NULL when the tensor has 0 elements */
} OnyxTensorView;
#define ONYX_TENSOR_VIEW_SIZE_1_0 ONYX_STRUCT_SIZE(OnyxTensorView, data)

/* ------------------------------------------------------------------------ */
/* Graph views for capability queries and kernel creation                   */
/* ------------------------------------------------------------------------ */

typedef enum OnyxAttributeType {
  ONYX_ATTR_UNDEFINED = 0,
  ONYX_ATTR_FLOAT = 1,
  ONYX_ATTR_INT = 2,
  ONYX_ATTR_STRING = 3,
  ONYX_ATTR_TENSOR = 4,
  ONYX_ATTR_GRAPH = 5,
  ONYX_ATTR_FLOATS = 6,
  ONYX_ATTR_INTS = 7,
  ONYX_ATTR_STRINGS = 8
} OnyxAttributeType; /* values equal ONNX AttributeProto.AttributeType */

struct OnyxGraphView;

/* One node attribute. Only the members matching `type` are meaningful. */
typedef struct OnyxAttribute {
  size_t struct_size;
  const char* name;
  int32_t type;                   /* OnyxAttributeType */
  double f;                       /* FLOAT */
  int64_t i;                      /* INT */
  const char* s;                  /* STRING: bytes, not NUL-terminated */
  size_t s_len;
  const float* floats;            /* FLOATS: `count` entries */
  const int64_t* ints;            /* INTS: `count` entries */
  const char* const* strings;     /* STRINGS: `count` NUL-terminated entries */
  size_t count;
  const OnyxTensorView* tensor;   /* TENSOR: host memory */
  const struct OnyxGraphView* graph; /* GRAPH: a subgraph (control flow) */
} OnyxAttribute;
#define ONYX_ATTRIBUTE_SIZE_1_0 ONYX_STRUCT_SIZE(OnyxAttribute, graph)

/* Flags of OnyxValueInfo. */
#define ONYX_VALUE_GRAPH_INPUT 0x1u
#define ONYX_VALUE_GRAPH_OUTPUT 0x2u
#define ONYX_VALUE_CONSTANT 0x4u /* initializer or Constant output: `constant` set */

/* A value (tensor) of the graph: its element type and what is known of its
 * shape at session creation. rank < 0: unknown rank; a dim < 0: unknown. */
typedef struct OnyxValueInfo {
  size_t struct_size;
  const char* name;
  int32_t dtype;
  int32_t rank;
  const int64_t* dims;
  uint32_t flags;
  const OnyxTensorView* constant; /* host memory, when ONYX_VALUE_CONSTANT */
} OnyxValueInfo;
#define ONYX_VALUE_INFO_SIZE_1_0 ONYX_STRUCT_SIZE(OnyxValueInfo, constant)

/* Sentinel for an omitted optional input or output. */
#define ONYX_NO_VALUE (-1)

typedef struct OnyxNodeView {
  size_t struct_size;
  const char* name;
  const char* op_type;
  const char* domain;        /* "" for ai.onnx */
  int64_t opset_version;     /* the model's opset for `domain` */
  const int32_t* inputs;     /* indices into OnyxGraphView.values, or ONYX_NO_VALUE */
  size_t input_count;
  const int32_t* outputs;
  size_t output_count;
  const OnyxAttribute* attributes;
  size_t attribute_count;
} OnyxNodeView;
#define ONYX_NODE_VIEW_SIZE_1_0 ONYX_STRUCT_SIZE(OnyxNodeView, attribute_count)

/* A read-only view of a graph (or of the part of it the host asks about).
 * Owned by the host, valid only during the call it is passed to, unless a
 * function says otherwise. */
typedef struct OnyxGraphView {
  size_t struct_size;
  const OnyxValueInfo* values;
  size_t value_count;
  const OnyxNodeView* nodes;
  size_t node_count;
} OnyxGraphView;
#define ONYX_GRAPH_VIEW_SIZE_1_0 ONYX_STRUCT_SIZE(OnyxGraphView, node_count)

/* ------------------------------------------------------------------------ */
/* Capability                                                               */
/* ------------------------------------------------------------------------ */

#define ONYX_REASON_CAPACITY 192

/* The plugin's answer for one node. The host zero-fills an array of these
 * (one per node of the view, struct_size set) before get_capability. */
typedef struct OnyxNodeClaim {
  size_t struct_size;
  bool claimed;
  /* 0: the node runs as its own kernel. k > 0: the node belongs to fused
   * group k; all nodes of a group are compiled together by one kernel_create
   * call. Groups must be convex (no path leaves and re-enters the group). */
  uint32_t fused_group;
  /* Why the node was declined (or a note on the claim). NUL-terminated;
   * shown to users in the partition report. */
  char reason[ONYX_REASON_CAPACITY];
} OnyxNodeClaim;
#define ONYX_NODE_CLAIM_SIZE_1_0 ONYX_STRUCT_SIZE(OnyxNodeClaim, reason)

/* ------------------------------------------------------------------------ */
/* Kernel memory declarations (used by the core's memory planner)           */
/* ------------------------------------------------------------------------ */

typedef enum OnyxOutputMemory {
  /* The output needs a buffer of its own. */
  ONYX_OUTPUT_FRESH = 0,
  /* The kernel computes correctly when the output's buffer is the buffer of
   * input `input_index` (same size required); the planner may share them when
   * that input has no later reader. */
  ONYX_OUTPUT_MAY_OVERWRITE_INPUT = 1,
  /* The output is a view of input `input_index`'s bytes (same byte size):
   * the kernel writes nothing; the host passes the input buffer as the
   * output buffer and keeps it alive as long as either is live. */
  ONYX_OUTPUT_ALIASES_INPUT = 2
} OnyxOutputMemory;

typedef struct OnyxOutputMemoryInfo {
  size_t struct_size;
  int32_t kind;        /* OnyxOutputMemory */
  int32_t input_index;
} OnyxOutputMemoryInfo;
#define ONYX_OUTPUT_MEMORY_INFO_SIZE_1_0 ONYX_STRUCT_SIZE(OnyxOutputMemoryInfo, input_index)

/* ------------------------------------------------------------------------ */
/* Devices                                                                  */
/* ------------------------------------------------------------------------ */

typedef enum OnyxDeviceKind {
  ONYX_DEVICE_CPU = 0,
  ONYX_DEVICE_GPU = 1,
  ONYX_DEVICE_ACCELERATOR = 2
} OnyxDeviceKind;

typedef struct OnyxDeviceProperties {
  size_t struct_size;
  char name[128];                  /* e.g. "Intel Xeon (AVX-512)" */
  char vendor[64];
  int32_t kind;                    /* OnyxDeviceKind */
  uint64_t memory_bytes;           /* 0 when unknown */
  bool host_can_read_device_memory;/* device memory is plain host memory */
  bool asynchronous;               /* kernels run on streams; see streams */
  uint32_t memory_alignment;       /* minimum buffer alignment the device wants */
  /* --- ABI 1.3 -----------------------------------------------------------
   * Written only when the caller's struct_size covers them (a host built
   * against 1.0-1.2 passes a smaller struct); a reader checks ONYX_HAS_FIELD
   * and reads "" and 0 from a plugin that leaves them zero (one built
   * against an older header: the host zero-fills the struct it passes). */
  /* A NUL-terminated id naming this physical device, stable across
   * processes and reboots where the vendor allows it, unique among the
   * plugin's devices, and never changed by the order of enumeration:
   * "PCI:0000:3b:00.0" (the PCI bus id), a GPU UUID ("GPU-8f3c..."), or
   * "cpu:0". Printable ASCII without spaces; "" when the plugin has none.
   * Applications name a device by it instead of an index, which may change
   * when devices are added or hidden (CUDA_VISIBLE_DEVICES). */
  char stable_id[64];
  /* Bytes of device memory free at the time of the call (not a
   * reservation: other processes may take them at once); 0 when unknown. */
  uint64_t free_memory_bytes;
} OnyxDeviceProperties;
#define ONYX_DEVICE_PROPERTIES_SIZE_1_0 ONYX_STRUCT_SIZE(OnyxDeviceProperties, memory_alignment)
#define ONYX_DEVICE_PROPERTIES_SIZE_1_3 ONYX_STRUCT_SIZE(OnyxDeviceProperties, free_memory_bytes)

/* Options given to open_device, as key=value strings (e.g. "threads=2",
 * "allow_reduced_precision=1"). Unknown keys must be ignored. */
typedef struct OnyxKeyValue {
  size_t struct_size;
  const char* key;
  const char* value;
} OnyxKeyValue;
#define ONYX_KEY_VALUE_SIZE_1_0 ONYX_STRUCT_SIZE(OnyxKeyValue, value)

/* ------------------------------------------------------------------------ */
/* The host's functions, given to the plugin                                */
/* ------------------------------------------------------------------------ */

typedef enum OnyxLogLevel {
  ONYX_LOG_DEBUG = 0,
  ONYX_LOG_INFO = 1,
  ONYX_LOG_WARNING = 2,
  ONYX_LOG_ERROR = 3
} OnyxLogLevel;

/* Body of a parallel loop: processes [begin, end). Must not throw. Called
 * concurrently from the pool's threads, on disjoint ranges, so it must be
 * thread-safe for them; it is not called after ctx_parallel_for returns. */
typedef void (*OnyxParallelBody)(void* user, size_t begin, size_t end);

/* ABI 1.2. The host's sink for a serialized kernel (kernel_serialize):
 * appends `size` bytes, read during the call only, to what the host keeps
 * for `writer`. Returns NULL, or a status (owned by the caller) when the host
 * will not take more (its size bound, out of memory); the plugin then stops
 * and returns that status from kernel_serialize. Not thread-safe for the same
 * writer: call it from one thread at a time. */
typedef OnyxStatus* (*OnyxBlobWriteFn)(void* writer, const void* bytes, size_t size);

typedef struct OnyxHostApi {
  size_t struct_size;
  uint32_t abi_version; /* the negotiated version, ONYX_ABI_VERSION(...) */

  /* Creates a status. `message` is copied (NULL reads as ""). Returns NULL
   * for ONYX_STATUS_OK. Ownership: the returned status belongs to the caller
   * until it is returned from an ABI function (which hands it to the host)
   * or released with status_release. Thread-safe. */
  OnyxStatus* (*status_create)(int32_t code, const char* message);
  /* Releases a status the plugin created, or received from a host function,
   * and decided not to return. NULL is ignored. Thread-safe; each status
   * is released (or handed back) once. */
  void (*status_release)(OnyxStatus* status);
  /* Reads a status (e.g. one returned by another host function). The message
   * is owned by the status and stays valid until the status is released or
   * handed back to the host. Thread-safe. */
  int32_t (*status_code)(const OnyxStatus* status);
  const char* (*status_message)(const OnyxStatus* status);

  /* Writes a log line through the host's logger. `message` is read during
   * the call only. Thread-safe; callable at any time between create and
   * plugin_destroy. */
  void (*log)(int32_t level, const char* message);

  /* --- inside kernel_compute only ----------------------------------------
   * `ctx` is owned by the host and valid only until the kernel_compute it
   * was passed to returns. Unless a function says otherwise, call these from
   * the thread running that kernel_compute or from ctx_parallel_for bodies
   * of the same ctx. */

  /* Number of inputs/outputs of the node (fused group: of the group, in the
   * order given to kernel_create), constant for the ctx. Thread-safe. */
  size_t (*ctx_input_count)(const OnyxComputeContext* ctx);
  size_t (*ctx_output_count)(const OnyxComputeContext* ctx);
  /* Fills `out` (struct_size set by the caller) with input `index`.
   * NULL status and out->dtype != ONYX_DTYPE_UNDEFINED: the input; the view
   * and the bytes it points at are owned by the host and valid until
   * kernel_compute returns. NULL status and out->dtype ==
   * ONYX_DTYPE_UNDEFINED (data NULL, rank 0): an omitted optional input.
   * A status with ONYX_STATUS_INVALID_ARGUMENT (owned by the caller): `index`
   * >= ctx_input_count or `out` is NULL. Thread-safe, also for the same ctx
   * (it only reads). */
  OnyxStatus* (*ctx_input)(const OnyxComputeContext* ctx, size_t index, OnyxTensorView* out);
  /* Output `index` with the given element type and shape: the host returns
   * a buffer (from the memory plan when the shape matches it, else freshly
   * allocated on the kernel's device), its contents unspecified: the kernel
   * writes every element. Each output may be requested once per
   * compute; an output the kernel never requests is absent. Ownership: the
   * host owns the buffer; the view is valid until kernel_compute returns.
   * Not thread-safe for the same ctx (request outputs from one thread at a
   * time); thread-safe for distinct ctx. */
  OnyxStatus* (*ctx_output)(OnyxComputeContext* ctx, size_t index, int32_t dtype,
                            const int64_t* dims, size_t rank, OnyxTensorView* out);
  /* The stream the kernel must enqueue its work on, owned by the host and
   * valid until kernel_compute returns; NULL means "run synchronously".
   * A 1.0 host always returns NULL: it runs every kernel synchronously and
   * drives no streams (see stream_create). A 1.2 host returns the run's
   * stream on the kernel's device when the plugin negotiated 1.2 or later
   * and the device is asynchronous (see the top of this file); the kernel
   * may then return before its work is done, and the host orders later work
   * and reads after it. Inputs are ready on that stream when the kernel is
   * called. Thread-safe. */
  OnyxStream* (*ctx_stream)(const OnyxComputeContext* ctx);
  /* Scratch memory of `bytes` on the kernel's device (bytes == 0: *out is
   * NULL). Owned by the host, which frees it after kernel_compute returns.
   * A 1.0 host frees it right then, without synchronizing any stream: work
   * that uses scratch must be finished by then, or ordered before later
   * frees by the device itself (as cudaFree/hipFree are with work on the
   * legacy default stream). Not thread-safe for the same ctx; thread-safe
   * for distinct ctx. A 1.2 host that gave the kernel a stream frees
   * scratch only after that stream has passed the kernel's work (after the
   * run's final stream_synchronize), never while the stream may use it. */
  OnyxStatus* (*ctx_scratch)(OnyxComputeContext* ctx, size_t bytes, void** out);
  /* Runs body over [0, n) split into chunks of at least `grain` items on the
   * host's intra-op thread pool and returns when all are done. The calling
   * thread participates. Do not call recursively from inside `body`.
   * `body` and `user` are used during the call only. Thread-safe for
   * distinct ctx, but a 1.0 host has one pool per session and runs one loop
   * at a time on it: loops of concurrent runs (concurrent kernel_compute
   * calls) take turns rather than share the pool. */
  void (*ctx_parallel_for)(OnyxComputeContext* ctx, size_t n, size_t grain,
                           OnyxParallelBody body, void* user);
  /* Number of threads ctx_parallel_for may use (>= 1), constant for the
   * ctx. Thread-safe. */
  size_t (*ctx_thread_count)(const OnyxComputeContext* ctx);

  /* --- ABI 1.1 ------------------------------------------------------------
   * Present when struct_size >= ONYX_HOST_API_SIZE_1_1 and abi_version >=
   * ONYX_ABI_VERSION(1, 1); a plugin must check both before calling them
   * (a 1.0 host's table ends above). */

  /* Whether the run this kernel_compute belongs to is being profiled
   * (onyx_session_start_profiling). A plugin that measures its own work
   * (device-side kernel times, compilation, transfers) records it only then.
   * Thread-safe. */
  bool (*ctx_profiling)(const OnyxComputeContext* ctx);
  /* Adds one event of the plugin's own to the run's trace, beside the host's
   * event for the kernel: `name` (read during the call) on the calling
   * thread's timeline, from `start_ns` to `end_ns` of the monotonic clock
   * (CLOCK_MONOTONIC, which std::chrono::steady_clock reads on Linux), for
   * work already finished. Does nothing when the run is not profiled or the
   * times are not ordered. Thread-safe, also from ctx_parallel_for bodies. */
  void (*ctx_profile_event)(const OnyxComputeContext* ctx, const char* name, int64_t start_ns, int64_t end_ns);
} OnyxHostApi;
#define ONYX_HOST_API_SIZE_1_0 ONYX_STRUCT_SIZE(OnyxHostApi, ctx_thread_count)
#define ONYX_HOST_API_SIZE_1_1 ONYX_STRUCT_SIZE(OnyxHostApi, ctx_profile_event)

/* ------------------------------------------------------------------------ */
/* The plugin's functions                                                   */
/* ------------------------------------------------------------------------ */

typedef struct OnyxProviderApi {
  size_t struct_size;

  /* --- plugin --------------------------------------------------------- */

  /* Destroys the plugin instance. Called once, after every object created
   * from it was destroyed and no other call into the instance is running;
   * the host may unload the library afterwards. Not thread-safe for the
   * same instance. */
  void (*plugin_destroy)(OnyxPlugin* plugin);

  /* Probes the vendor runtime and devices. NULL: usable. Otherwise a status
   * (owned by the caller) with ONYX_STATUS_UNAVAILABLE and the reason (e.g.
   * "no CUDA driver: cudaGetDeviceCount returned 35"). Must never crash when
   * the vendor runtime is absent. Thread-safe. */
  OnyxStatus* (*plugin_availability)(OnyxPlugin* plugin);

  /* Number of devices (0 when unavailable). A 1.0 host opens device 0 only;
   * the others are listed but never opened. A 1.3 host (this tree's
   * runtime) opens whichever index the application names (by index or by
   * stable_id), and may open two devices of one plugin in one session: each
   * device's memory, streams and kernels must then stay its own (memory_copy
   * of one device is never given another device's pointers). Thread-safe. */
  size_t (*device_count)(OnyxPlugin* plugin);

  /* Fills `out` (struct_size set by the caller; write nothing past it) for
   * device `index`. Strings are copied into `out`, which the caller owns.
   * free_memory_bytes (1.3) is read at each call, so a host may call this
   * again to see the current value. Thread-safe. */
  OnyxStatus* (*device_properties)(OnyxPlugin* plugin, size_t index,
                                   OnyxDeviceProperties* out);

  /* Opens device `index` with options. `options` and `extensions` are read
   * during the call only (a 1.0 host passes index 0 and extensions NULL).
   * The returned device belongs to the caller until device_close. A device
   * may be opened several times (one per session). Thread-safe. */
  OnyxStatus* (*device_open)(OnyxPlugin* plugin, size_t index, const OnyxKeyValue* options,
                             size_t option_count, const OnyxExtension* extensions,
                             OnyxDevice** out);
  /* Closes a device after all its kernels, streams, events and buffers are
   * gone; the handle is invalid afterwards. Not thread-safe with other uses
   * of the same device; thread-safe for distinct devices. */
  void (*device_close)(OnyxDevice* device);

  /* --- memory ----------------------------------------------------------- */

  /* Allocates `bytes` of `memory_kind` aligned to at least `alignment`
   * (a power of two). bytes == 0 may return NULL. The buffer belongs to the
   * caller until memory_free and must not outlive the device. Thread-safe. */
  OnyxStatus* (*memory_alloc)(OnyxDevice* device, int32_t memory_kind, size_t bytes,
                              size_t alignment, void** out);
  /* Frees a buffer from memory_alloc of the same kind. NULL is ignored.
   * Thread-safe for distinct buffers. */
  void (*memory_free)(OnyxDevice* device, int32_t memory_kind, void* ptr);

  /* Copies `bytes` between host and device memory, or within the device.
   * Device pointers are this device's own (from its memory_alloc); host
   * pointers are host memory, which may be another host-readable device's.
   * A host moves bytes between two devices that cannot read host memory
   * directly through host memory (two copies), never with DEVICE_TO_DEVICE
   * across devices.
   * With a stream (OPTIONAL for synchronous devices: may be NULL) the copy
   * is ordered on it and may complete later; host buffers must then stay
   * valid until the stream is synchronized. Without a stream, the copy is
   * complete on return. A 1.0 host always passes stream NULL; a 1.2 host
   * passes the run's stream for the copies of a run on a device it drives
   * streams for (see the top of this file), and NULL for copies outside a
   * run (device tensors of the C API, constants uploaded at session
   * creation). Borrows `dst` and `src` only for the copy. Thread-safe for
   * distinct streams. */
  OnyxStatus* (*memory_copy)(OnyxDevice* device, OnyxStream* stream, int32_t direction,
                             void* dst, const void* src, size_t bytes);

  /* --- streams and events: OPTIONAL (NULL on synchronous devices) --------
   * A 1.0 host never calls them. It runs kernels synchronously, ctx_stream
   * returns NULL and every memory_copy passes no stream. A 1.2 host drives
   * them for a plugin that negotiated 1.2 (one stream per device and run,
   * pooled across runs; one event per stream, recorded before another
   * stream waits for it or the host synchronizes on it; see the top of this
   * file). A plugin for an asynchronous device implements all eight (the
   * conformance suite checks them); a 1.2 host drives none unless all are
   * present. */

  /* Creates an ordered queue. Owned by the caller until stream_destroy; must
   * not outlive the device. Thread-safe. */
  OnyxStatus* (*stream_create)(OnyxDevice* device, OnyxStream** out);
  /* Destroys a stream; work already queued on it still completes. The
   * handle is invalid afterwards. NULL is ignored. Not thread-safe with
   * other uses of the same stream. */
  void (*stream_destroy)(OnyxStream* stream);
  /* Blocks until all work queued on the stream is done. Thread-safe. */
  OnyxStatus* (*stream_synchronize)(OnyxStream* stream);
  /* Creates an event. Owned by the caller until event_destroy; must not
   * outlive the device. Thread-safe. */
  OnyxStatus* (*event_create)(OnyxDevice* device, OnyxEvent** out);
  /* Destroys an event; the handle is invalid afterwards. NULL is ignored.
   * Not thread-safe with other uses of the same event. */
  void (*event_destroy)(OnyxEvent* event);
  /* Marks the current end of `stream` in `event` (replacing an earlier
   * mark). Not thread-safe for the same event; thread-safe otherwise. */
  OnyxStatus* (*event_record)(OnyxEvent* event, OnyxStream* stream);
  /* Makes later work on `stream` wait for `event` without blocking the host.
   * Thread-safe for distinct streams. */
  OnyxStatus* (*stream_wait_event)(OnyxStream* stream, OnyxEvent* event);
  /* Blocks the host until `event` completes. Thread-safe. */
  OnyxStatus* (*event_synchronize)(OnyxEvent* event);

  /* --- capability -------------------------------------------------------- */

  /* Says which nodes of `graph` the device will run. `claims` has
   * graph->node_count entries, zero-filled with struct_size set; the plugin
   * fills them during the call. `graph` is valid only during the call. The
   * plugin must only claim nodes it can create a kernel for and run
   * correctly with the value infos given (the conformance suite checks
   * this). Thread-safe. */
  OnyxStatus* (*get_capability)(OnyxDevice* device, const OnyxGraphView* graph,
                                OnyxNodeClaim* claims);

  /* --- kernels ------------------------------------------------------------ */

  /* Creates the kernel for nodes `node_indices` of `graph` (one node, or all
   * nodes of one fused group in topological order). The graph view and
   * `node_indices` are valid only during this call: copy what is needed
   * (attributes, constant data). The kernel belongs to the caller until
   * kernel_destroy and must not outlive the device. Thread-safe. */
  OnyxStatus* (*kernel_create)(OnyxDevice* device, const OnyxGraphView* graph,
                               const uint32_t* node_indices, size_t node_count,
                               OnyxKernel** out);
  /* Destroys a kernel after every kernel_compute on it has returned; the
   * handle is invalid afterwards. Not thread-safe with other uses of the
   * same kernel; thread-safe for distinct kernels. */
  void (*kernel_destroy)(OnyxKernel* kernel);

  /* OPTIONAL. Memory declarations for the kernel's outputs (`out`, owned by
   * the caller, has one entry per output, zero-filled = ONYX_OUTPUT_FRESH).
   * The host consults it for fused groups too: their outputs are every
   * output of the group's nodes in the order given to kernel_create, and
   * input_index counts the group's inputs (the nodes' inputs in that order,
   * less the values computed inside the group), as ctx_output and ctx_input
   * do. Thread-safe. */
  OnyxStatus* (*kernel_output_memory)(OnyxKernel* kernel, OnyxOutputMemoryInfo* out,
                                      size_t output_count);

  /* Runs the kernel. Inputs and outputs are reached through the host's ctx_*
   * functions; `ctx` is valid during the call only. Thread-safe: may be
   * called concurrently on the same kernel from different threads
   * (concurrent session runs, each with its own ctx), so keep no
   * unsynchronized mutable state. Work must be complete on return unless ctx_stream gave a stream
   * (never with a 1.0 host; with a 1.2 host, see ctx_stream). */
  OnyxStatus* (*kernel_compute)(OnyxKernel* kernel, OnyxComputeContext* ctx);

  /* --- extensions --------------------------------------------------------- */

  /* OPTIONAL. Returns the plugin's table for extension `type`, or NULL when
   * not implemented. The table lives as long as the plugin. Thread-safe.
   * No extensions are defined in ABI 1.0, and a 1.0 host never calls this;
   * plugins may leave it NULL. */
  const void* (*query_extension)(OnyxPlugin* plugin, uint32_t type);

  /* --- ABI 1.2: compiled-partition cache ---------------------------------
   * Present when struct_size >= ONYX_PROVIDER_API_SIZE_1_2. OPTIONAL, all
   * three or none (NULL: the plugin caches nothing). A host calls them only
   * after negotiating ABI >= 1.2 with the plugin, so a plugin must work the
   * same when they are never called (a 1.0 or 1.1 host).
   *
   * What the host does (this runtime, when the application sets a cache
   * folder): after kernel_create it asks kernel_serialize for the kernel's
   * bytes and stores them in a file keyed by the plugin's name and version,
   * the device's properties and open options, device_cache_compatibility,
   * and a canonical text of the group: per node its op type, domain, opset
   * and attributes, and per input and output value its element type, shape,
   * flags and, for constants, a hash of the bytes. A later session whose key
   * is the same calls kernel_create_from_cache with those bytes instead of
   * kernel_create. So what kernel_create compiles must depend on nothing
   * else of the graph view than that (not on value or node names, nor on
   * nodes outside the group); whatever else it depends on (the ISA, a
   * driver, a compiler, the plugin's build) belongs in the compatibility
   * string. The host checks the file (format, checksum, the whole key text)
   * before handing its bytes back, and recompiles, with a log line naming the
   * file and why, an entry it rejects or the plugin refuses. */

  /* A NUL-terminated string naming what, besides the key above, a serialized
   * kernel of this device depends on: e.g. "avx512f;driver 550.54;build
   * 2026-11-27". Entries made under another string are not handed back.
   * Owned by the plugin, constant and valid until device_close; NULL reads
   * as "". Thread-safe. */
  const char* (*device_cache_compatibility)(OnyxDevice* device);

  /* Serializes what kernel_create (or kernel_create_from_cache) compiled for
   * `kernel`, by calling write(writer, bytes, size) any number of times, in
   * order. `write` and `writer` belong to the host and are valid during this
   * call only. A status from write is returned (its ownership passes back to
   * the host). ONYX_STATUS_UNIMPLEMENTED: nothing worth caching for this
   * kernel (the host stores nothing, and logs nothing). Thread-safe: may run
   * concurrently with kernel_compute on the same kernel. */
  OnyxStatus* (*kernel_serialize)(OnyxKernel* kernel, OnyxBlobWriteFn write, void* writer);

  /* As kernel_create (same graph, node_indices, ownership and lifetime of
   * *out), from `blob_size` bytes of `blob` that kernel_serialize produced
   * for a kernel of the same key. `blob` is owned by the host and valid
   * during the call only: copy what the kernel keeps. The host verified the
   * file's checksum and key, yet the plugin must bound every read and never
   * crash on any bytes. ONYX_STATUS_INCOMPATIBLE: a blob this plugin can no
   * longer use (e.g. its own layout version changed); ONYX_STATUS_DATA_LOSS:
   * one it finds corrupt. On any status the host logs a line, calls
   * kernel_create and replaces the entry. Thread-safe. */
  OnyxStatus* (*kernel_create_from_cache)(OnyxDevice* device, const OnyxGraphView* graph,
                                          const uint32_t* node_indices, size_t node_count,
                                          const void* blob, size_t blob_size, OnyxKernel** out);
} OnyxProviderApi;
#define ONYX_PROVIDER_API_SIZE_1_0 ONYX_STRUCT_SIZE(OnyxProviderApi, query_extension)
#define ONYX_PROVIDER_API_SIZE_1_2 ONYX_STRUCT_SIZE(OnyxProviderApi, kernel_create_from_cache)

/* ------------------------------------------------------------------------ */
/* Entry point and handshake                                                */
/* ------------------------------------------------------------------------ */

/* The magic of a provider plugin's entry: "ONYX" read as a little-endian
 * uint32 (an optimizer plugin's is ONYX_OPTIMIZER_MAGIC, "OOPT"). */
#define ONYX_PLUGIN_MAGIC 0x584E594Fu

/* What the host passes to create; owned by the host, valid during the call
 * (except `host`, see below). */
typedef struct OnyxPluginCreateArgs {
  size_t struct_size;
  uint32_t abi_version;         /* negotiated: inside both ranges */
  const OnyxHostApi* host;      /* lives until plugin_destroy returns */
  const char* plugin_path;      /* absolute path of the loaded library */
  const OnyxExtension* extensions; /* always NULL from a 1.0 host */
} OnyxPluginCreateArgs;
#define ONYX_PLUGIN_CREATE_ARGS_SIZE_1_0 ONYX_STRUCT_SIZE(OnyxPluginCreateArgs, extensions)

/* The static description a plugin exports: immutable, in static storage
 * that lives as long as the library is loaded. Its first six fields follow
 * the entry rule (see the top of this file) and `create` is frozen with
 * them, so any host can read them and refuse an incompatible plugin with a
 * readable reason. */
typedef struct OnyxPluginEntry {
  uint32_t magic;               /* ONYX_PLUGIN_MAGIC */
  uint32_t struct_size;         /* sizeof(OnyxPluginEntry) as the plugin was built */
  uint32_t min_abi_version;     /* oldest ONYX_ABI_VERSION the plugin can speak */
  uint32_t max_abi_version;     /* newest (normally the header it was built with) */
  const char* name;             /* short provider name, e.g. "cpu" */
  const char* version;          /* the plugin's own version string */
  /* Creates a plugin instance; no other function of that instance is
   * called before it returns. Thread-safe: one loaded library may serve
   * several instances (e.g. one per environment of the C API), created from
   * different threads, each destroyed by its own plugin_destroy. `args` is
   * read during the call only, except args->host, which stays valid until
   * the instance's plugin_destroy returns. On success *plugin belongs to the host until
   * plugin_destroy, and *api points at a table that lives until
   * plugin_destroy returns. On failure it returns a status (made with
   * args->host->status_create, owned by the caller) and leaves nothing to
   * destroy. */
  OnyxStatus* (*create)(const OnyxPluginCreateArgs* args, OnyxPlugin** plugin,
                        const OnyxProviderApi** api);
} OnyxPluginEntry;
#define ONYX_PLUGIN_ENTRY_SIZE_1_0 ONYX_STRUCT_SIZE(OnyxPluginEntry, create)

/* The one exported symbol: returns a pointer to the static entry (never
 * NULL). Thread-safe: may be called any number of times from any thread. */
#define ONYX_PLUGIN_ENTRY_SYMBOL "OnyxGetPluginEntry"
typedef const OnyxPluginEntry* (*OnyxPluginEntryFn)(void);

/* Defines the one exported symbol of a plugin. */
#define ONYX_DEFINE_PLUGIN_ENTRY(entry_expression)                       \
  ONYX_PLUGIN_EXPORT const OnyxPluginEntry* OnyxGetPluginEntry(void) {   \
    return (entry_expression);                                           \
  }

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ONYX_PROVIDER_H_ */
