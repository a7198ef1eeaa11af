// control_flow.cpp: compiling If/Loop/Scan subgraphs into child sessions
// (see control_flow.h); control_flow_run.cpp runs them.
#include "session/control_flow.h"

#include <algorithm>

#include "ir/shape_inference.h"
#include "ir/value_kinds.h"
#include "session/session.h"

namespace onyx::runtime {

bool is_control_flow(const ir::Node& node) {
  return node.domain.empty() && (node.op_type == "If" || node.op_type == "Loop" || node.op_type == "Scan" ||
                                 node.op_type == "SequenceMap");
}

namespace {

std::vector<const ir::Attribute*> subgraph_attributes(const ir::Node& node) {
  std::vector<const ir::Attribute*> out;
  for (const ir::Attribute& a : node.attributes)
    if (a.g) out.push_back(&a);
  return out;
}

// Names of the enclosing values the node's subgraphs read, deduplicated.
std::vector<std::string> captured_names(const ir::Node& node) {
  std::vector<std::string> names;
  for (const ir::Attribute* a : subgraph_attributes(node))
    for (int r : a->g->outer_refs) {
      const std::string& name = a->g->values[size_t(r)].name;
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  return names;
}

// Element types of the subgraph's own inputs, as the node will pass them.
std::vector<int32_t> formal_input_dtypes(const ir::Graph& graph, const ir::Node& node) {
  auto dtype_of = [&](int v) { return v >= 0 ? graph.values[size_t(v)].dtype : ONYX_DTYPE_UNDEFINED; };
  std::vector<int32_t> dtypes;
  size_t first = 0;
  if (node.op_type == "If" || node.op_type == "SequenceMap") return dtypes;  // declared by the body
  if (node.op_type == "Loop") {
    dtypes = {ONYX_DTYPE_INT64, ONYX_DTYPE_BOOL};
    first = 2;
  } else if (graph.opset("") < 9) {
    first = 1;  // Scan-8's sequence_lens
  }
  for (size_t k = first; k < node.inputs.size(); ++k) dtypes.push_back(dtype_of(node.inputs[k]));
  return dtypes;
}

// Fails unless the subgraph has the inputs and outputs the node needs.
Status check_signature(const ir::Graph& g, const ir::Node& node, int64_t opset, const std::string& attr) {
  const size_t inputs = g.inputs.size(), outputs = g.outputs.size();
  const size_t node_in = node.inputs.size(), node_out = node.outputs.size();
  // Tensors, sequences and optionals flow through the host's control flow.
  for (const std::vector<int>* list : {&g.inputs, &g.outputs})
    for (int v : *list)
      if (g.values[size_t(v)].kind == ir::ValueKind::kMap || g.values[size_t(v)].kind == ir::ValueKind::kSparseTensor)
        return unimplemented(node.describe() + ": subgraph '" + attr + "' " +
                             (list == &g.inputs ? "input '" : "output '") + g.values[size_t(v)].name +
                             "' is a map or sparse tensor; control flow carries tensors, sequences and optionals");
  auto mismatch = [&](const std::string& what) {
    return invalid_argument(node.describe() + ": subgraph '" + attr + "' has " + std::to_string(inputs) +
                            " inputs and " + std::to_string(outputs) + " outputs; " + what);
  };
  if (node.op_type == "If") {
    if (inputs != 0 || outputs != node_out)
      return mismatch("a branch takes no inputs and returns one value per node output (" +
                      std::to_string(node_out) + ")");
  } else if (node.op_type == "Loop") {
    if (node_in < 2) return invalid_argument(node.describe() + ": needs inputs M and cond (may be empty)");
    const size_t carried = node_in - 2;
    if (inputs != 2 + carried || outputs < 1 + carried || node_out != outputs - 1)
      return mismatch("the body takes (iteration, cond, " + std::to_string(carried) +
                      " loop-carried values) and returns cond, the carried values, then one value per "
                      "scan output (the node has " + std::to_string(node_out) + " outputs)");
  } else if (node.op_type == "SequenceMap") {
    if (node_in < 1 || inputs != node_in || outputs != node_out)
      return mismatch("the body takes one value per node input (" + std::to_string(node_in) +
                      ") and returns one per node output (" + std::to_string(node_out) + ")");
  } else {  // Scan
    const bool batched = opset < 9;
    const int64_t scans = node.attr_int("num_scan_inputs", -1);
    const size_t states_and_scans = node_in - (batched ? 1 : 0);
    if (scans < 1 || size_t(scans) > states_and_scans)
      return invalid_argument(node.describe() + ": num_scan_inputs must be in [1, " +
                              std::to_string(states_and_scans) + "]");
    if (inputs != states_and_scans || outputs != node_out || outputs < states_and_scans - size_t(scans))
      return mismatch("the body takes one value per state and scan input (" +
                      std::to_string(states_and_scans) + ") and returns one per node output (" +
                      std::to_string(node_out) + ")");
  }
  return Status();
}

}  // namespace

std::vector<int> control_flow_captures(const ir::Graph& graph, const ir::Node& node) {
  std::vector<int> values;
  for (const std::string& name : captured_names(node)) values.push_back(graph.find_value(name));
  return values;
}

// A child and all its descendants count this session's cancel_runs() calls.
void Session::share_cancels(const std::shared_ptr<std::atomic<uint64_t>>& cancels) {
  cancels_ = cancels;
  for (Step& step : steps_)
    if (step.control_flow)
      for (CompiledSubgraph& sub : step.control_flow->subgraphs) sub.session->share_cancels(cancels);
}

Status Session::compile_subgraphs(ProviderRegistry& registry, const SessionOptions& options) {
  const ir::Graph& graph = *model_.graph;
  SessionOptions child_options = options;
  child_options.intra_op_threads = 1;  // children use this session's pool
  // A body's input shapes may change between iterations: fold nothing from them.
  if (child_options.graph_optimization == GraphOptimization::kAll)
    child_options.graph_optimization = GraphOptimization::kBasic;
  for (Step& step : steps_) {
    if (step.kind != Step::kControlFlow) continue;
    const ir::Node& node = graph.nodes[size_t(step.nodes[0])];
    const std::vector<std::string> names = captured_names(node);
    auto flow = std::make_shared<ControlFlow>();
    std::vector<std::string> needed = {"body"};
    if (node.op_type == "If") needed = {"then_branch", "else_branch"};
    for (const std::string& attr : needed) {
      const ir::Attribute* a = node.attr(attr);
      if (!a || !a->g) return invalid_argument(node.describe() + ": missing subgraph attribute '" + attr + "'");
      ONYX_RETURN_IF_ERROR(check_signature(*a->g, node, graph.opset(""), attr));
      CompiledSubgraph sub;
      sub.attribute = attr;
      ir::Model child;
      child.ir_version = model_.ir_version;
      child.base_dir = model_.base_dir;
      child.graph = std::make_shared<ir::Graph>(*a->g);
      ir::Graph& g = *child.graph;
      const std::vector<int32_t> formal = formal_input_dtypes(graph, node);
      for (size_t k = 0; k < formal.size() && k < g.inputs.size(); ++k) {
        ir::Value& v = g.values[size_t(g.inputs[k])];
        if (v.dtype == ONYX_DTYPE_UNDEFINED) v.dtype = formal[k];
      }
      for (int r : g.outer_refs) {  // captured values become trailing inputs
        ir::Value& v = g.values[size_t(r)];
        const size_t k = size_t(std::find(names.begin(), names.end(), v.name) - names.begin());
        sub.capture_inputs.push_back(node.inputs.size() + k);
        if (int e = graph.find_value(v.name); e >= 0) {
          const ir::Value& outer = graph.values[size_t(e)];
          v.dtype = outer.dtype, v.rank = outer.rank, v.dims = outer.dims, v.kind = outer.kind;
          v.elem_kind = outer.elem_kind, v.elem_dtype = outer.elem_dtype;
        }
        v.is_graph_input = true;
        g.inputs.push_back(r);
      }
      g.outer_refs.clear();
      const std::string where = step.name + " subgraph '" + attr + "'";
      ir::infer_value_kinds(g);  // what the captured values and formal inputs tell
      ONYX_RETURN_IF_ERROR(ir::infer_shapes(g).with_context(where));
      ir::infer_value_kinds(g);
      auto created = Session::create(registry, std::move(child), child_options);
      if (!created.ok()) return created.status().with_context(where);
      sub.session = std::move(created).value();
      sub.session->pool_ = pool_;
      sub.session->share_cancels(cancels_);
      flow->subgraphs.push_back(std::move(sub));
    }
    step.control_flow = std::move(flow);
  }
  return Status();
}

}  // namespace onyx::runtime