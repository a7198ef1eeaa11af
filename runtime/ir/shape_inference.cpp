// shape_inference.cpp: the driver. Visits nodes in topological order, runs
// each op's rule (shape_rules_*.cpp; onnx's own inference for ops without
// one, see onnx_schema_fallback.cpp), merges the result with what the model
// declared, and folds small constant computations (constant_folding.cpp).
#include "ir/shape_inference.h"

#include <algorithm>

#include "ir/onnx_schema_fallback.h"
#include "ir/shape_rules.h"

namespace onyx::runtime::ir {

namespace shape {

InferContext::InferContext(const Graph& graph, const Node& node)
    : graph_(graph), node_(node), opset_(graph.opset(node.domain)), outputs_(node.outputs.size()) {}

bool InferContext::has_input(size_t i) const {
  return i < node_.inputs.size() && node_.inputs[i] >= 0;
}

int32_t InferContext::dtype(size_t i) const {
  return has_input(i) ? graph_.values[size_t(node_.inputs[i])].dtype : ONYX_DTYPE_UNDEFINED;
}

int32_t InferContext::rank(size_t i) const {
  if (!has_input(i)) return -1;
  const Value& v = graph_.values[size_t(node_.inputs[i])];
  return v.dims.size() == size_t(std::max(v.rank, 0)) ? v.rank : -1;  // inconsistent: unknown
}

const Shape& InferContext::dims(size_t i) const {
  static const Shape none;
  return rank(i) >= 0 ? graph_.values[size_t(node_.inputs[i])].dims : none;
}

TypeShape InferContext::input_type(size_t i) const { return {dtype(i), rank(i), dims(i)}; }

const Tensor* InferContext::constant(size_t i) const {
  if (!has_input(i)) return nullptr;
  const Value& v = graph_.values[size_t(node_.inputs[i])];
  return v.constant && !v.is_graph_input ? &*v.constant : nullptr;
}

std::optional<std::vector<int64_t>> InferContext::ints(size_t i) const {
  const Tensor* t = constant(i);
  if (!t) return std::nullopt;
  const int64_t n = t->size();
  std::vector<int64_t> out(size_t(std::max<int64_t>(n, 0)));
  for (int64_t k = 0; k < n; ++k) {
    switch (t->dtype()) {
      case ONYX_DTYPE_INT64: out[size_t(k)] = t->data_as<int64_t>()[k]; break;
      case ONYX_DTYPE_INT32: out[size_t(k)] = t->data_as<int32_t>()[k]; break;
      case ONYX_DTYPE_INT16: out[size_t(k)] = t->data_as<int16_t>()[k]; break;
      case ONYX_DTYPE_INT8: out[size_t(k)] = t->data_as<int8_t>()[k]; break;
      case ONYX_DTYPE_UINT8: out[size_t(k)] = t->data_as<uint8_t>()[k]; break;
      case ONYX_DTYPE_UINT16: out[size_t(k)] = t->data_as<uint16_t>()[k]; break;
      case ONYX_DTYPE_UINT32: out[size_t(k)] = t->data_as<uint32_t>()[k]; break;
      case ONYX_DTYPE_UINT64: out[size_t(k)] = int64_t(t->data_as<uint64_t>()[k]); break;
      default: return std::nullopt;
    }
  }
  return out;
}

std::optional<std::vector<double>> InferContext::reals(size_t i) const {
  const Tensor* t = constant(i);
  if (!t) return std::nullopt;
  std::vector<double> out;
  if (t->dtype() == ONYX_DTYPE_FLOAT32) {
    out.assign(t->data_as<float>(), t->data_as<float>() + t->size());
  } else if (t->dtype() == ONYX_DTYPE_FLOAT64) {
    out.assign(t->data_as<double>(), t->data_as<double>() + t->size());
  } else if (auto as_ints = ints(i)) {
    out.assign(as_ints->begin(), as_ints->end());
  } else {
    return std::nullopt;
  }
  return out;
}

int64_t InferContext::attr_int(const std::string& name, int64_t fallback) const {
  return node_.attr_int(name, fallback);
}

float InferContext::attr_float(const std::string& name, float fallback) const {
  const Attribute* a = attr(name);
  return a && a->type == ONYX_ATTR_FLOAT ? a->f : fallback;
}

std::string InferContext::attr_string(const std::string& name, const std::string& fallback) const {
  const Attribute* a = attr(name);
  return a && a->type == ONYX_ATTR_STRING ? a->s : fallback;
}

std::optional<std::vector<int64_t>> InferContext::attr_ints(const std::string& name) const {
  const Attribute* a = attr(name);
  if (!a || a->type != ONYX_ATTR_INTS) return std::nullopt;
  return a->ints;
}

void InferContext::set_output(size_t i, int32_t dtype, Shape dims) {
  if (i >= outputs_.size()) return;
  outputs_[i].dtype = dtype;
  outputs_[i].rank = int32_t(dims.size());
  outputs_[i].dims = std::move(dims);
}

void InferContext::set_output_rank(size_t i, int32_t dtype, int32_t rank) {
  if (rank < 0) return set_output_dtype(i, dtype);
  set_output(i, dtype, Shape(size_t(rank), kUnknown));
}

void InferContext::set_output_dtype(size_t i, int32_t dtype) {
  if (i >= outputs_.size()) return;
  outputs_[i] = TypeShape{dtype, -1, {}};
}

void InferContext::set_output(size_t i, const TypeShape& t) {
  if (t.rank_known()) set_output(i, t.dtype, t.dims);
  else set_output_dtype(i, t.dtype);
}

Status InferContext::error(const std::string& message) const {
  return invalid_argument(node_.describe() + ": " + message);
}

StatusOr<int64_t> InferContext::axis(int64_t value, int64_t rank, const std::string& what) const {
  if (value < -rank || value >= rank)
    return error(what + " " + std::to_string(value) + " is out of range for rank " + std::to_string(rank));
  return value < 0 ? value + rank : value;
}

StatusOr<int64_t> InferContext::sum(std::span<const int64_t> terms, const std::string& what) const {
  int64_t total = 0;
  for (int64_t t : terms)
    if (__builtin_add_overflow(total, t, &total))
      return error(what + " " + list_string(terms) + " overflows a 64-bit size when added");
  return total;
}

StatusOr<int64_t> InferContext::product(std::span<const int64_t> factors, const std::string& what) const {
  int64_t total = 1;
  for (int64_t f : factors)
    if (__builtin_mul_overflow(total, f, &total))
      return error(what + " " + list_string(factors) + " overflows a 64-bit size when multiplied");
  return total;
}

StatusOr<int64_t> InferContext::dim_from_real(double value, const std::string& what) const {
  // 2^63 as a double is exact; anything at or past it (or NaN) has no int64.
  if (!(value >= 0 && value < 9223372036854775808.0))
    return error(what + " " + std::to_string(value) + " is not a dim (0 to 2^63 - 1)");
  return int64_t(value);
}

std::string list_string(std::span<const int64_t> values) {
  std::string s = "[";
  for (size_t k = 0; k < values.size(); ++k) s += (k ? ", " : "") + std::to_string(values[k]);
  return s + "]";
}

void same_as_input(InferContext& ctx, size_t out, size_t from) {
  ctx.set_output(out, ctx.input_type(from));
}

StatusOr<TypeShape> broadcast(const InferContext& ctx, std::span<const TypeShape> shapes) {
  TypeShape result;
  result.dtype = shapes.empty() ? ONYX_DTYPE_UNDEFINED : shapes[0].dtype;
  int32_t rank = 0;
  for (const TypeShape& s : shapes) {
    if (!s.rank_known()) return result;  // rank unknown
    rank = std::max(rank, s.rank);
  }
  result.rank = rank;
  result.dims.assign(size_t(rank), 1);
  for (int32_t a = 0; a < rank; ++a) {  // a counts from the right
    int64_t fixed = 1;  // the one non-1 size seen so far (1: none)
    bool unknown = false;
    for (const TypeShape& s : shapes) {
      if (a >= s.rank) continue;
      int64_t d = s.dims[size_t(s.rank - 1 - a)];
      if (d < 0) unknown = true;
      else if (d != 1) {
        if (fixed != 1 && fixed != d) {
          std::string list;
          for (const TypeShape& t : shapes) list += (list.empty() ? "" : " and ") + shape_string(t.dims);
          return ctx.error("cannot broadcast shapes " + list + ": dim " + std::to_string(rank - 1 - a) +
                           " of the result would be both " + std::to_string(fixed) + " and " +
                           std::to_string(d));
        }
        fixed = d;
      }
    }
    // An unknown dim is 1 or the other size: only a non-1 size pins it.
    result.dims[size_t(rank - 1 - a)] = fixed != 1 ? fixed : unknown ? kUnknown : 1;
  }
  return result;
}

Status set_broadcast(InferContext& ctx, const TypeShape& a, const TypeShape& b, int32_t dtype) {
  const TypeShape both[] = {a, b};
  ONYX_ASSIGN_OR_RETURN(TypeShape out, broadcast(ctx, both));
  out.dtype = dtype;
  ctx.set_output(0, out);
  return Status();
}

const RuleTable& rules() {
  static const RuleTable table = [] {
    RuleTable t;
    add_elementwise_rules(t);
    add_nn_rules(t);
    add_tensor_rules(t);
    add_reduce_rules(t);
    return t;
  }();
  return table;
}

const RuleTable& microsoft_rules() {
  static const RuleTable table = [] {
    RuleTable t;
    add_microsoft_rules(t);
    return t;
  }();
  return table;
}

const RuleTable& training_rules() {
  static const RuleTable table = [] {
    RuleTable t;
    add_training_rules(t);
    return t;
  }();
  return table;
}

}  // namespace shape

namespace {

using shape::InferContext;
using shape::TypeShape;

// Combines what a rule inferred with what the model declared for `v`.
Status merge_into(Value& v, const TypeShape& t, const Node& node) {
  auto contradiction = [&](const std::string& declared, const std::string& inferred) {
    return invalid_argument(node.describe() + ": output '" + v.name + "' is declared " + declared +
                            " but inferred " + inferred);
  };
  if (t.dtype != ONYX_DTYPE_UNDEFINED) {
    if (v.dtype == ONYX_DTYPE_UNDEFINED) v.dtype = t.dtype;
    else if (v.dtype != t.dtype) return contradiction(dtype_name(v.dtype), dtype_name(t.dtype));
  }
  if (!t.rank_known()) return Status();
  if (v.rank < 0) {
    v.rank = t.rank;
    v.dims = t.dims;
    return Status();
  }
  if (v.rank != t.rank || v.dims.size() != t.dims.size())
    return contradiction(shape_string(v.dims), shape_string(t.dims));
  for (size_t k = 0; k < t.dims.size(); ++k) {
    if (t.dims[k] < 0) continue;
    if (v.dims[k] < 0) v.dims[k] = t.dims[k];
    else if (v.dims[k] != t.dims[k]) return contradiction(shape_string(v.dims), shape_string(t.dims));
  }
  return Status();
}

Status infer_graph(Graph& g);

// Output types of `sub` (a copy is inferred; shared subgraphs stay untouched)
// for the given input types, with captured names typed from `enclosing`.
StatusOr<std::vector<TypeShape>> infer_subgraph(const Graph& sub, const std::vector<TypeShape>& inputs,
                                                const Graph& enclosing, const InferContext& ctx,
                                                const std::string& attr) {
  Graph copy = sub;
  for (int r : copy.outer_refs) {
    Value& v = copy.values[size_t(r)];
    if (int e = enclosing.find_value(v.name); e >= 0) {
      const Value& outer = enclosing.values[size_t(e)];
      v.dtype = outer.dtype, v.rank = outer.rank, v.dims = outer.dims, v.kind = outer.kind;
      if (outer.constant && !outer.is_graph_input) v.constant = outer.constant;
    }
  }
  for (size_t k = 0; k < inputs.size() && k < copy.inputs.size(); ++k) {
    Value& v = copy.values[size_t(copy.inputs[k])];
    if (v.dtype == ONYX_DTYPE_UNDEFINED) v.dtype = inputs[k].dtype;
    if (v.rank < 0 && inputs[k].rank_known()) v.rank = inputs[k].rank, v.dims = inputs[k].dims;
  }
  ONYX_RETURN_IF_ERROR(
      infer_graph(copy).with_context(ctx.node().describe() + " subgraph '" + attr + "'"));
  std::vector<TypeShape> outs;
  for (int o : copy.outputs) {
    const Value& v = copy.values[size_t(o)];
    outs.push_back({v.dtype, v.rank, v.dims});
  }
  return outs;
}

// What two alternatives (If branches, a loop's first and later iterations)
// have in common.
TypeShape common(const TypeShape& a, const TypeShape& b) {
  TypeShape r;
  r.dtype = a.dtype == b.dtype ? a.dtype : ONYX_DTYPE_UNDEFINED;
  if (a.rank_known() && a.rank == b.rank) {
    r.rank = a.rank;
    for (size_t k = 0; k < a.dims.size(); ++k) r.dims.push_back(a.dims[k] == b.dims[k] ? a.dims[k] : -1);
  }
  return r;
}

// Scan: states keep their type; scan outputs get the body's dtype and rank
// (+1, or +2 with Scan-8's batch axis), their lengths known only at run time.
Status infer_scan(InferContext& ctx, const Graph& g) {
  const Node& node = ctx.node();
  const Attribute* body = node.attr("body");
  if (!body || !body->g) return ctx.error("needs a body subgraph");
  const bool batched = g.opset(node.domain) < 9;
  const size_t first = batched ? 1 : 0;
  const int64_t m = node.attr_int("num_scan_inputs", 0);
  if (m < 1 || size_t(m) + first > ctx.input_count()) return ctx.error("num_scan_inputs out of range");
  const size_t states = ctx.input_count() - first - size_t(m);
  std::vector<TypeShape> ins;
  for (size_t k = first; k < ctx.input_count(); ++k) {
    TypeShape t = ctx.input_type(k);
    const int32_t drop = (batched ? 1 : 0) + (k >= first + states ? 1 : 0);  // batch, scan axis
    ins.push_back(t.rank >= drop ? TypeShape{t.dtype, t.rank - drop, Shape(size_t(t.rank - drop), shape::kUnknown)}
                                 : TypeShape{t.dtype, -1, {}});
  }
  ONYX_ASSIGN_OR_RETURN(auto outs, infer_subgraph(*body->g, ins, g, ctx, "body"));
  for (size_t k = 0; k < ctx.output_count() && k < outs.size(); ++k) {
    if (k < states && !batched) {
      ctx.set_output(k, common(ctx.input_type(k), outs[k]));
    } else if (outs[k].rank_known()) {
      const int32_t extra = (batched ? 1 : 0) + (k >= states ? 1 : 0);
      ctx.set_output_rank(k, outs[k].dtype, outs[k].rank + extra);
    } else {
      ctx.set_output_dtype(k, outs[k].dtype);
    }
  }
  return Status();
}

// If and Loop: their outputs come from subgraphs.
Status infer_control_flow(InferContext& ctx, const Graph& g) {
  const Node& node = ctx.node();
  if (node.op_type == "If") {
    const Attribute* then_g = node.attr("then_branch");
    const Attribute* else_g = node.attr("else_branch");
    if (!then_g || !then_g->g || !else_g || !else_g->g)
      return ctx.error("needs then_branch and else_branch subgraphs");
    // A constant condition (common in expanded functions) picks one branch.
    const Tensor* cond = ctx.constant(0);
    if (cond && cond->size() == 1 && dtype_size(cond->dtype()) == 1) {
      const bool taken = *static_cast<const uint8_t*>(cond->data()) != 0;
      ONYX_ASSIGN_OR_RETURN(auto outs, infer_subgraph(*(taken ? then_g : else_g)->g, {}, g, ctx,
                                                      taken ? "then_branch" : "else_branch"));
      for (size_t k = 0; k < outs.size() && k < ctx.output_count(); ++k) ctx.set_output(k, outs[k]);
      return Status();
    }
    ONYX_ASSIGN_OR_RETURN(auto a, infer_subgraph(*then_g->g, {}, g, ctx, "then_branch"));
    ONYX_ASSIGN_OR_RETURN(auto b, infer_subgraph(*else_g->g, {}, g, ctx, "else_branch"));
    if (a.size() != ctx.output_count() || b.size() != ctx.output_count())
      return ctx.error("has " + std::to_string(ctx.output_count()) + " outputs but its branches return " +
                       std::to_string(a.size()) + " and " + std::to_string(b.size()));
    for (size_t k = 0; k < a.size(); ++k) ctx.set_output(k, common(a[k], b[k]));
    return Status();
  }
  if (node.op_type == "Loop") {
    const Attribute* body = node.attr("body");
    if (!body || !body->g) return ctx.error("needs a body subgraph");
    // Body inputs: iteration number, condition, loop-carried values. Only
    // the latter's dtype is passed: their shapes may change per iteration.
    std::vector<TypeShape> ins = {{ONYX_DTYPE_INT64, 0, {}}, {ONYX_DTYPE_BOOL, 0, {}}};
    for (size_t k = 2; k < ctx.input_count(); ++k) ins.push_back({ctx.dtype(k), -1, {}});
    ONYX_ASSIGN_OR_RETURN(auto outs, infer_subgraph(*body->g, ins, g, ctx, "body"));
    const size_t carried = ctx.input_count() >= 2 ? ctx.input_count() - 2 : 0;
    for (size_t k = 0; k < ctx.output_count(); ++k) {
      if (k + 1 >= outs.size()) break;
      const TypeShape& body_out = outs[k + 1];
      if (k < carried) {
        ctx.set_output(k, common(ctx.input_type(k + 2), body_out));
      } else if (body_out.rank_known()) {  // scan output: one slice per iteration
        Shape dims = {shape::kUnknown};
        dims.insert(dims.end(), body_out.dims.begin(), body_out.dims.end());
        ctx.set_output(k, body_out.dtype, dims);
      } else {
        ctx.set_output_dtype(k, body_out.dtype);
      }
    }
    return Status();
  }
  if (node.op_type == "Scan") return infer_scan(ctx, g);
  return Status();
}

Status infer_node(Graph& g, int n) {
  const Node& node = g.nodes[size_t(n)];
  InferContext ctx(g, node);
  const bool onnx_domain = node.domain.empty();
  bool from_onnx = false;
  if (onnx_domain && (node.op_type == "If" || node.op_type == "Loop" || node.op_type == "Scan")) {
    ONYX_RETURN_IF_ERROR(infer_control_flow(ctx, g));
  } else if (auto it = shape::rules().find(node.op_type); onnx_domain && it != shape::rules().end()) {
    ONYX_RETURN_IF_ERROR(it->second(ctx));
  } else if (auto ms = shape::microsoft_rules().find(node.op_type);
             node.domain == "com.microsoft" && ms != shape::microsoft_rules().end()) {
    ONYX_RETURN_IF_ERROR(ms->second(ctx));
  } else if (auto tr = shape::training_rules().find(node.op_type);
             node.domain == "ai.onyx" && tr != shape::training_rules().end()) {
    ONYX_RETURN_IF_ERROR(tr->second(ctx));
  } else {
    onnx_schema_fallback(g, node, ctx.outputs());
    from_onnx = true;
  }
  for (size_t k = 0; k < node.outputs.size(); ++k) {
    if (node.outputs[k] < 0) continue;
    Value& v = g.values[size_t(node.outputs[k])];
    if (from_onnx) {
      // onnx 1.12's inference has known bugs: where it contradicts the
      // model, trust the model (merging into a scratch copy first).
      Value trial = v;
      if (!merge_into(trial, ctx.outputs()[k], node).ok()) continue;
    }
    ONYX_RETURN_IF_ERROR(merge_into(v, ctx.outputs()[k], node));
  }
  std::vector<std::optional<Tensor>> folded = shape::fold_constants(ctx, ctx.outputs());
  for (size_t k = 0; k < folded.size() && k < node.outputs.size(); ++k) {
    if (!folded[k] || node.outputs[k] < 0) continue;
    Value& v = g.values[size_t(node.outputs[k])];
    TypeShape t{folded[k]->dtype(), int32_t(folded[k]->shape().size()), folded[k]->shape()};
    ONYX_RETURN_IF_ERROR(merge_into(v, t, node));
    v.constant = std::move(folded[k]);
  }
  return Status();
}

// A tensor whose known dims alone overflow its element count or bytes cannot
// exist: say so by name here, before a kernel or an allocation trusts a
// wrapped size (a declared [2^62 + 1, 4] would otherwise count 4 elements).
Status check_size(const Value& v, const std::string& where) {
  if (v.kind != ValueKind::kTensor || v.rank <= 0) return Status();
  Shape known;
  for (int64_t d : v.dims) known.push_back(d < 0 ? 1 : d);
  if (checked_storage_bytes(v.dtype == ONYX_DTYPE_UNDEFINED ? ONYX_DTYPE_UINT8 : v.dtype, known)) return Status();
  return invalid_argument(where + ": '" + v.name + "' of shape " + shape_string(v.dims) +
                          " has more elements or bytes than any machine can address");
}

Status infer_graph(Graph& g) {
  for (int v : g.inputs) ONYX_RETURN_IF_ERROR(check_size(g.values[size_t(v)], "graph input"));
  ONYX_ASSIGN_OR_RETURN(std::vector<int> order, g.topological_order());
  for (int n : order) {
    ONYX_RETURN_IF_ERROR(infer_node(g, n));
    for (int out : g.nodes[size_t(n)].outputs)
      if (out >= 0) ONYX_RETURN_IF_ERROR(check_size(g.values[size_t(out)], g.nodes[size_t(n)].describe()));
  }
  return Status();
}

Status apply_input_shapes(Graph& g, const std::map<std::string, Shape>& input_shapes) {
  for (const auto& entry : input_shapes) {
    // Plain references, not a structured binding: clang 15 (the fuzz build)
    // cannot capture those in the lambda below.
    const std::string& name = entry.first;
    const Shape& dims = entry.second;
    auto it = std::find_if(g.inputs.begin(), g.inputs.end(),
                           [&](int v) { return g.values[size_t(v)].name == name; });
    if (it == g.inputs.end())
      return invalid_argument("a shape was given for '" + name + "', which is not a graph input");
    Value& v = g.values[size_t(*it)];
    const std::string given = "input '" + name + "' was given shape " + shape_string(dims);
    if (std::any_of(dims.begin(), dims.end(), [](int64_t d) { return d < 0; }))
      return invalid_argument(given + " with a negative dim");
    if (v.rank >= 0 && size_t(v.rank) != dims.size())
      return invalid_argument(given + " but is declared with rank " + std::to_string(v.rank) + " " +
                              shape_string(v.dims));
    for (size_t k = 0; k < dims.size() && v.rank >= 0; ++k)
      if (v.dims[k] >= 0 && v.dims[k] != dims[k])
        return invalid_argument(given + " but is declared " + shape_string(v.dims) + " (dim " +
                                std::to_string(k) + ")");
    v.rank = int32_t(dims.size());
    v.dims = dims;
  }
  return Status();
}

}  // namespace

Status infer_shapes(Graph& graph, const std::map<std::string, Shape>& input_shapes) {
  ONYX_RETURN_IF_ERROR(apply_input_shapes(graph, input_shapes));
  return infer_graph(graph);
}

}  // namespace onyx::runtime::ir
