// rules_reduce.cpp: gradients of ReduceSum and ReduceMean: the output
// gradient broadcast back over the reduced axes (divided by the count for
// the mean).
#include "autodiff/rules.h"

namespace onyx::runtime::autodiff {
namespace {

template <bool kMean>
Status reduce_rule(GradContext& c) {
  Emitter& e = c.e();
  // Axes: an input from opset 13 (ReduceSum) or 18 (ReduceMean), else an attribute.
  const bool axes_input = kMean ? e.opset() >= 18 : e.opset() >= 13;
  std::vector<int64_t> axes;
  if (axes_input && !c.x(1).empty()) {
    ONYX_ASSIGN_OR_RETURN(axes, c.constant_ints(1));
  } else if (!axes_input) {
    axes = c.attr_ints("axes");
  }
  std::string g = c.dy(0);
  if (axes.empty() && c.attr_int("noop_with_empty_axes", 0) != 0) {
    c.set_dx(0, g);  // no reduction happened
    return Status();
  }
  // Without keepdims the reduced axes are put back (as size 1) first; an
  // empty axes list reduced everything to a scalar, which expands directly.
  if (c.attr_int("keepdims", 1) == 0 && !axes.empty()) g = e.unsqueeze(g, axes);
  // The mean's count divides the reduced gradient before it is expanded:
  // the same quotients, computed once per output element, not once per input.
  if (kMean) {
    int32_t t = e.dtype(c.x(0));
    std::string in = e.op("Cast", {e.op("Size", {c.x(0)})}, {attr_int("to", t)});
    std::string out = e.op("Cast", {e.op("Size", {c.y(0)})}, {attr_int("to", t)});
    g = e.op("Div", {g, e.op("Div", {in, out})});
  }
  c.set_dx(0, e.op("Expand", {g, e.op("Shape", {c.x(0)})}));
  return Status();
}

}  // namespace

void add_reduce_rules(RuleTable& t) {
  t["ReduceSum"] = reduce_rule<false>;
  t["ReduceMean"] = reduce_rule<true>;
}

}  // namespace onyx::runtime::autodiff
