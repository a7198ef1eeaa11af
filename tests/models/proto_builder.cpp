#include "proto_builder.h"

#include <bit>
#include <cstring>

namespace onyx::test_models {

static_assert(std::endian::native == std::endian::little, "raw_data is written little-endian");

onnx::ModelProto new_model(const std::string& graph_name) {
  onnx::ModelProto model;
  model.set_ir_version(8);  // the IR version of ONNX 1.12 / opset 17
  model.set_producer_name("onyx_make_test_models");
  model.set_producer_version("1");
  onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  model.mutable_graph()->set_name(graph_name);
  return model;
}

void add_initializer(onnx::GraphProto& graph, const std::string& name, const std::vector<int64_t>& dims,
                     const std::vector<float>& values) {
  onnx::TensorProto* t = graph.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  std::string raw(values.size() * sizeof(float), '\0');
  if (!values.empty()) std::memcpy(raw.data(), values.data(), raw.size());
  t->set_raw_data(std::move(raw));
}

namespace {

void set_type(onnx::ValueInfoProto& value, const std::string& name, const std::vector<Dim>& dims) {
  value.set_name(name);
  onnx::TypeProto_Tensor* tensor = value.mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  onnx::TensorShapeProto* shape = tensor->mutable_shape();
  for (const Dim& d : dims) {
    onnx::TensorShapeProto_Dimension* dim = shape->add_dim();
    if (const int64_t* size = std::get_if<int64_t>(&d)) dim->set_dim_value(*size);
    else dim->set_dim_param(std::get<std::string>(d));
  }
}

}  // namespace

void add_input(onnx::GraphProto& graph, const std::string& name, const std::vector<Dim>& dims) {
  set_type(*graph.add_input(), name, dims);
}

void add_output(onnx::GraphProto& graph, const std::string& name, const std::vector<Dim>& dims) {
  set_type(*graph.add_output(), name, dims);
}

onnx::NodeProto& add_node(onnx::GraphProto& graph, const std::string& op, const std::string& name,
                          const std::vector<std::string>& inputs, const std::vector<std::string>& outputs) {
  onnx::NodeProto* node = graph.add_node();
  node->set_op_type(op);
  node->set_name(name);
  for (const std::string& in : inputs) node->add_input(in);
  for (const std::string& out : outputs) node->add_output(out);
  return *node;
}

void set_ints(onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& values) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

void set_int(onnx::NodeProto& node, const std::string& name, int64_t value) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

void set_float(onnx::NodeProto& node, const std::string& name, float value) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(value);
}

}  // namespace onyx::test_models
