// fake_provider_plugin.cpp: the provider plugin of the plugin_handshake
// harness, written against the raw ABI (no SDK) so that it can misbehave.
// Before each load the harness calls onyx_fuzz_plugin_configure with the
// fuzzer's bytes, from which the plugin picks its entry (magic, struct_size,
// ABI range, name, version, what create does), its table (struct_size, NULL
// functions), device_count and device_properties (lies included), its claims
// (out-of-range fused groups, declines without reasons), kernel_output_memory
// declarations (bad kinds and input indices), the statuses it returns
// (errors with any code, pointers the host never made) and what each
// kernel_compute does (honest; no outputs; wrong dims, dtype or index;
// outputs requested twice; scratch past any memory; errors). Up to ABI 1.3:
// the 1.3 device properties (stable ids, some without their NUL), the
// stream and event functions of an asynchronous device (which a 1.2 host
// drives), and the compiled-partition cache (compatibility strings,
// serialized kernels of any bytes, blobs accepted or refused).
//
// What the ABI calls undefined for a plugin is never done: no wild writes,
// no writes past a struct_size, no use of a status after handing it back.
// A kernel that computes does so correctly (Relu, Add, Mul on float32, with
// broadcasting, fused groups too), reading all its inputs before writing any
// output, so it is correct under any MAY_OVERWRITE_INPUT declaration.
//
// The plugin also checks the host's side of the contract and traps when it
// is broken: a power-of-two alignment, frees of its own buffers only,
// devices closed after their kernels and buffers, output views as
// requested. onyx_fuzz_plugin_live_objects lets the harness check that a
// released registry left no plugin object alive.
#include <fuzzer/FuzzedDataProvider.h>
#include <onyx_provider.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace {

enum class StatusKind { kOk, kError, kInvented };

enum class ComputeMode {
  kHonest,
  kParallelHonest,      // computes through ctx_parallel_for
  kScratchThenHonest,   // asks for an impossible scratch first (its error released)
  kProbesThenHonest,    // out-of-range ctx_input/ctx_output, NULL dims, first
  kTwiceThenHonest,     // requests each output twice (the second is refused)
  kNoOutputs,           // returns OK without producing anything
  kWrongDims,
  kWrongDtype,
  kFails,
  kInventedStatus,
  kCount
};

struct Config {
  uint32_t magic = ONYX_PLUGIN_MAGIC;
  uint32_t entry_size = sizeof(OnyxPluginEntry);
  uint32_t min_abi = ONYX_ABI_VERSION(1, 0);
  uint32_t max_abi = ONYX_ABI_VERSION(1, 3);
  int name_choice = 0;
  int version_choice = 0;
  bool create_null = false;
  StatusKind create_status = StatusKind::kOk;
  int create_result = 0;  // 0 ok, 1 no plugin, 2 no table
  size_t table_size = sizeof(OnyxProviderApi);
  uint32_t null_functions = 0;  // bit k: function k of the table is NULL
  StatusKind availability = StatusKind::kOk;
  size_t device_count = 1;
  StatusKind properties_status = StatusKind::kOk;
  bool unterminated_names = false;
  uint32_t memory_alignment = 64;
  bool host_readable = true;
  StatusKind open_status = StatusKind::kOk;
  bool open_null_device = false;
  StatusKind alloc_status = StatusKind::kOk;
  StatusKind copy_status = StatusKind::kOk;
  StatusKind capability_status = StatusKind::kOk;
  std::vector<uint8_t> claimed;  // per node; the rest declined
  std::vector<uint32_t> groups;
  std::vector<int> reasons;  // 0 none, 1 text, 2 unterminated
  StatusKind kernel_create_status = StatusKind::kOk;
  bool kernel_create_null = false;
  StatusKind output_memory_status = StatusKind::kOk;
  std::vector<int32_t> output_kinds, output_inputs;
  std::vector<ComputeMode> modes;  // per kernel, in creation order
  int32_t error_code = ONYX_STATUS_INTERNAL;
  std::vector<int64_t> wrong_dims;
  // ABI 1.3 device properties.
  int stable_id = 0;  // 0 "", 1 "fuzz:0", 2 without its NUL, 3 with spaces
  uint64_t free_memory = 0;
  // Streams and events (all eight offered; null_functions may drop some).
  bool asynchronous = false;
  StatusKind stream_status = StatusKind::kOk;
  // ABI 1.2 compiled-partition cache.
  bool cache = false;
  int compatibility = 0;  // 0 NULL, 1 "", 2 "fuzz 1", 3 a long one
  int serialize = 0;      // 0 writes the blob, 1 UNIMPLEMENTED, 2 an error, 3 writes then an error
  std::vector<uint8_t> blob_tail;  // written after the blob's header
  int from_cache = 0;     // 0 accepts a well-formed blob, 1 INCOMPATIBLE, 2 DATA_LOSS, 3 another error
};

Config g_config;
const OnyxHostApi* g_host = nullptr;
std::mutex g_mutex;
std::set<void*> g_live;     // devices, kernels, buffers not yet released
std::set<void*> g_plugins;  // instances not yet destroyed (a host that cannot
                            // destroy one, for lack of plugin_destroy, leaks it)
size_t g_kernels_created = 0;
bool g_declared_alias = false;

// Says which host call broke the ABI, then stops as a crash libFuzzer keeps.
#define host_broke_contract() \
  (std::fprintf(stderr, "fake plugin: the host broke the ABI at %s:%d\n", __FILE__, __LINE__), __builtin_trap())

void track(void* p) {
  std::lock_guard lock(g_mutex);
  if (!g_live.insert(p).second) host_broke_contract();
}
void untrack(void* p) {
  std::lock_guard lock(g_mutex);
  if (g_live.erase(p) != 1) host_broke_contract();  // not ours, or released twice
}

OnyxStatus* status(StatusKind kind, const char* what) {
  switch (kind) {
    case StatusKind::kOk: return nullptr;
    case StatusKind::kError: return g_host->status_create(g_config.error_code, what);
    case StatusKind::kInvented: return reinterpret_cast<OnyxStatus*>(uintptr_t(0x10));
  }
  return nullptr;
}

StatusKind pick_status(FuzzedDataProvider& in) {
  const int k = in.ConsumeIntegralInRange(0, 7);
  return k == 6 ? StatusKind::kError : k == 7 ? StatusKind::kInvented : StatusKind::kOk;
}

const char* const kNames[] = {"fuzz", "", nullptr, "cpu", "a name with spaces/and a slash",
                              "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"
                              "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"};
const char* const kVersions[] = {"1.0", "", nullptr};

// --- devices, memory ---------------------------------------------------------

struct Device {
  std::set<void*> kernels, buffers, streams, events;
};

struct Stream {
  Device* device = nullptr;
};
struct Event {
  Device* device = nullptr;
  bool recorded = false;
};

struct Buffer {};

void plugin_destroy(OnyxPlugin* plugin) {
  std::lock_guard lock(g_mutex);
  if (g_plugins.erase(plugin) != 1) host_broke_contract();
}
OnyxStatus* plugin_availability(OnyxPlugin*) { return status(g_config.availability, "fuzz device not found"); }
size_t device_count(OnyxPlugin*) { return g_config.device_count; }

OnyxStatus* device_properties(OnyxPlugin*, size_t index, OnyxDeviceProperties* out) {
  if (!out || out->struct_size < ONYX_DEVICE_PROPERTIES_SIZE_1_0) host_broke_contract();
  if (index >= g_config.device_count) return g_host->status_create(ONYX_STATUS_INVALID_ARGUMENT, "no such device");
  if (OnyxStatus* s = status(g_config.properties_status, "properties failed")) return s;
  std::memset(out->name, g_config.unterminated_names ? 'N' : 0, sizeof out->name);
  std::memset(out->vendor, g_config.unterminated_names ? 'V' : 0, sizeof out->vendor);
  if (!g_config.unterminated_names) std::strcpy(out->name, "fuzz device"), std::strcpy(out->vendor, "fuzz");
  out->kind = ONYX_DEVICE_ACCELERATOR;
  out->memory_bytes = uint64_t(1) << 30;
  out->host_can_read_device_memory = g_config.host_readable;
  out->asynchronous = g_config.asynchronous;
  out->memory_alignment = g_config.memory_alignment;
  if (out->struct_size >= ONYX_DEVICE_PROPERTIES_SIZE_1_3) {  // 1.3 fields: only inside the caller's struct
    std::memset(out->stable_id, 0, sizeof out->stable_id);
    if (g_config.stable_id == 1) std::strcpy(out->stable_id, "fuzz:0");
    if (g_config.stable_id == 2) std::memset(out->stable_id, 'S', sizeof out->stable_id);
    if (g_config.stable_id == 3) std::strcpy(out->stable_id, "a stable id with spaces");
    out->free_memory_bytes = g_config.free_memory;
  }
  return nullptr;
}

OnyxStatus* device_open(OnyxPlugin*, size_t index, const OnyxKeyValue*, size_t, const OnyxExtension* extensions,
                        OnyxDevice** out) {
  if (!out || index != 0 || extensions) host_broke_contract();
  if (OnyxStatus* s = status(g_config.open_status, "open failed")) return s;
  if (g_config.open_null_device) {
    *out = nullptr;
    return nullptr;
  }
  auto* d = new Device;
  track(d);
  *out = reinterpret_cast<OnyxDevice*>(d);
  return nullptr;
}

void device_close(OnyxDevice* device) {
  if (!device) return;
  auto* d = reinterpret_cast<Device*>(device);
  untrack(d);
  if (!d->kernels.empty() || !d->buffers.empty() || !d->streams.empty() || !d->events.empty())
    host_broke_contract();  // closed under live objects
  delete d;
}

OnyxStatus* memory_alloc(OnyxDevice* device, int32_t kind, size_t bytes, size_t alignment, void** out) {
  if (!out || alignment == 0 || (alignment & (alignment - 1)) != 0) host_broke_contract();
  if (kind != ONYX_MEMORY_DEVICE && kind != ONYX_MEMORY_HOST && kind != ONYX_MEMORY_HOST_PINNED) host_broke_contract();
  if (OnyxStatus* s = status(g_config.alloc_status, "device out of memory")) return s;
  if (bytes > (size_t(1) << 30))
    return g_host->status_create(ONYX_STATUS_OUT_OF_MEMORY, "more than the fuzz device's 1 GiB");
  if (bytes == 0) {
    *out = nullptr;
    return nullptr;
  }
  void* p = std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
  if (!p) return g_host->status_create(ONYX_STATUS_OUT_OF_MEMORY, "aligned_alloc failed");
  track(p);
  if (device) {
    std::lock_guard lock(g_mutex);
    reinterpret_cast<Device*>(device)->buffers.insert(p);
  }
  *out = p;
  return nullptr;
}

void memory_free(OnyxDevice* device, int32_t, void* ptr) {
  if (!ptr) return;
  untrack(ptr);
  if (device) {
    std::lock_guard lock(g_mutex);
    reinterpret_cast<Device*>(device)->buffers.erase(ptr);
  }
  std::free(ptr);
}

void check_stream(OnyxStream* stream);  // NULL, or one of this plugin's live streams

OnyxStatus* memory_copy(OnyxDevice*, OnyxStream* stream, int32_t direction, void* dst, const void* src,
                        size_t bytes) {
  if (direction < ONYX_COPY_HOST_TO_DEVICE || direction > ONYX_COPY_DEVICE_TO_DEVICE) host_broke_contract();
  check_stream(stream);
  if (bytes && (!dst || !src)) host_broke_contract();
  if (OnyxStatus* s = status(g_config.copy_status, "copy failed")) return s;
  if (bytes) std::memmove(dst, src, bytes);
  return nullptr;
}

// --- streams and events: work runs at once, so there is nothing to wait for;
// the host's side is checked (its own objects, on their device, alive) ------

template <typename T>
T* owned(void* handle, std::set<void*> Device::*set) {
  auto* object = static_cast<T*>(handle);
  std::lock_guard lock(g_mutex);
  if (!object || !g_live.count(object) || !(object->device->*set).count(object)) host_broke_contract();
  return object;
}

// A new stream or event of `device`, tracked until destroy_object.
template <typename T, typename Handle>
OnyxStatus* create_object(OnyxDevice* device, std::set<void*> Device::*set, const char* what, Handle** out) {
  if (!device || !out) host_broke_contract();
  if (OnyxStatus* s = status(g_config.stream_status, what)) return s;
  auto* object = new T{reinterpret_cast<Device*>(device)};
  track(object);
  {
    std::lock_guard lock(g_mutex);
    (object->device->*set).insert(object);
  }
  *out = reinterpret_cast<Handle*>(object);
  return nullptr;
}

template <typename T>
void destroy_object(void* handle, std::set<void*> Device::*set) {
  if (!handle) return;
  auto* object = owned<T>(handle, set);
  untrack(object);
  {
    std::lock_guard lock(g_mutex);
    (object->device->*set).erase(object);
  }
  delete object;
}

OnyxStatus* stream_create(OnyxDevice* device, OnyxStream** out) {
  return create_object<Stream>(device, &Device::streams, "stream_create failed", out);
}
void stream_destroy(OnyxStream* stream) { destroy_object<Stream>(stream, &Device::streams); }

void check_stream(OnyxStream* stream) {
  if (stream) owned<Stream>(stream, &Device::streams);
}

OnyxStatus* stream_synchronize(OnyxStream* stream) {
  owned<Stream>(stream, &Device::streams);
  return status(g_config.stream_status, "stream_synchronize failed");
}

OnyxStatus* event_create(OnyxDevice* device, OnyxEvent** out) {
  return create_object<Event>(device, &Device::events, "event_create failed", out);
}
void event_destroy(OnyxEvent* event) { destroy_object<Event>(event, &Device::events); }

OnyxStatus* event_record(OnyxEvent* event, OnyxStream* stream) {
  auto* ev = owned<Event>(event, &Device::events);
  auto* st = owned<Stream>(stream, &Device::streams);
  if (ev->device != st->device) host_broke_contract();
  ev->recorded = true;
  return status(g_config.stream_status, "event_record failed");
}

OnyxStatus* stream_wait_event(OnyxStream* stream, OnyxEvent* event) {
  owned<Stream>(stream, &Device::streams);
  owned<Event>(event, &Device::events);
  return status(g_config.stream_status, "stream_wait_event failed");
}

OnyxStatus* event_synchronize(OnyxEvent* event) {
  owned<Event>(event, &Device::events);
  return status(g_config.stream_status, "event_synchronize failed");
}

// --- capability ---------------------------------------------------------------

OnyxStatus* get_capability(OnyxDevice*, const OnyxGraphView* graph, OnyxNodeClaim* claims) {
  if (!graph || (graph->node_count && !claims)) host_broke_contract();
  for (size_t n = 0; n < graph->node_count; ++n) {
    if (claims[n].struct_size < ONYX_NODE_CLAIM_SIZE_1_0) host_broke_contract();
    const size_t k = n % std::max<size_t>(g_config.claimed.size(), 1);
    const bool claim = !g_config.claimed.empty() && g_config.claimed[k];
    claims[n].claimed = claim;
    claims[n].fused_group = claim && k < g_config.groups.size() ? g_config.groups[k] : 0;
    const int reason = k < g_config.reasons.size() ? g_config.reasons[k] : 0;
    if (reason == 1) std::strcpy(claims[n].reason, "the fuzz plugin says no");
    if (reason == 2) std::memset(claims[n].reason, 'r', sizeof claims[n].reason);
  }
  return status(g_config.capability_status, "capability query failed");
}

// --- kernels -------------------------------------------------------------------

struct Op {
  std::string type;
  std::vector<int32_t> inputs, outputs;  // graph value indices
};

struct Kernel {
  Device* device = nullptr;
  std::vector<Op> ops;
  std::vector<int32_t> inputs, outputs;  // the group's, as the host orders them
  ComputeMode mode = ComputeMode::kHonest;
};

OnyxStatus* kernel_create(OnyxDevice* device, const OnyxGraphView* graph, const uint32_t* nodes, size_t count,
                          OnyxKernel** out) {
  if (!graph || !nodes || !count || !out) host_broke_contract();
  if (OnyxStatus* s = status(g_config.kernel_create_status, "kernel_create failed")) return s;
  auto* k = new Kernel;
  k->device = reinterpret_cast<Device*>(device);
  for (size_t i = 0; i < count; ++i) {
    if (nodes[i] >= graph->node_count) host_broke_contract();
    const OnyxNodeView& node = graph->nodes[nodes[i]];
    Op op{node.op_type, {node.inputs, node.inputs + node.input_count}, {node.outputs, node.outputs + node.output_count}};
    for (int32_t v : op.outputs) k->outputs.push_back(v);
    k->ops.push_back(std::move(op));
  }
  for (const Op& op : k->ops)
    for (int32_t v : op.inputs)
      if (std::find(k->outputs.begin(), k->outputs.end(), v) == k->outputs.end()) k->inputs.push_back(v);
  {
    std::lock_guard lock(g_mutex);
    const size_t index = g_kernels_created++;
    k->mode = g_config.modes.empty() ? ComputeMode::kHonest : g_config.modes[index % g_config.modes.size()];
  }
  if (g_config.kernel_create_null) {
    delete k;
    *out = nullptr;
    return nullptr;
  }
  track(k);
  if (k->device) {
    std::lock_guard lock(g_mutex);
    k->device->kernels.insert(k);
  }
  *out = reinterpret_cast<OnyxKernel*>(k);
  return nullptr;
}

void kernel_destroy(OnyxKernel* kernel) {
  if (!kernel) return;
  auto* k = reinterpret_cast<Kernel*>(kernel);
  untrack(k);
  if (k->device) {
    std::lock_guard lock(g_mutex);
    k->device->kernels.erase(k);
  }
  delete k;
}

OnyxStatus* kernel_output_memory(OnyxKernel* kernel, OnyxOutputMemoryInfo* out, size_t count) {
  auto* k = reinterpret_cast<Kernel*>(kernel);
  if (!k || count != k->outputs.size() || (count && !out)) host_broke_contract();
  for (size_t o = 0; o < count && o < g_config.output_kinds.size(); ++o) {
    out[o].kind = g_config.output_kinds[o];
    out[o].input_index = g_config.output_inputs[o];
    if (out[o].kind == ONYX_OUTPUT_ALIASES_INPUT) g_declared_alias = true;
  }
  return status(g_config.output_memory_status, "kernel_output_memory failed");
}

struct Value {
  std::vector<int64_t> dims;
  std::vector<float> data;
};

size_t element_count(const std::vector<int64_t>& dims) {
  size_t n = 1;
  for (int64_t d : dims) n *= size_t(d);
  return n;
}

// out[i] = f(a[ia], b[ib]) with numpy broadcasting.
template <typename F>
bool broadcast(const Value& a, const Value& b, Value& out, F f) {
  const size_t rank = std::max(a.dims.size(), b.dims.size());
  auto dim = [&](const Value& v, size_t k) {
    const size_t pad = rank - v.dims.size();
    return k < pad ? int64_t(1) : v.dims[k - pad];
  };
  out.dims.assign(rank, 1);
  for (size_t k = 0; k < rank; ++k) {
    const int64_t x = dim(a, k), y = dim(b, k);
    if (x != y && x != 1 && y != 1) return false;
    out.dims[k] = x == 1 ? y : x;
  }
  out.data.assign(element_count(out.dims), 0.0f);
  for (size_t i = 0; i < out.data.size(); ++i) {
    size_t rest = i, ia = 0, ib = 0, sa = 1, sb = 1;
    for (size_t k = rank; k-- > 0;) {
      const size_t c = rest % size_t(out.dims[k]);
      rest /= size_t(out.dims[k]);
      if (dim(a, k) != 1) ia += c * sa;
      if (dim(b, k) != 1) ib += c * sb;
      sa *= size_t(dim(a, k));
      sb *= size_t(dim(b, k));
    }
    out.data[i] = f(a.data[ia], b.data[ib]);
  }
  return true;
}

struct ReluLoop {
  const float* in;
  float* out;
};

void relu_body(void* user, size_t begin, size_t end) {
  auto* r = static_cast<ReluLoop*>(user);
  for (size_t i = begin; i < end; ++i) r->out[i] = r->in[i] > 0.0f ? r->in[i] : 0.0f;
}

OnyxStatus* fail(const char* message) { return g_host->status_create(ONYX_STATUS_INTERNAL, message); }

// Evaluates the group: all inputs read first, then outputs requested and written.
OnyxStatus* compute_honestly(const Kernel& k, OnyxComputeContext* ctx) {
  const size_t input_count = g_host->ctx_input_count(ctx), output_count = g_host->ctx_output_count(ctx);
  if (input_count != k.inputs.size() || output_count != k.outputs.size()) host_broke_contract();
  std::map<int32_t, Value> values;
  for (size_t i = 0; i < input_count; ++i) {
    OnyxTensorView view{};
    view.struct_size = sizeof view;
    if (OnyxStatus* s = g_host->ctx_input(ctx, i, &view)) return s;
    if (view.dtype != ONYX_DTYPE_FLOAT32) return fail("the fuzz plugin computes float32 only");
    if (view.rank && !view.dims) host_broke_contract();
    Value v;
    v.dims.assign(view.dims, view.dims + view.rank);
    for (int64_t d : v.dims)
      if (d < 0) host_broke_contract();
    v.data.resize(element_count(v.dims));
    if (!v.data.empty() && !view.data) host_broke_contract();
    if (!v.data.empty()) std::memcpy(v.data.data(), view.data, v.data.size() * sizeof(float));
    values[k.inputs[i]] = std::move(v);
  }
  for (const Op& op : k.ops) {
    if (op.outputs.size() != 1) return fail("unexpected node");
    Value out;
    if (op.type == "Relu" && op.inputs.size() == 1) {
      out = values[op.inputs[0]];
      if (k.mode == ComputeMode::kParallelHonest) {
        std::vector<float> result(out.data.size());
        ReluLoop loop{out.data.data(), result.data()};
        g_host->ctx_parallel_for(ctx, out.data.size(), 1, relu_body, &loop);
        out.data = std::move(result);
      } else {
        for (float& x : out.data) x = x > 0.0f ? x : 0.0f;
      }
    } else if ((op.type == "Add" || op.type == "Mul") && op.inputs.size() == 2) {
      const bool add = op.type == "Add";
      if (!broadcast(values[op.inputs[0]], values[op.inputs[1]], out,
                     [add](float a, float b) { return add ? a + b : a * b; }))
        return fail("shapes do not broadcast");
    } else {
      return fail("the fuzz plugin has no such op");
    }
    values[op.outputs[0]] = std::move(out);
  }
  for (size_t o = 0; o < output_count; ++o) {
    const Value& v = values[k.outputs[o]];
    std::vector<int64_t> dims = v.dims;
    int32_t dtype = ONYX_DTYPE_FLOAT32;
    if (k.mode == ComputeMode::kWrongDims) dims = g_config.wrong_dims;
    if (k.mode == ComputeMode::kWrongDtype) dtype = ONYX_DTYPE_INT32;
    OnyxTensorView view{};
    view.struct_size = sizeof view;
    if (OnyxStatus* s = g_host->ctx_output(ctx, o, dtype, dims.data(), dims.size(), &view)) return s;
    if (view.dtype != dtype || view.rank != dims.size() || (view.rank && !view.dims) ||
        !std::equal(dims.begin(), dims.end(), view.dims))
      host_broke_contract();  // not the output asked for
    const size_t count = element_count(dims);
    if (count && !view.data) host_broke_contract();
    if (k.mode == ComputeMode::kTwiceThenHonest) {
      OnyxTensorView again{};
      again.struct_size = sizeof again;
      OnyxStatus* s = g_host->ctx_output(ctx, o, dtype, dims.data(), dims.size(), &again);
      if (!s) host_broke_contract();  // an output requested twice must be refused
      g_host->status_release(s);
    }
    // The bytes the view holds (4 per element for both dtypes used here).
    const size_t n = std::min(count, v.data.size());
    if (n) std::memcpy(view.data, v.data.data(), n * sizeof(float));
    if (count > n) std::memset(static_cast<float*>(view.data) + n, 0, (count - n) * sizeof(float));
  }
  return nullptr;
}

OnyxStatus* kernel_compute(OnyxKernel* kernel, OnyxComputeContext* ctx) {
  auto* k = reinterpret_cast<Kernel*>(kernel);
  if (!k || !ctx) host_broke_contract();
  if (g_host->abi_version >= ONYX_ABI_VERSION(1, 2)) check_stream(g_host->ctx_stream(ctx));
  switch (k->mode) {
    case ComputeMode::kNoOutputs: return nullptr;
    case ComputeMode::kFails: return g_host->status_create(g_config.error_code, "the fuzz kernel failed");
    case ComputeMode::kInventedStatus: return reinterpret_cast<OnyxStatus*>(uintptr_t(0x10));
    case ComputeMode::kScratchThenHonest: {
      void* scratch = nullptr;
      OnyxStatus* s = g_host->ctx_scratch(ctx, SIZE_MAX, &scratch);
      if (!s) host_broke_contract();  // no device has SIZE_MAX bytes
      g_host->status_release(s);
      if (OnyxStatus* small = g_host->ctx_scratch(ctx, 64, &scratch)) return small;
      if (!scratch) host_broke_contract();
      std::memset(scratch, 0, 64);
      break;
    }
    case ComputeMode::kProbesThenHonest: {
      OnyxTensorView view{};
      view.struct_size = sizeof view;
      OnyxStatus* s = g_host->ctx_input(ctx, g_host->ctx_input_count(ctx), &view);
      if (!s) host_broke_contract();
      g_host->status_release(s);
      s = g_host->ctx_output(ctx, g_host->ctx_output_count(ctx), ONYX_DTYPE_FLOAT32, nullptr, 0, &view);
      if (!s) host_broke_contract();
      g_host->status_release(s);
      s = g_host->ctx_output(ctx, 0, ONYX_DTYPE_FLOAT32, nullptr, 2, &view);
      if (!s) host_broke_contract();
      g_host->status_release(s);
      s = g_host->ctx_input(ctx, 0, nullptr);
      if (!s) host_broke_contract();
      g_host->status_release(s);
      break;
    }
    default: break;
  }
  return compute_honestly(*k, ctx);
}

// --- the compiled-partition cache (ABI 1.2): a blob is "FZK1" and the fuzzer's
// bytes; a well-formed one gives the kernel kernel_create would ---------------

constexpr char kBlobMagic[4] = {'F', 'Z', 'K', '1'};

const char* device_cache_compatibility(OnyxDevice* device) {
  if (!device) host_broke_contract();
  static const std::string long_one(300, 'c');
  switch (g_config.compatibility) {
    case 1: return "";
    case 2: return "fuzz 1";
    case 3: return long_one.c_str();
    default: return nullptr;
  }
}

OnyxStatus* kernel_serialize(OnyxKernel* kernel, OnyxBlobWriteFn write, void* writer) {
  if (!kernel || !write) host_broke_contract();
  if (g_config.serialize == 1) return g_host->status_create(ONYX_STATUS_UNIMPLEMENTED, "nothing to cache");
  if (g_config.serialize == 2) return g_host->status_create(g_config.error_code, "kernel_serialize failed");
  if (OnyxStatus* s = write(writer, kBlobMagic, sizeof kBlobMagic)) return s;
  // The rest in pieces of 1, 2, 3, ... bytes, and an empty write.
  size_t at = 0, piece = 1;
  while (at < g_config.blob_tail.size()) {
    const size_t n = std::min(piece++, g_config.blob_tail.size() - at);
    if (OnyxStatus* s = write(writer, g_config.blob_tail.data() + at, n)) return s;
    at += n;
  }
  if (OnyxStatus* s = write(writer, nullptr, 0)) return s;
  if (g_config.serialize == 3) return g_host->status_create(g_config.error_code, "kernel_serialize failed late");
  return nullptr;
}

OnyxStatus* kernel_create_from_cache(OnyxDevice* device, const OnyxGraphView* graph, const uint32_t* nodes,
                                     size_t count, const void* blob, size_t blob_size, OnyxKernel** out) {
  if (!graph || !nodes || !count || !out || (blob_size && !blob)) host_broke_contract();
  if (g_config.from_cache == 1) return g_host->status_create(ONYX_STATUS_INCOMPATIBLE, "blob layout 9");
  if (g_config.from_cache == 2) return g_host->status_create(ONYX_STATUS_DATA_LOSS, "blob corrupt");
  if (g_config.from_cache == 3) return g_host->status_create(g_config.error_code, "from_cache failed");
  // Every byte read is inside the blob: the host checked a checksum, not the plugin's format.
  if (blob_size < sizeof kBlobMagic || std::memcmp(blob, kBlobMagic, sizeof kBlobMagic) != 0)
    return g_host->status_create(ONYX_STATUS_DATA_LOSS, "not a fuzz blob");
  return kernel_create(device, graph, nodes, count, out);
}

// --- the table and the entry ----------------------------------------------------

OnyxProviderApi g_api;

OnyxStatus* create(const OnyxPluginCreateArgs* args, OnyxPlugin** plugin, const OnyxProviderApi** api) {
  if (!args || !plugin || !api || !args->host || args->struct_size < ONYX_PLUGIN_CREATE_ARGS_SIZE_1_0)
    host_broke_contract();
  if (args->abi_version < g_config.min_abi || args->abi_version > g_config.max_abi) host_broke_contract();
  g_host = args->host;
  if (OnyxStatus* s = status(g_config.create_status, "create failed")) return s;
  OnyxProviderApi t{};
  t.plugin_destroy = plugin_destroy;
  t.plugin_availability = plugin_availability;
  t.device_count = device_count;
  t.device_properties = device_properties;
  t.device_open = device_open;
  t.device_close = device_close;
  t.memory_alloc = memory_alloc;
  t.memory_free = memory_free;
  t.memory_copy = memory_copy;
  t.get_capability = get_capability;
  t.kernel_create = kernel_create;
  t.kernel_destroy = kernel_destroy;
  t.kernel_output_memory = kernel_output_memory;
  t.kernel_compute = kernel_compute;
  t.stream_create = stream_create;
  t.stream_destroy = stream_destroy;
  t.stream_synchronize = stream_synchronize;
  t.event_create = event_create;
  t.event_destroy = event_destroy;
  t.event_record = event_record;
  t.stream_wait_event = stream_wait_event;
  t.event_synchronize = event_synchronize;
  if (g_config.cache) {
    t.device_cache_compatibility = device_cache_compatibility;
    t.kernel_serialize = kernel_serialize;
    t.kernel_create_from_cache = kernel_create_from_cache;
  }
  // Bit k clears the k-th function pointer (they follow struct_size).
  auto* slots = reinterpret_cast<void**>(reinterpret_cast<char*>(&t) + sizeof(size_t));
  const size_t slot_count = (sizeof t - sizeof(size_t)) / sizeof(void*);
  for (size_t k = 0; k < slot_count && k < 32; ++k)
    if (g_config.null_functions & (1u << k)) slots[k] = nullptr;
  t.struct_size = g_config.table_size;
  g_api = t;
  // Lies: no instance, or no table (then an instance the host could not
  // destroy: a static one).
  static char unusable;
  *api = g_config.create_result == 2 ? nullptr : &g_api;
  if (g_config.create_result != 0) {
    *plugin = g_config.create_result == 1 ? nullptr : reinterpret_cast<OnyxPlugin*>(&unusable);
    return nullptr;
  }
  // Instances live in static storage: one the host cannot destroy (a table
  // without plugin_destroy, or too short to hold it) is the plugin's own
  // fault and must not show up as a leak of the host.
  static char instances[256];
  static size_t next = 0;
  char* p;
  {
    std::lock_guard lock(g_mutex);
    p = &instances[next++ % sizeof instances];
    g_plugins.insert(p);
  }
  *plugin = reinterpret_cast<OnyxPlugin*>(p);
  return nullptr;
}

OnyxPluginEntry g_entry;

}  // namespace

extern "C" {

ONYX_PLUGIN_EXPORT const OnyxPluginEntry* OnyxGetPluginEntry(void) { return &g_entry; }

// Chooses this load's behaviour from `data`. Not thread-safe; call between
// loads only.
ONYX_PLUGIN_EXPORT void onyx_fuzz_plugin_configure(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  Config c;
  static const uint32_t abis[] = {ONYX_ABI_VERSION(1, 0), ONYX_ABI_VERSION(1, 1), ONYX_ABI_VERSION(1, 2),
                                  ONYX_ABI_VERSION(1, 3), ONYX_ABI_VERSION(1, 7), ONYX_ABI_VERSION(2, 0),
                                  0, 0xFFFFFFFFu};
  static const uint32_t entry_sizes[] = {sizeof(OnyxPluginEntry), ONYX_PLUGIN_ENTRY_SIZE_1_0, 0, 8, 24, 40,
                                         sizeof(OnyxPluginEntry) + 64, 0xFFFFFFFFu};
  static const size_t table_sizes[] = {sizeof(OnyxProviderApi), ONYX_PROVIDER_API_SIZE_1_0,
                                       ONYX_PROVIDER_API_SIZE_1_2, ONYX_PROVIDER_API_SIZE_1_2 - 8, 0, 8,
                                       ONYX_PROVIDER_API_SIZE_1_0 - 8, sizeof(OnyxProviderApi) + 512, SIZE_MAX};
  static const size_t counts[] = {1, 1, 0, 2, 4096, 4097, SIZE_MAX};
  static const uint32_t alignments[] = {64, 0, 1, 3, 128, 4096, 1u << 20, 1u << 31, 0xFFFFFFFFu};
  static const int32_t codes[] = {ONYX_STATUS_INTERNAL, ONYX_STATUS_UNIMPLEMENTED, ONYX_STATUS_UNAVAILABLE,
                                  ONYX_STATUS_OUT_OF_MEMORY, ONYX_STATUS_OK, -1, 10, 1000, INT32_MIN};
  // Mostly well-formed so that the handshake passes and the later stages are reached.
  if (in.ConsumeIntegralInRange(0, 15) == 0) c.magic = in.ConsumeIntegral<uint32_t>();
  if (in.ConsumeIntegralInRange(0, 7) == 0) c.entry_size = in.PickValueInArray(entry_sizes);
  if (in.ConsumeIntegralInRange(0, 7) == 0) c.min_abi = in.PickValueInArray(abis);
  if (in.ConsumeIntegralInRange(0, 7) == 0) c.max_abi = in.PickValueInArray(abis);
  c.name_choice = in.ConsumeIntegralInRange(0, 7) == 0 ? in.ConsumeIntegralInRange(0, 5) : 0;
  c.version_choice = in.ConsumeIntegralInRange(0, 2);
  c.create_null = in.ConsumeIntegralInRange(0, 31) == 0;
  c.create_status = pick_status(in);
  c.create_result = in.ConsumeIntegralInRange(0, 15) == 0 ? in.ConsumeIntegralInRange(1, 2) : 0;
  if (in.ConsumeIntegralInRange(0, 7) == 0) c.table_size = in.PickValueInArray(table_sizes);
  if (in.ConsumeIntegralInRange(0, 7) == 0) c.null_functions = uint32_t(1) << in.ConsumeIntegralInRange(0, 25);
  c.availability = pick_status(in);
  if (in.ConsumeIntegralInRange(0, 3) == 0) c.device_count = in.PickValueInArray(counts);
  c.properties_status = pick_status(in);
  c.unterminated_names = in.ConsumeIntegralInRange(0, 7) == 0;
  if (in.ConsumeIntegralInRange(0, 3) == 0) c.memory_alignment = in.PickValueInArray(alignments);
  c.host_readable = in.ConsumeIntegralInRange(0, 3) != 0;
  c.open_status = pick_status(in);
  c.open_null_device = in.ConsumeIntegralInRange(0, 31) == 0;
  c.alloc_status = in.ConsumeIntegralInRange(0, 15) == 0 ? StatusKind::kError : StatusKind::kOk;
  c.copy_status = in.ConsumeIntegralInRange(0, 15) == 0 ? StatusKind::kError : StatusKind::kOk;
  c.capability_status = pick_status(in);
  const size_t nodes = in.ConsumeIntegralInRange<size_t>(0, 4);
  for (size_t n = 0; n < nodes; ++n) {
    c.claimed.push_back(in.ConsumeBool());
    const int group = in.ConsumeIntegralInRange(0, 7);
    c.groups.push_back(group < 4 ? 0 : group < 6 ? 1 : group == 6 ? 2 : in.ConsumeIntegral<uint32_t>());
    c.reasons.push_back(in.ConsumeIntegralInRange(0, 2));
  }
  c.kernel_create_status = pick_status(in);
  c.kernel_create_null = in.ConsumeIntegralInRange(0, 31) == 0;
  c.output_memory_status = pick_status(in);
  const size_t declared = in.ConsumeIntegralInRange<size_t>(0, 3);
  for (size_t o = 0; o < declared; ++o) {
    static const int32_t kinds[] = {ONYX_OUTPUT_FRESH, ONYX_OUTPUT_MAY_OVERWRITE_INPUT, ONYX_OUTPUT_ALIASES_INPUT, 3,
                                    -1};
    static const int32_t inputs[] = {0, 1, 2, -1, 3, 1000, INT32_MIN};
    c.output_kinds.push_back(in.PickValueInArray(kinds));
    c.output_inputs.push_back(in.PickValueInArray(inputs));
  }
  const size_t kernels = in.ConsumeIntegralInRange<size_t>(0, 3);
  for (size_t k = 0; k < kernels; ++k) {
    const int mode = in.ConsumeIntegralInRange(0, 2 * int(ComputeMode::kCount) - 1);
    c.modes.push_back(mode >= int(ComputeMode::kCount) ? ComputeMode::kHonest : ComputeMode(mode));
  }
  c.error_code = in.PickValueInArray(codes);
  const size_t rank = in.ConsumeIntegralInRange<size_t>(0, 3);
  for (size_t k = 0; k < rank; ++k) c.wrong_dims.push_back(in.ConsumeIntegralInRange<int64_t>(-2, 7));
  c.stable_id = in.ConsumeIntegralInRange(0, 3);
  c.free_memory = in.ConsumeBool() ? 0 : in.ConsumeIntegral<uint64_t>();
  c.asynchronous = in.ConsumeBool();
  c.stream_status = in.ConsumeIntegralInRange(0, 7) == 0 ? pick_status(in) : StatusKind::kOk;
  c.cache = in.ConsumeBool();
  c.compatibility = in.ConsumeIntegralInRange(0, 3);
  c.serialize = in.ConsumeIntegralInRange(0, 5) < 3 ? 0 : in.ConsumeIntegralInRange(1, 3);
  c.blob_tail = in.ConsumeBytes<uint8_t>(in.ConsumeIntegralInRange<size_t>(0, 64));
  c.from_cache = in.ConsumeIntegralInRange(0, 5) < 3 ? 0 : in.ConsumeIntegralInRange(1, 3);
  g_config = std::move(c);
  g_kernels_created = 0;
  g_declared_alias = false;

  OnyxPluginEntry e{};
  e.magic = g_config.magic;
  e.struct_size = g_config.entry_size;
  e.min_abi_version = g_config.min_abi;
  e.max_abi_version = g_config.max_abi;
  e.name = kNames[g_config.name_choice];
  e.version = kVersions[g_config.version_choice];
  e.create = g_config.create_null ? nullptr : create;
  g_entry = e;
}

// Plugins, devices, kernels and buffers created and not yet released.
ONYX_PLUGIN_EXPORT size_t onyx_fuzz_plugin_live_objects(void) {
  std::lock_guard lock(g_mutex);
  return g_live.size();
}

// Whether a successful run's outputs must be right: false once a kernel
// declared an output a view of an input (then it writes nothing there, and
// the value is the input's bytes by contract).
ONYX_PLUGIN_EXPORT bool onyx_fuzz_plugin_results_checkable(void) { return !g_declared_alias; }

}  // extern "C"
