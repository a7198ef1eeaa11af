// rules_nn.cpp: gradients of Conv, ConvTranspose and the pools, through
// ai.onyx kernels (providers/cpu/kernels/grad/conv_grad.cpp, pool_grad.cpp) that
// take the forward node's window attributes.
#include "autodiff/rules.h"

namespace onyx::runtime::autodiff {
namespace {

const std::vector<std::string> kWindowAttrs = {"auto_pad", "dilations", "group", "kernel_shape",
                                               "pads",     "strides",   "ceil_mode", "count_include_pad"};

// ConvGrad(dY, X, W) -> (dX, dW): the input and weight gradients of Conv.
Status conv_rule(GradContext& c) {
  Emitter& e = c.e();
  if (c.needs(0) || c.needs(1)) {
    std::vector<std::string> d = e.node("ConvGrad", {c.dy(0), c.x(0), c.x(1)}, 2, c.attrs(kWindowAttrs), kOnyxDomain);
    for (int k = 0; k < 2; ++k) {
      if (c.needs(k)) c.set_dx(k, d[size_t(k)]);
      else e.drop_output(d[size_t(k)]);  // e.g. the first layer's input gradient
    }
  }
  if (c.needs(2)) {
    ONYX_ASSIGN_OR_RETURN(int rank, c.rank_of(c.y(0)));
    std::vector<int64_t> axes = {0};
    for (int64_t a = 2; a < rank; ++a) axes.push_back(a);
    c.set_dx(2, e.reduce("ReduceSum", c.dy(0), axes, false));
  }
  return Status();
}

// ConvTranspose is the adjoint of Conv in its input: with the same
// attributes, dX = Conv(dY, W), and dW is Conv's weight gradient with the
// roles of input and output swapped: ConvGrad(X, dY, W).
Status conv_transpose_rule(GradContext& c) {
  Emitter& e = c.e();
  if (c.has_attr("output_shape") || c.attr_string("auto_pad", "NOTSET") != "NOTSET")
    return unimplemented(c.label() + ": gradients of ConvTranspose need explicit pads (no output_shape or auto_pad)");
  std::vector<std::string> conv_attrs = {"dilations", "group", "kernel_shape", "pads", "strides"};
  if (c.needs(0)) c.set_dx(0, e.op("Conv", {c.dy(0), c.x(1)}, c.attrs(conv_attrs)));
  if (c.needs(1)) {
    auto d = e.node("ConvGrad", {c.x(0), c.dy(0), c.x(1)}, 2, c.attrs(conv_attrs), kOnyxDomain);
    e.drop_output(d[0]);
    c.set_dx(1, d[1]);
  }
  if (c.needs(2)) {
    ONYX_ASSIGN_OR_RETURN(int rank, c.rank_of(c.y(0)));
    std::vector<int64_t> axes = {0};
    for (int64_t a = 2; a < rank; ++a) axes.push_back(a);
    c.set_dx(2, e.reduce("ReduceSum", c.dy(0), axes, false));
  }
  return Status();
}

// (The optional Indices output is int64: no gradient reaches it.)
Status max_pool_rule(GradContext& c) {
  c.set_dx(0, c.e().op("MaxPoolGrad", {c.dy(0), c.x(0)}, c.attrs(kWindowAttrs), kOnyxDomain));
  return Status();
}

Status average_pool_rule(GradContext& c) {
  Emitter& e = c.e();
  c.set_dx(0, e.op("AveragePoolGrad", {c.dy(0), e.op("Shape", {c.x(0)})}, c.attrs(kWindowAttrs), kOnyxDomain));
  return Status();
}

Status global_average_pool_rule(GradContext& c) {
  Emitter& e = c.e();
  int32_t t = e.dtype(c.x(0));
  std::string in = e.op("Cast", {e.op("Size", {c.x(0)})}, {attr_int("to", t)});
  std::string out = e.op("Cast", {e.op("Size", {c.y(0)})}, {attr_int("to", t)});
  std::string spread = e.op("Expand", {c.dy(0), e.op("Shape", {c.x(0)})});
  c.set_dx(0, e.op("Div", {spread, e.op("Div", {in, out})}));
  return Status();
}

}  // namespace

void add_nn_rules(RuleTable& t) {
  t["Conv"] = conv_rule;
  t["ConvTranspose"] = conv_transpose_rule;
  t["MaxPool"] = max_pool_rule;
  t["AveragePool"] = average_pool_rule;
  t["GlobalAveragePool"] = global_average_pool_rule;
}

}  // namespace onyx::runtime::autodiff
