// plugin_sdk.hpp: a small C++ layer over the provider ABI (onyx_provider.h)
// for writing provider plugins. Header-only; a plugin compiles it in, so
// nothing C++ crosses the ABI.
//
// What it gives a plugin author:
//   - NodeInfo: an owned copy of one node of a graph view (attributes, input
//     types/shapes, constant inputs), with typed attribute getters;
//   - Kernel + KernelRegistry: register kernels by (domain, op, opset range)
//     with a predicate that explains why a node is declined;
//   - ComputeContext: typed access to inputs/outputs and the host thread pool;
//   - HostMemoryProvider: a complete OnyxProviderApi for synchronous devices
//     whose memory is host memory (CPU-like), driven by a KernelRegistry.
// Device plugins with their own memory (CUDA, ROCm) use NodeInfo, Kernel and
// ComputeContext and fill the memory/stream functions themselves.
//
// Thread-safety: everything here is safe to use from several threads once the
// registry is built (registration happens at plugin creation).
#pragma once

#include <onyx_provider.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace onyx::sdk {

// ---------------------------------------------------------------------------
// Host access and status
// ---------------------------------------------------------------------------

// The host's table, kept by value from plugin creation (see
// HostMemoryProvider or call set_host yourself). By value, because one
// process may load the plugin from several environments, each handing over
// its own table object and destroying it with its environment, while the
// functions in them are the same: a stored pointer would dangle.
// Limitation: one host implementation per process (two different hosts
// loading the same plugin at once would share the last table given).
inline OnyxHostApi& host_storage() {
  static OnyxHostApi host{};
  return host;
}
inline void set_host(const OnyxHostApi* host) {
  OnyxHostApi copy{};
  std::memcpy(&copy, host, std::min(host->struct_size, sizeof copy));
  copy.struct_size = std::min(host->struct_size, sizeof copy);
  // Rewrite only when it changes: kernels of another environment may be
  // reading it right now.
  if (std::memcmp(&copy, &host_storage(), sizeof copy) != 0) host_storage() = copy;
}
inline const OnyxHostApi& host() { return host_storage(); }

// Creates a host status with a printf-style message. Returns nullptr for OK.
[[gnu::format(printf, 2, 3)]] inline OnyxStatus* make_status(OnyxStatusCode code, const char* fmt,
                                                              ...) {
  char buf[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  return host().status_create(code, buf);
}

#define ONYX_SDK_RETURN_IF_ERROR(expr)   \
  do {                                   \
    OnyxStatus* onyx_sdk_st_ = (expr);   \
    if (onyx_sdk_st_) return onyx_sdk_st_; \
  } while (0)

// Runs `fn` and turns any C++ exception into a status: nothing may escape
// through the C ABI.
template <typename Fn>
OnyxStatus* guard(Fn&& fn) noexcept {
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    return make_status(ONYX_STATUS_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return make_status(ONYX_STATUS_INTERNAL, "%s", e.what());
  } catch (...) {
    return make_status(ONYX_STATUS_INTERNAL, "unknown C++ exception in plugin");
  }
}

// ---------------------------------------------------------------------------
// Data types
// ---------------------------------------------------------------------------

// The ABI's dtype table (onyx_dtype.h). Bytes per element; 0 for sub-byte
// and non-numeric types.
inline size_t dtype_size(int32_t dtype) { return onyx_dtype_size(dtype); }
// "float32", ...; "unknown" for codes the ABI does not define.
inline const char* dtype_name(int32_t dtype) {
  const char* name = onyx_dtype_name(dtype);
  return name ? name : "unknown";
}

inline int64_t element_count(std::span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// ---------------------------------------------------------------------------
// NodeInfo: an owned copy of a node, its attributes and its value infos
// ---------------------------------------------------------------------------

// A constant input (initializer) copied to host memory at kernel creation.
struct ConstantTensor {
  int32_t dtype = 0;
  std::vector<int64_t> dims;
  std::vector<unsigned char> bytes;
  template <typename T>
  const T* data() const { return reinterpret_cast<const T*>(bytes.data()); }
  int64_t size() const { return element_count(dims); }
};

struct ValueDesc {
  bool present = false;             // false for an omitted optional input
  int32_t dtype = 0;
  int32_t rank = -1;                // -1: unknown
  std::vector<int64_t> dims;        // -1 entries: unknown
  std::optional<ConstantTensor> constant;
  bool shape_known() const {
    return rank >= 0 && std::all_of(dims.begin(), dims.end(), [](int64_t d) { return d >= 0; });
  }
};

struct Attribute {
  int32_t type = ONYX_ATTR_UNDEFINED;
  double f = 0;
  int64_t i = 0;
  std::string s;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::optional<ConstantTensor> tensor;
  const OnyxGraphView* graph = nullptr;  // valid only inside kernel_create
};

inline ConstantTensor copy_tensor(const OnyxTensorView& view) {
  ConstantTensor t;
  t.dtype = view.dtype;
  t.dims.assign(view.dims, view.dims + view.rank);
  size_t bytes = size_t(element_count(t.dims)) * dtype_size(view.dtype);
  if (view.dtype == ONYX_DTYPE_INT4 || view.dtype == ONYX_DTYPE_UINT4 ||
      view.dtype == ONYX_DTYPE_FLOAT4E2M1)
    bytes = (size_t(element_count(t.dims)) + 1) / 2;
  t.bytes.resize(bytes);
  if (bytes) std::memcpy(t.bytes.data(), view.data, bytes);
  return t;
}

class NodeInfo {
 public:
  std::string name, op_type, domain;
  int64_t opset = 0;
  std::vector<ValueDesc> inputs, outputs;
  std::vector<std::pair<std::string, Attribute>> attributes;

  NodeInfo(const OnyxGraphView& graph, uint32_t node_index, bool copy_constants = true) {
    const OnyxNodeView& n = graph.nodes[node_index];
    name = n.name ? n.name : "";
    op_type = n.op_type;
    domain = n.domain ? n.domain : "";
    opset = n.opset_version;
    auto desc = [&](int32_t index) {
      ValueDesc d;
      if (index == ONYX_NO_VALUE) return d;
      const OnyxValueInfo& v = graph.values[index];
      d.present = true;
      d.dtype = v.dtype;
      d.rank = v.rank;
      if (v.rank > 0) d.dims.assign(v.dims, v.dims + v.rank);
      if (copy_constants && (v.flags & ONYX_VALUE_CONSTANT) && v.constant)
        d.constant = copy_tensor(*v.constant);
      return d;
    };
    for (size_t k = 0; k < n.input_count; ++k) inputs.push_back(desc(n.inputs[k]));
    for (size_t k = 0; k < n.output_count; ++k) outputs.push_back(desc(n.outputs[k]));
    for (size_t k = 0; k < n.attribute_count; ++k) {
      const OnyxAttribute& a = n.attributes[k];
      Attribute out;
      out.type = a.type;
      out.f = a.f;
      out.i = a.i;
      if (a.s) out.s.assign(a.s, a.s_len);
      if (a.type == ONYX_ATTR_FLOATS) out.floats.assign(a.floats, a.floats + a.count);
      if (a.type == ONYX_ATTR_INTS) out.ints.assign(a.ints, a.ints + a.count);
      if (a.type == ONYX_ATTR_STRINGS)
        for (size_t j = 0; j < a.count; ++j) out.strings.emplace_back(a.strings[j]);
      if (a.type == ONYX_ATTR_TENSOR && a.tensor) out.tensor = copy_tensor(*a.tensor);
      out.graph = a.graph;
      attributes.emplace_back(a.name, std::move(out));
    }
  }

  const Attribute* attr(std::string_view key) const {
    for (const auto& [k, v] : attributes)
      if (k == key) return &v;
    return nullptr;
  }
  bool has(std::string_view key) const { return attr(key) != nullptr; }
  int64_t get_int(std::string_view key, int64_t fallback) const {
    const Attribute* a = attr(key);
    return a ? a->i : fallback;
  }
  double get_float(std::string_view key, double fallback) const {
    const Attribute* a = attr(key);
    return a ? a->f : fallback;
  }
  std::string get_string(std::string_view key, std::string fallback) const {
    const Attribute* a = attr(key);
    return a ? a->s : fallback;
  }
  std::vector<int64_t> get_ints(std::string_view key, std::vector<int64_t> fallback = {}) const {
    const Attribute* a = attr(key);
    return a ? a->ints : fallback;
  }
  std::vector<float> get_floats(std::string_view key, std::vector<float> fallback = {}) const {
    const Attribute* a = attr(key);
    return a ? a->floats : fallback;
  }
  bool input_present(size_t k) const { return k < inputs.size() && inputs[k].present; }
  int32_t input_dtype(size_t k) const { return input_present(k) ? inputs[k].dtype : 0; }
};

// ---------------------------------------------------------------------------
// Compute context
// ---------------------------------------------------------------------------

// A borrowed tensor inside kernel_compute.
struct Tensor {
  int32_t dtype = 0;
  std::span<const int64_t> dims;
  void* raw = nullptr;
  template <typename T>
  T* data() const { return static_cast<T*>(raw); }
  int64_t size() const { return element_count(dims); }
  size_t rank() const { return dims.size(); }
  int64_t dim(size_t k) const { return dims[k]; }
  std::vector<int64_t> shape() const { return {dims.begin(), dims.end()}; }
};

class ComputeContext {
 public:
  explicit ComputeContext(OnyxComputeContext* ctx) : ctx_(ctx) {}

  size_t input_count() const { return host().ctx_input_count(ctx_); }
  size_t output_count() const { return host().ctx_output_count(ctx_); }
  // Returns nullopt for an omitted optional input.
  std::optional<Tensor> input(size_t k) const {
    if (k >= input_count()) return std::nullopt;
    OnyxTensorView v{sizeof(OnyxTensorView), 0, 0, 0, nullptr, nullptr};
    if (OnyxStatus* st = host().ctx_input(ctx_, k, &v)) {  // unreachable: k was checked above
      host().status_release(st);
      return std::nullopt;
    }
    if (v.dtype == ONYX_DTYPE_UNDEFINED) return std::nullopt;  // omitted optional input
    return Tensor{v.dtype, {v.dims, v.rank}, v.data};
  }
  // The input that must be present (the node was validated at creation).
  Tensor in(size_t k) const { return *input(k); }
  // Asks the host for output k of type `dtype` with shape `dims`.
  OnyxStatus* output(size_t k, int32_t dtype, std::span<const int64_t> dims, Tensor* out) {
    OnyxTensorView v{sizeof(OnyxTensorView), 0, 0, 0, nullptr, nullptr};
    ONYX_SDK_RETURN_IF_ERROR(host().ctx_output(ctx_, k, dtype, dims.data(), dims.size(), &v));
    *out = Tensor{v.dtype, {v.dims, v.rank}, v.data};
    return nullptr;
  }
  OnyxStatus* scratch(size_t bytes, void** out) { return host().ctx_scratch(ctx_, bytes, out); }
  OnyxStream* stream() const { return host().ctx_stream(ctx_); }
  size_t thread_count() const { return host().ctx_thread_count(ctx_); }

  // Runs fn(begin, end) over [0, n) on the host's pool; chunks hold at least
  // `grain` items. fn must not throw.
  template <typename Fn>
  void parallel_for(size_t n, size_t grain, Fn&& fn) {
    if (n == 0) return;
    if (n <= grain || thread_count() <= 1) {
      fn(size_t(0), n);
      return;
    }
    host().ctx_parallel_for(
        ctx_, n, grain,
        [](void* user, size_t b, size_t e) { (*static_cast<Fn*>(user))(b, e); }, &fn);
  }
  OnyxComputeContext* raw() { return ctx_; }

 private:
  OnyxComputeContext* ctx_;
};

// ---------------------------------------------------------------------------
// Kernels and their registry
// ---------------------------------------------------------------------------

class Kernel {
 public:
  virtual ~Kernel() = default;
  // Must be safe to call concurrently (no unsynchronized mutable state).
  virtual OnyxStatus* compute(ComputeContext& ctx) = 0;
  // Memory declarations, one per output; default: every output is fresh.
  virtual void output_memory(std::span<OnyxOutputMemoryInfo> out) const { (void)out; }
};

struct KernelDef {
  std::string domain;       // "" for ai.onnx
  std::string op_type;
  int64_t since_version = 1;  // opset range this kernel implements
  int64_t until_version = 1 << 30;
  // Returns "" when the node is supported, else the reason it is declined.
  std::function<std::string(const NodeInfo&)> supports;
  std::function<std::unique_ptr<Kernel>(const NodeInfo&)> create;
};

class KernelRegistry {
 public:
  void add(KernelDef def) { defs_.push_back(std::move(def)); }

  // Finds the kernel for a node, or explains why there is none.
  const KernelDef* find(const NodeInfo& node, std::string* reason) const {
    bool op_known = false;
    for (const KernelDef& d : defs_) {
      if (d.domain != node.domain || d.op_type != node.op_type) continue;
      op_known = true;
      if (node.opset < d.since_version || node.opset > d.until_version) continue;
      std::string why = d.supports ? d.supports(node) : std::string();
      if (why.empty()) return &d;
      *reason = why;
      return nullptr;
    }
    *reason = op_known ? "no kernel for opset " + std::to_string(node.opset) + " of " +
                             qualified(node)
                       : "no kernel for op " + qualified(node);
    return nullptr;
  }
  const std::vector<KernelDef>& defs() const { return defs_; }

  static std::string qualified(const NodeInfo& n) {
    return n.domain.empty() ? n.op_type : n.domain + "::" + n.op_type;
  }

 private:
  std::vector<KernelDef> defs_;
};

// Common supports() predicates.
inline std::string require_float_inputs(const NodeInfo& n, std::initializer_list<int32_t> types) {
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    if (!n.inputs[k].present) continue;
    if (std::find(types.begin(), types.end(), n.inputs[k].dtype) == types.end())
      return std::string("input ") + std::to_string(k) + " has unsupported type " +
             dtype_name(n.inputs[k].dtype);
  }
  return {};
}

// ---------------------------------------------------------------------------
// HostMemoryProvider: a full provider table for synchronous host-memory devices
// ---------------------------------------------------------------------------

struct HostMemoryProviderConfig {
  const char* device_name = "host";
  const char* vendor = "";
  // Probe for the device: "" when usable, else the reason it is unavailable.
  std::function<std::string()> availability;
  // Fills the registry at plugin creation.
  std::function<void(KernelRegistry&)> register_kernels;
};

namespace detail {

struct Plugin {
  HostMemoryProviderConfig config;
  KernelRegistry registry;
};
struct Device {
  Plugin* plugin;
};
struct KernelBox {
  std::unique_ptr<Kernel> kernel;
};

inline Plugin* as_plugin(OnyxPlugin* p) { return reinterpret_cast<Plugin*>(p); }
inline Device* as_device(OnyxDevice* d) { return reinterpret_cast<Device*>(d); }

inline const OnyxProviderApi& host_memory_api() {
  static const OnyxProviderApi api = [] {
    OnyxProviderApi a{};
    a.struct_size = sizeof(OnyxProviderApi);
    a.plugin_destroy = [](OnyxPlugin* p) { delete as_plugin(p); };
    a.plugin_availability = [](OnyxPlugin* p) -> OnyxStatus* {
      return guard([&]() -> OnyxStatus* {
        auto& probe = as_plugin(p)->config.availability;
        std::string why = probe ? probe() : std::string();
        return why.empty() ? nullptr : make_status(ONYX_STATUS_UNAVAILABLE, "%s", why.c_str());
      });
    };
    a.device_count = [](OnyxPlugin* p) -> size_t {
      auto& probe = as_plugin(p)->config.availability;
      try {
        return probe && !probe().empty() ? 0 : 1;
      } catch (...) {
        return 0;
      }
    };
    a.device_properties = [](OnyxPlugin* p, size_t index, OnyxDeviceProperties* out) {
      return guard([&]() -> OnyxStatus* {
        if (!out || index != 0)
          return make_status(ONYX_STATUS_INVALID_ARGUMENT, "device index %zu out of range", index);
        size_t size = out->struct_size;
        std::memset(out, 0, size);
        out->struct_size = size;
        const auto& c = as_plugin(p)->config;
        std::snprintf(out->name, sizeof out->name, "%s", c.device_name);
        std::snprintf(out->vendor, sizeof out->vendor, "%s", c.vendor);
        out->kind = ONYX_DEVICE_CPU;
        out->host_can_read_device_memory = true;
        out->asynchronous = false;
        if (ONYX_HAS_FIELD(out, OnyxDeviceProperties, memory_alignment)) out->memory_alignment = 64;
        return nullptr;
      });
    };
    a.device_open = [](OnyxPlugin* p, size_t index, const OnyxKeyValue*, size_t,
                       const OnyxExtension*, OnyxDevice** out) {
      return guard([&]() -> OnyxStatus* {
        if (!out) return make_status(ONYX_STATUS_INVALID_ARGUMENT, "device_open: out is NULL");
        if (index != 0)
          return make_status(ONYX_STATUS_INVALID_ARGUMENT, "device index %zu out of range", index);
        *out = reinterpret_cast<OnyxDevice*>(new Device{as_plugin(p)});
        return nullptr;
      });
    };
    a.device_close = [](OnyxDevice* d) { delete as_device(d); };
    a.memory_alloc = [](OnyxDevice*, int32_t, size_t bytes, size_t alignment, void** out) {
      return guard([&]() -> OnyxStatus* {
        if (!out) return make_status(ONYX_STATUS_INVALID_ARGUMENT, "memory_alloc: out is NULL");
        if (alignment == 0 || (alignment & (alignment - 1)))
          return make_status(ONYX_STATUS_INVALID_ARGUMENT,
                             "memory_alloc: alignment %zu is not a power of two", alignment);
        *out = nullptr;
        if (bytes == 0) return nullptr;
        alignment = std::max<size_t>(alignment, 64);
        size_t rounded = (bytes + alignment - 1) / alignment * alignment;
        *out = std::aligned_alloc(alignment, rounded);
        return *out ? nullptr
                    : make_status(ONYX_STATUS_OUT_OF_MEMORY, "cannot allocate %zu bytes", bytes);
      });
    };
    a.memory_free = [](OnyxDevice*, int32_t, void* ptr) { std::free(ptr); };
    a.memory_copy = [](OnyxDevice*, OnyxStream*, int32_t direction, void* dst, const void* src,
                       size_t bytes) -> OnyxStatus* {
      return guard([&]() -> OnyxStatus* {
        if (direction < ONYX_COPY_HOST_TO_DEVICE || direction > ONYX_COPY_DEVICE_TO_DEVICE)
          return make_status(ONYX_STATUS_INVALID_ARGUMENT, "memory_copy: bad direction %d",
                             direction);
        if (bytes && (!dst || !src))
          return make_status(ONYX_STATUS_INVALID_ARGUMENT, "memory_copy: NULL buffer");
        if (bytes) std::memmove(dst, src, bytes);
        return nullptr;
      });
    };
    a.get_capability = [](OnyxDevice* d, const OnyxGraphView* graph, OnyxNodeClaim* claims) {
      return guard([&]() -> OnyxStatus* {
        if (!graph || !claims)
          return make_status(ONYX_STATUS_INVALID_ARGUMENT, "get_capability: NULL argument");
        for (size_t k = 0; k < graph->node_count; ++k) {
          NodeInfo node(*graph, uint32_t(k), /*copy_constants=*/true);
          std::string reason;
          claims[k].claimed = as_device(d)->plugin->registry.find(node, &reason) != nullptr;
          claims[k].fused_group = 0;
          std::snprintf(claims[k].reason, sizeof claims[k].reason, "%s", reason.c_str());
        }
        return nullptr;
      });
    };
    a.kernel_create = [](OnyxDevice* d, const OnyxGraphView* graph, const uint32_t* nodes,
                         size_t node_count, OnyxKernel** out) {
      return guard([&]() -> OnyxStatus* {
        if (!graph || !nodes || !out)
          return make_status(ONYX_STATUS_INVALID_ARGUMENT, "kernel_create: NULL argument");
        if (node_count != 1)
          return make_status(ONYX_STATUS_UNIMPLEMENTED, "this provider has no fused kernels");
        if (nodes[0] >= graph->node_count)
          return make_status(ONYX_STATUS_INVALID_ARGUMENT, "kernel_create: node %u out of range",
                             nodes[0]);
        NodeInfo node(*graph, nodes[0]);
        std::string reason;
        const KernelDef* def = as_device(d)->plugin->registry.find(node, &reason);
        if (!def)
          return make_status(ONYX_STATUS_UNIMPLEMENTED, "node '%s': %s", node.name.c_str(),
                             reason.c_str());
        auto kernel = def->create(node);
        if (!kernel)
          return make_status(ONYX_STATUS_INTERNAL, "node '%s': kernel creation failed",
                             node.name.c_str());
        *out = reinterpret_cast<OnyxKernel*>(new KernelBox{std::move(kernel)});
        return nullptr;
      });
    };
    a.kernel_destroy = [](OnyxKernel* k) { delete reinterpret_cast<KernelBox*>(k); };
    a.kernel_output_memory = [](OnyxKernel* k, OnyxOutputMemoryInfo* out, size_t count) {
      return guard([&]() -> OnyxStatus* {
        reinterpret_cast<KernelBox*>(k)->kernel->output_memory({out, count});
        return nullptr;
      });
    };
    a.kernel_compute = [](OnyxKernel* k, OnyxComputeContext* raw) {
      return guard([&]() -> OnyxStatus* {
        ComputeContext ctx(raw);
        return reinterpret_cast<KernelBox*>(k)->kernel->compute(ctx);
      });
    };
    a.query_extension = [](OnyxPlugin*, uint32_t) -> const void* { return nullptr; };
    return a;
  }();
  return api;
}

}  // namespace detail

// Creates a plugin from a config; use in the OnyxPluginEntry's create.
inline OnyxStatus* create_host_memory_provider(const OnyxPluginCreateArgs* args,
                                               HostMemoryProviderConfig config,
                                               OnyxPlugin** plugin, const OnyxProviderApi** api) {
  if (!args || !args->host || !plugin || !api) return nullptr;  // cannot even report
  set_host(args->host);
  return guard([&]() -> OnyxStatus* {
    auto p = std::make_unique<detail::Plugin>();
    p->config = std::move(config);
    if (p->config.register_kernels) p->config.register_kernels(p->registry);
    *plugin = reinterpret_cast<OnyxPlugin*>(p.release());
    *api = &detail::host_memory_api();
    return nullptr;
  });
}

}  // namespace onyx::sdk
