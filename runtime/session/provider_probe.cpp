#include "session/provider_probe.h"

#include <map>

#include "core/abi_status.h"
#include "session/graph_view.h"

namespace onyx::runtime {

namespace {

// `node` alone in a graph of its own, its values copied from `graph`.
ir::Graph one_node_graph(const ir::Graph& graph, const ir::Node& node) {
  ir::Graph g;
  g.name = graph.name;
  g.opsets = graph.opsets;
  if (!node.domain.empty()) g.opsets.emplace(node.domain, 1);  // a domain the rewrite introduces
  std::map<int, int> copied;
  auto copy = [&](int v, bool output) {
    if (v < 0) return v;
    if (auto it = copied.find(v); it != copied.end()) return it->second;
    ir::Value value = graph.values[size_t(v)];
    value.producer = -1;
    value.is_graph_output = output;
    if (output) value.constant.reset();
    // A value the node computes from is either a constant the provider may
    // read, or an input it learns at run time.
    value.is_graph_input = !output && (value.is_graph_input || !value.constant);
    const int index = g.add_value(std::move(value));
    if (g.values[size_t(index)].is_graph_input) g.inputs.push_back(index);
    if (output) g.outputs.push_back(index);
    copied[v] = index;
    return index;
  };
  ir::Node n = node;
  for (int& v : n.inputs) v = copy(v, false);
  for (int& v : n.outputs) v = copy(v, true);
  g.nodes.push_back(std::move(n));
  g.link_producers();
  return g;
}

}  // namespace

int first_claiming_device(const DeviceList& devices, const ir::Graph& graph, const ir::Node& node) {
  const ir::Graph g = one_node_graph(graph, node);
  GraphView view(g);
  for (size_t d = 0; d < devices.size(); ++d) {
    OnyxNodeClaim claim{};
    claim.struct_size = sizeof claim;
    const Device& device = *devices[d];
    // A failing capability query claims nothing; partitioning reports it.
    if (take_status(device.provider->api().get_capability(device.handle, view.get(), &claim)).ok() && claim.claimed)
      return int(d);
  }
  return -1;
}

}  // namespace onyx::runtime
