// batchnorm_grad_fusion.cpp: the per-channel sums of BatchNormalization's
// gradient (statistics as inputs), as autodiff writes them (rules_norm.cpp),
//   sum_centered = ReduceSum(Mul(dY, Sub(X, mean)), axes 0, 2, ..., keepdims 0)
//   sum          = ReduceSum(dY, the same axes, keepdims 0)   (optional)
// become one ai.onyx BatchNormGradSums(dY, X, mean) where a provider claims
// it: one pass over dY and X instead of four (the Sub's and the Mul's
// results written and read back). `mean` holds one value per channel of X
// [N, C, ...], shaped to broadcast along axis 1 ([C], [C, 1, ...] or
// [1, C, 1, ...]); dY and X have one rank and no known dim that differs.
// Also here (reuse_at): a bias gradient below such a BatchNormalization,
// the per-channel sum of dY times a per-channel factor, taken from the
// plain sum instead of a pass of its own.
#include <algorithm>

#include "optimize/pattern_match.h"

namespace onyx::runtime::optimize {
namespace {

// Every axis of a rank-`rank` tensor but the channel axis 1.
std::vector<int64_t> all_but_channels(int32_t rank) {
  std::vector<int64_t> axes = {0};
  for (int64_t a = 2; a < rank; ++a) axes.push_back(a);
  return axes;
}

// A ReduceSum of `v` alone over `axes`, keepdims 0, one output.
bool sums_over(const GraphRewrite& rw, const ir::Node& n, int v, const std::vector<int64_t>& axes, int32_t rank) {
  return n.domain.empty() && n.op_type == "ReduceSum" && !n.inputs.empty() && n.inputs[0] == v &&
         n.outputs.size() == 1 && n.attr_int("noop_with_empty_axes", 0) == 0 &&
         reduced_axes(rw, n, rank, /*keepdims=*/false) == axes;
}

// `mean` broadcasts against X [N, C, ...] as one value per channel.
bool per_channel(const ir::Value& mean, const ir::Value& x) {
  if (!mean.shape_known() || x.rank < 2 || x.dims[1] < 0) return false;
  if (mean.rank != x.rank - 1 && mean.rank != x.rank) return false;
  const int32_t lead = x.rank - mean.rank;  // aligned at the right
  for (int32_t a = 0; a < mean.rank; ++a)
    if (mean.dims[size_t(a)] != (a + lead == 1 ? x.dims[1] : 1)) return false;
  return true;
}

// dY and X of one rank and type, with no dim known in both that differs.
bool same_shape(const ir::Value& a, const ir::Value& b) {
  if (a.rank < 2 || a.rank != b.rank || a.dtype != b.dtype || a.dtype == ONYX_DTYPE_UNDEFINED) return false;
  for (int32_t k = 0; k < a.rank; ++k) {
    const int64_t da = a.dims[size_t(k)], db = b.dims[size_t(k)];
    if (da != db && (da >= 0 || db >= 0)) return false;  // one known, or both known and different
  }
  return true;
}

bool fuse_at(GraphRewrite& rw, const ProviderRank& providers, int reduce) {
  ir::Graph& g = rw.graph;
  const ir::Node& r = g.nodes[size_t(reduce)];
  if (!r.domain.empty() || r.op_type != "ReduceSum" || r.inputs.empty() || r.outputs.size() != 1) return false;
  const int product = r.inputs[0];
  const int mul = producer_of(rw, product, "Mul");
  if (mul < 0 || !internal(rw, product)) return false;
  for (int side = 0; side < 2; ++side) {
    const int centered = g.nodes[size_t(mul)].inputs[size_t(side)];
    const int dy = g.nodes[size_t(mul)].inputs[size_t(1 - side)];
    const int sub = producer_of(rw, centered, "Sub");
    if (sub < 0 || !internal(rw, centered) || dy < 0 || dy == centered) continue;
    const int x = g.nodes[size_t(sub)].inputs[0], mean = g.nodes[size_t(sub)].inputs[1];
    if (x < 0 || mean < 0) continue;
    const ir::Value &xv = g.values[size_t(x)], &dyv = g.values[size_t(dy)];
    if (!same_shape(dyv, xv) || !per_channel(g.values[size_t(mean)], xv) ||
        g.values[size_t(mean)].dtype != xv.dtype)
      continue;
    const std::vector<int64_t> axes = all_but_channels(xv.rank);
    if (!sums_over(rw, r, product, axes, xv.rank)) continue;
    // The plain sum of dY over the same axes, when the graph has one.
    int plain = -1;
    for (size_t n = 0; n < g.nodes.size() && plain < 0; ++n)
      if (!rw.removed[n] && sums_over(rw, g.nodes[n], dy, axes, xv.rank)) plain = int(n);
    // The fused node takes the slot of the first sum it writes, so that
    // every reader of either sum still comes after it; its inputs must
    // then be made before that slot.
    const int slot = plain >= 0 ? std::min(reduce, plain) : reduce;
    if (std::max({g.values[size_t(dy)].producer, xv.producer, g.values[size_t(mean)].producer}) >= slot) continue;
    ir::Node fused;
    fused.name = (r.name.empty() ? g.values[size_t(r.outputs[0])].name : r.name) + "_batchnorm_grad_sums";
    fused.op_type = "BatchNormGradSums";
    fused.domain = "ai.onyx";
    fused.inputs = {dy, x, mean};
    fused.outputs = {r.outputs[0]};
    if (plain >= 0) fused.outputs.push_back(g.nodes[size_t(plain)].outputs[0]);
    std::vector<int> group = {sub, mul};
    if (plain >= 0) group.push_back(std::max(reduce, plain));
    group.push_back(slot);
    if (!claimed_in_place(rw, providers, fused, group)) return false;
    commit_fusion(rw, group, std::move(fused));
    return true;
  }
  return false;
}

// The per-channel sum of G scaled by a per-channel factor, as a Conv or Gemm
// bias gradient below an inference-mode BatchNormalization reads it:
//   ReduceSum(Mul(G, Unsqueeze(k)), all axes but the channels)  (k [C])
// where the graph already sums G over those axes (BatchNormalization's own
// bias gradient) becomes Mul(that sum, k): the same value up to rounding,
// without a pass over G's product.
bool reuse_at(GraphRewrite& rw, int reduce) {
  ir::Graph& g = rw.graph;
  const ir::Node& r = g.nodes[size_t(reduce)];
  if (!r.domain.empty() || r.op_type != "ReduceSum" || r.inputs.empty() || r.outputs.size() != 1) return false;
  const int product = r.inputs[0];
  const int mul = producer_of(rw, product, "Mul");
  if (mul < 0) return false;
  for (int side = 0; side < 2; ++side) {
    const int grad = g.nodes[size_t(mul)].inputs[size_t(side)];
    const int factor = g.nodes[size_t(mul)].inputs[size_t(1 - side)];
    if (grad < 0 || factor < 0) continue;
    const ir::Value &gv = g.values[size_t(grad)], &fv = g.values[size_t(factor)];
    if (gv.rank < 2 || gv.dtype != fv.dtype || !per_channel(fv, gv)) continue;
    // k: the factor itself when it is [C], else what an Unsqueeze made [C, 1, ...] of.
    int k = factor;
    if (fv.rank != 1) {
      const int unsqueeze = producer_of(rw, factor, "Unsqueeze");
      if (unsqueeze < 0) continue;
      k = g.nodes[size_t(unsqueeze)].inputs[0];
      if (k < 0 || g.values[size_t(k)].rank != 1 || g.values[size_t(k)].dims != std::vector<int64_t>{gv.dims[1]}) continue;
    }
    const std::vector<int64_t> axes = all_but_channels(gv.rank);
    if (!sums_over(rw, r, product, axes, gv.rank)) continue;
    int plain = -1;
    for (int n = 0; n < reduce && plain < 0; ++n)
      if (!rw.removed[size_t(n)] && sums_over(rw, g.nodes[size_t(n)], grad, axes, gv.rank)) plain = n;
    if (plain < 0 || g.values[size_t(k)].producer >= reduce) continue;
    ir::Node scaled;
    scaled.name = (r.name.empty() ? g.values[size_t(r.outputs[0])].name : r.name) + "_from_channel_sum";
    scaled.op_type = "Mul";
    scaled.inputs = {g.nodes[size_t(plain)].outputs[0], k};
    scaled.outputs = r.outputs;
    for (size_t i = 0; i < r.inputs.size(); ++i)
      if (r.inputs[i] >= 0) --rw.readers[size_t(r.inputs[i])];
    for (int v : scaled.inputs) ++rw.readers[size_t(v)];
    g.nodes[size_t(reduce)] = std::move(scaled);
    return true;
  }
  return false;
}

}  // namespace

int reuse_channel_sums(GraphRewrite& rw) {
  return fuse_each_node(rw, [&](int n) { return reuse_at(rw, n); });
}

int fuse_batchnorm_grads(GraphRewrite& rw, const ProviderRank& providers) {
  return fuse_each_node(rw, [&](int n) { return fuse_at(rw, providers, n); });
}

}  // namespace onyx::runtime::optimize
