// graph_view.cpp: building OnyxGraphView from ONNX protos.
#include "graph_view.h"

namespace onyx::conformance {

namespace {

void apply_type(OnyxValueInfo& info, std::vector<int64_t>& dims, const onnx::TypeProto& type) {
  if (!type.has_tensor_type()) return;
  const auto& t = type.tensor_type();
  info.dtype = t.elem_type();
  if (!t.has_shape()) return;
  dims.clear();
  for (const auto& d : t.shape().dim()) dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
  info.rank = int32_t(dims.size());
}

}  // namespace

int32_t OwnedGraph::intern(const std::string& name) {
  auto it = index_.find(name);
  if (it != index_.end()) return it->second;
  auto storage = std::make_unique<ValueStorage>();
  storage->name = name;
  value_storage_.push_back(std::move(storage));
  OnyxValueInfo info{};
  info.struct_size = sizeof(OnyxValueInfo);
  info.rank = -1;
  values_.push_back(info);
  const int32_t k = int32_t(values_.size() - 1);
  index_[name] = k;
  return k;
}

int32_t OwnedGraph::value_index(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? -1 : it->second;
}

const HostTensor* OwnedGraph::constant(int32_t value) const {
  return value >= 0 && size_t(value) < value_storage_.size() ? value_storage_[size_t(value)]->constant.get()
                                                             : nullptr;
}

void OwnedGraph::fill_attribute(AttrStorage& st, OnyxAttribute& a, const onnx::AttributeProto& p,
                                const std::map<std::string, int64_t>& opsets) {
  st.name = p.name();
  a.struct_size = sizeof(OnyxAttribute);
  a.type = p.type();
  switch (p.type()) {
    case onnx::AttributeProto::FLOAT: a.f = p.f(); break;
    case onnx::AttributeProto::INT: a.i = p.i(); break;
    case onnx::AttributeProto::STRING:
      st.s = p.s();
      a.s = st.s.data();
      a.s_len = st.s.size();
      break;
    case onnx::AttributeProto::FLOATS:
      st.floats.assign(p.floats().begin(), p.floats().end());
      a.floats = st.floats.data();
      a.count = st.floats.size();
      break;
    case onnx::AttributeProto::INTS:
      st.ints.assign(p.ints().begin(), p.ints().end());
      a.ints = st.ints.data();
      a.count = st.ints.size();
      break;
    case onnx::AttributeProto::STRINGS:
      st.strings.assign(p.strings().begin(), p.strings().end());
      for (const auto& s : st.strings) st.string_ptrs.push_back(s.c_str());
      a.strings = st.string_ptrs.data();
      a.count = st.strings.size();
      break;
    case onnx::AttributeProto::TENSOR:
      st.tensor = tensor_from_proto(p.t(), "attribute '" + p.name() + "'");
      st.tensor_view = OnyxTensorView{sizeof(OnyxTensorView), st.tensor.dtype, ONYX_MEMORY_HOST,
                                      st.tensor.dims.size(), st.tensor.dims.empty() ? nullptr : st.tensor.dims.data(),
                                      st.tensor.bytes.empty() ? nullptr : st.tensor.bytes.data()};
      a.tensor = &st.tensor_view;
      break;
    case onnx::AttributeProto::GRAPH:
      st.graph = from_onnx(p.g(), opsets);
      a.graph = &st.graph->view();
      break;
    default: a.type = ONYX_ATTR_UNDEFINED;  // sparse tensors, type protos: not in ABI 1.0
  }
  a.name = st.name.c_str();
}

std::unique_ptr<OwnedGraph> OwnedGraph::from_onnx(const onnx::GraphProto& graph,
                                                  const std::map<std::string, int64_t>& opsets) {
  std::unique_ptr<OwnedGraph> g(new OwnedGraph);
  // Reserve so that pointers into values_/nodes_ stay valid while building.
  g->values_.reserve(size_t(graph.input_size() + graph.output_size() + graph.initializer_size() +
                            graph.value_info_size()) + size_t(graph.node_size()) * 8 + 8);
  for (const auto& in : graph.input()) {
    int32_t k = g->intern(in.name());
    apply_type(g->values_[size_t(k)], g->value_storage_[size_t(k)]->dims, in.type());
    g->values_[size_t(k)].flags |= ONYX_VALUE_GRAPH_INPUT;
  }
  for (const auto& vi : graph.value_info()) {
    int32_t k = g->intern(vi.name());
    apply_type(g->values_[size_t(k)], g->value_storage_[size_t(k)]->dims, vi.type());
  }
  for (const auto& init : graph.initializer()) {
    int32_t k = g->intern(init.name());
    ValueStorage& vs = *g->value_storage_[size_t(k)];
    vs.constant = std::make_unique<HostTensor>(tensor_from_proto(init, "initializer '" + init.name() + "'"));
    vs.dims = vs.constant->dims;
    vs.constant_view = OnyxTensorView{sizeof(OnyxTensorView), vs.constant->dtype, ONYX_MEMORY_HOST,
                                      vs.dims.size(), nullptr,
                                      vs.constant->bytes.empty() ? nullptr : vs.constant->bytes.data()};
    OnyxValueInfo& info = g->values_[size_t(k)];
    info.dtype = vs.constant->dtype;
    info.rank = int32_t(vs.dims.size());
    info.flags = (info.flags & ~ONYX_VALUE_GRAPH_INPUT) | ONYX_VALUE_CONSTANT;
  }
  for (const auto& n : graph.node()) {
    auto ns = std::make_unique<NodeStorage>();
    ns->name = n.name();
    ns->op_type = n.op_type();
    ns->domain = n.domain() == "ai.onnx" ? "" : n.domain();
    for (const auto& in : n.input()) ns->inputs.push_back(in.empty() ? ONYX_NO_VALUE : g->intern(in));
    for (const auto& out : n.output()) ns->outputs.push_back(out.empty() ? ONYX_NO_VALUE : g->intern(out));
    for (const auto& attr : n.attribute()) {
      ns->attr_storage.push_back(std::make_unique<AttrStorage>());
      ns->attributes.push_back(OnyxAttribute{});
      g->fill_attribute(*ns->attr_storage.back(), ns->attributes.back(), attr, opsets);
    }
    g->node_storage_.push_back(std::move(ns));
  }
  for (const auto& out : graph.output()) {
    int32_t k = g->intern(out.name());
    apply_type(g->values_[size_t(k)], g->value_storage_[size_t(k)]->dims, out.type());
    g->values_[size_t(k)].flags |= ONYX_VALUE_GRAPH_OUTPUT;
  }
  // Every pointer is fixed now: point the views at their storage.
  for (size_t k = 0; k < g->values_.size(); ++k) {
    ValueStorage& vs = *g->value_storage_[k];
    OnyxValueInfo& info = g->values_[k];
    info.name = vs.name.c_str();
    info.dims = vs.dims.empty() ? nullptr : vs.dims.data();
    if (info.rank >= 0) info.rank = int32_t(vs.dims.size());
    if (vs.constant) {
      vs.constant_view.dims = info.dims;
      info.constant = &vs.constant_view;
    }
  }
  for (const auto& ns : g->node_storage_) {
    OnyxNodeView v{};
    v.struct_size = sizeof(OnyxNodeView);
    v.name = ns->name.c_str();
    v.op_type = ns->op_type.c_str();
    v.domain = ns->domain.c_str();
    auto it = opsets.find(ns->domain);
    v.opset_version = it == opsets.end() ? 1 : it->second;
    v.inputs = ns->inputs.data();
    v.input_count = ns->inputs.size();
    v.outputs = ns->outputs.data();
    v.output_count = ns->outputs.size();
    v.attributes = ns->attributes.data();
    v.attribute_count = ns->attributes.size();
    g->nodes_.push_back(v);
  }
  g->view_ = OnyxGraphView{sizeof(OnyxGraphView), g->values_.data(), g->values_.size(), g->nodes_.data(),
                           g->nodes_.size()};
  return g;
}

OnyxGraphView OwnedGraph::node_view(size_t k) const {
  OnyxGraphView v = view_;
  v.nodes = &nodes_[k];
  v.node_count = 1;
  return v;
}

}  // namespace onyx::conformance
