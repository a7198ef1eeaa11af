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
 *   api->open_device(...)      ---------->  OnyxDevice*
 *   api->get_capability(...)   ---------->  claims nodes of a graph view
 *   api->kernel_create(...)    ---------->  OnyxKernel*
 *   api->kernel_compute(kernel, ctx) ---->  reads inputs, asks the host for
 *                              <----------  outputs through OnyxHostApi
 *
 * Rules that make this ABI stable (read docs/architecture.md, "The ABI"):
 *  - Only stdint.h, stddef.h and stdbool.h are included. C99.
 *  - Every struct starts with `size_t struct_size`. Structs only grow at the
 *    end. A reader checks ONYX_HAS_FIELD(ptr, Type, field) before touching a
 *    field added after the reader's minimum version.
 *  - Function tables are structs too: a table whose struct_size does not cover
 *    a function means "not implemented". A function marked OPTIONAL may also be
 *    NULL. Returning a status with code ONYX_STATUS_UNIMPLEMENTED is always a
 *    legal answer for optional features and extensions.
 *  - Errors are OnyxStatus objects created by the host (OnyxHostApi.status_create);
 *    NULL means success. A function returning a non-NULL status transfers its
 *    ownership to the caller. No C++ exception may cross this boundary.
 *  - Ownership, lifetime and thread-safety are stated on every function.
 *
 * Version history is in provider_api/CHANGELOG.md.
 */
#ifndef ONYX_PROVIDER_H_
#define ONYX_PROVIDER_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Versions                                                                 */
/* ------------------------------------------------------------------------ */

/* The ABI version this header describes. A minor version only appends fields
 * and functions; a major version may change anything. */
#define ONYX_ABI_VERSION_MAJOR 1
#define ONYX_ABI_VERSION_MINOR 0

/* Packs a version into one comparable integer. */
#define ONYX_ABI_VERSION(major, minor) (((uint32_t)(major) << 16) | (uint32_t)(minor))
#define ONYX_ABI_VERSION_GET_MAJOR(v) ((uint32_t)(v) >> 16)
#define ONYX_ABI_VERSION_GET_MINOR(v) ((uint32_t)(v)&0xFFFFu)

/* True when the struct at `ptr` (which starts with struct_size) is large
 * enough to contain `field`. */
#define ONYX_HAS_FIELD(ptr, Type, field) \
  ((ptr)->struct_size >= offsetof(Type, field) + sizeof(((Type*)0)->field))

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
/* Data types: values equal ONNX TensorProto.DataType.                      */
/* ------------------------------------------------------------------------ */

typedef enum OnyxDataType {
  ONYX_DTYPE_UNDEFINED = 0,
  ONYX_DTYPE_FLOAT32 = 1,
  ONYX_DTYPE_UINT8 = 2,
  ONYX_DTYPE_INT8 = 3,
  ONYX_DTYPE_UINT16 = 4,
  ONYX_DTYPE_INT16 = 5,
  ONYX_DTYPE_INT32 = 6,
  ONYX_DTYPE_INT64 = 7,
  ONYX_DTYPE_STRING = 8, /* reserved: string tensors are host-only in ABI 1.0 */
  ONYX_DTYPE_BOOL = 9,   /* one byte per element, 0 or 1 */
  ONYX_DTYPE_FLOAT16 = 10,
  ONYX_DTYPE_FLOAT64 = 11,
  ONYX_DTYPE_UINT32 = 12,
  ONYX_DTYPE_UINT64 = 13,
  ONYX_DTYPE_COMPLEX64 = 14,
  ONYX_DTYPE_COMPLEX128 = 15,
  ONYX_DTYPE_BFLOAT16 = 16,
  ONYX_DTYPE_FLOAT8E4M3FN = 17,
  ONYX_DTYPE_FLOAT8E4M3FNUZ = 18,
  ONYX_DTYPE_FLOAT8E5M2 = 19,
  ONYX_DTYPE_FLOAT8E5M2FNUZ = 20,
  ONYX_DTYPE_UINT4 = 21,
  ONYX_DTYPE_INT4 = 22,
  ONYX_DTYPE_FLOAT4E2M1 = 23
} OnyxDataType;

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
 * 0..0xFFFF are reserved for Onyx; vendors use their own range above. */
typedef struct OnyxExtension {
  size_t struct_size;
  uint32_t type;
  const struct OnyxExtension* next;
} OnyxExtension;

/* ------------------------------------------------------------------------ */
/* Tensors                                                                  */
/* ------------------------------------------------------------------------ */

/* A borrowed view of a tensor: nothing here is owned by the view's holder.
 * Elements are dense, row-major (C order), little-endian. Sub-byte types
 * (int4, uint4, float4) pack two elements per byte, low nibble first. */
typedef struct OnyxTensorView {
  size_t struct_size;
  int32_t dtype;          /* OnyxDataType */
  int32_t memory_kind;    /* OnyxMemoryKind */
  size_t rank;
  const int64_t* dims;    /* rank entries; NULL when rank == 0 */
  void* data;             /* may be NULL when the tensor has 0 elements */
} OnyxTensorView;

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
} OnyxDeviceProperties;

/* Options given to open_device, as key=value strings (e.g. "threads=2",
 * "allow_reduced_precision=1"). Unknown keys must be ignored. */
typedef struct OnyxKeyValue {
  size_t struct_size;
  const char* key;
  const char* value;
} OnyxKeyValue;

/* ------------------------------------------------------------------------ */
/* The host's functions, given to the plugin                                */
/* ------------------------------------------------------------------------ */

typedef enum OnyxLogLevel {
  ONYX_LOG_DEBUG = 0,
  ONYX_LOG_INFO = 1,
  ONYX_LOG_WARNING = 2,
  ONYX_LOG_ERROR = 3
} OnyxLogLevel;

/* Body of a parallel loop: processes [begin, end). Must not throw. */
typedef void (*OnyxParallelBody)(void* user, size_t begin, size_t end);

typedef struct OnyxHostApi {
  size_t struct_size;
  uint32_t abi_version; /* the negotiated version, ONYX_ABI_VERSION(...) */

  /* Creates a status. `message` is copied. Returns NULL for ONYX_STATUS_OK.
   * Ownership: the returned status belongs to the caller until it is
   * returned from an ABI function (which hands it to the host) or released.
   * Thread-safe. */
  OnyxStatus* (*status_create)(int32_t code, const char* message);
  /* Releases a status the plugin created and decided not to return.
   * Thread-safe. NULL is ignored. */
  void (*status_release)(OnyxStatus* status);
  /* Reads a status (e.g. one returned by another host function). The message
   * stays valid until the status is released. Thread-safe. */
  int32_t (*status_code)(const OnyxStatus* status);
  const char* (*status_message)(const OnyxStatus* status);

  /* Writes a log line through the host's logger. Thread-safe. */
  void (*log)(int32_t level, const char* message);

  /* --- inside kernel_compute only: `ctx` is valid during that call ----- */

  /* Number of inputs/outputs of the node (fused group: of the group, in the
   * order given to kernel_create). Thread-safe for distinct ctx. */
  size_t (*ctx_input_count)(const OnyxComputeContext* ctx);
  size_t (*ctx_output_count)(const OnyxComputeContext* ctx);
  /* Fills `out` (struct_size set by the caller) with input `index`.
   * NULL status and out->dtype != ONYX_DTYPE_UNDEFINED: the input; the view
   * and the bytes it points at are owned by the host and valid until
   * kernel_compute returns. NULL status and out->dtype ==
   * ONYX_DTYPE_UNDEFINED (data NULL, rank 0): an omitted optional input.
   * A status with ONYX_STATUS_INVALID_ARGUMENT (owned by the caller): `index`
   * >= ctx_input_count or `out` is NULL. Thread-safe, also for the same ctx
   * (it only reads; e.g. from ctx_parallel_for bodies). */
  OnyxStatus* (*ctx_input)(const OnyxComputeContext* ctx, size_t index, OnyxTensorView* out);
  /* Output `index` with the given element type and shape: the host returns
   * a buffer (from the memory plan when the shape matches it, else freshly
   * allocated on the kernel's device). Each output may be requested once per
   * compute; an output the kernel never requests is absent. Ownership: the
   * host owns the buffer; the view is valid until kernel_compute returns. */
  OnyxStatus* (*ctx_output)(OnyxComputeContext* ctx, size_t index, int32_t dtype,
                            const int64_t* dims, size_t rank, OnyxTensorView* out);
  /* The stream the kernel must enqueue its work on (NULL for synchronous
   * devices). */
  OnyxStream* (*ctx_stream)(const OnyxComputeContext* ctx);
  /* Scratch memory of `bytes` on the kernel's device, freed by the host
   * after kernel_compute returns (and, for asynchronous devices, after the
   * stream reaches this point). */
  OnyxStatus* (*ctx_scratch)(OnyxComputeContext* ctx, size_t bytes, void** out);
  /* Runs body over [0, n) split into chunks of at least `grain` items on the
   * host's intra-op thread pool and returns when all are done. The calling
   * thread participates. Do not call recursively from inside `body`. */
  void (*ctx_parallel_for)(OnyxComputeContext* ctx, size_t n, size_t grain,
                           OnyxParallelBody body, void* user);
  /* Number of threads ctx_parallel_for may use (>= 1). */
  size_t (*ctx_thread_count)(const OnyxComputeContext* ctx);
} OnyxHostApi;

/* ------------------------------------------------------------------------ */
/* The plugin's functions                                                   */
/* ------------------------------------------------------------------------ */

typedef struct OnyxProviderApi {
  size_t struct_size;

  /* --- plugin --------------------------------------------------------- */

  /* Destroys the plugin. Called once, after every object created from it
   * was destroyed; the host unloads the library afterwards. Not thread-safe. */
  void (*plugin_destroy)(OnyxPlugin* plugin);

  /* Probes the vendor runtime and devices. NULL: usable. Otherwise a status
   * with ONYX_STATUS_UNAVAILABLE and the reason (e.g. "no CUDA driver:
   * cudaGetDeviceCount returned 35"). Must never crash when the vendor runtime
   * is absent. Thread-safe. */
  OnyxStatus* (*plugin_availability)(OnyxPlugin* plugin);

  /* Number of devices (0 when unavailable). Thread-safe. */
  size_t (*device_count)(OnyxPlugin* plugin);

  /* Fills `out` (struct_size set by the caller) for device `index`.
   * Thread-safe. */
  OnyxStatus* (*device_properties)(OnyxPlugin* plugin, size_t index,
                                   OnyxDeviceProperties* out);

  /* Opens device `index` with options. The returned device belongs to the
   * caller until device_close. A device may be opened several times (one per
   * session). Thread-safe. */
  OnyxStatus* (*device_open)(OnyxPlugin* plugin, size_t index, const OnyxKeyValue* options,
                             size_t option_count, const OnyxExtension* extensions,
                             OnyxDevice** out);
  /* Closes a device after all its kernels, streams, events and buffers are
   * gone. Not thread-safe with other uses of the same device. */
  void (*device_close)(OnyxDevice* device);

  /* --- memory ----------------------------------------------------------- */

  /* Allocates `bytes` of `memory_kind` aligned to at least `alignment`
   * (a power of two). bytes == 0 may return NULL. The buffer belongs to the
   * caller until memory_free. Thread-safe. */
  OnyxStatus* (*memory_alloc)(OnyxDevice* device, int32_t memory_kind, size_t bytes,
                              size_t alignment, void** out);
  /* Frees a buffer from memory_alloc of the same kind. NULL is ignored.
   * Thread-safe. */
  void (*memory_free)(OnyxDevice* device, int32_t memory_kind, void* ptr);

  /* Copies `bytes` between host and device memory, or within the device.
   * With a stream (OPTIONAL for synchronous devices: may be NULL) the copy
   * is ordered on it and may complete later; host buffers must then stay
   * valid until the stream is synchronized. Without a stream, the copy is
   * complete on return. Thread-safe for distinct streams. */
  OnyxStatus* (*memory_copy)(OnyxDevice* device, OnyxStream* stream, int32_t direction,
                             void* dst, const void* src, size_t bytes);

  /* --- streams and events: OPTIONAL (NULL on synchronous devices) -------- */

  /* Creates an ordered queue. Owned by the caller until stream_destroy.
   * Thread-safe. */
  OnyxStatus* (*stream_create)(OnyxDevice* device, OnyxStream** out);
  void (*stream_destroy)(OnyxStream* stream);
  /* Blocks until all work queued on the stream is done. */
  OnyxStatus* (*stream_synchronize)(OnyxStream* stream);
  OnyxStatus* (*event_create)(OnyxDevice* device, OnyxEvent** out);
  void (*event_destroy)(OnyxEvent* event);
  /* Marks the current end of `stream` in `event`. */
  OnyxStatus* (*event_record)(OnyxEvent* event, OnyxStream* stream);
  /* Makes later work on `stream` wait for `event` without blocking the host. */
  OnyxStatus* (*stream_wait_event)(OnyxStream* stream, OnyxEvent* event);
  /* Blocks the host until `event` completes. */
  OnyxStatus* (*event_synchronize)(OnyxEvent* event);

  /* --- capability -------------------------------------------------------- */

  /* Says which nodes of `graph` the device will run. `claims` has
   * graph->node_count entries, zero-filled with struct_size set. The plugin
   * must only claim nodes it can create a kernel for and run correctly with
   * the value infos given (the conformance suite checks this). Thread-safe. */
  OnyxStatus* (*get_capability)(OnyxDevice* device, const OnyxGraphView* graph,
                                OnyxNodeClaim* claims);

  /* --- kernels ------------------------------------------------------------ */

  /* Creates the kernel for nodes `node_indices` of `graph` (one node, or all
   * nodes of one fused group in topological order). The graph view is valid
   * only during this call: copy what is needed (attributes, constant data).
   * Thread-safe. */
  OnyxStatus* (*kernel_create)(OnyxDevice* device, const OnyxGraphView* graph,
                               const uint32_t* node_indices, size_t node_count,
                               OnyxKernel** out);
  void (*kernel_destroy)(OnyxKernel* kernel);

  /* OPTIONAL. Memory declarations for the kernel's outputs (`out` has one
   * entry per output, zero-filled = ONYX_OUTPUT_FRESH). Thread-safe. */
  OnyxStatus* (*kernel_output_memory)(OnyxKernel* kernel, OnyxOutputMemoryInfo* out,
                                      size_t output_count);

  /* Runs the kernel. Inputs and outputs are reached through the host's ctx_*
   * functions. May be called concurrently on the same kernel from different
   * threads (concurrent session runs): keep no unsynchronized mutable state. */
  OnyxStatus* (*kernel_compute)(OnyxKernel* kernel, OnyxComputeContext* ctx);

  /* --- extensions --------------------------------------------------------- */

  /* OPTIONAL. Returns the plugin's table for extension `type`, or NULL when
   * not implemented. The table lives as long as the plugin. Thread-safe. */
  const void* (*query_extension)(OnyxPlugin* plugin, uint32_t type);
} OnyxProviderApi;

/* ------------------------------------------------------------------------ */
/* Entry point and handshake                                                */
/* ------------------------------------------------------------------------ */

#define ONYX_PLUGIN_MAGIC 0x584E594Fu /* "ONYX" little-endian */

typedef struct OnyxPluginCreateArgs {
  size_t struct_size;
  uint32_t abi_version;         /* negotiated: inside both ranges */
  const OnyxHostApi* host;      /* lives until plugin_destroy returns */
  const char* plugin_path;      /* absolute path of the loaded library */
  const OnyxExtension* extensions;
} OnyxPluginCreateArgs;

/* The static description a plugin exports. Its fields up to `create` are
 * frozen across all major versions so that any host can read them and refuse
 * an incompatible plugin with a readable reason. */
typedef struct OnyxPluginEntry {
  uint32_t magic;               /* ONYX_PLUGIN_MAGIC */
  uint32_t struct_size;
  uint32_t min_abi_version;     /* oldest ONYX_ABI_VERSION the plugin can speak */
  uint32_t max_abi_version;     /* newest (normally the header it was built with) */
  const char* name;             /* short provider name, e.g. "cpu" */
  const char* version;          /* the plugin's own version string */
  /* Creates the plugin. On success *api points at a table that lives until
   * plugin_destroy returns. Called once per load. */
  OnyxStatus* (*create)(const OnyxPluginCreateArgs* args, OnyxPlugin** plugin,
                        const OnyxProviderApi** api);
} OnyxPluginEntry;

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
