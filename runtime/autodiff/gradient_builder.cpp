// gradient_builder.cpp: see gradient_builder.h.
#include "autodiff/gradient_builder.h"

#include <map>
#include <set>

#include "autodiff/function_inline.h"
#include "autodiff/rules.h"

namespace onyx::runtime::autodiff {

namespace onnx = ONNX_NAMESPACE;

namespace {

bool is_float_type(int32_t t) {
  return t == onnx::TensorProto::FLOAT || t == onnx::TensorProto::DOUBLE ||
         t == onnx::TensorProto::FLOAT16 || t == onnx::TensorProto::BFLOAT16;
}

// Node indices in an order where producers come before consumers.
StatusOr<std::vector<int>> topological_order(const onnx::GraphProto& g) {
  std::map<std::string, int> producer;
  for (int n = 0; n < g.node_size(); ++n)
    for (const auto& o : g.node(n).output())
      if (!o.empty()) producer[o] = n;
  std::vector<int> state(size_t(g.node_size()), 0), order;  // 0 new, 1 on stack, 2 done
  for (int root = 0; root < g.node_size(); ++root) {
    if (state[size_t(root)]) continue;
    std::vector<std::pair<int, int>> stack = {{root, 0}};  // node, next input
    state[size_t(root)] = 1;
    while (!stack.empty()) {
      auto& [n, k] = stack.back();
      const auto& node = g.node(n);
      if (k < node.input_size()) {
        auto it = producer.find(node.input(k++));
        if (it == producer.end() || state[size_t(it->second)] == 2) continue;
        if (state[size_t(it->second)] == 1)
          return invalid_argument("the graph has a cycle through node '" + node.name() + "'");
        state[size_t(it->second)] = 1;
        stack.push_back({it->second, 0});
      } else {
        state[size_t(n)] = 2;
        order.push_back(n);
        stack.pop_back();
      }
    }
  }
  return order;
}

struct Paths {
  std::vector<int> order;
  std::set<std::string> requires_grad;  // depends on wrt (float values)
  std::set<std::string> reaches_loss;   // the loss depends on it
  bool on_path(const onnx::NodeProto& n) const {
    // Some input depends on wrt and some float output feeds the loss
    // (comparisons and other non-float results carry no gradient).
    bool in = false, out = false;
    for (const auto& i : n.input()) in = in || requires_grad.count(i);
    for (const auto& o : n.output()) out = out || (reaches_loss.count(o) && requires_grad.count(o));
    return in && out;
  }
};

StatusOr<Paths> find_paths(const onnx::GraphProto& g, const Emitter& e,
                           const std::vector<std::string>& wrt, const std::string& loss) {
  Paths p;
  ONYX_ASSIGN_OR_RETURN(p.order, topological_order(g));
  p.requires_grad.insert(wrt.begin(), wrt.end());
  for (int n : p.order) {
    const auto& node = g.node(n);
    bool any = false;
    for (const auto& i : node.input()) any = any || p.requires_grad.count(i);
    if (!any) continue;
    for (const auto& o : node.output())
      if (!o.empty() && is_float_type(e.dtype(o))) p.requires_grad.insert(o);
  }
  p.reaches_loss.insert(loss);
  for (auto it = p.order.rbegin(); it != p.order.rend(); ++it) {
    const auto& node = g.node(*it);
    bool any = false;
    for (const auto& o : node.output()) any = any || p.reaches_loss.count(o);
    if (any)
      for (const auto& i : node.input()) p.reaches_loss.insert(i);
  }
  return p;
}

// Copies of the graph's constant tensors (initializers and Constant
// nodes), by value name: copies, because the graph grows while rules read them.
std::map<std::string, onnx::TensorProto> graph_constants(const onnx::GraphProto& g) {
  std::map<std::string, onnx::TensorProto> out;
  for (const auto& t : g.initializer()) out[t.name()] = t;
  for (const auto& n : g.node()) {
    if (n.op_type() != "Constant" || n.output_size() != 1) continue;
    for (const auto& a : n.attribute())
      if (a.name() == "value" && a.has_t()) out[n.output(0)] = a.t();
  }
  return out;
}

// One error naming every op type on the path without a rule, with its nodes.
Status missing_rules_error(const onnx::GraphProto& g, const Paths& p) {
  std::map<std::string, std::vector<std::string>> missing;
  for (int n : p.order) {
    const auto& node = g.node(n);
    if (p.on_path(node) && !gradient_rules().count(rule_key(node))) missing[rule_key(node)].push_back(node.name());
  }
  if (missing.empty()) return Status();
  std::string list;
  for (const auto& [op, nodes] : missing) {
    list += (list.empty() ? "" : "; ") + op + (nodes.size() > 1 ? " (nodes " : " (node ");
    for (size_t k = 0; k < nodes.size() && k < 3; ++k) list += (k ? ", '" : "'") + nodes[k] + "'";
    list += nodes.size() > 3 ? ", ...)" : ")";
  }
  return unimplemented("no gradient rule for " + std::to_string(missing.size()) +
                       " op type(s) on the path from the parameters to the loss: " + list);
}

// The sum of the gradients that reached one value ("" when none).
std::string accumulate(Emitter& e, const std::vector<std::string>& parts) {
  if (parts.empty()) return "";
  if (parts.size() == 1) return parts[0];
  std::string sum = e.op("Sum", parts);
  if (auto t = e.type(parts[0])) e.set_type(sum, *t);
  return sum;
}

}  // namespace

Status inline_function_ops(onnx::GraphProto* graph, Emitter& e, const std::vector<std::string>& wrt,
                           const std::string& loss) {
  // Each pass inlines the current rule-less function ops; bodies may hold more.
  for (int pass = 0; pass < 8; ++pass) {
    ONYX_ASSIGN_OR_RETURN(Paths p, find_paths(*graph, e, wrt, loss));
    std::vector<int> targets;
    for (int n : p.order) {
      const auto& node = graph->node(n);
      if (p.on_path(node) && !gradient_rules().count(rule_key(node)) &&
          has_function_body(node, e))
        targets.push_back(n);
    }
    if (targets.empty()) return Status();
    ONYX_RETURN_IF_ERROR(inline_nodes(graph, targets, e));
  }
  return Status();
}

StatusOr<std::vector<std::string>> build_gradients(onnx::GraphProto* graph, Emitter& e,
                                                   const std::vector<std::string>& wrt,
                                                   const std::string& loss, const std::string& seed) {
  ONYX_RETURN_IF_ERROR(inline_function_ops(graph, e, wrt, loss));
  e.infer_types(*graph);  // inlined bodies bring new values
  ONYX_ASSIGN_OR_RETURN(Paths p, find_paths(*graph, e, wrt, loss));

  ONYX_RETURN_IF_ERROR(missing_rules_error(*graph, p));

  // Nodes are appended while we walk: copy the forward nodes first.
  std::vector<onnx::NodeProto> forward(graph->node().begin(), graph->node().end());
  const std::map<std::string, onnx::TensorProto> constant_values = graph_constants(*graph);
  std::map<std::string, const onnx::TensorProto*> constants;
  for (const auto& [name, t] : constant_values) constants[name] = &t;

  std::map<std::string, std::vector<std::string>> grads;
  grads[loss].push_back(seed.empty() ? e.scalar_like(1.0, loss) : seed);
  for (auto it = p.order.rbegin(); it != p.order.rend(); ++it) {
    const onnx::NodeProto& node = forward[size_t(*it)];
    if (!p.on_path(node)) continue;
    std::vector<std::string> dy;
    bool any = false;
    for (const auto& o : node.output()) {
      dy.push_back(accumulate(e, grads[o]));
      grads[o] = {dy.back()};
      any = any || !dy.back().empty();
    }
    if (!any) continue;
    std::vector<bool> needs;
    for (const auto& i : node.input())
      needs.push_back(!i.empty() && p.requires_grad.count(i) && p.reaches_loss.count(i));
    GradContext ctx(node, e, dy, needs);
    ctx.constants = &constants;
    Status st = gradient_rules().at(rule_key(node))(ctx);
    if (!st.ok()) return st.with_context("gradient of " + ctx.label());
    for (int k = 0; k < node.input_size(); ++k)
      if (!ctx.dx()[size_t(k)].empty()) grads[node.input(k)].push_back(ctx.dx()[size_t(k)]);
  }
  std::vector<std::string> out;
  for (const auto& w : wrt) {
    std::string g = accumulate(e, grads[w]);
    out.push_back(g.empty() ? e.zeros_like(w) : g);
  }
  return out;
}

void rename_value(onnx::GraphProto* graph, const std::string& from, const std::string& to) {
  for (auto& n : *graph->mutable_node()) {
    for (auto& i : *n.mutable_input())
      if (i == from) i = to;
    for (auto& o : *n.mutable_output())
      if (o == from) o = to;
  }
  for (auto& o : *graph->mutable_output())
    if (o.name() == from) o.set_name(to);
}

}  // namespace onyx::runtime::autodiff
