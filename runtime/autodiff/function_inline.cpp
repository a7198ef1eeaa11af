// function_inline.cpp: see function_inline.h.
#include "autodiff/function_inline.h"

#include <onnx/defs/schema.h>

#include <map>
#include <optional>
#include <set>

namespace onyx::runtime::autodiff {

namespace onnx = ONNX_NAMESPACE;

namespace {

const onnx::OpSchema* schema_of(const onnx::NodeProto& node, int64_t opset) {
  const std::string& d = node.domain();
  if (!d.empty() && d != "ai.onnx") return nullptr;
  return onnx::OpSchemaRegistry::Schema(node.op_type(), int(opset), "");
}

// The body's copy of `node`'s attribute list: references (ref_attr_name)
// resolved against the calling node, falling back to the schema's defaults.
std::vector<onnx::AttributeProto> resolve_attributes(const onnx::NodeProto& body_node,
                                                     const onnx::NodeProto& caller,
                                                     const onnx::OpSchema& schema) {
  std::vector<onnx::AttributeProto> out;
  for (const auto& a : body_node.attribute()) {
    if (a.ref_attr_name().empty()) {
      out.push_back(a);
      continue;
    }
    const onnx::AttributeProto* given = nullptr;
    for (const auto& c : caller.attribute())
      if (c.name() == a.ref_attr_name()) given = &c;
    onnx::AttributeProto resolved;
    if (given) {
      resolved = *given;
    } else {
      auto it = schema.attributes().find(a.ref_attr_name());
      if (it == schema.attributes().end() || !it->second.default_value.has_type()) continue;
      resolved = it->second.default_value;
    }
    resolved.set_name(a.name());
    out.push_back(std::move(resolved));
  }
  return out;
}

// The node's function body: the schema's static one, or the one it builds
// for the node's attributes and input types (context-dependent functions).
std::optional<onnx::FunctionProto> body_of(const onnx::NodeProto& node, const onnx::OpSchema& schema,
                                           const Emitter& e) {
  if (schema.HasFunction() && schema.GetFunction()) return *schema.GetFunction();
  if (!schema.HasContextDependentFunction()) return std::nullopt;
  std::vector<onnx::TypeProto> input_types;
  for (const auto& name : node.input()) {
    onnx::TypeProto t;
    if (auto vt = e.type(name); vt && vt->dtype) {
      auto* tt = t.mutable_tensor_type();
      tt->set_elem_type(vt->dtype);
      if (vt->rank >= 0) {
        auto* shape = tt->mutable_shape();
        for (int64_t d : vt->dims) {
          auto* dim = shape->add_dim();
          if (d >= 0) dim->set_dim_value(d);
        }
      }
    }
    input_types.push_back(std::move(t));
  }
  onnx::FunctionBodyBuildContextImpl ctx(node, input_types);
  onnx::FunctionProto body;
  try {
    if (!schema.BuildContextDependentFunction(ctx, body)) return std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;  // the schema could not build a body for these types
  }
  return body;
}

}  // namespace

bool has_function_body(const onnx::NodeProto& node, const Emitter& e) {
  const onnx::OpSchema* s = schema_of(node, e.opset());
  return s && body_of(node, *s, e).has_value();
}

Status inline_nodes(onnx::GraphProto* graph, const std::vector<int>& indices, Emitter& e) {
  std::set<int> targets(indices.begin(), indices.end());
  std::vector<onnx::NodeProto> nodes;
  for (int n = 0; n < graph->node_size(); ++n) {
    const onnx::NodeProto& node = graph->node(n);
    if (!targets.count(n)) {
      nodes.push_back(node);
      continue;
    }
    const onnx::OpSchema* schema = schema_of(node, e.opset());
    std::optional<onnx::FunctionProto> body = schema ? body_of(node, *schema, e) : std::nullopt;
    if (!body)
      return internal_error(node.op_type() + " node '" + node.name() + "' has no function body to inline");
    std::map<std::string, std::string> names;  // body name -> graph name
    for (int k = 0; k < body->input_size(); ++k)
      names[body->input(k)] = k < node.input_size() ? node.input(k) : "";
    for (int k = 0; k < body->output_size(); ++k)
      names[body->output(k)] = k < node.output_size() && !node.output(k).empty()
                                   ? node.output(k)
                                   : e.fresh(node.name() + "/unused");
    auto map_name = [&](const std::string& b) {
      if (b.empty()) return b;
      auto it = names.find(b);
      if (it != names.end()) return it->second;
      return names[b] = e.fresh(node.name() + "/" + b);
    };
    for (const auto& bn : body->node()) {
      onnx::NodeProto copy;
      copy.set_op_type(bn.op_type());
      copy.set_domain(bn.domain());
      copy.set_name(e.fresh(node.name() + "/" + bn.op_type()));
      for (const auto& i : bn.input()) copy.add_input(map_name(i));
      for (const auto& o : bn.output()) copy.add_output(map_name(o));
      for (auto& a : resolve_attributes(bn, node, *schema)) *copy.add_attribute() = std::move(a);
      nodes.push_back(std::move(copy));
    }
  }
  graph->clear_node();
  for (auto& n : nodes) *graph->add_node() = std::move(n);
  return Status();
}

}  // namespace onyx::runtime::autodiff
