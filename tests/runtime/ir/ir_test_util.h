// ir_test_util.h: builds small ONNX models in C++ (so that the IR tests
// never depend on files), and imports them.
#pragma once

#include <onnx/onnx_pb.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "ir/onnx_import.h"

namespace onyx::runtime::ir::testing {

namespace pb = ONNX_NAMESPACE;

// Attribute constructors.
inline pb::AttributeProto attr_int(const std::string& name, int64_t v) {
  pb::AttributeProto a;
  a.set_name(name);
  a.set_type(pb::AttributeProto::INT);
  a.set_i(v);
  return a;
}
inline pb::AttributeProto attr_float(const std::string& name, float v) {
  pb::AttributeProto a;
  a.set_name(name);
  a.set_type(pb::AttributeProto::FLOAT);
  a.set_f(v);
  return a;
}
inline pb::AttributeProto attr_string(const std::string& name, const std::string& v) {
  pb::AttributeProto a;
  a.set_name(name);
  a.set_type(pb::AttributeProto::STRING);
  a.set_s(v);
  return a;
}
inline pb::AttributeProto attr_ints(const std::string& name, std::vector<int64_t> v) {
  pb::AttributeProto a;
  a.set_name(name);
  a.set_type(pb::AttributeProto::INTS);
  for (int64_t x : v) a.add_ints(x);
  return a;
}
inline pb::AttributeProto attr_floats(const std::string& name, std::vector<float> v) {
  pb::AttributeProto a;
  a.set_name(name);
  a.set_type(pb::AttributeProto::FLOATS);
  for (float x : v) a.add_floats(x);
  return a;
}
inline pb::AttributeProto attr_tensor(const std::string& name, const pb::TensorProto& t) {
  pb::AttributeProto a;
  a.set_name(name);
  a.set_type(pb::AttributeProto::TENSOR);
  *a.mutable_t() = t;
  return a;
}
inline pb::AttributeProto attr_graph(const std::string& name, const pb::GraphProto& g) {
  pb::AttributeProto a;
  a.set_name(name);
  a.set_type(pb::AttributeProto::GRAPH);
  *a.mutable_g() = g;
  return a;
}

// Tensor constructors (typed fields, not raw_data, unless stated).
inline pb::TensorProto int64_tensor(const std::string& name, std::vector<int64_t> dims,
                                    std::vector<int64_t> values) {
  pb::TensorProto t;
  t.set_name(name);
  t.set_data_type(pb::TensorProto::INT64);
  for (int64_t d : dims) t.add_dims(d);
  for (int64_t v : values) t.add_int64_data(v);
  return t;
}
inline pb::TensorProto float_tensor(const std::string& name, std::vector<int64_t> dims,
                                    std::vector<float> values) {
  pb::TensorProto t;
  t.set_name(name);
  t.set_data_type(pb::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  for (float v : values) t.add_float_data(v);
  return t;
}

// Fills a ValueInfoProto; a negative dim becomes a symbolic one.
inline void set_value_info(pb::ValueInfoProto* v, const std::string& name, int32_t dtype,
                           const std::vector<int64_t>& dims, bool with_shape = true) {
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(dtype);
  if (!with_shape) return;
  auto* shape = t->mutable_shape();
  for (int64_t d : dims) {
    auto* dim = shape->add_dim();
    if (d >= 0) dim->set_dim_value(d);
    else dim->set_dim_param("N" + std::to_string(shape->dim_size()));
  }
}

// Builds a GraphProto (also for subgraphs).
class GraphBuilder {
 public:
  explicit GraphBuilder(const std::string& name = "g") { graph_.set_name(name); }
  GraphBuilder& input(const std::string& name, int32_t dtype, std::vector<int64_t> dims) {
    set_value_info(graph_.add_input(), name, dtype, dims);
    return *this;
  }
  GraphBuilder& input_no_shape(const std::string& name, int32_t dtype) {
    set_value_info(graph_.add_input(), name, dtype, {}, false);
    return *this;
  }
  GraphBuilder& output(const std::string& name, int32_t dtype = 0, std::vector<int64_t> dims = {},
                       bool with_shape = false) {
    auto* v = graph_.add_output();
    if (dtype == 0) v->set_name(name);
    else set_value_info(v, name, dtype, dims, with_shape);
    return *this;
  }
  GraphBuilder& value_info(const std::string& name, int32_t dtype, std::vector<int64_t> dims) {
    set_value_info(graph_.add_value_info(), name, dtype, dims);
    return *this;
  }
  GraphBuilder& initializer(const pb::TensorProto& t) {
    *graph_.add_initializer() = t;
    return *this;
  }
  GraphBuilder& node(const std::string& op, std::vector<std::string> inputs, std::vector<std::string> outputs,
                     std::vector<pb::AttributeProto> attrs = {}, const std::string& name = "",
                     const std::string& domain = "") {
    auto* n = graph_.add_node();
    n->set_op_type(op);
    n->set_name(name);
    n->set_domain(domain);
    for (auto& i : inputs) n->add_input(i);
    for (auto& o : outputs) n->add_output(o);
    for (auto& a : attrs) *n->add_attribute() = a;
    return *this;
  }
  pb::GraphProto& proto() { return graph_; }

 private:
  pb::GraphProto graph_;
};

inline pb::ModelProto make_model(const pb::GraphProto& graph, int64_t opset = 17) {
  pb::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("onyx-ir-tests");
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  *m.mutable_graph() = graph;
  return m;
}

inline StatusOr<Model> import(const pb::ModelProto& m, const std::string& base_dir = "",
                              bool infer = true) {
  const std::string bytes = m.SerializeAsString();
  ImportOptions options;
  options.infer_shapes = infer;
  return load_model_from_bytes(bytes.data(), bytes.size(), base_dir, options);
}

// The named value of the model's main graph (nullptr when absent).
inline const Value* find(const Model& m, const std::string& name) {
  int v = m.graph->find_value(name);
  return v < 0 ? nullptr : &m.graph->values[size_t(v)];
}

// A one-node model for shape inference tests: its inputs are graph inputs
// or constants (initializers); the node is named "n".
class OpTest {
 public:
  explicit OpTest(const std::string& op, int64_t opset = 17) : op_(op), opset_(opset) {}
  // A graph input; negative dims are symbolic.
  OpTest& in(const std::string& name, int32_t dtype, std::vector<int64_t> dims) {
    graph_.input(name, dtype, dims);
    inputs_.push_back(name);
    return *this;
  }
  // A graph input of unknown shape.
  OpTest& in_unknown(const std::string& name, int32_t dtype) {
    graph_.input_no_shape(name, dtype);
    inputs_.push_back(name);
    return *this;
  }
  // A constant int64 input; 1-D unless `dims` says otherwise.
  OpTest& ints(const std::string& name, std::vector<int64_t> values, std::optional<std::vector<int64_t>> dims = {}) {
    graph_.initializer(int64_tensor(name, dims.value_or(std::vector<int64_t>{int64_t(values.size())}), values));
    inputs_.push_back(name);
    return *this;
  }
  OpTest& floats(const std::string& name, std::vector<float> values, std::optional<std::vector<int64_t>> dims = {}) {
    graph_.initializer(float_tensor(name, dims.value_or(std::vector<int64_t>{int64_t(values.size())}), values));
    inputs_.push_back(name);
    return *this;
  }
  OpTest& omit() {
    inputs_.push_back("");
    return *this;
  }
  OpTest& attr(const pb::AttributeProto& a) {
    attrs_.push_back(a);
    return *this;
  }
  OpTest& outputs(int count) {
    outputs_ = count;
    return *this;
  }
  // Declares output k's type in value_info (to test merging).
  OpTest& declare(int k, int32_t dtype, std::vector<int64_t> dims) {
    graph_.value_info("out" + std::to_string(k), dtype, dims);
    return *this;
  }
  StatusOr<Model> run() {
    std::vector<std::string> outs;
    for (int k = 0; k < outputs_; ++k) outs.push_back("out" + std::to_string(k));
    GraphBuilder g = graph_;
    g.node(op_, inputs_, outs, attrs_, "n");
    for (const std::string& o : outs) g.output(o);
    return import(make_model(g.proto(), opset_));
  }

 private:
  std::string op_;
  int64_t opset_;
  GraphBuilder graph_;
  std::vector<std::string> inputs_;
  std::vector<pb::AttributeProto> attrs_;
  int outputs_ = 1;
};

// Output k of an OpTest model ("outK").
inline const Value& out(const StatusOr<Model>& m, int k = 0) {
  static const Value none;
  if (!m.ok()) return none;
  const Value* v = find(m.value(), "out" + std::to_string(k));
  return v ? *v : none;
}

}  // namespace onyx::runtime::ir::testing
