// relu_grad_fusion.cpp: the gradient autodiff writes for a Relu,
//   dX = Where(Greater(X, 0), dY, 0)
// becomes one ai.onyx ReluGrad(dY, X) where a provider claims it: one pass
// over dY and X instead of three (the comparison's bool tensor written and
// read back; a CNN's backward at batch 64 spent more on these pairs than on
// its pooling). Both zeros must be constants of one element and no higher
// rank than what they are compared with or selected against (so the shapes
// broadcast as before); X and dY of one type; the comparison read only by
// the Where.
#include <algorithm>

#include "optimize/pattern_match.h"

namespace onyx::runtime::optimize {
namespace {

bool fuse_at(GraphRewrite& rw, const ProviderRank& providers, int where) {
  ir::Graph& g = rw.graph;
  const ir::Node& w = g.nodes[size_t(where)];
  if (!w.domain.empty() || w.op_type != "Where" || w.inputs.size() != 3 || w.outputs.size() != 1) return false;
  const int cond = w.inputs[0], dy = w.inputs[1];
  const int greater = producer_of(rw, cond, "Greater");
  if (greater < 0 || !internal(rw, cond) || g.nodes[size_t(greater)].inputs.size() != 2) return false;
  const int x = g.nodes[size_t(greater)].inputs[0];
  if (x < 0 || dy < 0) return false;
  const ir::Value &xv = g.values[size_t(x)], &dyv = g.values[size_t(dy)];
  if (xv.dtype != dyv.dtype || xv.dtype == ONYX_DTYPE_UNDEFINED) return false;
  if (!is_zero(rw, g.nodes[size_t(greater)].inputs[1], xv.rank) ||
      !is_zero(rw, w.inputs[2], std::max(xv.rank, dyv.rank)))
    return false;
  ir::Node fused;
  fused.name = (w.name.empty() ? g.values[size_t(w.outputs[0])].name : w.name) + "_relu_grad";
  fused.op_type = "ReluGrad";
  fused.domain = "ai.onyx";
  fused.inputs = {dy, x};
  fused.outputs = w.outputs;
  if (!claimed_in_place(rw, providers, fused, {greater, where})) return false;
  commit_fusion(rw, {greater, where}, std::move(fused));
  return true;
}

}  // namespace

int fuse_relu_grads(GraphRewrite& rw, const ProviderRank& providers) {
  return fuse_each_node(rw, [&](int n) { return fuse_at(rw, providers, n); });
}

}  // namespace onyx::runtime::optimize
