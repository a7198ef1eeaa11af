#include "ir/graph.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <unordered_map>

namespace onyx::runtime::ir {

bool Value::shape_known() const {
  if (rank < 0 || dims.size() != size_t(rank)) return false;
  return std::all_of(dims.begin(), dims.end(), [](int64_t d) { return d >= 0; });
}

const Attribute* Node::attr(const std::string& key) const {
  for (const Attribute& a : attributes)
    if (a.name == key) return &a;
  return nullptr;
}

int64_t Node::attr_int(const std::string& key, int64_t fallback) const {
  const Attribute* a = attr(key);
  return a && a->type == ONYX_ATTR_INT ? a->i : fallback;
}

std::string Node::describe() const { return op_type + " '" + name + "'"; }

int64_t Graph::opset(const std::string& domain) const {
  auto it = opsets.find(domain == "ai.onnx" ? std::string() : domain);
  return it == opsets.end() ? 0 : it->second;
}

int Graph::find_value(const std::string& value_name) const {
  for (size_t v = 0; v < values.size(); ++v)
    if (values[v].name == value_name) return int(v);
  return -1;
}

int Graph::add_value(Value v) {
  values.push_back(std::move(v));
  return int(values.size()) - 1;
}

void Graph::link_producers() {
  for (Value& v : values) v.producer = -1;
  for (size_t n = 0; n < nodes.size(); ++n)
    for (int out : nodes[n].outputs)
      if (out >= 0 && size_t(out) < values.size()) values[out].producer = int(n);
}

namespace {

// Names of the enclosing-scope values that `node`'s subgraphs capture.
void captured_names(const Node& node, std::vector<const std::string*>* names) {
  auto add = [&](const std::shared_ptr<Graph>& g) {
    if (!g) return;
    for (int r : g->outer_refs)
      if (r >= 0 && size_t(r) < g->values.size()) names->push_back(&g->values[r].name);
  };
  for (const Attribute& a : node.attributes) {
    add(a.g);
    for (const auto& g : a.graphs) add(g);
  }
}

}  // namespace

StatusOr<std::vector<int>> Graph::topological_order() const {
  const size_t count = nodes.size();
  // Producer of each value, from the nodes themselves (Value::producer may be stale).
  std::vector<int> producer(values.size(), -1);
  for (size_t n = 0; n < count; ++n)
    for (int out : nodes[n].outputs) {
      if (out < 0) continue;
      if (size_t(out) >= values.size())
        return invalid_argument(nodes[n].describe() + ": output index " + std::to_string(out) +
                                " is out of range");
      if (producer[out] >= 0 && producer[out] != int(n))
        return invalid_argument("value '" + values[out].name + "' is produced by both " +
                                nodes[producer[out]].describe() + " and " + nodes[n].describe());
      producer[out] = int(n);
    }
  // Subgraphs capture enclosing values by name; index the names only if any node has one.
  const bool any_subgraph = std::any_of(nodes.begin(), nodes.end(), [](const Node& n) {
    return std::any_of(n.attributes.begin(), n.attributes.end(),
                       [](const Attribute& a) { return a.g || !a.graphs.empty(); });
  });
  std::unordered_map<std::string, int> by_name;
  if (any_subgraph)
    for (size_t v = 0; v < values.size(); ++v) by_name.emplace(values[v].name, int(v));

  // preds[n]: nodes that must run before n (duplicates are harmless: each
  // edge is counted once in `pending` and released once).
  std::vector<std::vector<int>> preds(count), succs(count);
  for (size_t n = 0; n < count; ++n) {
    std::vector<int> deps;
    for (int in : nodes[n].inputs) {
      if (in < 0) continue;
      if (size_t(in) >= values.size())
        return invalid_argument(nodes[n].describe() + ": input index " + std::to_string(in) +
                                " is out of range");
      deps.push_back(in);
    }
    std::vector<const std::string*> names;
    captured_names(nodes[n], &names);
    for (const std::string* name : names)
      if (auto it = by_name.find(*name); it != by_name.end()) deps.push_back(it->second);
    for (int v : deps)
      if (producer[v] >= 0) preds[n].push_back(producer[v]);
    std::sort(preds[n].begin(), preds[n].end());
    preds[n].erase(std::unique(preds[n].begin(), preds[n].end()), preds[n].end());
    for (int p : preds[n]) succs[p].push_back(int(n));
  }

  // Kahn's algorithm; the smallest ready index first keeps file order when
  // the file is already sorted.
  std::vector<size_t> pending(count);
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (size_t n = 0; n < count; ++n) {
    pending[n] = preds[n].size();
    if (pending[n] == 0) ready.push(int(n));
  }
  std::vector<int> order;
  order.reserve(count);
  while (!ready.empty()) {
    int n = ready.top();
    ready.pop();
    order.push_back(n);
    for (int s : succs[n])
      if (--pending[s] == 0) ready.push(s);
  }
  if (order.size() == count) return order;

  // Some nodes wait forever. Walk back through waiting predecessors until a
  // node repeats: that node is on a cycle (not merely downstream of one).
  int start = -1;
  for (size_t n = 0; n < count && start < 0; ++n)
    if (pending[n] > 0) start = int(n);
  std::vector<int> seen_at(count, -1), path;
  int n = start;
  while (seen_at[n] < 0) {
    seen_at[n] = int(path.size());
    path.push_back(n);
    for (int p : preds[n])
      if (pending[p] > 0) {
        n = p;
        break;
      }
  }
  // path[seen_at[n]..] is the cycle, walked against the edges; print it forwards.
  std::string cycle;
  for (size_t k = path.size(); k-- > size_t(seen_at[n]);) cycle += "'" + nodes[path[k]].name + "' -> ";
  cycle += "'" + nodes[path.back()].name + "'";
  return invalid_argument("graph '" + name + "' has a cycle through node " + nodes[n].describe() +
                          " (" + cycle + ")");
}

}  // namespace onyx::runtime::ir
