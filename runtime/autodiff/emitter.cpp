// emitter.cpp: see emitter.h.
#include "autodiff/emitter.h"

#include <onnx/shape_inference/implementation.h>

#include <algorithm>

#include "ir/onnx_import.h"

namespace onyx::runtime::autodiff {

namespace onnx = ONNX_NAMESPACE;

bool ValueType::shape_known() const {
  return rank >= 0 && std::all_of(dims.begin(), dims.end(), [](int64_t d) { return d >= 0; });
}

bool ValueType::same_shape(const ValueType& other) const {
  if (rank < 0 || rank != other.rank || dims.size() != size_t(rank) || other.dims.size() != size_t(rank)) return false;
  auto symbol = [](const ValueType& t, size_t d) { return d < t.symbols.size() ? t.symbols[d] : std::string(); };
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] >= 0 && dims[d] == other.dims[d]) continue;
    const std::string name = symbol(*this, d);
    if (dims[d] < 0 && other.dims[d] < 0 && !name.empty() && name == symbol(other, d)) continue;
    return false;
  }
  return true;
}

onnx::AttributeProto attr_int(const std::string& name, int64_t v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(v);
  return a;
}

onnx::AttributeProto attr_float(const std::string& name, float v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(v);
  return a;
}

onnx::AttributeProto attr_ints(const std::string& name, const std::vector<int64_t>& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a.add_ints(x);
  return a;
}

onnx::AttributeProto attr_string(const std::string& name, const std::string& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::STRING);
  a.set_s(v);
  return a;
}

Emitter::Emitter(onnx::GraphProto* graph, int64_t opset, std::string prefix)
    : graph_(graph), opset_(opset), prefix_(std::move(prefix)) {}

static ValueType type_of(const onnx::ValueInfoProto& v) {
  ValueType t;
  if (!v.type().has_tensor_type()) return t;
  const auto& tt = v.type().tensor_type();
  t.dtype = tt.elem_type();
  if (tt.has_shape()) {
    t.rank = tt.shape().dim_size();
    for (const auto& d : tt.shape().dim()) {
      t.dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
      t.symbols.push_back(d.has_dim_value() ? "" : d.dim_param());
    }
  }
  return t;
}

void Emitter::learn_types(const onnx::GraphProto& g) {
  for (const auto& v : g.input()) types_[v.name()] = type_of(v);
  for (const auto& v : g.output()) types_[v.name()] = type_of(v);
  for (const auto& v : g.value_info()) types_[v.name()] = type_of(v);
  for (const auto& t : g.initializer()) {
    ValueType vt{t.data_type(), t.dims_size(), {t.dims().begin(), t.dims().end()}};
    types_[t.name()] = vt;
  }
}

void Emitter::infer_types(const onnx::GraphProto& graph) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset_);
  op = m.add_opset_import();  // known domain, unknown ops: skipped, not an error
  op->set_domain(kOnyxDomain);
  op->set_version(1);
  *m.mutable_graph() = graph;
  try {
    onnx::shape_inference::InferShapes(m);
  } catch (const std::exception&) {
    // Partial information is still useful; the rules check what they need.
  }
  learn_types(m.graph());
  // onnx's inference gives up on values whose rank is still certain, e.g. the
  // output of a Slice with computed bounds or a Reshape to a computed shape,
  // which exporters write (PyTorch's position embeddings). Onyx's own
  // inference, the one sessions use, fills in what onnx's left unknown.
  const std::string bytes = m.SerializeAsString();
  auto imported = ir::load_model_from_bytes(bytes.data(), bytes.size(), "");
  if (!imported.ok()) return;
  for (const ir::Value& v : imported->graph->values) {
    if (v.rank < 0 || v.dtype == ONYX_DTYPE_UNDEFINED) continue;
    auto known = types_.find(v.name);
    if (known != types_.end() && known->second.rank >= 0) continue;
    types_[v.name] = ValueType{v.dtype, v.rank, {v.dims.begin(), v.dims.end()}};
  }
}

std::optional<ValueType> Emitter::type(const std::string& value) const {
  auto it = types_.find(value);
  if (it == types_.end()) return std::nullopt;
  return it->second;
}

int32_t Emitter::dtype(const std::string& value) const {
  auto t = type(value);
  return t && t->dtype ? t->dtype : int32_t(onnx::TensorProto::FLOAT);
}

std::string Emitter::fresh(const std::string& hint) {
  int& n = used_[hint];
  std::string name = prefix_ + hint + (n ? "_" + std::to_string(n) : "");
  ++n;
  return name;
}

std::vector<std::string> Emitter::node(const std::string& op, const std::vector<std::string>& inputs,
                                       size_t outputs, std::vector<onnx::AttributeProto> attrs,
                                       const std::string& domain) {
  onnx::NodeProto* n = graph_->add_node();
  n->set_op_type(op);
  n->set_domain(domain);
  n->set_name(fresh(op));
  for (const auto& i : inputs) n->add_input(i);
  std::vector<std::string> outs;
  for (size_t k = 0; k < outputs; ++k) {
    outs.push_back(fresh(op + "_out"));
    n->add_output(outs.back());
  }
  for (auto& a : attrs) *n->add_attribute() = std::move(a);
  return outs;
}

void Emitter::drop_output(const std::string& value) {
  for (int n = graph_->node_size(); n-- > 0;)
    for (auto& o : *graph_->mutable_node(n)->mutable_output())
      if (o == value) {
        o.clear();
        return;
      }
}

static onnx::AttributeProto tensor_attr(onnx::TensorProto t) {
  onnx::AttributeProto a;
  a.set_name("value");
  a.set_type(onnx::AttributeProto::TENSOR);
  *a.mutable_t() = std::move(t);
  return a;
}

std::string Emitter::ints(const std::vector<int64_t>& values) {
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::INT64);
  t.add_dims(int64_t(values.size()));
  for (int64_t v : values) t.add_int64_data(v);
  std::string out = op("Constant", {}, {tensor_attr(std::move(t))});
  set_type(out, {onnx::TensorProto::INT64, 1, {int64_t(values.size())}});
  return out;
}

std::string Emitter::scalar(double value, int32_t dtype) {
  onnx::TensorProto t;
  t.set_data_type(dtype);
  if (dtype == onnx::TensorProto::DOUBLE) t.add_double_data(value);
  else if (dtype == onnx::TensorProto::INT64) t.add_int64_data(int64_t(value));
  else {
    t.set_data_type(onnx::TensorProto::FLOAT);
    t.add_float_data(float(value));
  }
  int32_t stored = t.data_type();
  std::string out = op("Constant", {}, {tensor_attr(std::move(t))});
  set_type(out, {stored, 0, {}});
  if (dtype == onnx::TensorProto::FLOAT16 || dtype == onnx::TensorProto::BFLOAT16) {
    // 16-bit values (autocast's) meet constants of their own type; a Cast
    // rounds the float, so no bit conversion lives here.
    out = op("Cast", {out}, {attr_int("to", dtype)});
    set_type(out, {dtype, 0, {}});
  }
  return out;
}

std::string Emitter::reduce(const std::string& reducer, const std::string& x,
                            const std::vector<int64_t>& axes, bool keepdims) {
  // ReduceSum takes axes as an input from opset 13, the others from opset 18.
  bool axes_input = reducer == "ReduceSum" ? opset_ >= 13 : opset_ >= 18;
  std::vector<onnx::AttributeProto> attrs = {attr_int("keepdims", keepdims ? 1 : 0)};
  if (axes.empty()) return op(reducer, {x}, std::move(attrs));  // all axes
  if (axes_input) return op(reducer, {x, ints(axes)}, std::move(attrs));
  attrs.push_back(attr_ints("axes", axes));
  return op(reducer, {x}, std::move(attrs));
}

std::string Emitter::unsqueeze(const std::string& x, const std::vector<int64_t>& axes) {
  if (opset_ >= 13) return op("Unsqueeze", {x, ints(axes)});
  return op("Unsqueeze", {x}, {attr_ints("axes", axes)});
}

std::vector<std::string> Emitter::split(const std::string& x, int64_t axis, const std::string& sizes,
                                        size_t outputs) {
  return node("Split", {x, sizes}, outputs, {attr_int("axis", axis)});
}

std::string Emitter::sum_to_shape(const std::string& g, const std::string& like, const std::string& full) {
  auto tg = type(full), tl = type(like);
  if (tg && tl && tg->same_shape(*tl)) return g;
  std::string out = op("SumToShape", {g, op("Shape", {like})}, {}, kOnyxDomain);
  set_type(out, tl ? *tl : ValueType{dtype(full), -1, {}});
  return out;
}

std::string Emitter::zeros_like(const std::string& like) {
  onnx::TensorProto t;
  t.set_data_type(dtype(like));
  t.add_dims(1);
  if (t.data_type() == onnx::TensorProto::DOUBLE) t.add_double_data(0);
  else t.add_float_data(0);
  std::string out = op("ConstantOfShape", {op("Shape", {like})}, {tensor_attr(std::move(t))});
  if (auto tl = type(like)) set_type(out, *tl);
  return out;
}

}  // namespace onyx::runtime::autodiff
