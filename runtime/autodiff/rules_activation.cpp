// rules_activation.cpp: gradients of activations, Softmax, LogSoftmax and Dropout.
#include <cmath>

#include "autodiff/rules.h"

namespace onyx::runtime::autodiff {
namespace {

void set_product(GradContext& c, const std::string& derivative) {
  c.set_dx(0, c.e().op("Mul", {c.dy(0), derivative}));
}

// From the output (y > 0 exactly where x > 0), as PyTorch's does: the
// pre-activation then has no reader but the Relu, so the graph optimizer can
// fold the Relu into the Gemm or Conv before it, and the training graph need
// not keep both.
Status relu_rule(GradContext& c) {
  Emitter& e = c.e();
  std::string positive = e.op("Greater", {c.y(0), e.scalar_like(0, c.y(0))});
  c.set_dx(0, e.op("Where", {positive, c.dy(0), e.scalar_like(0, c.y(0))}));
  return Status();
}

Status leaky_relu_rule(GradContext& c) {
  Emitter& e = c.e();
  std::string negative = e.op("Less", {c.x(0), e.scalar_like(0, c.x(0))});
  std::string scaled = e.op("Mul", {c.dy(0), e.scalar_like(c.attr_float("alpha", 0.01f), c.x(0))});
  c.set_dx(0, e.op("Where", {negative, scaled, c.dy(0)}));
  return Status();
}

Status sigmoid_rule(GradContext& c) {  // y (1 - y)
  Emitter& e = c.e();
  set_product(c, e.op("Mul", {c.y(0), e.op("Sub", {e.scalar_like(1, c.y(0)), c.y(0)})}));
  return Status();
}

Status tanh_rule(GradContext& c) {  // 1 - y^2
  Emitter& e = c.e();
  set_product(c, e.op("Sub", {e.scalar_like(1, c.y(0)), e.op("Mul", {c.y(0), c.y(0)})}));
  return Status();
}

Status softplus_rule(GradContext& c) {  // sigmoid(x)
  set_product(c, c.e().op("Sigmoid", {c.x(0)}));
  return Status();
}

// Gelu: Phi(x) + x phi(x) (erf form); the tanh form's derivative with
// u = k (x + 0.044715 x^3), t = tanh(u): 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 * 0.044715 x^2).
Status gelu_rule(GradContext& c) {
  Emitter& e = c.e();
  const std::string x = c.x(0);
  auto k = [&](double v) { return e.scalar_like(v, x); };
  auto mul = [&](const std::string& a, const std::string& b) { return e.op("Mul", {a, b}); };
  auto add = [&](const std::string& a, const std::string& b) { return e.op("Add", {a, b}); };
  std::string x2 = mul(x, x), d;
  if (c.attr_string("approximate", "none") == "tanh") {
    const double kc = std::sqrt(2 / M_PI), a = 0.044715;
    std::string u = mul(k(kc), add(x, mul(k(a), mul(x2, x))));
    std::string t = e.op("Tanh", {u});
    std::string left = mul(k(0.5), add(k(1), t));
    std::string one_minus_t2 = e.op("Sub", {k(1), mul(t, t)});
    std::string du = mul(k(kc), add(k(1), mul(k(3 * a), x2)));
    d = add(left, mul(mul(k(0.5), x), mul(one_minus_t2, du)));
  } else {
    std::string cdf = mul(k(0.5), add(k(1), e.op("Erf", {mul(x, k(1 / std::sqrt(2.0)))})));
    std::string pdf = mul(k(1 / std::sqrt(2 * M_PI)), e.op("Exp", {mul(x2, k(-0.5))}));
    d = add(cdf, mul(x, pdf));
  }
  set_product(c, d);
  return Status();
}

// Elu: x for x > 0, alpha (e^x - 1) otherwise, whose derivative is y + alpha.
Status elu_rule(GradContext& c) {
  Emitter& e = c.e();
  std::string positive = e.op("Greater", {c.x(0), e.scalar_like(0, c.x(0))});
  std::string negative_side = e.op("Add", {c.y(0), e.scalar_like(c.attr_float("alpha", 1), c.y(0))});
  set_product(c, e.op("Where", {positive, e.scalar_like(1, c.x(0)), negative_side}));
  return Status();
}

// HardSigmoid: max(0, min(1, alpha x + beta)); slope alpha inside (0, 1).
Status hard_sigmoid_rule(GradContext& c) {
  Emitter& e = c.e();
  std::string z = e.op("Add", {e.op("Mul", {c.x(0), e.scalar_like(c.attr_float("alpha", 0.2f), c.x(0))}),
                               e.scalar_like(c.attr_float("beta", 0.5f), c.x(0))});
  std::string inside = e.op("And", {e.op("Greater", {z, e.scalar_like(0, c.x(0))}),
                                    e.op("Less", {z, e.scalar_like(1, c.x(0))})});
  std::string slope = e.op("Where", {inside, e.scalar_like(c.attr_float("alpha", 0.2f), c.x(0)),
                                     e.scalar_like(0, c.x(0))});
  set_product(c, slope);
  return Status();
}

int64_t softmax_axis(GradContext& c) { return c.attr_int("axis", -1); }

Status check_softmax_opset(GradContext& c) {
  if (c.e().opset() >= 13) return Status();
  return unimplemented(c.label() + ": gradients of opset < 13 Softmax/LogSoftmax (the 2-D coercion form) are not supported");
}

// dx = y * (g - sum(g * y, axis))
Status softmax_rule(GradContext& c) {
  ONYX_RETURN_IF_ERROR(check_softmax_opset(c));
  Emitter& e = c.e();
  std::string dot = e.reduce("ReduceSum", e.op("Mul", {c.dy(0), c.y(0)}), {softmax_axis(c)}, true);
  c.set_dx(0, e.op("Mul", {c.y(0), e.op("Sub", {c.dy(0), dot})}));
  return Status();
}

// dx = g - exp(y) * sum(g, axis)
Status log_softmax_rule(GradContext& c) {
  ONYX_RETURN_IF_ERROR(check_softmax_opset(c));
  Emitter& e = c.e();
  std::string total = e.reduce("ReduceSum", c.dy(0), {softmax_axis(c)}, true);
  c.set_dx(0, e.op("Sub", {c.dy(0), e.op("Mul", {e.op("Exp", {c.y(0)}), total})}));
  return Status();
}

// Dropout: in training mode the kept elements were scaled by 1 / (1 - ratio);
// the mask output (added to the forward node when absent) says which.
Status dropout_rule(GradContext& c) {
  Emitter& e = c.e();
  bool training = !c.x(2).empty();
  if (training && c.constants && c.constants->count(c.x(2))) {
    const auto* t = c.constants->at(c.x(2));
    training = !(t->int32_data_size() == 1 && t->int32_data(0) == 0) &&
               !(t->raw_data().size() == 1 && t->raw_data()[0] == 0);
  }
  if (!training || c.y(1).empty()) {  // identity (inference mode)
    c.set_dx(0, c.dy(0));
    return Status();
  }
  std::string ratio = c.x(1).empty() ? e.scalar_like(0.5, c.y(0))
                                      : e.op("Cast", {c.x(1)}, {attr_int("to", e.dtype(c.y(0)))});
  std::string scale = e.op("Div", {e.scalar_like(1, c.y(0)), e.op("Sub", {e.scalar_like(1, c.y(0)), ratio})});
  std::string kept = e.op("Mul", {c.dy(0), scale});
  c.set_dx(0, e.op("Where", {c.y(1), kept, e.scalar_like(0, c.y(0))}));
  return Status();
}

}  // namespace

void add_activation_rules(RuleTable& t) {
  t["Relu"] = relu_rule;
  t["LeakyRelu"] = leaky_relu_rule;
  t["Sigmoid"] = sigmoid_rule;
  t["Tanh"] = tanh_rule;
  t["Softplus"] = softplus_rule;
  t["Gelu"] = gelu_rule;
  t["Elu"] = elu_rule;
  t["HardSigmoid"] = hard_sigmoid_rule;
  t["Softmax"] = softmax_rule;
  t["LogSoftmax"] = log_softmax_rule;
  t["Dropout"] = dropout_rule;
}

}  // namespace onyx::runtime::autodiff
