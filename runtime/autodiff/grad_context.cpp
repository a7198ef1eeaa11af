// grad_context.cpp: GradContext helpers and the rule table.
#include <onnx/defs/tensor_proto_util.h>

#include "autodiff/rules.h"

namespace onyx::runtime::autodiff {

namespace onnx = ONNX_NAMESPACE;

std::string GradContext::dy_or_zeros(int k) {
  std::string g = dy(k);
  return g.empty() ? e_.zeros_like(y(k)) : g;
}

void GradContext::set_dx(int k, const std::string& grad) {
  if (!needs(k) || grad.empty()) return;
  // The gradient has the forward value's type; later rules read it.
  if (auto t = e_.type(x(k)); t && !e_.type(grad)) e_.set_type(grad, *t);
  dx_[size_t(k)] = grad;
}

static const onnx::AttributeProto* find_attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

bool GradContext::has_attr(const std::string& name) const { return find_attr(node_, name) != nullptr; }

int64_t GradContext::attr_int(const std::string& name, int64_t fallback) const {
  const auto* a = find_attr(node_, name);
  return a ? a->i() : fallback;
}

float GradContext::attr_float(const std::string& name, float fallback) const {
  const auto* a = find_attr(node_, name);
  return a ? a->f() : fallback;
}

std::vector<int64_t> GradContext::attr_ints(const std::string& name, std::vector<int64_t> fallback) const {
  const auto* a = find_attr(node_, name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : fallback;
}

std::string GradContext::attr_string(const std::string& name, const std::string& fallback) const {
  const auto* a = find_attr(node_, name);
  return a ? a->s() : fallback;
}

std::vector<onnx::AttributeProto> GradContext::attrs(const std::vector<std::string>& names) const {
  std::vector<onnx::AttributeProto> out;
  for (const auto& n : names)
    if (const auto* a = find_attr(node_, n)) out.push_back(*a);
  return out;
}

std::string GradContext::label() const {
  return node_.op_type() + " node '" + node_.name() + "'";
}

StatusOr<int> GradContext::rank_of(const std::string& name) const {
  auto t = e_.type(name);
  if (!t || t->rank < 0)
    return invalid_argument(label() + ": the gradient needs the rank of '" + name +
                            "', which shape inference could not find");
  return t->rank;
}

StatusOr<std::vector<int64_t>> GradContext::constant_ints(int k) const {
  std::string name = x(k);
  auto it = constants ? constants->find(name) : decltype(constants->end()){};
  if (!constants || it == constants->end())
    return invalid_argument(label() + ": the gradient needs input " + std::to_string(k) + " ('" + name +
                            "') to be a constant");
  const onnx::TensorProto& t = *it->second;
  if (t.data_type() == onnx::TensorProto::INT64) return onnx::ParseData<int64_t>(&t);
  if (t.data_type() == onnx::TensorProto::INT32) {
    std::vector<int32_t> v = onnx::ParseData<int32_t>(&t);
    return std::vector<int64_t>(v.begin(), v.end());
  }
  return invalid_argument(label() + ": input '" + name + "' is not an int32/int64 constant");
}

std::string rule_key(const onnx::NodeProto& node) {
  const std::string& d = node.domain();
  return d.empty() || d == "ai.onnx" ? node.op_type() : d + "::" + node.op_type();
}

const RuleTable& gradient_rules() {
  static const RuleTable table = [] {
    RuleTable t;
    add_elementwise_rules(t);
    add_activation_rules(t);
    add_linalg_rules(t);
    add_shape_rules(t);
    add_reduce_rules(t);
    add_nn_rules(t);
    add_norm_rules(t);
    add_attention_rules(t);
    add_loss_rules(t);
    return t;
  }();
  return table;
}

}  // namespace onyx::runtime::autodiff
