// graph.h: Onyx's own graph IR. ONNX is imported into it (onnx_import.h);
// partitioning, planning and execution work on it, never on protobuf.
//
// A Graph owns Values (tensors, by index) and Nodes (by index). A node names
// its inputs and outputs by value index; -1 marks an omitted optional one.
// Subgraphs (If/Loop/Scan bodies) are Graphs owned by their node's attribute;
// names they use but do not define resolve in the enclosing scope: such a
// value is listed in Graph::outer_refs (no producer, not an input, no
// constant) and the executor binds it at run time from the enclosing graph.
//
// STRING tensors (initializers, attributes): dtype ONYX_DTYPE_STRING, data
// is an array of size() std::string (data_as<std::string>()), kept alive by
// the Tensor's owner. Tensor::bytes() is 0 for them and clone() does not
// copy them; see ir/tensor_proto.h make_string_tensor().
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace onyx::runtime::ir {

inline constexpr int kNoValue = -1;

struct Graph;

struct Attribute {
  std::string name;
  int32_t type = ONYX_ATTR_UNDEFINED;  // OnyxAttributeType (= ONNX's numbering)
  float f = 0;
  int64_t i = 0;
  std::string s;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  Tensor t;                                   // TENSOR
  std::shared_ptr<Graph> g;                   // GRAPH
  std::vector<std::shared_ptr<Graph>> graphs; // GRAPHS
  std::vector<Tensor> tensors;                // TENSORS (type 9)
  // SPARSE_TENSOR attributes are densified on import and stored as TENSOR.
  // TYPE_PROTO(S) (13/14) keep the serialized onnx TypeProto(s) in s/strings.
};

// What a value holds. Only tensors have dtype/rank/dims; the others keep
// dtype UNDEFINED and rank -1 so that nothing sizes them as tensors, and
// describe their contents with elem_kind/elem_dtype (ir/value_kinds.h).
enum class ValueKind { kTensor, kSequence, kMap, kOptional, kSparseTensor };

struct Value {
  std::string name;
  int32_t dtype = ONYX_DTYPE_UNDEFINED;  // UNDEFINED: unknown (or not a tensor)
  int32_t rank = -1;                     // -1: unknown rank
  Shape dims;                            // rank entries; -1: unknown dim
  // Initializers, and values that shape inference folded (producer >= 0:
  // the producing node is kept and still runs; the constant tells consumers
  // such as Reshape its value ahead of time). On a graph input the
  // initializer is an overridable default.
  std::optional<Tensor> constant;
  int producer = -1;                     // node index, -1 for inputs/initializers
  bool is_graph_input = false;
  bool is_graph_output = false;
  ValueKind kind = ValueKind::kTensor;
  // Sequences: their tensors' element type; optionals: what they hold
  // (a tensor or a sequence) and its element type. UNDEFINED: not known.
  ValueKind elem_kind = ValueKind::kTensor;
  int32_t elem_dtype = ONYX_DTYPE_UNDEFINED;
  // Graph inputs: each declared dim's dim_param ("batch", "sequence"; "" for
  // none). Dims that share one are the same size in any one run.
  std::vector<std::string> dim_params;
  // True when rank >= 0 and every dim is >= 0.
  bool shape_known() const;
};

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;  // "" for ai.onnx ("ai.onnx" is normalised to "")
  std::vector<int> inputs;
  std::vector<int> outputs;
  std::vector<Attribute> attributes;

  const Attribute* attr(const std::string& key) const;
  int64_t attr_int(const std::string& key, int64_t fallback) const;
  // "op_type 'name'" for error messages
  std::string describe() const;
};

struct Graph {
  std::string name;
  std::vector<Value> values;
  std::vector<Node> nodes;
  // Graph inputs, in order. An input that also has an initializer keeps it
  // as Value::constant: a default the caller may override.
  std::vector<int> inputs;
  std::vector<int> outputs;  // graph outputs, in order
  std::map<std::string, int64_t> opsets;  // domain -> version, shared with subgraphs
  // Values used here but defined in an enclosing graph (subgraphs only).
  // topological_order() of the enclosing graph orders the node owning this
  // subgraph after their producers.
  std::vector<int> outer_refs;

  int64_t opset(const std::string& domain) const;
  int find_value(const std::string& name) const;  // -1 if absent
  int add_value(Value v);                          // returns its index
  // Node indices in an order where every node comes after its producers.
  // Fails naming a node on a cycle.
  StatusOr<std::vector<int>> topological_order() const;
  // Recomputes Value::producer from the nodes.
  void link_producers();
};

struct Model {
  int64_t ir_version = 0;
  std::string producer_name;
  std::string producer_version;
  std::string doc;
  std::string base_dir;  // folder of the model file (external data root); "" for buffers
  std::map<std::string, std::string> metadata;
  std::shared_ptr<Graph> graph;
};

}  // namespace onyx::runtime::ir
