// rules_shape.cpp: gradients of ops that move or copy elements (Reshape,
// Flatten, Squeeze, Unsqueeze, Expand, Transpose, Concat, Split, Slice,
// Gather). Slice and Gather scatter back through ai.onyx kernels.
#include "autodiff/rules.h"

namespace onyx::runtime::autodiff {
namespace {

// The gradient of a pure reshape is the output gradient reshaped back.
Status reshape_back(GradContext& c) {
  Emitter& e = c.e();
  c.set_dx(0, e.op("Reshape", {c.dy(0), e.op("Shape", {c.x(0)})}));
  return Status();
}

Status expand_rule(GradContext& c) {
  c.set_dx(0, c.e().sum_to_shape(c.dy(0), c.x(0), c.y(0)));
  return Status();
}

Status transpose_rule(GradContext& c) {
  Emitter& e = c.e();
  std::vector<int64_t> perm = c.attr_ints("perm");
  if (perm.empty()) {  // the default reverses the dims, its own inverse
    c.set_dx(0, e.op("Transpose", {c.dy(0)}));
    return Status();
  }
  std::vector<int64_t> inverse(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) inverse[size_t(perm[k])] = int64_t(k);
  c.set_dx(0, e.op("Transpose", {c.dy(0)}, {attr_ints("perm", inverse)}));
  return Status();
}

// Concat: split the gradient at the inputs' (run-time) sizes along axis.
Status concat_rule(GradContext& c) {
  Emitter& e = c.e();
  const int64_t axis = c.attr_int("axis", 0);
  std::vector<std::string> sizes;
  std::string axis_index = e.ints({axis});
  for (int k = 0; k < c.input_count(); ++k)
    sizes.push_back(e.op("Gather", {e.op("Shape", {c.x(k)}), axis_index}));
  std::string split = e.op("Concat", sizes, {attr_int("axis", 0)});
  std::vector<std::string> parts = e.split(c.dy(0), axis, split, size_t(c.input_count()));
  for (int k = 0; k < c.input_count(); ++k) c.set_dx(k, parts[size_t(k)]);
  return Status();
}

// Split: concatenate the outputs' gradients (zeros where none arrived).
Status split_rule(GradContext& c) {
  Emitter& e = c.e();
  std::vector<std::string> parts;
  for (int k = 0; k < c.output_count(); ++k) parts.push_back(c.dy_or_zeros(k));
  c.set_dx(0, e.op("Concat", parts, {attr_int("axis", c.attr_int("axis", 0))}));
  return Status();
}

// Slice(data, starts, ends, axes?, steps?): SliceGrad scatters the gradient
// into zeros of data's shape, resolving the slice as Slice does.
Status slice_rule(GradContext& c) {
  Emitter& e = c.e();
  std::vector<std::string> in = {c.dy(0), e.op("Shape", {c.x(0)}), c.x(1), c.x(2)};
  if (c.input_count() > 3) in.push_back(c.x(3));
  if (c.input_count() > 4) in.push_back(c.x(4));
  c.set_dx(0, e.op("SliceGrad", in, {}, kOnyxDomain));
  return Status();
}

// Gather: GatherGrad adds each gradient slice into the row it was read from
// (repeated indices accumulate).
Status gather_rule(GradContext& c) {
  Emitter& e = c.e();
  c.set_dx(0, e.op("GatherGrad", {c.dy(0), c.x(1), e.op("Shape", {c.x(0)})}, c.attrs({"axis"}), kOnyxDomain));
  return Status();
}

// GatherElements: the gradient scattered back, repeated indices adding up
// (ScatterElements with reduction "add", opset 16+).
Status gather_elements_rule(GradContext& c) {
  Emitter& e = c.e();
  if (e.opset() < 16)
    return unimplemented(c.label() + ": the GatherElements gradient needs opset >= 16 (ScatterElements with reduction)");
  c.set_dx(0, e.op("ScatterElements", {e.zeros_like(c.x(0)), c.x(1), c.dy(0)},
                   {attr_int("axis", c.attr_int("axis", 0)), attr_string("reduction", "add")}));
  return Status();
}

}  // namespace

void add_shape_rules(RuleTable& t) {
  t["Reshape"] = reshape_back;
  t["Flatten"] = reshape_back;
  t["Squeeze"] = reshape_back;
  t["Unsqueeze"] = reshape_back;
  t["Expand"] = expand_rule;
  t["Transpose"] = transpose_rule;
  t["Concat"] = concat_rule;
  t["Split"] = split_rule;
  t["Slice"] = slice_rule;
  t["Gather"] = gather_rule;
  t["GatherElements"] = gather_elements_rule;
}

}  // namespace onyx::runtime::autodiff
