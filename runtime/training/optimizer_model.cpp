#include "training/optimizer_model.h"

#include <onnx/defs/parser.h>
#include <onnx/defs/schema.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <regex>
#include <sstream>

namespace onyx::runtime::training {
namespace {

namespace onnx = ONNX_NAMESPACE;

constexpr const char* kGlobalInputs[] = {"lr", "step", "max_grad_norm"};
// The one ai.onnx opset the optimizer model imports.
constexpr int kOptimizerOpset = 17;

void add_value_info(onnx::ValueInfoProto* info, const std::string& name, const Shape& shape) {
  info->set_name(name);
  auto* tensor = info->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  auto* dims = tensor->mutable_shape();
  for (int64_t d : shape) dims->add_dim()->set_dim_value(d);
}

onnx::NodeProto* add_node(onnx::GraphProto& g, const std::string& op, std::vector<std::string> in,
                          std::vector<std::string> out) {
  onnx::NodeProto* n = g.add_node();
  n->set_op_type(op);
  n->set_name(out.front());
  for (auto& s : in) n->add_input(s);
  for (auto& s : out) n->add_output(s);
  return n;
}

void add_float_constant(onnx::GraphProto& g, const std::string& name, float value) {
  onnx::NodeProto* n = add_node(g, "Constant", {}, {name});
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name("value_float");
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(value);
}

std::string format_float(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", double(v));
  return buf;
}

// Global-norm clipping: every gradient is scaled by
// max_norm / (norm + 1e-6) when clipping is on and norm > max_norm.
// Returns the names of the gradients the updates read.
std::vector<std::string> add_clipping(onnx::GraphProto& g, const std::vector<OptimizerParameter>& params) {
  std::vector<std::string> squares;
  for (const auto& p : params) {
    std::string sq = gradient_name(p.name) + ".sum_sq";
    onnx::NodeProto* n = add_node(g, "ReduceSumSquare", {gradient_name(p.name)}, {sq});
    onnx::AttributeProto* keep = n->add_attribute();
    keep->set_name("keepdims");
    keep->set_type(onnx::AttributeProto::INT);
    keep->set_i(0);
    squares.push_back(sq);
  }
  add_node(g, "Sum", squares, {"clip.total_sq"});
  add_node(g, "Sqrt", {"clip.total_sq"}, {"grad_norm"});
  add_float_constant(g, "clip.zero", 0.0f);
  add_float_constant(g, "clip.one", 1.0f);
  add_float_constant(g, "clip.tiny", 1e-6f);
  add_node(g, "Greater", {"max_grad_norm", "clip.zero"}, {"clip.enabled"});
  add_node(g, "Greater", {"grad_norm", "max_grad_norm"}, {"clip.exceeded"});
  add_node(g, "And", {"clip.enabled", "clip.exceeded"}, {"clip.active"});
  add_node(g, "Add", {"grad_norm", "clip.tiny"}, {"clip.denominator"});
  add_node(g, "Div", {"max_grad_norm", "clip.denominator"}, {"clip.ratio"});
  add_node(g, "Where", {"clip.active", "clip.ratio", "clip.one"}, {"clip.scale"});
  std::vector<std::string> clipped;
  for (const auto& p : params) {
    std::string c = gradient_name(p.name) + ".clipped";
    add_node(g, "Mul", {gradient_name(p.name), "clip.scale"}, {c});
    clipped.push_back(c);
  }
  return clipped;
}

// Copies the function body into `g` with formal names bound to `actual` and
// every other name made unique with `prefix`.
Status inline_function(const onnx::FunctionProto& fn, const std::map<std::string, std::string>& actual,
                       const std::string& prefix, onnx::GraphProto& g) {
  auto rename = [&](const std::string& name) {
    if (name.empty()) return name;
    auto it = actual.find(name);
    return it != actual.end() ? it->second : prefix + name;
  };
  for (const onnx::NodeProto& node : fn.node()) {
    onnx::NodeProto* copy = g.add_node();
    *copy = node;
    for (int i = 0; i < copy->input_size(); ++i) copy->set_input(i, rename(node.input(i)));
    for (int i = 0; i < copy->output_size(); ++i) copy->set_output(i, rename(node.output(i)));
    copy->set_name(prefix + (node.name().empty() ? node.output(0) : node.name()));
    for (const auto& a : node.attribute())
      if (!a.ref_attr_name().empty())
        return invalid_argument("optimizer function " + fn.name() + ": node " + node.op_type() +
                                " refers to function attribute '" + a.ref_attr_name() +
                                "', but optimizer functions take no attributes");
    if (!node.domain().empty() && node.domain() != "ai.onnx")
      return invalid_argument("optimizer function " + fn.name() + ": node " + node.op_type() +
                              " is in domain '" + node.domain() + "'; only ai.onnx ops are allowed");
  }
  return Status();
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  if (s.empty()) return parts;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, sep)) parts.push_back(part);
  return parts;
}

const std::vector<ParameterGroup>& default_groups() {
  static const std::vector<ParameterGroup> groups = {ParameterGroup{}};
  return groups;
}

}  // namespace

StatusOr<ParameterGroup> parse_parameter_group(const std::string& text) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return invalid_argument("parameter group '" + text + "' is not PATTERN:NAME=VALUE[,NAME=VALUE...]");
  ParameterGroup group;
  group.pattern = text.substr(0, colon);
  for (const std::string& item : split(text.substr(colon + 1), ',')) {
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      return invalid_argument("parameter group '" + text + "': '" + item + "' is not NAME=VALUE");
    try {
      size_t used = 0;
      float value = std::stof(item.substr(eq + 1), &used);
      if (used != item.size() - eq - 1) throw std::invalid_argument(item);
      group.overrides.emplace_back(item.substr(0, eq), value);
    } catch (const std::exception&) {
      return invalid_argument("parameter group '" + text + "': the value of '" + item + "' is not a number");
    }
  }
  if (group.overrides.empty()) return invalid_argument("parameter group '" + text + "' sets no hyperparameter");
  return group;
}

Status assign_parameter_groups(const OptimizerDescription& optimizer, const std::vector<ParameterGroup>& groups,
                               std::vector<OptimizerParameter>& params) {
  std::vector<std::regex> patterns(groups.size());
  std::vector<size_t> members(groups.size(), 0);
  for (size_t g = 1; g < groups.size(); ++g) {
    try {
      patterns[g] = std::regex(groups[g].pattern);
    } catch (const std::regex_error& e) {
      return invalid_argument("parameter group '" + groups[g].pattern + "': not a regular expression (" + e.what() + ")");
    }
    for (const auto& [name, value] : groups[g].overrides) {
      bool known = false;
      std::string names;
      for (const auto& h : optimizer.hyperparameters) {
        known = known || h.name == name;
        names += (names.empty() ? "" : ", ") + h.name;
      }
      if (!known)
        return invalid_argument("parameter group '" + groups[g].pattern + "': optimizer " + optimizer.name +
                                " has no hyperparameter '" + name + "' (it has " + names + ")");
    }
  }
  for (auto& p : params) {
    p.group = 0;
    for (size_t g = 1; g < groups.size() && p.group == 0; ++g)
      if (std::regex_search(p.name, patterns[g])) p.group = g;
    ++members[p.group];
  }
  for (size_t g = 1; g < groups.size(); ++g)
    if (members[g] == 0)
      return invalid_argument("parameter group '" + groups[g].pattern + "' matches no trainable parameter");
  return Status();
}

std::vector<std::pair<std::string, float>> group_override_inputs(const std::vector<ParameterGroup>& groups) {
  std::vector<std::pair<std::string, float>> inputs;
  for (size_t k = 1; k < groups.size(); ++k)
    for (const auto& [name, value] : groups[k].overrides) inputs.emplace_back(name + "@" + std::to_string(k), value);
  return inputs;
}

std::string hyperparameter_input(const std::vector<ParameterGroup>& groups, size_t group, const std::string& name) {
  if (group == 0 || group >= groups.size()) return name;
  for (const auto& [overridden, value] : groups[group].overrides)
    if (overridden == name) return name + "@" + std::to_string(group);
  return name;
}

namespace {

// The optimizer model imports ai.onnx 17 only: every op of the update
// function (and of its subgraphs) must be one of that opset's, or the update
// would pass `onyx artifacts` and fail at the first training step.
Status check_update_ops(const OptimizerDescription& optimizer, const onnx::FunctionProto& fn) {
  std::vector<const onnx::NodeProto*> nodes;
  for (const auto& n : fn.node()) nodes.push_back(&n);
  for (size_t k = 0; k < nodes.size(); ++k) {
    const onnx::NodeProto& n = *nodes[k];
    const std::string domain = n.domain() == "ai.onnx" ? "" : n.domain();
    if (!domain.empty() || !onnx::OpSchemaRegistry::Schema(n.op_type(), kOptimizerOpset, ""))
      return invalid_argument("optimizer " + optimizer.name + " (" + optimizer.path + "): update function " +
                              fn.name() + ", node " + std::to_string(k) + " (output '" +
                              (n.output_size() ? n.output(0) : std::string()) + "'): op " +
                              (domain.empty() ? "" : domain + "::") + n.op_type() + " is not an ai.onnx opset " +
                              std::to_string(kOptimizerOpset) + " operator");
    for (const auto& a : n.attribute()) {
      if (a.has_g())
        for (const auto& sub : a.g().node()) nodes.push_back(&sub);
      for (const auto& g : a.graphs())
        for (const auto& sub : g.node()) nodes.push_back(&sub);
    }
  }
  return Status();
}

}  // namespace

StatusOr<onnx::ModelProto> build_optimizer_model(const OptimizerDescription& optimizer,
                                                 const std::vector<OptimizerParameter>& params,
                                                 const std::vector<ParameterGroup>& given_groups) {
  const std::vector<ParameterGroup>& groups = given_groups.empty() ? default_groups() : given_groups;
  onnx::FunctionProto fn;
  auto parsed = onnx::OnnxParser::Parse(fn, optimizer.update_function.c_str());
  if (!parsed.IsOK())
    return invalid_argument("optimizer " + optimizer.name + " (" + optimizer.path +
                            "): update function does not parse: " + parsed.ErrorMessage());
  ONYX_RETURN_IF_ERROR(check_update_ops(optimizer, fn));
  // The signature the ABI promises.
  std::vector<std::string> formal_in = {"param", "grad"};
  for (const auto& s : optimizer.slots) formal_in.push_back(s.name);
  formal_in.push_back("lr");
  formal_in.push_back("step");
  for (const auto& h : optimizer.hyperparameters) formal_in.push_back(h.name);
  size_t expected_outputs = 1 + optimizer.slots.size();
  if (size_t(fn.input_size()) != formal_in.size() || size_t(fn.output_size()) != expected_outputs)
    return invalid_argument("optimizer " + optimizer.name + ": update function " + fn.name() + " has " +
                            std::to_string(fn.input_size()) + " inputs and " +
                            std::to_string(fn.output_size()) + " outputs; its declarations need " +
                            std::to_string(formal_in.size()) + " and " + std::to_string(expected_outputs));
  if (params.empty()) return invalid_argument("optimizer model: no trainable parameters");

  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("onyx");
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOptimizerOpset);
  onnx::GraphProto& g = *model.mutable_graph();
  g.set_name(optimizer.name + "_optimizer");

  for (const char* name : kGlobalInputs) add_value_info(g.add_input(), name, {});
  for (const auto& h : optimizer.hyperparameters) add_value_info(g.add_input(), h.name, {});
  for (const auto& [name, value] : group_override_inputs(groups)) add_value_info(g.add_input(), name, {});
  for (const auto& p : params) {
    if (p.group >= groups.size())
      return internal_error("optimizer model: parameter '" + p.name + "' is in group " + std::to_string(p.group) +
                            " of " + std::to_string(groups.size()));
    if (p.dtype != ONYX_DTYPE_FLOAT32)
      return unimplemented("optimizer " + optimizer.name + ": parameter '" + p.name + "' is " +
                           dtype_name(p.dtype) + "; optimizer updates are float32 only (freeze it)");
    add_value_info(g.add_input(), p.name, p.shape);
    add_value_info(g.add_input(), gradient_name(p.name), p.shape);
    for (const auto& s : optimizer.slots) add_value_info(g.add_input(), slot_name(p.name, s.name), p.shape);
  }
  add_value_info(g.add_output(), "grad_norm", {});

  std::vector<std::string> grads = add_clipping(g, params);
  for (size_t k = 0; k < params.size(); ++k) {
    const OptimizerParameter& p = params[k];
    std::map<std::string, std::string> actual;
    std::vector<std::string> actual_in = {p.name, grads[k]};
    for (const auto& s : optimizer.slots) actual_in.push_back(slot_name(p.name, s.name));
    actual_in.push_back("lr");
    actual_in.push_back("step");
    for (const auto& h : optimizer.hyperparameters) actual_in.push_back(hyperparameter_input(groups, p.group, h.name));
    for (size_t i = 0; i < actual_in.size(); ++i) actual[fn.input(int(i))] = actual_in[i];
    actual[fn.output(0)] = updated_name(p.name);
    add_value_info(g.add_output(), updated_name(p.name), p.shape);
    for (size_t s = 0; s < optimizer.slots.size(); ++s) {
      std::string out = updated_name(slot_name(p.name, optimizer.slots[s].name));
      actual[fn.output(int(s + 1))] = out;
      add_value_info(g.add_output(), out, p.shape);
    }
    ONYX_RETURN_IF_ERROR(inline_function(fn, actual, p.name + "/" + optimizer.name + "/", g));
  }

  auto meta = [&](const std::string& key, const std::string& value) {
    auto* prop = model.add_metadata_props();
    prop->set_key(key);
    prop->set_value(value);
  };
  meta("onyx.optimizer", optimizer.name);
  meta("onyx.optimizer.version", optimizer.version);
  std::string slots, hps;
  for (const auto& s : optimizer.slots) slots += (slots.empty() ? "" : ",") + s.name + "=" + format_float(s.initial_value);
  for (const auto& h : optimizer.hyperparameters)
    hps += (hps.empty() ? "" : ",") + h.name + "=" + format_float(h.default_value);
  meta("onyx.optimizer.slots", slots);
  meta("onyx.optimizer.hyperparameters", hps);
  if (groups.size() > 1) {
    std::string members;
    for (const auto& p : params) members += (members.empty() ? "" : ",") + std::to_string(p.group);
    meta("onyx.optimizer.parameter_groups", members);
    for (size_t k = 1; k < groups.size(); ++k) {
      std::string overrides;
      for (const auto& [name, value] : groups[k].overrides)
        overrides += (overrides.empty() ? "" : ",") + name + "=" + format_float(value);
      meta("onyx.optimizer.group." + std::to_string(k) + ".pattern", groups[k].pattern);
      meta("onyx.optimizer.group." + std::to_string(k) + ".overrides", overrides);
    }
  }
  if (!optimizer.fused_op_type.empty()) meta("onyx.optimizer.fused_op", optimizer.fused_op_domain + " " + optimizer.fused_op_type);
  return model;
}

StatusOr<onnx::ModelProto> fuse_optimizer_model(const onnx::ModelProto& inlined, bool clipping) {
  ONYX_ASSIGN_OR_RETURN(OptimizerModelInfo info, read_optimizer_model_info(inlined));
  if (info.fused_op_type.empty()) return invalid_argument("optimizer " + info.optimizer + " names no fused op");
  onnx::ModelProto model = inlined;
  onnx::GraphProto& g = *model.mutable_graph();
  g.clear_node();
  std::vector<OptimizerParameter> params;
  for (const auto& input : g.input()) {
    if (std::find(info.parameters.begin(), info.parameters.end(), input.name()) == info.parameters.end()) continue;
    Shape shape;
    for (const auto& d : input.type().tensor_type().shape().dim()) shape.push_back(d.dim_value());
    params.push_back({input.name(), ONYX_DTYPE_FLOAT32, shape});
  }
  std::vector<std::string> grads;
  if (clipping) {
    grads = add_clipping(g, params);
  } else {
    for (const auto& p : params) grads.push_back(gradient_name(p.name));
    auto outputs = g.mutable_output();
    outputs->erase(std::remove_if(outputs->begin(), outputs->end(),
                                  [](const onnx::ValueInfoProto& v) { return v.name() == "grad_norm"; }),
                   outputs->end());
  }
  for (size_t k = 0; k < params.size(); ++k) {
    const std::string& p = params[k].name;
    std::vector<std::string> in = {p, grads[k]}, out = {updated_name(p)};
    for (const auto& s : info.slots) {
      in.push_back(slot_name(p, s.name));
      out.push_back(updated_name(slot_name(p, s.name)));
    }
    in.push_back("lr");
    in.push_back("step");
    for (const auto& h : info.hyperparameters) in.push_back(hyperparameter_input(info.groups, info.parameter_groups[k], h.name));
    onnx::NodeProto* n = add_node(g, info.fused_op_type, in, out);
    n->set_domain(info.fused_op_domain);
    n->set_name(p + "/" + info.optimizer);
  }
  auto* opset = model.add_opset_import();
  opset->set_domain(info.fused_op_domain);
  opset->set_version(1);
  return model;
}

StatusOr<OptimizerModelInfo> read_optimizer_model_info(const onnx::ModelProto& model) {
  OptimizerModelInfo info;
  bool found = false;
  auto parse_pairs = [](const std::string& text, auto&& add) -> Status {
    for (const std::string& item : split(text, ',')) {
      size_t eq = item.find('=');
      if (eq == std::string::npos) return invalid_argument("malformed entry '" + item + "'");
      try {
        add(item.substr(0, eq), std::stof(item.substr(eq + 1)));
      } catch (const std::exception&) {
        return invalid_argument("malformed number in '" + item + "'");
      }
    }
    return Status();
  };
  for (const auto& prop : model.metadata_props()) {
    if (prop.key() == "onyx.optimizer") {
      info.optimizer = prop.value();
      found = true;
    } else if (prop.key() == "onyx.optimizer.fused_op") {
      size_t space = prop.value().find(' ');
      if (space == std::string::npos) return invalid_argument("optimizer model: malformed onyx.optimizer.fused_op");
      info.fused_op_domain = prop.value().substr(0, space);
      info.fused_op_type = prop.value().substr(space + 1);
    } else if (prop.key() == "onyx.optimizer.slots") {
      ONYX_RETURN_IF_ERROR(parse_pairs(prop.value(), [&](std::string n, float v) {
        info.slots.push_back({std::move(n), v});
      }).with_context("optimizer model slots"));
    } else if (prop.key() == "onyx.optimizer.hyperparameters") {
      ONYX_RETURN_IF_ERROR(parse_pairs(prop.value(), [&](std::string n, float v) {
        info.hyperparameters.push_back({std::move(n), v, ""});
      }).with_context("optimizer model hyperparameters"));
    } else if (prop.key() == "onyx.optimizer.parameter_groups") {
      for (const std::string& g : split(prop.value(), ',')) {
        if (g.empty() || g.find_first_not_of("0123456789") != std::string::npos || g.size() > 6)
          return invalid_argument("optimizer model: malformed onyx.optimizer.parameter_groups");
        info.parameter_groups.push_back(size_t(std::stoul(g)));
      }
    } else if (prop.key().starts_with("onyx.optimizer.group.")) {
      // onyx.optimizer.group.<k>.pattern | .overrides
      std::string rest = prop.key().substr(std::strlen("onyx.optimizer.group."));
      size_t dot = rest.find('.');
      std::string index = rest.substr(0, dot);
      if (dot == std::string::npos || index.empty() || index.size() > 6 ||
          index.find_first_not_of("0123456789") != std::string::npos)
        return invalid_argument("optimizer model: malformed metadata key '" + prop.key() + "'");
      size_t k = size_t(std::stoul(index));
      if (k == 0) return invalid_argument("optimizer model: group 0 is the default group; '" + prop.key() + "'");
      if (info.groups.size() <= k) info.groups.resize(k + 1);
      if (rest.substr(dot + 1) == "pattern") {
        info.groups[k].pattern = prop.value();
      } else if (rest.substr(dot + 1) == "overrides") {
        ONYX_RETURN_IF_ERROR(parse_pairs(prop.value(), [&](std::string n, float v) {
          info.groups[k].overrides.emplace_back(std::move(n), v);
        }).with_context("optimizer model group " + index));
      } else {
        return invalid_argument("optimizer model: unknown metadata key '" + prop.key() + "'");
      }
    }
  }
  if (!found) return invalid_argument("not an Onyx optimizer model: metadata 'onyx.optimizer' is missing");
  const auto& inputs = model.graph().input();
  size_t globals = std::size(kGlobalInputs) + info.hyperparameters.size();
  for (const auto& group : info.groups) globals += group.overrides.size();
  size_t stride = 2 + info.slots.size();
  if (size_t(inputs.size()) < globals || (size_t(inputs.size()) - globals) % stride != 0)
    return invalid_argument("optimizer model: " + std::to_string(inputs.size()) +
                            " inputs do not match its metadata (" + std::to_string(info.slots.size()) +
                            " slots, " + std::to_string(info.hyperparameters.size()) + " hyperparameters)");
  for (size_t i = globals; i < size_t(inputs.size()); i += stride) info.parameters.push_back(inputs[int(i)].name());
  if (info.parameter_groups.empty()) info.parameter_groups.assign(info.parameters.size(), 0);
  if (info.parameter_groups.size() != info.parameters.size())
    return invalid_argument("optimizer model: onyx.optimizer.parameter_groups lists " +
                            std::to_string(info.parameter_groups.size()) + " groups for " +
                            std::to_string(info.parameters.size()) + " parameters");
  for (size_t g : info.parameter_groups)
    if (g >= info.groups.size()) return invalid_argument("optimizer model: parameter group " + std::to_string(g) + " is not described");
  return info;
}

}  // namespace onyx::runtime::training
