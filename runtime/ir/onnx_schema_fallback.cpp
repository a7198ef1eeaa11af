#include "ir/onnx_schema_fallback.h"

#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

#include <memory>

namespace onyx::runtime::ir {

namespace pb = ONNX_NAMESPACE;

namespace {

// Constants larger than this are not handed to onnx (shape math inputs are small).
constexpr int64_t kMaxDataElements = 1 << 16;

bool to_proto(const Tensor& t, pb::TensorProto& proto) {
  proto.set_data_type(t.dtype());
  for (int64_t d : t.shape()) proto.add_dims(d);
  if (t.dtype() == ONYX_DTYPE_STRING) {
    const std::string* s = t.data_as<std::string>();
    for (int64_t k = 0; k < t.size(); ++k) proto.add_string_data(s[k]);
    return true;
  }
  if (t.bytes() == 0 && t.size() > 0) return false;
  proto.set_raw_data(t.data(), t.bytes());
  return true;
}

bool to_proto(const Attribute& a, pb::AttributeProto& proto) {
  proto.set_name(a.name);
  proto.set_type(static_cast<pb::AttributeProto::AttributeType>(a.type));
  switch (a.type) {
    case ONYX_ATTR_FLOAT: proto.set_f(a.f); return true;
    case ONYX_ATTR_INT: proto.set_i(a.i); return true;
    case ONYX_ATTR_STRING: proto.set_s(a.s); return true;
    case ONYX_ATTR_FLOATS: for (float f : a.floats) proto.add_floats(f); return true;
    case ONYX_ATTR_INTS: for (int64_t i : a.ints) proto.add_ints(i); return true;
    case ONYX_ATTR_STRINGS: for (const auto& s : a.strings) proto.add_strings(s); return true;
    case ONYX_ATTR_TENSOR: return to_proto(a.t, *proto.mutable_t());
    case pb::AttributeProto::TENSORS:
      for (const Tensor& t : a.tensors)
        if (!to_proto(t, *proto.add_tensors())) return false;
      return true;
    case pb::AttributeProto::TYPE_PROTO: return proto.mutable_tp()->ParseFromString(a.s);
    default: return false;  // graphs: never handed to onnx
  }
}

class NodeContext final : public pb::InferenceContext {
 public:
  NodeContext(const Graph& graph, const Node& node) {
    for (const Attribute& a : node.attributes) to_proto(a, attributes_[a.name]);
    for (int v : node.inputs) {
      auto& type = input_types_.emplace_back();
      auto& data = input_data_.emplace_back();
      if (v < 0) continue;
      const Value& value = graph.values[size_t(v)];
      type = std::make_unique<pb::TypeProto>();
      auto* tt = type->mutable_tensor_type();
      tt->set_elem_type(value.dtype);
      if (value.rank >= 0) {
        auto* shape = tt->mutable_shape();
        for (int64_t d : value.dims) {
          auto* dim = shape->add_dim();
          if (d >= 0) dim->set_dim_value(d);
        }
      }
      if (value.constant && !value.is_graph_input && value.constant->size() <= kMaxDataElements) {
        data = std::make_unique<pb::TensorProto>();
        if (!to_proto(*value.constant, *data)) data.reset();
      }
    }
    output_types_.resize(node.outputs.size());
  }

  const pb::AttributeProto* getAttribute(const std::string& name) const override {
    auto it = attributes_.find(name);
    return it == attributes_.end() ? nullptr : &it->second;
  }
  size_t getNumInputs() const override { return input_types_.size(); }
  const pb::TypeProto* getInputType(size_t i) const override {
    return i < input_types_.size() ? input_types_[i].get() : nullptr;
  }
  const pb::TensorProto* getInputData(size_t i) const override {
    return i < input_data_.size() ? input_data_[i].get() : nullptr;
  }
  size_t getNumOutputs() const override { return output_types_.size(); }
  pb::TypeProto* getOutputType(size_t i) override { return i < output_types_.size() ? &output_types_[i] : nullptr; }
  pb::GraphInferencer* getGraphAttributeInferencer(const std::string&) override { return nullptr; }
  const pb::SparseTensorProto* getInputSparseData(size_t) const override { return nullptr; }
  const pb::TensorShapeProto* getSymbolicInput(size_t) const override { return nullptr; }

  const pb::TypeProto& output(size_t i) const { return output_types_[i]; }

 private:
  std::map<std::string, pb::AttributeProto> attributes_;
  std::vector<std::unique_ptr<pb::TypeProto>> input_types_;
  std::vector<std::unique_ptr<pb::TensorProto>> input_data_;
  std::vector<pb::TypeProto> output_types_;
};

}  // namespace

void onnx_schema_fallback(const Graph& graph, const Node& node, std::vector<shape::TypeShape>& outputs) {
  const int64_t opset = graph.opset(node.domain);
  const auto& ranges = pb::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto range = ranges.find(node.domain);
  if (range == ranges.end() || opset > range->second.second || opset < 1) return;
  const pb::OpSchema* schema = pb::OpSchemaRegistry::Schema(node.op_type, int(opset), node.domain);
  if (!schema || !schema->has_type_and_shape_inference_function()) return;
  for (const Attribute& a : node.attributes)
    if (a.type == ONYX_ATTR_GRAPH || a.type == pb::AttributeProto::GRAPHS) return;
  // onnx's functions assume the schema's input/output counts hold.
  const int inputs = int(node.inputs.size()), outputs_count = int(node.outputs.size());
  if (inputs < schema->min_input() || inputs > schema->max_input() || outputs_count < schema->min_output() ||
      outputs_count > schema->max_output())
    return;
  for (int v : node.inputs) {
    if (v < 0) continue;
    const Value& value = graph.values[size_t(v)];
    if (value.kind != ValueKind::kTensor || value.dtype == ONYX_DTYPE_UNDEFINED) return;
  }
  NodeContext ctx(graph, node);
  try {
    schema->GetTypeAndShapeInferenceFunction()(ctx);
  } catch (...) {
    return;  // onnx could not infer (or disagrees); the kernel will tell at run time
  }
  for (size_t k = 0; k < outputs.size() && k < ctx.getNumOutputs(); ++k) {
    const pb::TypeProto& type = ctx.output(k);
    if (!type.has_tensor_type()) continue;
    const auto& tt = type.tensor_type();
    shape::TypeShape t;
    t.dtype = tt.elem_type();
    if (tt.has_shape()) {
      t.rank = tt.shape().dim_size();
      for (const auto& d : tt.shape().dim()) t.dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
    }
    outputs[k] = t;
  }
}

}  // namespace onyx::runtime::ir
