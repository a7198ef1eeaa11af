// The oneDNN provider: a host-memory device whose kernels are oneDNN
// primitives. This file is the provider table of libonyx_onednn_kernels.so,
// which the plugin proper (shim.cpp) loads. It claims only the nodes its ops
// accept (ops.h: each decline has a reason), and fuses MatMul/Gemm + bias +
// activation and Conv + BatchNormalization + activation chains into single
// kernels through the capability query.
//
// Device options (device_open): allow_reduced_precision=1 lets MatMul, Gemm
// and Conv compute in bf16 (f32 accumulation) on CPUs with native bf16.
#include <cstdlib>
#include <cstring>

#include "ops.h"

namespace onyx::onednn {
namespace {

using sdk::guard;
using sdk::make_status;

struct Device {
  DeviceConfig config;
};
struct KernelBox {
  std::unique_ptr<sdk::Kernel> kernel;
};

Device* as_device(OnyxDevice* d) { return reinterpret_cast<Device*>(d); }
KernelBox* as_kernel(OnyxKernel* k) { return reinterpret_cast<KernelBox*>(k); }

// "" when oneDNN can make a CPU engine, else why not.
std::string availability() {
  try {
    cpu_engine();
    return {};
  } catch (const dnnl::error& e) {
    return std::string("oneDNN cannot create a CPU engine: ") + e.what();
  }
}

std::string device_name() {
  const dnnl_version_t* v = dnnl_version();
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->patch) + (cpu_has_native_bf16() ? " (CPU, native bf16)" : " (CPU)");
}

bool truthy(const char* value) {
  return value && (std::strcmp(value, "1") == 0 || std::strcmp(value, "true") == 0);
}

// ---- fused groups -----------------------------------------------------------

bool is_group_head(const std::string& op) { return op == "MatMul" || op == "Gemm" || op == "Conv"; }

std::string group_supports(const Chain& chain) {
  return chain[0].info.op_type == "Conv" ? conv_group_supports(chain) : matmul_group_supports(chain);
}

// Readers of each value: (node, input index).
std::vector<std::vector<std::pair<uint32_t, int>>> value_readers(const OnyxGraphView& g) {
  std::vector<std::vector<std::pair<uint32_t, int>>> readers(g.value_count);
  for (size_t n = 0; n < g.node_count; ++n)
    for (size_t k = 0; k < g.nodes[n].input_count; ++k)
      if (int32_t v = g.nodes[n].inputs[k]; v >= 0) readers[size_t(v)].push_back({uint32_t(n), int(k)});
  return readers;
}

// Grows a chain from `head` while the next node is the only reader of the
// previous output (so the group is convex and its intermediates private).
std::vector<uint32_t> grow_chain(const OnyxGraphView& g, uint32_t head, const std::vector<bool>& taken,
                                 const std::vector<std::vector<std::pair<uint32_t, int>>>& readers) {
  std::vector<uint32_t> nodes = {head};
  Chain chain;
  chain.push_back({NodeInfo(g, head), -1});
  while (chain.size() < 3) {
    const OnyxNodeView& last = g.nodes[nodes.back()];
    if (last.output_count != 1 || last.outputs[0] < 0) break;
    size_t v = size_t(last.outputs[0]);
    if ((g.values[v].flags & ONYX_VALUE_GRAPH_OUTPUT) || readers[v].size() != 1) break;
    auto [next, input] = readers[v][0];
    if (taken[next]) break;
    chain.push_back({NodeInfo(g, next), input});
    if (!group_supports(chain).empty()) break;
    nodes.push_back(next);
  }
  return nodes;
}

OnyxStatus* get_capability(OnyxDevice* device, const OnyxGraphView* graph, OnyxNodeClaim* claims) {
  return guard([&]() -> OnyxStatus* {
    if (!device || !graph || !claims) return make_status(ONYX_STATUS_INVALID_ARGUMENT, "get_capability: NULL argument");
    const OnyxGraphView& g = *graph;
    for (size_t k = 0; k < g.node_count; ++k) {
      NodeInfo node(g, uint32_t(k));
      std::string reason;
      claims[k].claimed = find_op(node, &reason) != nullptr;
      claims[k].fused_group = 0;
      std::snprintf(claims[k].reason, sizeof claims[k].reason, "%s", reason.c_str());
    }
    auto readers = value_readers(g);
    std::vector<bool> taken(g.node_count, false);
    uint32_t next_group = 1;
    for (uint32_t k = 0; k < g.node_count; ++k) {
      if (taken[k] || !claims[k].claimed || !is_group_head(g.nodes[k].op_type)) continue;
      std::vector<uint32_t> nodes = grow_chain(g, k, taken, readers);
      if (nodes.size() < 2) continue;
      std::string name;
      for (uint32_t n : nodes) name += (name.empty() ? "" : "+") + std::string(g.nodes[n].op_type);
      for (uint32_t n : nodes) {
        taken[n] = true;
        claims[n].claimed = true;
        claims[n].fused_group = next_group;
        std::snprintf(claims[n].reason, sizeof claims[n].reason, "fused %s", name.c_str());
      }
      ++next_group;
    }
    return nullptr;
  });
}

OnyxStatus* kernel_create(OnyxDevice* device, const OnyxGraphView* graph, const uint32_t* nodes, size_t count,
                          OnyxKernel** out) {
  return guard([&]() -> OnyxStatus* {
    if (!device || !graph || !nodes || !out || count == 0)
      return make_status(ONYX_STATUS_INVALID_ARGUMENT, "kernel_create: NULL or empty argument");
    for (size_t i = 0; i < count; ++i)
      if (nodes[i] >= graph->node_count)
        return make_status(ONYX_STATUS_INVALID_ARGUMENT, "kernel_create: node %u out of range", nodes[i]);
    const DeviceConfig& config = as_device(device)->config;
    std::unique_ptr<sdk::Kernel> kernel;
    if (count == 1) {
      NodeInfo node(*graph, nodes[0]);
      std::string reason;
      const OpDef* def = find_op(node, &reason);
      if (!def) return make_status(ONYX_STATUS_UNIMPLEMENTED, "node '%s': %s", node.name.c_str(), reason.c_str());
      kernel = def->create(node, config);
    } else {
      Chain chain;
      for (size_t i = 0; i < count; ++i) {
        int from_previous = -1;
        if (i > 0) {
          const OnyxNodeView& prev = graph->nodes[nodes[i - 1]];
          const OnyxNodeView& node = graph->nodes[nodes[i]];
          for (size_t k = 0; k < node.input_count && from_previous < 0; ++k)
            if (prev.output_count == 1 && node.inputs[k] == prev.outputs[0]) from_previous = int(k);
        }
        chain.push_back({NodeInfo(*graph, nodes[i]), from_previous});
      }
      std::string why = is_group_head(chain[0].info.op_type) ? group_supports(chain) : "not a fused group";
      if (!why.empty())
        return make_status(ONYX_STATUS_UNIMPLEMENTED, "fused group at node '%s': %s", chain[0].info.name.c_str(),
                           why.c_str());
      kernel = chain[0].info.op_type == "Conv" ? create_conv_group(chain, config) : create_matmul_group(chain, config);
    }
    *out = reinterpret_cast<OnyxKernel*>(new KernelBox{std::move(kernel)});
    return nullptr;
  });
}

OnyxStatus* device_open(OnyxPlugin*, size_t index, const OnyxKeyValue* options, size_t option_count,
                        const OnyxExtension*, OnyxDevice** out) {
  return guard([&]() -> OnyxStatus* {
    if (!out) return make_status(ONYX_STATUS_INVALID_ARGUMENT, "device_open: out is NULL");
    if (index != 0) return make_status(ONYX_STATUS_INVALID_ARGUMENT, "device index %zu out of range", index);
    auto device = std::make_unique<Device>();
    for (size_t k = 0; k < option_count; ++k) {
      if (!options[k].key || std::strcmp(options[k].key, "allow_reduced_precision") != 0) continue;
      if (!truthy(options[k].value)) continue;
      device->config.use_bf16 = cpu_has_native_bf16();
      if (!device->config.use_bf16)
        sdk::host().log(ONYX_LOG_INFO, "onednn: allow_reduced_precision ignored: this CPU has no native bf16");
    }
    *out = reinterpret_cast<OnyxDevice*>(device.release());
    return nullptr;
  });
}

const OnyxProviderApi& provider_api() {
  static const OnyxProviderApi api = [] {
    OnyxProviderApi a{};
    a.struct_size = sizeof(OnyxProviderApi);
    a.plugin_destroy = [](OnyxPlugin*) {};
    a.plugin_availability = [](OnyxPlugin*) -> OnyxStatus* {
      return guard([]() -> OnyxStatus* {
        std::string why = availability();
        return why.empty() ? nullptr : make_status(ONYX_STATUS_UNAVAILABLE, "%s", why.c_str());
      });
    };
    a.device_count = [](OnyxPlugin*) -> size_t {
      try {
        return availability().empty() ? 1 : 0;
      } catch (...) {
        return 0;
      }
    };
    a.device_properties = [](OnyxPlugin*, size_t index, OnyxDeviceProperties* out) {
      return guard([&]() -> OnyxStatus* {
        if (!out || index != 0) return make_status(ONYX_STATUS_INVALID_ARGUMENT, "device index %zu out of range", index);
        size_t size = out->struct_size;
        std::memset(out, 0, size);
        out->struct_size = size;
        std::snprintf(out->name, sizeof out->name, "%s", device_name().c_str());
        std::snprintf(out->vendor, sizeof out->vendor, "Intel oneDNN");
        out->kind = ONYX_DEVICE_CPU;
        out->host_can_read_device_memory = true;
        out->asynchronous = false;
        if (ONYX_HAS_FIELD(out, OnyxDeviceProperties, memory_alignment)) out->memory_alignment = 64;
        return nullptr;
      });
    };
    a.device_open = device_open;
    a.device_close = [](OnyxDevice* d) { delete as_device(d); };
    a.memory_alloc = [](OnyxDevice*, int32_t, size_t bytes, size_t alignment, void** out) {
      return guard([&]() -> OnyxStatus* {
        if (!out) return make_status(ONYX_STATUS_INVALID_ARGUMENT, "memory_alloc: out is NULL");
        if (alignment == 0 || (alignment & (alignment - 1)))
          return make_status(ONYX_STATUS_INVALID_ARGUMENT, "memory_alloc: alignment %zu is not a power of two",
                             alignment);
        *out = nullptr;
        if (bytes == 0) return nullptr;
        alignment = std::max<size_t>(alignment, 64);
        *out = std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
        return *out ? nullptr : make_status(ONYX_STATUS_OUT_OF_MEMORY, "cannot allocate %zu bytes", bytes);
      });
    };
    a.memory_free = [](OnyxDevice*, int32_t, void* ptr) { std::free(ptr); };
    a.memory_copy = [](OnyxDevice*, OnyxStream*, int32_t direction, void* dst, const void* src,
                       size_t bytes) -> OnyxStatus* {
      return guard([&]() -> OnyxStatus* {
        if (direction < ONYX_COPY_HOST_TO_DEVICE || direction > ONYX_COPY_DEVICE_TO_DEVICE)
          return make_status(ONYX_STATUS_INVALID_ARGUMENT, "memory_copy: bad direction %d", direction);
        if (bytes && (!dst || !src)) return make_status(ONYX_STATUS_INVALID_ARGUMENT, "memory_copy: NULL buffer");
        if (bytes) std::memmove(dst, src, bytes);
        return nullptr;
      });
    };
    a.get_capability = get_capability;
    a.kernel_create = kernel_create;
    a.kernel_destroy = [](OnyxKernel* k) { delete as_kernel(k); };
    a.kernel_output_memory = [](OnyxKernel* k, OnyxOutputMemoryInfo* out, size_t count) {
      return guard([&]() -> OnyxStatus* {
        as_kernel(k)->kernel->output_memory({out, count});
        return nullptr;
      });
    };
    a.kernel_compute = [](OnyxKernel* k, OnyxComputeContext* raw) {
      return guard([&]() -> OnyxStatus* {
        sdk::ComputeContext ctx(raw);
        try {
          return as_kernel(k)->kernel->compute(ctx);
        } catch (const dnnl::error& e) {  // name the library, not just "internal"
          return make_status(ONYX_STATUS_INTERNAL, "oneDNN: %s (status %d)", e.what(), int(e.status));
        }
      });
    };
    a.query_extension = [](OnyxPlugin*, uint32_t) -> const void* { return nullptr; };
    return a;
  }();
  return api;
}

// The plugin object carries no state: everything lives in devices and kernels.
int plugin_token;

}  // namespace

// The plugin's create, called by the loader shim (shim.cpp) once it has
// loaded this library.
extern "C" ONYX_PLUGIN_EXPORT OnyxStatus* onyx_onednn_create(const OnyxPluginCreateArgs* args, OnyxPlugin** plugin,
                                                             const OnyxProviderApi** api) {
  if (!args || !args->host || !plugin || !api) return nullptr;  // cannot even report
  sdk::set_host(args->host);
  *plugin = reinterpret_cast<OnyxPlugin*>(&plugin_token);
  *api = &provider_api();
  return nullptr;
}

// ---- the op table -------------------------------------------------------------

const std::vector<OpDef>& all_ops() {
  static const std::vector<OpDef> ops = [] {
    std::vector<OpDef> v;
    add_matmul_ops(v);
    add_conv_ops(v);
    add_pool_ops(v);
    add_norm_ops(v);
    add_softmax_ops(v);
    add_eltwise_ops(v);
    add_reduce_ops(v);
    add_binary_ops(v);
    add_grad_ops(v);
    return v;
  }();
  return ops;
}

const OpDef* find_op(const NodeInfo& node, std::string* reason) {
  const std::string domain = node.domain == "ai.onnx" ? "" : node.domain;
  bool known = false;
  for (const OpDef& def : all_ops()) {
    if (def.op_type != node.op_type || def.domain != domain) continue;
    known = true;
    if (node.opset < def.since_version || node.opset > def.until_version) continue;
    *reason = def.supports(node);
    return reason->empty() ? &def : nullptr;
  }
  std::string op = domain.empty() ? node.op_type : domain + "::" + node.op_type;
  *reason = known ? "no oneDNN kernel for opset " + std::to_string(node.opset) + " of " + op
                  : "no oneDNN kernel for op " + op;
  return nullptr;
}

}  // namespace onyx::onednn

