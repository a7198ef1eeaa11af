// rules_elementwise.cpp: gradients of element-wise math (broadcasting binary
// ops reduce their gradients back to each input's shape).
#include <cmath>

#include "autodiff/rules.h"

namespace onyx::runtime::autodiff {
namespace {

// d/dx of a unary op, as g * f'(x): `derivative` emits f'(x).
template <typename Fn>
GradRule unary(Fn derivative) {
  return [derivative](GradContext& c) {
    Emitter& e = c.e();
    c.set_dx(0, e.op("Mul", {c.dy(0), derivative(c, e)}));
    return Status();
  };
}

Status add_rule(GradContext& c) {
  for (int k = 0; k < 2; ++k)
    if (c.needs(k)) c.set_dx(k, c.e().sum_to_shape(c.dy(0), c.x(k), c.y(0)));
  return Status();
}

Status sub_rule(GradContext& c) {
  Emitter& e = c.e();
  if (c.needs(0)) c.set_dx(0, e.sum_to_shape(c.dy(0), c.x(0), c.y(0)));
  if (c.needs(1)) c.set_dx(1, e.sum_to_shape(e.op("Neg", {c.dy(0)}), c.x(1), c.y(0)));
  return Status();
}

Status mul_rule(GradContext& c) {
  Emitter& e = c.e();
  for (int k = 0; k < 2; ++k)
    if (c.needs(k)) c.set_dx(k, e.sum_to_shape(e.op("Mul", {c.dy(0), c.x(1 - k)}), c.x(k), c.y(0)));
  return Status();
}

// y = a / b: da = g / b, db = -(g / b) * y.
Status div_rule(GradContext& c) {
  Emitter& e = c.e();
  std::string g_over_b = e.op("Div", {c.dy(0), c.x(1)});
  if (c.needs(0)) c.set_dx(0, e.sum_to_shape(g_over_b, c.x(0), c.y(0)));
  if (c.needs(1))
    c.set_dx(1, e.sum_to_shape(e.op("Neg", {e.op("Mul", {g_over_b, c.y(0)})}), c.x(1), c.y(0)));
  return Status();
}

// y = a ^ b: da = g * b * a^(b-1), db = g * y * log(a) where a > 0 and 0
// elsewhere (a^b has no derivative in b there; 0 keeps an exponent that is
// trainable by default from turning NaN).
Status pow_rule(GradContext& c) {
  Emitter& e = c.e();
  if (c.needs(0)) {
    std::string b_minus_1 = e.op("Sub", {c.x(1), e.scalar_like(1, c.x(1))});
    std::string d = e.op("Mul", {c.x(1), e.op("Pow", {c.x(0), b_minus_1})});
    c.set_dx(0, e.sum_to_shape(e.op("Mul", {c.dy(0), d}), c.x(0), c.y(0)));
  }
  if (c.needs(1)) {
    std::string positive = e.op("Greater", {c.x(0), e.scalar_like(0, c.x(0))});
    std::string safe_a = e.op("Where", {positive, c.x(0), e.scalar_like(1, c.x(0))});
    std::string d = e.op("Mul", {c.y(0), e.op("Log", {safe_a})});
    c.set_dx(1, e.sum_to_shape(e.op("Mul", {c.dy(0), d}), c.x(1), c.y(0)));
  }
  return Status();
}

// Where(cond, x, y): the gradient goes to the branch that was taken.
Status where_rule(GradContext& c) {
  Emitter& e = c.e();
  std::string zero = e.scalar_like(0, c.y(0));
  if (c.needs(1)) c.set_dx(1, e.sum_to_shape(e.op("Where", {c.x(0), c.dy(0), zero}), c.x(1), c.y(0)));
  if (c.needs(2)) c.set_dx(2, e.sum_to_shape(e.op("Where", {c.x(0), zero, c.dy(0)}), c.x(2), c.y(0)));
  return Status();
}

// Min / Max: the gradient goes to every input equal to the result (all of
// them on a tie).
Status select_rule(GradContext& c) {
  Emitter& e = c.e();
  std::string zero = e.scalar_like(0, c.y(0));
  for (int k = 0; k < c.input_count(); ++k) {
    if (!c.needs(k)) continue;
    std::string mask = e.op("Equal", {c.y(0), c.x(k)});
    c.set_dx(k, e.sum_to_shape(e.op("Where", {mask, c.dy(0), zero}), c.x(k), c.y(0)));
  }
  return Status();
}

Status sum_rule(GradContext& c) {
  for (int k = 0; k < c.input_count(); ++k)
    if (c.needs(k)) c.set_dx(k, c.e().sum_to_shape(c.dy(0), c.x(k), c.y(0)));
  return Status();
}

Status mean_rule(GradContext& c) {
  Emitter& e = c.e();
  std::string g = e.op("Div", {c.dy(0), e.scalar_like(c.input_count(), c.y(0))});
  for (int k = 0; k < c.input_count(); ++k)
    if (c.needs(k)) c.set_dx(k, e.sum_to_shape(g, c.x(k), c.y(0)));
  return Status();
}

// Clip passes the gradient where min <= x <= max (min/max get none).
Status clip_rule(GradContext& c) {
  Emitter& e = c.e();
  std::string g = c.dy(0), zero = e.scalar_like(0, c.y(0));
  if (!c.x(1).empty()) g = e.op("Where", {e.op("GreaterOrEqual", {c.x(0), c.x(1)}), g, zero});
  if (!c.x(2).empty()) g = e.op("Where", {e.op("LessOrEqual", {c.x(0), c.x(2)}), g, zero});
  c.set_dx(0, g);
  return Status();
}

Status identity_rule(GradContext& c) {
  c.set_dx(0, c.dy(0));
  return Status();
}

Status cast_rule(GradContext& c) {
  Emitter& e = c.e();
  int32_t from = e.dtype(c.x(0));
  c.set_dx(0, from == e.dtype(c.y(0)) ? c.dy(0) : e.op("Cast", {c.dy(0)}, {attr_int("to", from)}));
  return Status();
}

}  // namespace

void add_elementwise_rules(RuleTable& t) {
  t["Add"] = add_rule;
  t["Sub"] = sub_rule;
  t["Mul"] = mul_rule;
  t["Div"] = div_rule;
  t["Pow"] = pow_rule;
  t["Where"] = where_rule;
  t["Min"] = select_rule;
  t["Max"] = select_rule;
  t["Sum"] = sum_rule;
  t["Mean"] = mean_rule;
  t["Clip"] = clip_rule;
  t["Identity"] = identity_rule;
  t["Cast"] = cast_rule;
  t["Neg"] = [](GradContext& c) {
    c.set_dx(0, c.e().op("Neg", {c.dy(0)}));
    return Status();
  };
  // sqrt: 0.5 / y
  t["Sqrt"] = unary([](GradContext& c, Emitter& e) {
    return e.op("Div", {e.scalar_like(0.5, c.y(0)), c.y(0)});
  });
  t["Exp"] = unary([](GradContext& c, Emitter&) { return c.y(0); });
  t["Log"] = unary([](GradContext& c, Emitter& e) { return e.op("Reciprocal", {c.x(0)}); });
  t["Abs"] = unary([](GradContext& c, Emitter& e) { return e.op("Sign", {c.x(0)}); });
  t["Reciprocal"] = unary([](GradContext& c, Emitter& e) {  // -y^2
    return e.op("Neg", {e.op("Mul", {c.y(0), c.y(0)})});
  });
  t["Erf"] = unary([](GradContext& c, Emitter& e) {  // 2/sqrt(pi) * exp(-x^2)
    std::string neg_sq = e.op("Neg", {e.op("Mul", {c.x(0), c.x(0)})});
    return e.op("Mul", {e.scalar_like(2 / std::sqrt(M_PI), c.x(0)), e.op("Exp", {neg_sq})});
  });
}

}  // namespace onyx::runtime::autodiff
