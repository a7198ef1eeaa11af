#include "session/fused_groups.h"

#include <algorithm>
#include <map>
#include <queue>
#include <set>
#include <unordered_map>

namespace onyx::runtime {
namespace {

// Values a node reads: its inputs and what its subgraphs capture.
std::vector<int> values_read(const std::unordered_map<std::string, int>& by_name, const ir::Node& node) {
  std::vector<int> read;
  for (int v : node.inputs)
    if (v >= 0) read.push_back(v);
  auto add_captures = [&](const std::shared_ptr<ir::Graph>& g) {
    if (!g) return;
    for (int r : g->outer_refs)
      if (auto it = by_name.find(g->values[size_t(r)].name); it != by_name.end()) read.push_back(it->second);
  };
  for (const ir::Attribute& a : node.attributes) {
    add_captures(a.g);
    for (const auto& g : a.graphs) add_captures(g);
  }
  std::sort(read.begin(), read.end());
  read.erase(std::unique(read.begin(), read.end()), read.end());
  return read;
}

struct GraphIndex {
  std::vector<std::vector<int>> readers;  // per value: the nodes reading it
  std::vector<std::vector<int>> reads;    // per node: the values it reads
  std::vector<int> producer;              // per value: its node (-1: none)
  std::vector<int> position;              // per node: its place in topological order
};

StatusOr<GraphIndex> index_graph(const ir::Graph& graph) {
  GraphIndex index;
  index.readers.resize(graph.values.size());
  index.reads.resize(graph.nodes.size());
  index.producer.assign(graph.values.size(), -1);
  // Subgraphs capture enclosing values by name; index the names only if any node has one.
  const bool any_subgraph = std::any_of(graph.nodes.begin(), graph.nodes.end(), [](const ir::Node& n) {
    return std::any_of(n.attributes.begin(), n.attributes.end(),
                       [](const ir::Attribute& a) { return a.g || !a.graphs.empty(); });
  });
  std::unordered_map<std::string, int> by_name;
  if (any_subgraph)
    for (size_t v = 0; v < graph.values.size(); ++v) by_name.emplace(graph.values[v].name, int(v));
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    for (int v : graph.nodes[n].outputs)
      if (v >= 0) index.producer[size_t(v)] = int(n);
    index.reads[n] = values_read(by_name, graph.nodes[n]);
    for (int v : index.reads[n]) index.readers[size_t(v)].push_back(int(n));
  }
  ONYX_ASSIGN_OR_RETURN(std::vector<int> order, graph.topological_order());
  index.position.assign(graph.nodes.size(), 0);
  for (size_t k = 0; k < order.size(); ++k) index.position[size_t(order[k])] = int(k);
  return index;
}

using GroupKey = std::pair<int, uint32_t>;  // (device, fused_group)

std::map<GroupKey, std::vector<int>> groups_of(const PartitionReport& report) {
  std::map<GroupKey, std::vector<int>> groups;
  for (size_t n = 0; n < report.nodes.size(); ++n) {
    const NodePlacement& place = report.nodes[n];
    if (place.fused_group != 0 && place.device >= 0) groups[{place.device, place.fused_group}].push_back(int(n));
  }
  return groups;
}

std::string where(const PartitionReport& report, int node) {
  const NodePlacement& place = report.nodes[size_t(node)];
  return place.device >= 0 ? report.devices[size_t(place.device)] : std::string("the host");
}

void dissolve(const ir::Graph& graph, PartitionReport& report, const GroupKey& key,
              const std::vector<int>& members, const std::string& reason) {
  DissolvedGroup record;
  record.device = report.devices[size_t(key.first)];
  record.group = key.second;
  record.reason = reason;
  for (int n : members) {
    report.nodes[size_t(n)].fused_group = 0;
    report.nodes[size_t(n)].dissolved_group = key.second;
    record.nodes.push_back(graph.nodes[size_t(n)].name);
  }
  report.dissolved.push_back(std::move(record));
}

// Rule 2: the first value passed between members that is also read outside.
std::string intermediate_read_outside(const ir::Graph& graph, const PartitionReport& report,
                                      const GraphIndex& index, const std::set<int>& members) {
  for (int m : members)
    for (int v : graph.nodes[size_t(m)].outputs) {
      if (v < 0) continue;
      const std::vector<int>& readers = index.readers[size_t(v)];
      bool inside = std::any_of(readers.begin(), readers.end(), [&](int r) { return members.count(r) > 0; });
      if (!inside) continue;
      const std::string what = "value '" + graph.values[size_t(v)].name + "' passes between its nodes and ";
      if (graph.values[size_t(v)].is_graph_output) return what + "is also a graph output";
      for (int r : readers)
        if (!members.count(r))
          return what + "is also read by " + graph.nodes[size_t(r)].describe() + " on " + where(report, r) +
                 ", outside the group";
    }
  return {};
}

// Rule 3: a path that leaves the group and re-enters it, if any.
std::string not_convex(const ir::Graph& graph, const GraphIndex& index, const std::set<int>& members) {
  int last = 0;  // a path back into the group ends before its last member
  for (int m : members) last = std::max(last, index.position[size_t(m)]);
  std::vector<int> frontier;
  std::set<int> seen;
  auto visit_readers = [&](int node, int* reentry) {
    for (int v : graph.nodes[size_t(node)].outputs) {
      if (v < 0) continue;
      for (int r : index.readers[size_t(v)]) {
        if (members.count(r)) {
          if (!members.count(node)) *reentry = r;
          continue;
        }
        if (index.position[size_t(r)] < last && seen.insert(r).second) frontier.push_back(r);
      }
    }
  };
  int reentry = -1;
  for (int m : members) visit_readers(m, &reentry);
  while (!frontier.empty()) {
    int q = frontier.back();
    frontier.pop_back();
    visit_readers(q, &reentry);
    if (reentry >= 0)
      return "it is not convex: a path leaves it and re-enters it (" + graph.nodes[size_t(q)].describe() +
             ", outside the group, depends on it and feeds " + graph.nodes[size_t(reentry)].describe() + ")";
  }
  return {};
}

// Steps as units of nodes: one per fused group, one per other node.
struct Units {
  std::vector<std::vector<int>> nodes;  // per unit, in topological order
  std::vector<int> unit_of;             // per node
};

Units units_of(const PartitionReport& report, const GraphIndex& index) {
  Units units;
  units.unit_of.assign(report.nodes.size(), -1);
  std::vector<int> order(report.nodes.size());
  for (size_t n = 0; n < order.size(); ++n) order[size_t(index.position[n])] = int(n);
  std::map<GroupKey, int> group_unit;
  for (int n : order) {
    const NodePlacement& place = report.nodes[size_t(n)];
    int u = int(units.nodes.size());
    if (place.fused_group != 0) {
      auto [it, added] = group_unit.emplace(GroupKey{place.device, place.fused_group}, u);
      u = it->second;
    }
    if (u == int(units.nodes.size())) units.nodes.emplace_back();
    units.nodes[size_t(u)].push_back(n);
    units.unit_of[size_t(n)] = u;
  }
  return units;
}

// Kahn's algorithm over units, earliest first node first. Returns the order
// (complete when units do not depend on each other in a cycle) and marks
// the units left waiting.
std::vector<int> order_units(const GraphIndex& index, const Units& units,
                             std::vector<bool>* waiting) {
  const size_t count = units.nodes.size();
  std::vector<std::set<int>> succs(count);
  std::vector<size_t> pending(count, 0);
  for (size_t u = 0; u < count; ++u) {
    std::set<int> preds;
    for (int n : units.nodes[u])
      for (int v : index.reads[size_t(n)])
        if (int p = index.producer[size_t(v)]; p >= 0 && units.unit_of[size_t(p)] != int(u))
          preds.insert(units.unit_of[size_t(p)]);
    pending[u] = preds.size();
    for (int p : preds) succs[size_t(p)].insert(int(u));
  }
  using Entry = std::pair<int, int>;  // (position of the first node, unit)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
  for (size_t u = 0; u < count; ++u)
    if (pending[u] == 0) ready.push({index.position[size_t(units.nodes[u][0])], int(u)});
  std::vector<int> order;
  while (!ready.empty()) {
    int u = ready.top().second;
    ready.pop();
    order.push_back(u);
    for (int s : succs[size_t(u)])
      if (--pending[size_t(s)] == 0) ready.push({index.position[size_t(units.nodes[size_t(s)][0])], s});
  }
  waiting->assign(count, false);
  for (size_t u = 0; u < count; ++u) (*waiting)[u] = pending[u] > 0;
  return order;
}

}  // namespace

void dissolve_unsound_groups(const ir::Graph& graph, const std::vector<PreemptedClaim>& preempted,
                             PartitionReport& report) {
  bool any = std::any_of(report.nodes.begin(), report.nodes.end(),
                         [](const NodePlacement& p) { return p.fused_group != 0; });
  if (!any) return;
  auto index = index_graph(graph);
  if (!index.ok()) return;  // the session reports the cycle when it orders the steps
  // Rule 1: pre-empted members.
  auto groups = groups_of(report);
  for (const PreemptedClaim& p : preempted) {
    auto it = groups.find({p.device, p.group});
    if (it == groups.end()) continue;
    const std::string taken = p.taken_by >= 0 ? "went to " + report.devices[size_t(p.taken_by)] + ", listed ahead"
                                              : "is run by the host";
    dissolve(graph, report, it->first, it->second,
             "its member " + graph.nodes[size_t(p.node)].describe() + " " + taken);
    groups.erase(it);
  }
  // Rules 2 and 3, one group at a time.
  for (const auto& [key, nodes] : groups) {
    std::set<int> members(nodes.begin(), nodes.end());
    std::string why = intermediate_read_outside(graph, report, *index, members);
    if (why.empty()) why = not_convex(graph, *index, members);
    if (!why.empty()) dissolve(graph, report, key, nodes, why);
  }
  // Rule 4: while groups wait on each other, dissolve the earliest waiting one.
  for (;;) {
    Units units = units_of(report, *index);
    std::vector<bool> waiting;
    if (order_units(*index, units, &waiting).size() == units.nodes.size()) return;
    std::vector<GroupKey> stuck;
    for (size_t u = 0; u < units.nodes.size(); ++u) {
      const NodePlacement& place = report.nodes[size_t(units.nodes[u][0])];
      if (waiting[u] && place.fused_group != 0) stuck.push_back({place.device, place.fused_group});
    }
    if (stuck.empty()) return;  // a cycle of single nodes: the graph itself is cyclic
    std::string partner = stuck.size() > 1 ? "fused group " + std::to_string(stuck[1].second) + " of " +
                                                 report.devices[size_t(stuck[1].first)]
                                           : std::string("another fused group");
    const GroupKey key = stuck[0];
    dissolve(graph, report, key, groups_of(report)[key],
             "it and " + partner + " depend on each other, so no order of steps runs both");
  }
}

StatusOr<std::vector<std::vector<int>>> step_order(const ir::Graph& graph, const PartitionReport& report) {
  ONYX_ASSIGN_OR_RETURN(GraphIndex index, index_graph(graph));
  Units units = units_of(report, index);
  std::vector<bool> waiting;
  std::vector<int> order = order_units(index, units, &waiting);
  if (order.size() != units.nodes.size())
    return internal_error("the steps cannot be ordered: fused groups depend on each other");
  std::vector<std::vector<int>> steps;
  for (int u : order) steps.push_back(std::move(units.nodes[size_t(u)]));
  return steps;
}

}  // namespace onyx::runtime
