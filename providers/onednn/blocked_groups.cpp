// Which claimed nodes form blocked-layout groups (see blocked_group.h): the
// connected runs of convolutions, pooling, activations, folded
// BatchNormalizations and residual Adds of a CNN.
#include <algorithm>
#include <set>

#include "blocked_group.h"
#include "spatial.h"

namespace onyx::onednn {
namespace {

bool all_known_or_same(const sdk::ValueDesc& a, const sdk::ValueDesc& b) {
  if (a.rank != b.rank) return false;
  for (size_t k = 0; k < a.dims.size(); ++k)
    if (a.dims[k] != b.dims[k]) return false;  // a static broadcast, or symbols that may differ
  return true;
}

}  // namespace

GraphLinks::GraphLinks(const OnyxGraphView& g) : producer(g.value_count, -1), readers(g.value_count) {
  for (size_t n = 0; n < g.node_count; ++n) {
    const OnyxNodeView& node = g.nodes[n];
    for (size_t k = 0; k < node.output_count; ++k)
      if (int32_t v = node.outputs[k]; v >= 0) producer[size_t(v)] = int32_t(n);
    for (size_t k = 0; k < node.input_count; ++k)
      if (int32_t v = node.inputs[k]; v >= 0) readers[size_t(v)].push_back(uint32_t(n));
  }
}

bool GraphLinks::sole_reader(const OnyxGraphView& g, int32_t value) const {
  return value >= 0 && readers[size_t(value)].size() == 1 && !(g.values[size_t(value)].flags & ONYX_VALUE_GRAPH_OUTPUT);
}

std::string blocked_member_reason(const OnyxGraphView& g, const GraphLinks& links, uint32_t n) {
  NodeInfo node(g, n, sdk::Constants::kBorrow);
  if (!node.domain.empty()) return "not an ai.onnx op";
  RETURN_IF_REASON(require_f32(node, {0}));
  RETURN_IF_REASON(require_rank(node, 0, 3, 5));
  const std::string& op = node.op_type;
  if (op == "Conv") {
    RETURN_IF_REASON(conv_supports(node));
    if (!is_constant(node, 1)) return "Conv weights are not constant";
    if (node.input_present(2) && !is_constant(node, 2)) return "Conv bias is not constant";
    return {};
  }
  if (op == "MaxPool" || op == "AveragePool" || op == "GlobalMaxPool" || op == "GlobalAveragePool") return {};
  if (op == "BatchNormalization") {
    int32_t x = g.nodes[n].inputs[0];
    int32_t p = x >= 0 ? links.producer[size_t(x)] : -1;
    if (p < 0 || std::string(g.nodes[p].op_type) != "Conv" || !links.sole_reader(g, x))
      return "BatchNormalization not after a Conv it alone reads";
    Chain chain = {{NodeInfo(g, uint32_t(p), sdk::Constants::kBorrow), -1}, {node, 0}};
    return conv_group_supports(chain);
  }
  if (op == "Add") {
    if (node.inputs.size() != 2 || !node.input_present(1)) return "Add needs two inputs";
    RETURN_IF_REASON(require_f32(node, {1}));
    if (!all_known_or_same(node.inputs[0], node.inputs[1])) return "Add broadcasts";
    return {};
  }
  Activation act;
  std::string why;
  if (!activation_of(node, &act, &why)) return why;
  return {};
}

std::vector<std::vector<uint32_t>> blocked_groups(const OnyxGraphView& g, std::span<const OnyxNodeClaim> claims) {
  GraphLinks links(g);
  const size_t count = g.node_count;
  std::vector<bool> eligible(count, false);
  for (uint32_t n = 0; n < count; ++n)
    eligible[n] = claims[n].claimed && blocked_member_reason(g, links, n).empty();
  // Topological order (Kahn), earliest node first.
  std::vector<size_t> pending(count, 0);
  for (size_t n = 0; n < count; ++n)
    for (size_t k = 0; k < g.nodes[n].input_count; ++k)
      if (int32_t v = g.nodes[n].inputs[k]; v >= 0 && links.producer[size_t(v)] >= 0) ++pending[n];
  std::vector<uint32_t> order;
  for (uint32_t n = 0; n < count; ++n)
    if (pending[n] == 0) order.push_back(n);
  for (size_t at = 0; at < order.size(); ++at) {
    const OnyxNodeView& node = g.nodes[order[at]];
    for (size_t k = 0; k < node.output_count; ++k)
      if (int32_t v = node.outputs[k]; v >= 0) {
        const std::vector<uint32_t>& readers = links.readers[size_t(v)];
        for (size_t i = 0; i < readers.size(); ++i) {
          uint32_t r = readers[i];
          if (i > 0 && readers[i - 1] == r) continue;  // a node reading v twice is listed twice, in a row
          for (size_t j = 0; j < g.nodes[r].input_count; ++j)
            if (g.nodes[r].inputs[j] == v && --pending[r] == 0) order.push_back(r);
        }
      }
  }
  if (order.size() != count) return {};  // a cycle: leave it to the host to report
  // Values a group may not pass between its members, because the host would
  // dissolve the group (also read outside it, or a graph output).
  std::vector<bool> boundary(g.value_count, false);
  std::vector<uint32_t> group(count, 0);
  for (;;) {
    std::fill(group.begin(), group.end(), 0);
    std::vector<std::set<uint32_t>> upstream(count);  // groups each node depends on
    uint32_t next = 1;
    for (uint32_t n : order) {
      const OnyxNodeView& node = g.nodes[n];
      std::vector<int32_t> producers;
      for (size_t k = 0; k < node.input_count; ++k)
        if (int32_t v = node.inputs[k]; v >= 0 && links.producer[size_t(v)] >= 0) producers.push_back(links.producer[size_t(v)]);
      if (eligible[n]) {
        // Join the group of an input unless a path from that group reaches
        // this node through a node outside it (the group would not be convex).
        for (size_t k = 0; k < node.input_count && !group[n]; ++k) {
          int32_t v = node.inputs[k];
          if (v < 0 || boundary[size_t(v)] || links.producer[size_t(v)] < 0) continue;
          uint32_t candidate = group[size_t(links.producer[size_t(v)])];
          if (!candidate) continue;
          bool convex = std::none_of(producers.begin(), producers.end(), [&](int32_t p) {
            return group[size_t(p)] != candidate && upstream[size_t(p)].count(candidate);
          });
          if (convex) group[n] = candidate;
        }
        bool is_bn = std::string(node.op_type) == "BatchNormalization";
        if (!group[n] && !is_bn) group[n] = next++;  // a BatchNormalization only folds into its Conv
      }
      for (int32_t p : producers) {
        upstream[n].insert(upstream[size_t(p)].begin(), upstream[size_t(p)].end());
        if (group[size_t(p)]) upstream[n].insert(group[size_t(p)]);
      }
    }
    // A value passed inside a group must be read only there.
    bool changed = false;
    for (size_t v = 0; v < g.value_count; ++v) {
      int32_t p = links.producer[v];
      if (p < 0 || !group[size_t(p)] || boundary[v]) continue;
      size_t inside = 0;
      for (uint32_t r : links.readers[v]) inside += group[r] == group[size_t(p)];
      bool outside = inside < links.readers[v].size() || (g.values[v].flags & ONYX_VALUE_GRAPH_OUTPUT);
      if (inside > 0 && outside) boundary[v] = changed = true;
    }
    if (!changed) break;
  }
  std::vector<std::vector<uint32_t>> groups;
  std::vector<int> slot(count + 1, -1);
  for (uint32_t n : order) {
    if (!group[n]) continue;
    if (slot[group[n]] < 0) slot[group[n]] = int(groups.size()), groups.emplace_back();
    groups[size_t(slot[group[n]])].push_back(n);
  }
  std::erase_if(groups, [](const std::vector<uint32_t>& members) { return members.size() < 2; });
  return groups;
}

}  // namespace onyx::onednn
