// model_builder.h: builds small ONNX models in tests (libonnx protobuf).
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

namespace onyx::testing {

class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 17) {
    model_.set_ir_version(8);
    model_.set_producer_name("onyx-tests");
    auto* op = model_.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }
  ModelBuilder& input(const std::string& name, std::vector<int64_t> dims, int dtype = 1) {
    set_type(model_.mutable_graph()->add_input(), name, dims, dtype);
    return *this;
  }
  ModelBuilder& output(const std::string& name, std::vector<int64_t> dims, int dtype = 1) {
    set_type(model_.mutable_graph()->add_output(), name, dims, dtype);
    return *this;
  }
  ModelBuilder& node(const std::string& op, std::vector<std::string> inputs,
                     std::vector<std::string> outputs, const std::string& name = "",
                     const std::string& domain = "") {
    auto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name);
    n->set_domain(domain);
    for (auto& i : inputs) n->add_input(i);
    for (auto& o : outputs) n->add_output(o);
    return *this;
  }
  ModelBuilder& initializer(const std::string& name, std::vector<int64_t> dims,
                            const std::vector<float>& values) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(1);
    for (int64_t d : dims) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
    return *this;
  }
  ModelBuilder& opset(const std::string& domain, int64_t version) {
    auto* op = model_.add_opset_import();
    op->set_domain(domain);
    op->set_version(version);
    return *this;
  }
  std::string bytes() const { return model_.SerializeAsString(); }
  ONNX_NAMESPACE::ModelProto& proto() { return model_; }

 private:
  static void set_type(ONNX_NAMESPACE::ValueInfoProto* v, const std::string& name,
                       const std::vector<int64_t>& dims, int dtype) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(dtype);
    auto* shape = t->mutable_shape();
    for (int64_t d : dims) {
      auto* dim = shape->add_dim();
      if (d >= 0) dim->set_dim_value(d);
      else dim->set_dim_param("N");
    }
  }
  ONNX_NAMESPACE::ModelProto model_;
};

// Attributes of the node added last (found by argument-dependent lookup).
inline ONNX_NAMESPACE::NodeProto& last_node(ModelBuilder& b) {
  auto* nodes = b.proto().mutable_graph()->mutable_node();
  return *nodes->Mutable(nodes->size() - 1);
}

inline void attr_int(ModelBuilder& b, const std::string& name, int64_t v) {
  auto* a = last_node(b).add_attribute();
  a->set_name(name);
  a->set_type(ONNX_NAMESPACE::AttributeProto::INT);
  a->set_i(v);
}

inline void attr_float(ModelBuilder& b, const std::string& name, float v) {
  auto* a = last_node(b).add_attribute();
  a->set_name(name);
  a->set_type(ONNX_NAMESPACE::AttributeProto::FLOAT);
  a->set_f(v);
}

inline void attr_ints(ModelBuilder& b, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = last_node(b).add_attribute();
  a->set_name(name);
  a->set_type(ONNX_NAMESPACE::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

}  // namespace onyx::testing
