// relu_grad_reorder.cpp: the gradient of Relu -> MaxPool as autodiff writes
// it (R the Relu's output, P = MaxPool(R)),
//   Where(Greater(R, 0), MaxPoolGrad(dP, R), 0),
// becomes the same mask taken on the pooled side,
//   MaxPoolGrad(Where(Greater(P, 0), dP, 0), R).
// Exact: MaxPoolGrad adds each window's dP at the window's first maximum,
// where R equals that window's P, so R > 0 there exactly when P > 0 for
// every window adding to it; positions no window picks get 0 either way.
// The mask and select then run over the pooled tensor (a quarter of the
// elements under 2 x 2 pools), and relu_grad_fusion.cpp still makes them
// one ReluGrad. Standard ops only: no provider needs to claim anything.
#include <algorithm>
#include <array>

#include "optimize/pattern_match.h"

namespace onyx::runtime::optimize {
namespace {

// The attributes MaxPoolGrad copies from its MaxPool that fix the windows.
constexpr const char* kWindowAttributes[] = {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "strides"};

bool same_attribute(const ir::Node& a, const ir::Node& b, const char* name) {
  const ir::Attribute *x = a.attr(name), *y = b.attr(name);
  if (!x || !y) return !x && !y;
  return x->type == y->type && x->i == y->i && x->s == y->s && x->ints == y->ints;
}

// The live ai.onnx MaxPool reading `r` whose windows are `pool_grad`'s, or -1.
int max_pool_of(const GraphRewrite& rw, int r, const ir::Node& pool_grad) {
  for (size_t n = 0; n < rw.graph.nodes.size(); ++n) {
    const ir::Node& m = rw.graph.nodes[n];
    if (rw.removed[n] || !m.domain.empty() || m.op_type != "MaxPool" || m.inputs.empty() || m.inputs[0] != r ||
        m.outputs.empty() || m.outputs[0] < 0)
      continue;
    if (std::all_of(std::begin(kWindowAttributes), std::end(kWindowAttributes),
                    [&](const char* a) { return same_attribute(m, pool_grad, a); }))
      return int(n);
  }
  return -1;
}

bool reorder_at(GraphRewrite& rw, int where) {
  ir::Graph& g = rw.graph;
  const ir::Node& w = g.nodes[size_t(where)];
  if (!w.domain.empty() || w.op_type != "Where" || w.inputs.size() != 3 || w.outputs.size() != 1) return false;
  const int cond = w.inputs[0], grad = w.inputs[1], out = w.outputs[0];
  const int greater = producer_of(rw, cond, "Greater");
  if (greater < 0 || !internal(rw, cond) || !internal(rw, grad) || grad == cond) return false;
  const int pool_grad = g.values[size_t(grad)].producer;
  if (pool_grad < 0 || rw.removed[size_t(pool_grad)]) return false;
  const ir::Node& pg = g.nodes[size_t(pool_grad)];
  const ir::Node& gt = g.nodes[size_t(greater)];
  if (pg.domain != "ai.onyx" || pg.op_type != "MaxPoolGrad" || pg.inputs.size() != 2 || pg.outputs.size() != 1 ||
      gt.inputs.size() != 2)
    return false;
  const int r = gt.inputs[0], dp = pg.inputs[0];
  if (r < 0 || dp < 0 || pg.inputs[1] != r) return false;
  const int pool = max_pool_of(rw, r, pg);
  if (pool < 0) return false;
  const int p = g.nodes[size_t(pool)].outputs[0];
  const ir::Value &pv = g.values[size_t(p)], &dpv = g.values[size_t(dp)];
  if (pv.dtype != g.values[size_t(r)].dtype || pv.dtype == ONYX_DTYPE_UNDEFINED || dpv.dtype != pv.dtype ||
      pv.rank < 0 || pv.rank != dpv.rank)
    return false;
  if (!is_zero(rw, gt.inputs[1], pv.rank) || !is_zero(rw, w.inputs[2], pv.rank)) return false;
  // The three nodes keep their three slots, in the new order: the mask,
  // the select, the MaxPoolGrad. The mask reads P, which must come first.
  std::array<int, 3> slot = {greater, pool_grad, where};
  std::sort(slot.begin(), slot.end());
  if (pv.producer >= slot[0]) return false;
  ir::Node mask = std::move(g.nodes[size_t(greater)]), select = std::move(g.nodes[size_t(where)]),
           gradient = std::move(g.nodes[size_t(pool_grad)]);
  mask.inputs[0] = p;  // Greater(P, 0) -> cond
  --rw.readers[size_t(r)];
  ++rw.readers[size_t(p)];
  select.inputs[1] = dp;  // Where(cond, dP, 0) -> grad, pooled now
  select.outputs = {grad};
  gradient.inputs[0] = grad;  // MaxPoolGrad(grad, R) -> out
  gradient.outputs = {out};
  for (int v : {cond, grad}) {
    g.values[size_t(v)].rank = pv.rank;
    g.values[size_t(v)].dims = pv.dims;
  }
  g.nodes[size_t(slot[0])] = std::move(mask);
  g.nodes[size_t(slot[1])] = std::move(select);
  g.nodes[size_t(slot[2])] = std::move(gradient);
  g.values[size_t(cond)].producer = slot[0];
  g.values[size_t(grad)].producer = slot[1];
  g.values[size_t(out)].producer = slot[2];
  return true;
}

}  // namespace

int reorder_relu_grads_past_max_pools(GraphRewrite& rw) {
  return fuse_each_node(rw, [&](int n) { return reorder_at(rw, n); });
}

}  // namespace onyx::runtime::optimize
