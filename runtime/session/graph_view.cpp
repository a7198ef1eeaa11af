#include "session/graph_view.h"

namespace onyx::runtime {

GraphView::GraphView(const ir::Graph& graph) {
  values_.reserve(graph.values.size());
  for (const ir::Value& v : graph.values) {
    OnyxValueInfo info{};
    info.struct_size = sizeof info;
    info.name = v.name.c_str();
    info.dtype = v.dtype;
    info.rank = v.rank;
    info.dims = v.rank > 0 ? v.dims.data() : nullptr;
    info.flags = (v.is_graph_input ? ONYX_VALUE_GRAPH_INPUT : 0u) |
                 (v.is_graph_output ? ONYX_VALUE_GRAPH_OUTPUT : 0u);
    // A graph input with an initializer is an overridable default, not a constant.
    if (v.constant && !v.is_graph_input) {
      info.flags |= ONYX_VALUE_CONSTANT;
      info.constant = &tensors_.emplace_back(v.constant->view());
    }
    values_.push_back(info);
  }
  nodes_.reserve(graph.nodes.size());
  for (const ir::Node& n : graph.nodes) {
    OnyxNodeView node{};
    node.struct_size = sizeof node;
    node.name = n.name.c_str();
    node.op_type = n.op_type.c_str();
    node.domain = n.domain.c_str();
    node.opset_version = graph.opset(n.domain);
    auto& ins = index_lists_.emplace_back(n.inputs.begin(), n.inputs.end());
    auto& outs = index_lists_.emplace_back(n.outputs.begin(), n.outputs.end());
    node.inputs = ins.data();
    node.input_count = ins.size();
    node.outputs = outs.data();
    node.output_count = outs.size();
    auto& attrs = attribute_lists_.emplace_back();
    for (const ir::Attribute& a : n.attributes) {
      OnyxAttribute out{};
      out.struct_size = sizeof out;
      out.name = a.name.c_str();
      out.type = a.type;
      out.f = a.f;
      out.i = a.i;
      out.s = a.s.data();
      out.s_len = a.s.size();
      switch (a.type) {
        case ONYX_ATTR_FLOATS: out.floats = a.floats.data(); out.count = a.floats.size(); break;
        case ONYX_ATTR_INTS: out.ints = a.ints.data(); out.count = a.ints.size(); break;
        case ONYX_ATTR_STRINGS: {
          auto& list = string_lists_.emplace_back();
          for (const std::string& s : a.strings) list.push_back(s.c_str());
          out.strings = list.data();
          out.count = list.size();
          break;
        }
        case ONYX_ATTR_TENSOR: out.tensor = &tensors_.emplace_back(a.t.view()); break;
        case ONYX_ATTR_GRAPH:
          if (a.g) out.graph = subgraphs_.emplace_back(std::make_unique<GraphView>(*a.g))->get();
          break;
        default: break;
      }
      attrs.push_back(out);
    }
    node.attributes = attrs.data();
    node.attribute_count = attrs.size();
    nodes_.push_back(node);
  }
  view_.struct_size = sizeof view_;
  view_.values = values_.data();
  view_.value_count = values_.size();
  view_.nodes = nodes_.data();
  view_.node_count = nodes_.size();
}

}  // namespace onyx::runtime
