// swish_fusion.cpp: SiLU / Swish as exporters write it, x * Sigmoid(x) or
// x * Sigmoid(alpha * x) (alpha a scalar constant, the products in either
// order), becomes one node: ONNX Swish where the graph imports opset >= 24,
// else ONNX Runtime's com.microsoft QuickGelu, which computes the same with
// its alpha. One pass over the data instead of two, and no sigmoid tensor.
// float32 only.
#include "optimize/pattern_match.h"

namespace onyx::runtime::optimize {
namespace {

// The Mul node `m` reading `s = Sigmoid(z)` and `x`, z = x or alpha * x:
// rewrites the group and returns true when it matched.
bool fuse_at(GraphRewrite& rw, const ProviderRank& providers, int m) {
  ir::Graph& g = rw.graph;
  const ir::Node& mul = g.nodes[size_t(m)];
  if (!mul.domain.empty() || mul.op_type != "Mul" || mul.inputs.size() != 2 || mul.outputs.size() != 1) return false;
  for (int side = 0; side < 2; ++side) {
    const int x = mul.inputs[size_t(side)], s = mul.inputs[size_t(1 - side)];
    const int sigmoid = producer_of(rw, s, "Sigmoid");
    if (sigmoid < 0 || !internal(rw, s) || g.values[size_t(x)].dtype != ONYX_DTYPE_FLOAT32) continue;
    const int z = g.nodes[size_t(sigmoid)].inputs[0];
    std::vector<int> group = {sigmoid, m};
    double alpha = 1.0;
    if (z != x) {  // z = alpha * x
      const int scale = producer_of(rw, z, "Mul");
      if (scale < 0 || !internal(rw, z)) continue;
      const int c = other_input(g.nodes[size_t(scale)], x);
      const std::optional<double> a = c >= 0 ? scalar_constant(rw, c) : std::nullopt;
      // Of no higher rank than x, so that alpha * x has x's shape.
      if (!a || int32_t(rw.fixed_constant(c)->shape().size()) > g.values[size_t(x)].rank) continue;
      alpha = *a;
      group.insert(group.begin(), scale);
    }
    ir::Node fused;
    fused.name = (mul.name.empty() ? g.values[size_t(mul.outputs[0])].name : mul.name) + "_swish";
    fused.inputs = {x};
    fused.outputs = mul.outputs;
    if (g.opset("") >= 24) {
      fused.op_type = "Swish";
    } else {
      fused.op_type = "QuickGelu";
      fused.domain = "com.microsoft";
    }
    fused.attributes.push_back(float_attribute("alpha", float(alpha)));
    if (!claimed_in_place(rw, providers, fused, group)) return false;
    commit_fusion(rw, group, std::move(fused));
    return true;
  }
  return false;
}

}  // namespace

int fuse_swishes(GraphRewrite& rw, const ProviderRank& providers) {
  return fuse_each_node(rw, [&](int n) { return fuse_at(rw, providers, n); });
}

}  // namespace onyx::runtime::optimize
