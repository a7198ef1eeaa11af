// The oneDNN provider: a host-memory device whose kernels are oneDNN
// primitives. This file is the provider of libonyx_onednn_kernels.so, which
// the plugin proper (shim.cpp) loads. It claims only the nodes its ops accept
// (ops.h: each decline has a reason), and fuses MatMul/Gemm + bias +
// activation (+ residual Add) and Conv + BatchNormalization + activation
// chains into single kernels (the fuse hook).
//
// Device options (device_open): allow_reduced_precision=1 lets MatMul, Gemm
// and Conv compute in bf16 (f32 accumulation) on CPUs with native bf16.
#include "blocked_group.h"
#include "ops.h"

namespace onyx::onednn {
namespace {

bool is_matmul_head(const std::string& op) { return op == "MatMul" || op == "Gemm"; }
bool is_group_head(const std::string& op) { return is_matmul_head(op) || op == "Conv"; }

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
  chain.push_back({NodeInfo(g, head, sdk::Constants::kBorrow), -1});
  while (chain.size() < 5) {  // head, bias or BatchNormalization, scale, activation, residual
    const OnyxNodeView& last = g.nodes[nodes.back()];
    if (last.output_count != 1 || last.outputs[0] < 0) break;
    size_t v = size_t(last.outputs[0]);
    if ((g.values[v].flags & ONYX_VALUE_GRAPH_OUTPUT) || readers[v].size() != 1) break;
    auto [next, input] = readers[v][0];
    if (taken[next]) break;
    chain.push_back({NodeInfo(g, next, sdk::Constants::kBorrow), input});
    if (!group_supports(chain).empty()) break;
    nodes.push_back(next);
  }
  return nodes;
}

class OnednnProvider : public sdk::HostMemory {
 public:
  using Device = DeviceConfig;

  OnednnProvider() {
    add_matmul_ops(registry_);
    add_conv_ops(registry_);
    add_pool_ops(registry_);
    add_norm_ops(registry_);
    add_softmax_ops(registry_);
    add_attention_ops(registry_);
    add_eltwise_ops(registry_);
    add_reduce_ops(registry_);
    add_binary_ops(registry_);
    add_view_ops(registry_);
    add_quantized_ops(registry_);
    add_grad_ops(registry_);
  }

  // "" when oneDNN can make a CPU engine, else why not.
  std::string availability() const {
    try {
      cpu_engine();
      return {};
    } catch (const dnnl::error& e) {
      return std::string("oneDNN cannot create a CPU engine: ") + e.what();
    }
  }

  sdk::StatusOr<sdk::DeviceDescription> describe_device(size_t) const {
    const dnnl_version_t* v = dnnl_version();
    return host_device("oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                           std::to_string(v->patch) + (cpu_has_native_bf16() ? " (CPU, native bf16)" : " (CPU)"),
                       "Intel oneDNN");
  }

  sdk::StatusOr<std::unique_ptr<Device>> open_device(size_t, const sdk::DeviceOptions& options) const {
    auto device = std::make_unique<Device>();
    if (options.flag("allow_reduced_precision")) {
      device->use_bf16 = cpu_has_native_bf16();
      if (!device->use_bf16)
        sdk::host_log(ONYX_LOG_INFO, "onednn: allow_reduced_precision ignored: this CPU has no native bf16");
    }
    return device;
  }

  const OpRegistry& registry() const { return registry_; }

  // After the per-node claims: chains head -> [bias Add | BatchNormalization]
  // -> [scale] -> [activation] -> [residual Add] of claimed nodes become
  // fused groups.
  // First, connected runs of CNN nodes become blocked-layout groups
  // (blocked_group.h; on bf16 devices their wider convolutions read bf16).
  OnyxStatus* fuse(Device&, const OnyxGraphView& g, std::span<OnyxNodeClaim> claims) const {
    auto readers = value_readers(g);
    std::vector<bool> taken(g.node_count, false);
    uint32_t next_group = 1;
    for (const std::vector<uint32_t>& group : blocked_groups(g, claims)) {
      for (uint32_t n : group) {
        taken[n] = true;
        claims[n].fused_group = next_group;
        std::snprintf(claims[n].reason, sizeof claims[n].reason,
                      "fused: oneDNN blocked-layout group of %zu nodes from '%s'", group.size(),
                      g.nodes[group[0]].name);
      }
      ++next_group;
    }
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
  }

  // One node: its registered kernel. A fused group: one kernel for the chain.
  sdk::KernelResult make_kernel(const Device& config, const OnyxGraphView& graph,
                                std::span<const uint32_t> nodes) const {
    if (nodes.size() == 1) return registry_.create_kernel(graph, nodes[0], config);
    if (!is_matmul_head(graph.nodes[nodes[0]].op_type)) {
      GraphLinks links(graph);
      bool blocked = std::all_of(nodes.begin(), nodes.end(),
                                 [&](uint32_t n) { return blocked_member_reason(graph, links, n).empty(); });
      if (blocked) return create_blocked_group(graph, nodes, config);
    }
    Chain chain;
    for (size_t i = 0; i < nodes.size(); ++i) {
      int from_previous = -1;
      if (i > 0) {
        const OnyxNodeView& prev = graph.nodes[nodes[i - 1]];
        const OnyxNodeView& node = graph.nodes[nodes[i]];
        for (size_t k = 0; k < node.input_count && from_previous < 0; ++k)
          if (prev.output_count == 1 && node.inputs[k] == prev.outputs[0]) from_previous = int(k);
      }
      chain.push_back({NodeInfo(graph, nodes[i]), from_previous});
    }
    std::string why = is_group_head(chain[0].info.op_type) ? group_supports(chain) : "not a fused group";
    if (!why.empty())
      return sdk::make_status(ONYX_STATUS_UNIMPLEMENTED, "fused group at node '%s': %s", chain[0].info.name.c_str(),
                              why.c_str());
    return chain[0].info.op_type == "Conv" ? create_conv_group(chain, config) : create_matmul_group(chain, config);
  }

  // A oneDNN error names the library, not just "internal".
  OnyxStatus* compute(const Device&, sdk::Kernel& kernel, sdk::ComputeContext& ctx) const {
    try {
      return kernel.compute(ctx);
    } catch (const dnnl::error& e) {
      return sdk::make_status(ONYX_STATUS_INTERNAL, "oneDNN: %s (status %d)", e.what(), int(e.status));
    }
  }

 private:
  OpRegistry registry_{"oneDNN"};
};

}  // namespace

// The plugin's create, called by the loader shim (shim.cpp) once it has
// loaded this library.
extern "C" ONYX_PLUGIN_EXPORT OnyxStatus* onyx_onednn_create(const OnyxPluginCreateArgs* args, OnyxPlugin** plugin,
                                                             const OnyxProviderApi** api) {
  return sdk::ProviderTable<OnednnProvider>::create(args, plugin, api);
}

}  // namespace onyx::onednn
