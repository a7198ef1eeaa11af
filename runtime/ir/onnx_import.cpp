// onnx_import.cpp: ONNX ModelProto -> ir::Model. Parsing, name resolution
// and validation; tensor decoding lives in tensor_proto.cpp.
#include "ir/onnx_import.h"

#include <onnx/onnx_pb.h>
#include <onyx/util/model_parse.h>
#include <onyx/util/read_file.h>

#include <cerrno>
#include <climits>
#include <filesystem>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>

#include "ir/local_functions.h"
#include "ir/node_arity.h"
#include "ir/shape_inference.h"
#include "ir/tensor_proto.h"
#include "ir/value_kinds.h"

namespace onyx::runtime::ir {

namespace fs = std::filesystem;
namespace pb = ONNX_NAMESPACE;

namespace {

// dtype/rank/dims (tensors) or kind (others) from a declared type.
void apply_type(const pb::TypeProto& type, Value& v) {
  switch (type.value_case()) {
    case pb::TypeProto::kTensorType: {
      v.kind = ValueKind::kTensor;
      const auto& tt = type.tensor_type();
      if (tt.elem_type() != 0) v.dtype = tt.elem_type();
      if (tt.has_shape()) {
        v.rank = tt.shape().dim_size();
        v.dims.assign(size_t(v.rank), -1);
        for (int k = 0; k < v.rank; ++k) {
          const auto& d = tt.shape().dim(k);
          if (d.has_dim_value() && d.dim_value() >= 0) v.dims[size_t(k)] = d.dim_value();
        }
      }
      return;
    }
    case pb::TypeProto::kSequenceType: {
      v.kind = ValueKind::kSequence;
      const pb::TypeProto& elem = type.sequence_type().elem_type();
      if (elem.has_tensor_type()) v.elem_dtype = elem.tensor_type().elem_type();
      if (elem.has_map_type()) {  // ZipMap's seq(map(K, float))
        v.elem_kind = ValueKind::kMap;
        if (elem.map_type().value_type().has_tensor_type())
          v.elem_dtype = elem.map_type().value_type().tensor_type().elem_type();
      }
      return;
    }
    case pb::TypeProto::kMapType:  // elem_dtype: the values' type
      v.kind = ValueKind::kMap;
      if (type.map_type().value_type().has_tensor_type())
        v.elem_dtype = type.map_type().value_type().tensor_type().elem_type();
      return;
    case pb::TypeProto::kOptionalType: {
      v.kind = ValueKind::kOptional;
      const pb::TypeProto& elem = type.optional_type().elem_type();
      if (elem.has_tensor_type()) {
        v.elem_dtype = elem.tensor_type().elem_type();
      } else if (elem.has_sequence_type()) {
        v.elem_kind = ValueKind::kSequence;
        if (elem.sequence_type().elem_type().has_tensor_type())
          v.elem_dtype = elem.sequence_type().elem_type().tensor_type().elem_type();
      }
      return;
    }
    case pb::TypeProto::kSparseTensorType: v.kind = ValueKind::kSparseTensor; return;
    default: return;
  }
}

void set_from_tensor(const Tensor& t, Value& v) {
  v.dtype = t.dtype();
  v.rank = int32_t(t.shape().size());
  v.dims = t.shape();
}

// Old models leave AttributeProto.type unset; infer it from the field set.
int32_t attribute_type(const pb::AttributeProto& a) {
  if (a.type() != pb::AttributeProto::UNDEFINED) return a.type();
  if (a.has_f()) return pb::AttributeProto::FLOAT;
  if (a.has_i()) return pb::AttributeProto::INT;
  if (a.has_s()) return pb::AttributeProto::STRING;
  if (a.has_t()) return pb::AttributeProto::TENSOR;
  if (a.has_g()) return pb::AttributeProto::GRAPH;
  if (a.has_sparse_tensor()) return pb::AttributeProto::SPARSE_TENSOR;
  if (a.has_tp()) return pb::AttributeProto::TYPE_PROTO;
  if (a.floats_size()) return pb::AttributeProto::FLOATS;
  if (a.ints_size()) return pb::AttributeProto::INTS;
  if (a.strings_size()) return pb::AttributeProto::STRINGS;
  if (a.tensors_size()) return pb::AttributeProto::TENSORS;
  if (a.graphs_size()) return pb::AttributeProto::GRAPHS;
  if (a.sparse_tensors_size()) return pb::AttributeProto::SPARSE_TENSORS;
  if (a.type_protos_size()) return pb::AttributeProto::TYPE_PROTOS;
  return pb::AttributeProto::UNDEFINED;
}

class Importer {
 public:
  // `top_raw_data`: the top-level initializers' raw_data when the model was
  // split (onyx/util/model_parse.h), else empty.
  Importer(std::string base_dir, std::map<std::string, int64_t> opsets, std::vector<std::string_view> top_raw_data)
      : base_dir_(std::move(base_dir)), opsets_(std::move(opsets)), top_raw_data_(std::move(top_raw_data)) {}

  // `scope` names the graph in errors ("graph 'main'", "node If 'x' attribute 'then_branch'").
  StatusOr<std::shared_ptr<Graph>> import_graph(const pb::GraphProto& proto, bool is_subgraph,
                                                const std::string& scope);

 private:
  // An initializer is declared (name, dtype, dims) first and decoded only
  // once the graph has been checked, so that a model rejected for its
  // structure never costs the memory of its weights.
  struct PendingInitializer {
    int value;
    const pb::TensorProto* dense;
    const pb::SparseTensorProto* sparse;
    std::optional<std::string_view> raw_data;
    std::vector<int64_t> dims;
  };

  struct GraphState {
    Graph& g;
    bool is_subgraph;
    std::string scope;
    std::unordered_map<std::string, int> index;
    std::vector<PendingInitializer> pending;
    std::unordered_map<int, size_t> pending_of;  // value -> index in `pending`
    bool is_initializer(int v) const { return g.values[size_t(v)].constant || pending_of.count(v); }
    int find(const std::string& name) const {
      auto it = index.find(name);
      return it == index.end() ? -1 : it->second;
    }
    int add(const std::string& name) {
      Value v;
      v.name = name;
      int i = g.add_value(std::move(v));
      index[name] = i;
      return i;
    }
    // A name this graph does not define: legal only in a subgraph, where it
    // refers to an enclosing scope.
    StatusOr<int> outer_ref(const std::string& name, const std::string& user) {
      if (int v = find(name); v >= 0) return v;
      if (!is_subgraph)
        return invalid_argument(scope + ": " + user + " uses '" + name +
                                "', which no node, graph input or initializer produces");
      int v = add(name);
      g.outer_refs.push_back(v);
      return v;
    }
  };

  Status add_initializers(const pb::GraphProto& proto, GraphState& st);
  Status decode_initializers(GraphState& st);
  Status add_inputs(const pb::GraphProto& proto, GraphState& st);
  Status add_nodes(const pb::GraphProto& proto, GraphState& st);
  Status add_outputs(const pb::GraphProto& proto, GraphState& st);
  StatusOr<Attribute> convert_attribute(const pb::AttributeProto& a, const Node& node, GraphState& st);

  std::string base_dir_;
  std::map<std::string, int64_t> opsets_;
  std::vector<std::string_view> top_raw_data_;
};

Status Importer::add_initializers(const pb::GraphProto& proto, GraphState& st) {
  auto declare = [&](const std::string& name, const std::string& what, PendingInitializer p, int32_t dtype,
                     const google::protobuf::RepeatedField<int64_t>& dims) -> Status {
    if (name.empty()) return invalid_argument(st.scope + ": " + what + " has no name");
    if (st.find(name) >= 0) return invalid_argument(st.scope + ": initializer '" + name + "' is defined twice");
    p.value = st.add(name);
    p.dims.assign(dims.begin(), dims.end());
    Value& v = st.g.values[size_t(p.value)];
    v.dtype = dtype;
    v.rank = int32_t(p.dims.size());
    v.dims = p.dims;
    st.pending_of[p.value] = st.pending.size();
    st.pending.push_back(std::move(p));
    return Status();
  };
  const bool split = !st.is_subgraph && !top_raw_data_.empty();
  if (split && top_raw_data_.size() != size_t(proto.initializer_size()))
    return internal_error(st.scope + ": the split model lost track of its initializers");
  for (int k = 0; k < proto.initializer_size(); ++k) {
    const pb::TensorProto& t = proto.initializer(k);
    PendingInitializer p{-1, &t, nullptr, std::nullopt, {}};
    if (split && top_raw_data_[size_t(k)].data()) p.raw_data = top_raw_data_[size_t(k)];
    ONYX_RETURN_IF_ERROR(
        declare(t.name(), "initializer #" + std::to_string(k), std::move(p), t.data_type(), t.dims()));
  }
  for (int k = 0; k < proto.sparse_initializer_size(); ++k) {
    const pb::SparseTensorProto& s = proto.sparse_initializer(k);
    PendingInitializer p{-1, nullptr, &s, std::nullopt, {}};
    ONYX_RETURN_IF_ERROR(declare(s.values().name(), "sparse initializer #" + std::to_string(k), std::move(p),
                                 s.values().data_type(), s.dims()));
  }
  return Status();
}

Status Importer::decode_initializers(GraphState& st) {
  for (PendingInitializer& p : st.pending) {
    StatusOr<Tensor> tensor = p.dense ? tensor_from_proto(*p.dense, base_dir_, "", p.raw_data)
                                      : sparse_to_dense(*p.sparse, base_dir_);
    if (!tensor.ok()) return tensor.status();
    Value& v = st.g.values[size_t(p.value)];
    // A graph input's declared type (often with symbolic dims) stays the
    // contract of an initializer that is also an input.
    if (!v.is_graph_input) set_from_tensor(*tensor, v);
    v.constant = std::move(*tensor);
  }
  st.pending.clear();
  st.pending_of.clear();
  return Status();
}

Status Importer::add_inputs(const pb::GraphProto& proto, GraphState& st) {
  std::set<std::string> seen;
  for (int k = 0; k < proto.input_size(); ++k) {
    const pb::ValueInfoProto& info = proto.input(k);
    if (info.name().empty())
      return invalid_argument(st.scope + ": graph input #" + std::to_string(k) + " has no name");
    if (!seen.insert(info.name()).second)
      return invalid_argument(st.scope + ": graph input '" + info.name() + "' is listed twice");
    int v = st.find(info.name());
    if (v < 0) v = st.add(info.name());
    Value& value = st.g.values[size_t(v)];
    // An initializer that is also an input is a default the caller may
    // override; its declared type (often with symbolic dims) is the contract.
    if (info.has_type()) apply_type(info.type(), value);
    if (info.type().has_tensor_type() && info.type().tensor_type().has_shape())
      for (const auto& dim : info.type().tensor_type().shape().dim()) value.dim_params.push_back(dim.dim_param());
    if (value.rank < 0)
      if (auto it = st.pending_of.find(v); it != st.pending_of.end()) {
        value.rank = int32_t(st.pending[it->second].dims.size());
        value.dims = st.pending[it->second].dims;
      }
    value.is_graph_input = true;
    st.g.inputs.push_back(v);
  }
  return Status();
}

Status Importer::add_nodes(const pb::GraphProto& proto, GraphState& st) {
  Graph& g = st.g;
  const int count = proto.node_size();
  g.nodes.resize(size_t(count));
  // Node outputs are most of a graph's values: room for them now, not by
  // doubling (which holds up to twice a big graph's values at its peak).
  size_t output_count = 0;
  for (const auto& n : proto.node()) output_count += size_t(n.output_size());
  g.values.reserve(g.values.size() + output_count);
  // Explicit names first, so that synthesized ones can avoid them.
  std::set<std::string> names;
  for (const auto& n : proto.node()) names.insert(n.name());
  // Pass 1: identity and outputs, so that inputs and subgraphs may refer to
  // values produced later in the file.
  for (int n = 0; n < count; ++n) {
    const pb::NodeProto& np = proto.node(n);
    Node& node = g.nodes[size_t(n)];
    if (np.op_type().empty())
      return invalid_argument(st.scope + ": node #" + std::to_string(n) +
                              (np.name().empty() ? "" : " '" + np.name() + "'") + " has no op_type");
    node.op_type = np.op_type();
    node.domain = np.domain() == "ai.onnx" ? "" : np.domain();
    node.name = np.name();
    if (node.name.empty()) {
      node.name = node.op_type + "_" + std::to_string(n);
      for (int suffix = 1; names.count(node.name); ++suffix)
        node.name = node.op_type + "_" + std::to_string(n) + "_" + std::to_string(suffix);
      names.insert(node.name);
    }
    for (const std::string& out : np.output()) {
      if (out.empty()) {
        node.outputs.push_back(kNoValue);
        continue;
      }
      if (int v = st.find(out); v >= 0) {
        const Value& prior = g.values[size_t(v)];
        std::string what = prior.producer >= 0 ? "node " + g.nodes[size_t(prior.producer)].describe()
                           : st.is_initializer(v) ? std::string("an initializer")
                                              : std::string("a graph input");
        return invalid_argument(st.scope + ": node " + node.describe() + " output '" + out +
                                "' is already produced by " + what);
      }
      int v = st.add(out);
      g.values[size_t(v)].producer = n;
      node.outputs.push_back(v);
    }
  }
  // Pass 2: inputs and attributes.
  for (int n = 0; n < count; ++n) {
    const pb::NodeProto& np = proto.node(n);
    Node& node = g.nodes[size_t(n)];
    for (int k = 0; k < np.input_size(); ++k) {
      const std::string& in = np.input(k);
      if (in.empty()) {
        node.inputs.push_back(kNoValue);
        continue;
      }
      ONYX_ASSIGN_OR_RETURN(int v, st.outer_ref(in, "node " + node.describe() + " input " +
                                                        std::to_string(k)));
      node.inputs.push_back(v);
    }
    if (auto opset = opsets_.find(node.domain); opset != opsets_.end())
      ONYX_RETURN_IF_ERROR(check_node_arity(node, opset->second, st.scope));
    std::set<std::string> attr_names;
    for (const pb::AttributeProto& a : np.attribute()) {
      if (!attr_names.insert(a.name()).second)
        return invalid_argument(st.scope + ": node " + node.describe() + " has attribute '" +
                                a.name() + "' twice");
      ONYX_ASSIGN_OR_RETURN(Attribute attr, convert_attribute(a, node, st));
      node.attributes.push_back(std::move(attr));
    }
  }
  return Status();
}

StatusOr<Attribute> Importer::convert_attribute(const pb::AttributeProto& a, const Node& node,
                                                GraphState& st) {
  const std::string where = st.scope + ": node " + node.describe() + " attribute '" + a.name() + "'";
  if (a.name().empty()) return invalid_argument(st.scope + ": node " + node.describe() +
                                                " has an attribute without a name");
  if (!a.ref_attr_name().empty())
    return invalid_argument(where + " refers to function attribute '" + a.ref_attr_name() +
                            "', which is only valid inside a function body");
  Attribute out;
  out.name = a.name();
  out.type = attribute_type(a);
  // A subgraph's captured names must exist here or, in a subgraph, further out.
  auto import_sub = [&](const pb::GraphProto& gp) -> StatusOr<std::shared_ptr<Graph>> {
    ONYX_ASSIGN_OR_RETURN(std::shared_ptr<Graph> sub, import_graph(gp, true, where));
    for (int r : sub->outer_refs)
      ONYX_RETURN_IF_ERROR(st.outer_ref(sub->values[size_t(r)].name, "subgraph of " + where).status());
    return sub;
  };
  switch (out.type) {
    case pb::AttributeProto::FLOAT: out.f = a.f(); break;
    case pb::AttributeProto::INT: out.i = a.i(); break;
    case pb::AttributeProto::STRING: out.s = a.s(); break;
    case pb::AttributeProto::FLOATS: out.floats.assign(a.floats().begin(), a.floats().end()); break;
    case pb::AttributeProto::INTS: out.ints.assign(a.ints().begin(), a.ints().end()); break;
    case pb::AttributeProto::STRINGS: out.strings.assign(a.strings().begin(), a.strings().end()); break;
    case pb::AttributeProto::TENSOR: {
      ONYX_ASSIGN_OR_RETURN(out.t, tensor_from_proto(a.t(), base_dir_, a.name()));
      break;
    }
    case pb::AttributeProto::SPARSE_TENSOR: {
      ONYX_ASSIGN_OR_RETURN(out.t, sparse_to_dense(a.sparse_tensor(), base_dir_, a.name()));
      out.type = ONYX_ATTR_TENSOR;
      break;
    }
    case pb::AttributeProto::TENSORS:
      for (const auto& t : a.tensors()) {
        ONYX_ASSIGN_OR_RETURN(Tensor tensor, tensor_from_proto(t, base_dir_, a.name()));
        out.tensors.push_back(std::move(tensor));
      }
      break;
    case pb::AttributeProto::SPARSE_TENSORS:
      for (const auto& t : a.sparse_tensors()) {
        ONYX_ASSIGN_OR_RETURN(Tensor tensor, sparse_to_dense(t, base_dir_, a.name()));
        out.tensors.push_back(std::move(tensor));
      }
      out.type = pb::AttributeProto::TENSORS;
      break;
    case pb::AttributeProto::GRAPH: {
      ONYX_ASSIGN_OR_RETURN(out.g, import_sub(a.g()));
      break;
    }
    case pb::AttributeProto::GRAPHS:
      for (const auto& gp : a.graphs()) {
        ONYX_ASSIGN_OR_RETURN(std::shared_ptr<Graph> sub, import_sub(gp));
        out.graphs.push_back(std::move(sub));
      }
      break;
    case pb::AttributeProto::TYPE_PROTO: out.s = a.tp().SerializeAsString(); break;
    case pb::AttributeProto::TYPE_PROTOS:
      for (const auto& tp : a.type_protos()) out.strings.push_back(tp.SerializeAsString());
      break;
    default:
      return invalid_argument(where + " has an unknown or missing type");
  }
  return out;
}

Status Importer::add_outputs(const pb::GraphProto& proto, GraphState& st) {
  for (int k = 0; k < proto.output_size(); ++k) {
    const pb::ValueInfoProto& info = proto.output(k);
    if (info.name().empty())
      return invalid_argument(st.scope + ": graph output #" + std::to_string(k) + " has no name");
    // A subgraph may return an enclosing scope's value directly.
    ONYX_ASSIGN_OR_RETURN(int v, st.outer_ref(info.name(), "graph output " + std::to_string(k)));
    Value& value = st.g.values[size_t(v)];
    if (info.has_type() && !st.is_initializer(v)) apply_type(info.type(), value);
    value.is_graph_output = true;
    st.g.outputs.push_back(v);
  }
  return Status();
}

StatusOr<std::shared_ptr<Graph>> Importer::import_graph(const pb::GraphProto& proto, bool is_subgraph,
                                                        const std::string& scope) {
  auto g = std::make_shared<Graph>();
  g->name = proto.name();
  g->opsets = opsets_;
  GraphState st{*g, is_subgraph, scope + (is_subgraph ? " graph '" : "graph '") + proto.name() + "'", {}, {}, {}};
  ONYX_RETURN_IF_ERROR(add_initializers(proto, st));
  ONYX_RETURN_IF_ERROR(add_inputs(proto, st));
  ONYX_RETURN_IF_ERROR(add_nodes(proto, st));
  ONYX_RETURN_IF_ERROR(add_outputs(proto, st));
  // Declared types of intermediate values; entries for names nobody defines are ignored.
  for (const pb::ValueInfoProto& info : proto.value_info()) {
    int v = st.find(info.name());
    if (v >= 0 && info.has_type() && !st.is_initializer(v)) apply_type(info.type(), g->values[size_t(v)]);
  }
  ONYX_RETURN_IF_ERROR(decode_initializers(st));
  g->link_producers();
  return g;
}

// `raw_data`: the top-level initializers' payloads when the model was split.
// `owned` (may be null) holds the bytes they view; it is released once the
// tensors are decoded, before shape inference allocates more.
StatusOr<Model> import_model(const pb::ModelProto& proto, const std::string& base_dir,
                             const ImportOptions& options, const std::string& what,
                             std::vector<std::string_view> raw_data, std::string* owned) {
  if (!proto.has_graph()) return invalid_argument(what + " is not a valid ONNX model (it has no graph)");
  Model model;
  model.ir_version = proto.ir_version();
  model.producer_name = proto.producer_name();
  model.producer_version = proto.producer_version();
  model.doc = proto.doc_string();
  model.base_dir = base_dir;
  for (const auto& entry : proto.metadata_props()) model.metadata[entry.key()] = entry.value();
  std::map<std::string, int64_t> opsets;
  for (const auto& op : proto.opset_import()) {
    std::string domain = op.domain() == "ai.onnx" ? "" : op.domain();
    auto [it, inserted] = opsets.emplace(domain, op.version());
    if (!inserted && it->second != op.version())
      return invalid_argument(what + " imports opset domain '" + op.domain() + "' twice (versions " +
                              std::to_string(it->second) + " and " + std::to_string(op.version()) + ")");
  }
  // IR version 2 and older models may omit opset_import; they mean ai.onnx 1.
  if (opsets.empty()) opsets[""] = 1;
  Importer importer(base_dir, opsets, std::move(raw_data));
  ONYX_ASSIGN_OR_RETURN(model.graph, importer.import_graph(proto.graph(), false, ""));
  if (owned) std::string().swap(*owned);
  infer_value_kinds(*model.graph);
  if (options.infer_shapes) {
    ONYX_RETURN_IF_ERROR(infer_shapes(*model.graph).with_context(what));
    infer_value_kinds(*model.graph);  // element types that shape inference found
  }
  return model;
}

StatusOr<Model> parse_and_import(std::string_view bytes, std::string* owned, const std::string& base_dir,
                                 const ImportOptions& options, const std::string& what) {
  if (bytes.size() > size_t(INT_MAX))
    return invalid_argument(what + " is " + std::to_string(bytes.size()) +
                            " bytes; protobuf models are limited to 2 GiB (store the weights as "
                            "external data)");
  // Weights stay in `bytes` (onyx/util/model_parse.h); the proto gets the rest.
  pb::ModelProto proto;
  std::vector<std::string_view> raw_data;
  if (!util::parse_model_proto(bytes, proto, raw_data))
    return invalid_argument(what + " is not a valid ONNX model (protobuf parse failed)");
  ONYX_RETURN_IF_ERROR(inline_local_functions(proto, what));
  return import_model(proto, base_dir, options, what, std::move(raw_data), owned);
}

}  // namespace

StatusOr<Model> load_model(const std::string& path, const ImportOptions& options) {
  // One open, then fstat of that descriptor: no FIFO blocks, nothing swapped between check and read.
  std::string bytes;
  int error = 0;
  std::string failure = util::read_regular_file(path, &bytes, &error);
  if (!failure.empty()) {
    if (error == ENOENT) return not_found("model file '" + path + "' does not exist");
    if (error == EINVAL) return invalid_argument("model path '" + path + "' is not a regular file");
    return data_loss("model file: " + failure);
  }
  std::error_code ec;
  std::string base_dir = fs::absolute(fs::path(path), ec).parent_path().string();
  return parse_and_import(bytes, &bytes, base_dir, options, "'" + path + "'");
}

StatusOr<Model> load_model_from_bytes(const void* data, size_t size, const std::string& base_dir,
                                      const ImportOptions& options) {
  if (!data && size) return invalid_argument("load_model_from_bytes: data is NULL");
  return parse_and_import(std::string_view(data ? static_cast<const char*>(data) : "", size), nullptr, base_dir,
                          options,
                          "buffer of " + std::to_string(size) + " bytes");
}

}  // namespace onyx::runtime::ir
