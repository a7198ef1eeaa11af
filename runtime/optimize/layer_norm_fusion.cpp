// layer_norm_fusion.cpp: the LayerNorm exporters write out op by op,
//   m = ReduceMean(x, trailing axes)   d = Sub(x, m)
//   v = ReduceMean(Pow(d, 2) | Mul(d, d), same axes)
//   y = Add(Mul(Div(d, Sqrt(Add(v, eps))), gamma), beta)   (gamma, beta optional)
// becomes one ONNX LayerNormalization (opset 17; axis = the first reduced
// axis, epsilon = eps). Either operand order of the commutative Add and Mul
// matches. gamma and beta must be constants of the normalized shape (or a
// shape broadcasting to it, then expanded), of x's type (float32 or
// float64); without gamma a scale of ones is added. The fused node computes
// in float32 for float32 inputs (stash_type 1), as the op-by-op form does.
#include <algorithm>

#include "optimize/pattern_match.h"

namespace onyx::runtime::optimize {
namespace {

// True when `axes` are the last axes of a rank-`rank` tensor, each once.
bool trailing(const std::vector<int64_t>& axes, int32_t rank) {
  if (axes.empty()) return false;
  for (size_t k = 0; k < axes.size(); ++k)
    if (axes[k] != rank - int64_t(axes.size()) + int64_t(k)) return false;
  return true;
}

// `t` (a constant of x's type) expanded to the normalized shape `norm`, or
// nothing when it does not broadcast to it.
std::optional<Tensor> expand_to(const Tensor& t, const Shape& norm, int32_t dtype) {
  if (t.dtype() != dtype || t.shape().size() > norm.size()) return std::nullopt;
  const size_t lead = norm.size() - t.shape().size();
  for (size_t d = 0; d < t.shape().size(); ++d)
    if (t.shape()[d] != 1 && t.shape()[d] != norm[lead + d]) return std::nullopt;
  if (t.shape() == norm) return t;
  Tensor out = Tensor::allocate(dtype, norm);
  const size_t width = dtype == ONYX_DTYPE_FLOAT64 ? 8 : 4;
  for (int64_t e = 0; e < out.size(); ++e) {
    int64_t rest = e, src = 0, stride = 1;
    for (size_t d = norm.size(); d-- > 0;) {  // index of e in t, numpy-aligned at the right
      const int64_t i = rest % norm[d];
      rest /= norm[d];
      if (d >= lead) {
        const int64_t td = t.shape()[d - lead];
        if (td != 1) src += i * stride;
        stride *= td;
      }
    }
    std::copy_n(static_cast<const char*>(t.data()) + size_t(src) * width, width,
                static_cast<char*>(out.data()) + size_t(e) * width);
  }
  return out;
}

Tensor ones(const Shape& norm, int32_t dtype) {
  Tensor t = Tensor::allocate(dtype, norm);
  for (int64_t e = 0; e < t.size(); ++e) {
    if (dtype == ONYX_DTYPE_FLOAT64) t.data_as<double>()[e] = 1.0;
    else t.data_as<float>()[e] = 1.0f;
  }
  return t;
}

// Matches the pattern ending at node `last` (the final Add, Mul or Div) and
// rewrites it; true when it did.
bool fuse_at(GraphRewrite& rw, const ProviderRank& providers, int last) {
  ir::Graph& g = rw.graph;
  if (g.opset("") < 17) return false;
  std::vector<int> group;  // from the last node back
  int cur = last;
  const ir::Node* node = &g.nodes[size_t(cur)];
  if (!node->domain.empty() || node->outputs.size() != 1) return false;
  const int y = node->outputs[0];

  // Optional "+ beta", then optional "* gamma", then the division.
  int beta = -1, gamma = -1;
  int top = y;  // the value the matched tail writes
  auto step = [&](const char* op, int& constant) {  // peels `v op constant` off `top`
    const int n = producer_of(rw, top, op);
    if (n < 0) return false;
    const ir::Node& nd = g.nodes[size_t(n)];
    for (int side = 0; side < 2; ++side) {
      const int c = nd.inputs.size() == 2 ? nd.inputs[size_t(1 - side)] : -1;
      const int v = nd.inputs.size() == 2 ? nd.inputs[size_t(side)] : -1;
      if (c >= 0 && rw.fixed_constant(c) && v >= 0 && !rw.fixed_constant(v) && (top == y || internal(rw, top))) {
        constant = c;
        group.push_back(n);
        top = v;
        return true;
      }
    }
    return false;
  };
  step("Add", beta);
  step("Mul", gamma);
  if (top != y && !internal(rw, top)) return false;
  const int div = producer_of(rw, top, "Div");
  if (div < 0) return false;
  group.push_back(div);
  const int d = g.nodes[size_t(div)].inputs[0];
  const int std_dev = g.nodes[size_t(div)].inputs[1];
  // std_dev = Sqrt(Add(v, eps))
  const int sqrt = producer_of(rw, std_dev, "Sqrt");
  if (sqrt < 0 || !internal(rw, std_dev)) return false;
  group.push_back(sqrt);
  const int var_eps = g.nodes[size_t(sqrt)].inputs[0];
  const int add_eps = producer_of(rw, var_eps, "Add");
  if (add_eps < 0 || !internal(rw, var_eps)) return false;
  group.push_back(add_eps);
  int var = -1;
  std::optional<double> eps;
  for (int side = 0; side < 2 && !eps; ++side) {
    eps = scalar_constant(rw, g.nodes[size_t(add_eps)].inputs[size_t(1 - side)]);
    var = g.nodes[size_t(add_eps)].inputs[size_t(side)];
  }
  if (!eps || *eps < 0) return false;
  // var = ReduceMean(Pow(d, 2) | Mul(d, d))
  const int mean_sq = producer_of(rw, var, "ReduceMean");
  if (mean_sq < 0 || !internal(rw, var)) return false;
  group.push_back(mean_sq);
  const int sq = g.nodes[size_t(mean_sq)].inputs[0];
  if (!internal(rw, sq)) return false;
  if (const int pow = producer_of(rw, sq, "Pow"); pow >= 0) {
    if (g.nodes[size_t(pow)].inputs.size() != 2 || g.nodes[size_t(pow)].inputs[0] != d ||
        !near(scalar_constant(rw, g.nodes[size_t(pow)].inputs[1]), 2.0, 0.0))
      return false;
    group.push_back(pow);
  } else if (const int mul = producer_of(rw, sq, "Mul"); mul >= 0) {
    if (g.nodes[size_t(mul)].inputs.size() != 2 || g.nodes[size_t(mul)].inputs[0] != d ||
        g.nodes[size_t(mul)].inputs[1] != d)
      return false;
    group.push_back(mul);
  } else {
    return false;
  }
  // d = Sub(x, ReduceMean(x)), read only by the square and the division
  // (a Mul(d, d) reads it twice).
  const int sub = producer_of(rw, d, "Sub");
  const int d_uses = g.nodes[size_t(group.back())].op_type == "Mul" ? 3 : 2;
  if (sub < 0 || !internal(rw, d, d_uses) || g.nodes[size_t(sub)].inputs.size() != 2) return false;
  group.push_back(sub);
  const int x = g.nodes[size_t(sub)].inputs[0], mean = g.nodes[size_t(sub)].inputs[1];
  const int mean_x = producer_of(rw, mean, "ReduceMean");
  if (mean_x < 0 || !internal(rw, mean) || g.nodes[size_t(mean_x)].inputs[0] != x) return false;
  group.push_back(mean_x);

  const ir::Value& xv = g.values[size_t(x)];
  if (xv.rank < 1 || (xv.dtype != ONYX_DTYPE_FLOAT32 && xv.dtype != ONYX_DTYPE_FLOAT64)) return false;
  const std::vector<int64_t> axes = reduced_axes(rw, g.nodes[size_t(mean_x)], xv.rank, /*keepdims=*/true);
  if (!trailing(axes, xv.rank) || reduced_axes(rw, g.nodes[size_t(mean_sq)], xv.rank, /*keepdims=*/true) != axes) return false;
  const Shape norm(xv.dims.end() - int64_t(axes.size()), xv.dims.end());
  for (int64_t dim : norm)
    if (dim < 0) return false;  // gamma and beta need the normalized shape

  std::optional<Tensor> scale = gamma >= 0 ? expand_to(*rw.fixed_constant(gamma), norm, xv.dtype) : ones(norm, xv.dtype);
  if (!scale) return false;
  std::optional<Tensor> bias;
  if (beta >= 0 && !(bias = expand_to(*rw.fixed_constant(beta), norm, xv.dtype))) return false;

  ir::Node fused;
  fused.name = g.nodes[size_t(last)].name.empty() ? g.values[size_t(y)].name + "_layer_norm"
                                                  : g.nodes[size_t(last)].name + "_layer_norm";
  fused.op_type = "LayerNormalization";
  const std::string base = g.values[size_t(y)].name;
  const int scale_v = gamma >= 0 && scale->shape() == rw.fixed_constant(gamma)->shape()
                          ? gamma
                          : add_initializer(rw, base + "_ln_scale", std::move(*scale));
  int bias_v = -1;
  if (bias) bias_v = bias->shape() == rw.fixed_constant(beta)->shape() ? beta
                                                                        : add_initializer(rw, base + "_ln_bias", std::move(*bias));
  fused.inputs = {x, scale_v};
  if (bias_v >= 0) fused.inputs.push_back(bias_v);
  fused.outputs = {y};
  fused.attributes = {int_attribute("axis", -int64_t(axes.size())), float_attribute("epsilon", float(*eps))};
  // The slot of the final node keeps the order topological.
  std::reverse(group.begin(), group.end());
  if (group.back() != last) return false;
  if (!claimed_in_place(rw, providers, fused, group)) return false;
  commit_fusion(rw, group, std::move(fused));
  return true;
}

}  // namespace

int fuse_layer_norms(GraphRewrite& rw, const ProviderRank& providers) {
  // Last node first: a pattern is matched from its final Add, not from the
  // Mul or Div before it (which would leave "+ beta" unfused).
  int fused = 0;
  for (size_t n = rw.graph.nodes.size(); n-- > 0;)
    if (!rw.removed[n] && fuse_at(rw, providers, int(n))) ++fused;
  return fused;
}

}  // namespace onyx::runtime::optimize
