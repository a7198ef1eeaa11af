// value_kinds.cpp: kinds and element types of undeclared values from their
// producers.
#include "ir/value_kinds.h"

#include <set>
#include <string>

namespace onyx::runtime::ir {

bool is_host_only_kind(ValueKind kind) {
  return kind == ValueKind::kSequence || kind == ValueKind::kOptional || kind == ValueKind::kMap;
}

namespace {

bool makes_sequence(const Node& node) {
  static const std::set<std::string> ops = {"SequenceConstruct", "SequenceEmpty", "SequenceInsert",
                                            "SequenceErase",     "SplitToSequence", "SequenceMap"};
  return ops.count(node.op_type) > 0;
}

// Subgraph `attr`'s outputs from `first` on.
std::vector<const Value*> subgraph_outputs(const Node& node, const std::string& attr, size_t first) {
  std::vector<const Value*> out;
  const Attribute* a = node.attr(attr);
  if (!a || !a->g) return out;
  for (size_t k = first; k < a->g->outputs.size(); ++k) out.push_back(&a->g->values[size_t(a->g->outputs[k])]);
  return out;
}

class Inference {
 public:
  Inference(Graph& graph, const Node& node) : graph_(graph), node_(node) {}

  const Value* in(size_t k) const {
    return k < node_.inputs.size() && node_.inputs[k] >= 0 ? &graph_.values[size_t(node_.inputs[k])] : nullptr;
  }
  int32_t in_dtype(size_t k) const { return in(k) ? in(k)->dtype : ONYX_DTYPE_UNDEFINED; }

  // Output k is a composite of `kind` holding `elem_kind`/`elem_dtype`
  // (kept where the model declares more).
  void composite(size_t k, ValueKind kind, ValueKind elem_kind, int32_t elem_dtype) {
    Value* v = out(k);
    if (!v) return;
    if (v->kind == ValueKind::kTensor && v->dtype == ONYX_DTYPE_UNDEFINED && v->rank < 0) v->kind = kind;
    if (v->kind != kind) return;
    if (v->elem_dtype == ONYX_DTYPE_UNDEFINED) {
      v->elem_kind = elem_kind;
      v->elem_dtype = elem_dtype;
    }
  }
  // Output k is a tensor of `dtype` (kept where already known).
  void tensor(size_t k, int32_t dtype) {
    Value* v = out(k);
    if (v && v->kind == ValueKind::kTensor && v->dtype == ONYX_DTYPE_UNDEFINED) v->dtype = dtype;
  }
  // Output k is what `from` is.
  void same_as(size_t k, const Value* from) {
    if (!from) return;
    if (is_host_only_kind(from->kind)) composite(k, from->kind, from->elem_kind, from->elem_dtype);
    else tensor(k, from->dtype);
  }

 private:
  Value* out(size_t k) {
    return k < node_.outputs.size() && node_.outputs[k] >= 0 ? &graph_.values[size_t(node_.outputs[k])] : nullptr;
  }
  Graph& graph_;
  const Node& node_;
};

void infer_node(Graph& graph, const Node& node) {
  Inference f(graph, node);
  const std::string& op = node.op_type;
  auto seq_elem = [&](size_t k) { return f.in(k) ? f.in(k)->elem_dtype : ONYX_DTYPE_UNDEFINED; };
  if (op == "SequenceEmpty") {
    f.composite(0, ValueKind::kSequence, ValueKind::kTensor, int32_t(node.attr_int("dtype", ONYX_DTYPE_FLOAT32)));
  } else if (op == "SequenceConstruct" || op == "SplitToSequence") {
    f.composite(0, ValueKind::kSequence, ValueKind::kTensor, f.in_dtype(0));
  } else if (op == "SequenceInsert") {
    int32_t elem = seq_elem(0);
    f.composite(0, ValueKind::kSequence, ValueKind::kTensor, elem != ONYX_DTYPE_UNDEFINED ? elem : f.in_dtype(1));
  } else if (op == "SequenceErase") {
    f.composite(0, ValueKind::kSequence, ValueKind::kTensor, seq_elem(0));
  } else if (makes_sequence(node)) {  // SequenceMap: sequences of the body's outputs
    std::vector<const Value*> outs = subgraph_outputs(node, "body", 0);
    for (size_t k = 0; k < node.outputs.size(); ++k)
      f.composite(k, ValueKind::kSequence, ValueKind::kTensor, k < outs.size() ? outs[k]->dtype : ONYX_DTYPE_UNDEFINED);
  } else if (op == "SequenceAt" || op == "ConcatFromSequence") {
    f.tensor(0, seq_elem(0));
  } else if (op == "SequenceLength") {
    f.tensor(0, ONYX_DTYPE_INT64);
  } else if (op == "OptionalHasElement") {
    f.tensor(0, ONYX_DTYPE_BOOL);
  } else if (op == "Optional") {
    const Value* x = f.in(0);
    if (x && is_host_only_kind(x->kind)) f.composite(0, ValueKind::kOptional, x->kind, x->elem_dtype);
    else f.composite(0, ValueKind::kOptional, ValueKind::kTensor, x ? x->dtype : ONYX_DTYPE_UNDEFINED);
  } else if (op == "OptionalGetElement") {
    const Value* x = f.in(0);
    if (x && x->kind == ValueKind::kOptional) {
      if (x->elem_kind == ValueKind::kTensor) f.tensor(0, x->elem_dtype);
      else f.composite(0, x->elem_kind, ValueKind::kTensor, x->elem_dtype);
    } else {
      f.same_as(0, x);
    }
  } else if (op == "RegexFullMatch") {  // the string ops, which run on the host
    f.tensor(0, ONYX_DTYPE_BOOL);
  } else if (op == "StringConcat" || op == "StringNormalizer") {
    f.tensor(0, ONYX_DTYPE_STRING);
  } else if (op == "StringSplit") {
    f.tensor(0, ONYX_DTYPE_STRING);
    f.tensor(1, ONYX_DTYPE_INT64);
  } else if (op == "Identity") {
    f.same_as(0, f.in(0));
  } else if (node.domain == "ai.onnx.ml" && op == "ZipMap") {
    f.composite(0, ValueKind::kSequence, ValueKind::kMap, ONYX_DTYPE_FLOAT32);
  } else if (node.domain == "ai.onnx.ml" && op == "CastMap") {
    const Attribute* to = node.attr("cast_to");
    const std::string cast_to = to ? to->s : "TO_FLOAT";
    f.tensor(0, cast_to == "TO_STRING" ? ONYX_DTYPE_STRING : cast_to == "TO_INT64" ? ONYX_DTYPE_INT64 : ONYX_DTYPE_FLOAT32);
  } else if (node.domain == "ai.onnx.ml" && op == "DictVectorizer") {
    if (f.in(0) && f.in(0)->kind == ValueKind::kMap) f.tensor(0, f.in(0)->elem_dtype);
  } else if (op == "If") {
    std::vector<const Value*> outs = subgraph_outputs(node, "then_branch", 0);
    for (size_t k = 0; k < outs.size(); ++k) f.same_as(k, outs[k]);
  } else if (op == "Loop") {
    // Body outputs: cond, the carried values, the scan outputs (tensors).
    std::vector<const Value*> outs = subgraph_outputs(node, "body", 1);
    const size_t carried = node.inputs.size() >= 2 ? node.inputs.size() - 2 : 0;
    for (size_t k = 0; k < outs.size() && k < carried; ++k)
      f.same_as(k, is_host_only_kind(outs[k]->kind) ? outs[k] : f.in(2 + k));
  }
}

}  // namespace

void infer_value_kinds(Graph& graph) {
  for (Node& node : graph.nodes)
    for (Attribute& a : node.attributes) {
      if (a.g) infer_value_kinds(*a.g);
      for (auto& g : a.graphs) infer_value_kinds(*g);
    }
  auto order = graph.topological_order();
  if (!order.ok()) return;  // the importer reports cycles
  for (int n : order.value())
    if (graph.nodes[size_t(n)].domain.empty() || graph.nodes[size_t(n)].domain == "ai.onnx.ml")
      infer_node(graph, graph.nodes[size_t(n)]);
}

}  // namespace onyx::runtime::ir
