// attention_fusion.cpp: multi-head attention as exporters write it out op
// by op, from Q, K, V of shape [B, S, H * dh] (the projections' outputs):
//   q = Transpose(Reshape(Q, [B, S, H, dh]), perm [0, 2, 1, 3])      [B, H, S, dh]
//   k = Transpose(Reshape(K, [B, L, H, dh]), perm [0, 2, 3, 1])      [B, H, dh, L]
//       (or perm [0, 2, 1, 3] and then a second Transpose [0, 1, 3, 2])
//   v = Transpose(Reshape(V, [B, L, H, dv]), perm [0, 2, 1, 3])      [B, H, L, dv]
//   p = Softmax(MatMul(q, k) scaled [+ mask], last axis)
//       scaled: Div or Mul by a scalar constant c, or not; mask: an additive
//       float tensor broadcasting to [B, H, S, L] (BERT's [B, 1, 1, L])
//   Y = Reshape(Transpose(MatMul(p, v), perm [0, 2, 1, 3]), [B, S, H * dv])
// becomes one com.microsoft MultiHeadAttention(Q, K, V [, attention_bias =
// mask as input 5]) with num_heads H and scale 1/c (Div) or c (Mul) or 1:
// ONNX Runtime's contrib op, which computes exactly this and which a graph of
// any opset may import (ONNX's own Attention needs opset 23). Its bias may
// broadcast on any axis here (ORT's asks for [B or 1, H or 1, S, L]); a mask
// that would broadcast the scores to a larger shape is not matched when its
// dims are known, and fails the fused node's run when they are not. A provider then runs the
// whole attention without the four head-split and head-merge copies and the
// seven kernel launches between the projections.
//
// Each Reshape's shape must be a constant that splits (or merges) the last
// axis whatever B and S are: entries 0 (copy), a dim equal to the input's
// known dim, or one -1, with the head entries' product the known last dim;
// so the fused node fails on a run exactly where the Reshapes would.
// Scaling of q or k before the MatMul, and a mask added before the scale,
// are not matched: such graphs run as written.
#include "optimize/pattern_match.h"

namespace onyx::runtime::optimize {
namespace {

// The constant int64 shape a Reshape reshapes to, or empty.
std::vector<int64_t> reshape_target(const GraphRewrite& rw, const ir::Node& reshape) {
  if (reshape.inputs.size() != 2) return {};
  const Tensor* t = rw.fixed_constant(reshape.inputs[1]);
  if (!t || t->dtype() != ONYX_DTYPE_INT64) return {};
  std::vector<int64_t> s(t->data_as<int64_t>(), t->data_as<int64_t>() + t->size());
  if (reshape.attr_int("allowzero", 0) != 0)
    for (int64_t d : s)
      if (d == 0) return {};  // 0 is then a real size, not "copy"
  return s;
}

// True when entries 0 and 1 of `shape` keep the input's two leading dims
// (`lead`, -1 where unknown) for every input: each a 0 (copy) or a literal
// equal to the known dim; `free_minus_one` allows one of them to be -1 (the
// rest of the shape then fixes it).
bool keeps_leading_dims(const std::vector<int64_t>& shape, const Shape& lead, bool free_minus_one) {
  int minus_ones = 0;
  for (size_t i = 0; i < 2; ++i) {
    if (shape[i] == 0) continue;
    if (shape[i] == -1 && free_minus_one && ++minus_ones == 1) continue;
    if (shape[i] <= 0 || lead[i] != shape[i]) return false;
  }
  return true;
}

// A Reshape splitting the last axis of a rank-3 value into [heads, size]:
// returns the value it splits and sets *heads and *size, or -1.
int split_heads(const GraphRewrite& rw, int reshape_node, int64_t* heads, int64_t* size) {
  if (reshape_node < 0) return -1;
  const ir::Node& n = rw.graph.nodes[size_t(reshape_node)];
  const ir::Value& x = rw.graph.values[size_t(n.inputs[0])];
  const std::vector<int64_t> s = reshape_target(rw, n);
  if (s.size() != 4 || x.rank != 3 || x.dims[2] <= 0) return -1;
  const int64_t width = x.dims[2];
  const bool leading_fixed = keeps_leading_dims(s, x.dims, false);
  if (s[2] > 0 && s[3] > 0) {
    if (s[2] * s[3] != width || !keeps_leading_dims(s, x.dims, true)) return -1;
    *heads = s[2], *size = s[3];
  } else if (leading_fixed && s[2] == -1 && s[3] > 0 && width % s[3] == 0) {
    *heads = width / s[3], *size = s[3];
  } else if (leading_fixed && s[3] == -1 && s[2] > 0 && width % s[2] == 0) {
    *heads = s[2], *size = width / s[2];
  } else {
    return -1;
  }
  return n.inputs[0];
}

bool has_perm(const ir::Node& transpose, std::initializer_list<int64_t> perm) {
  const ir::Attribute* a = transpose.attr("perm");
  return a && a->ints == std::vector<int64_t>(perm);
}

// The value split into heads and transposed by `perm` to make `v` (its only
// reader being the pattern), with the heads and head size; -1 if not.
int heads_of(const GraphRewrite& rw, int v, std::initializer_list<int64_t> perm, int64_t* heads, int64_t* size) {
  const int t = producer_of(rw, v, "Transpose");
  if (t < 0 || !internal(rw, v) || !has_perm(rw.graph.nodes[size_t(t)], perm)) return -1;
  const int split = rw.graph.nodes[size_t(t)].inputs[0];
  if (!internal(rw, split)) return -1;
  return split_heads(rw, producer_of(rw, split, "Reshape"), heads, size);
}

// k as [B, H, dh, L]: the split K transposed in one step or two.
int key_heads_of(const GraphRewrite& rw, int v, int64_t* heads, int64_t* size, std::vector<int>& group) {
  if (const int k = heads_of(rw, v, {0, 2, 3, 1}, heads, size); k >= 0) {
    const int t = rw.graph.values[size_t(v)].producer;
    group.insert(group.end(), {rw.graph.values[size_t(rw.graph.nodes[size_t(t)].inputs[0])].producer, t});
    return k;
  }
  const int swap = producer_of(rw, v, "Transpose");
  if (swap < 0 || !internal(rw, v) || !has_perm(rw.graph.nodes[size_t(swap)], {0, 1, 3, 2})) return -1;
  const int inner = rw.graph.nodes[size_t(swap)].inputs[0];
  const int k = heads_of(rw, inner, {0, 2, 1, 3}, heads, size);
  if (k < 0) return -1;
  const int t = rw.graph.values[size_t(inner)].producer;
  group.insert(group.end(), {rw.graph.values[size_t(rw.graph.nodes[size_t(t)].inputs[0])].producer, t, swap});
  return k;
}

// The Reshape and Transpose making the split value `v` (heads_of matched).
void add_split_nodes(const GraphRewrite& rw, int v, std::vector<int>& group) {
  const int t = rw.graph.values[size_t(v)].producer;
  group.push_back(rw.graph.values[size_t(rw.graph.nodes[size_t(t)].inputs[0])].producer);
  group.push_back(t);
}

// True when `mask` (rank <= 4) adds to the scores without growing them:
// each known dim is 1 or the scores' known dim there (right-aligned).
bool broadcasts_into(const ir::Value& mask, const ir::Value& scores) {
  if (mask.rank < 0 || mask.rank > 4) return false;
  for (int32_t i = 1; i <= mask.rank; ++i) {
    const int64_t m = mask.dims[size_t(mask.rank - i)], s = scores.dims[size_t(4 - i)];
    if (m > 1 && m != s) return false;
  }
  return true;
}

// The only live reader of `v` when it is an ai.onnx `op` reading v as input
// `index` and writing one output; else -1.
int reader_of(const GraphRewrite& rw, const SoleReaders& sole, int v, const char* op, size_t index) {
  const int r = sole.of(v);
  if (r < 0 || rw.pinned[size_t(v)]) return -1;
  const ir::Node& n = rw.graph.nodes[size_t(r)];
  if (!n.domain.empty() || n.op_type != op || n.outputs.size() != 1 || n.inputs.size() <= index || n.inputs[index] != v)
    return -1;
  return r;
}

// Matches the attention around Softmax node `softmax`; rewrites it and
// returns true when it did.
bool fuse_at(GraphRewrite& rw, const SoleReaders& sole, const ProviderRank& providers, int softmax) {
  ir::Graph& g = rw.graph;
  const ir::Node& sm = g.nodes[size_t(softmax)];
  if (!sm.domain.empty() || sm.op_type != "Softmax" || sm.inputs.size() != 1 || sm.outputs.size() != 1) return false;
  const int scores = sm.inputs[0];
  const ir::Value& sv = g.values[size_t(scores)];
  // Along the last axis of [B, H, S, L] (before opset 13, axis 3 flattens
  // nothing after it: the same).
  const int64_t axis = sm.attr_int("axis", g.opset("") >= 13 ? -1 : 1);
  if (sv.rank != 4 || (axis != -1 && axis != 3) || !internal(rw, scores)) return false;
  std::vector<int> group;
  // An additive mask, either side of the Add.
  int mask = -1;
  int scaled = scores;
  if (const int add = producer_of(rw, scores, "Add"); add >= 0) {
    const ir::Node& a = g.nodes[size_t(add)];
    for (size_t side = 0; side < 2 && mask < 0; ++side) {
      const int from = a.inputs[side], other = a.inputs[1 - side];
      const int maker = g.values[size_t(from)].producer;
      if (maker < 0 || rw.removed[size_t(maker)] || !internal(rw, from)) continue;
      const std::string& op = g.nodes[size_t(maker)].op_type;
      if (g.nodes[size_t(maker)].domain.empty() && (op == "MatMul" || op == "Div" || op == "Mul") &&
          broadcasts_into(g.values[size_t(other)], sv))
        mask = other, scaled = from;
    }
    if (mask < 0) return false;
    group.push_back(add);
  }
  // The scale: Div or Mul by a scalar constant, or none.
  float scale = 1.f;
  int product = scaled;
  const int scale_node = g.values[size_t(scaled)].producer;
  if (scale_node >= 0 && !rw.removed[size_t(scale_node)]) {
    const ir::Node& s = g.nodes[size_t(scale_node)];
    if (s.domain.empty() && s.inputs.size() == 2 && (s.op_type == "Div" || s.op_type == "Mul")) {
      const bool div = s.op_type == "Div";
      const int by = div ? 1 : (scalar_constant(rw, s.inputs[1]) ? 1 : 0);
      const std::optional<double> c = scalar_constant(rw, s.inputs[size_t(by)]);
      if (!c || (div && *c == 0)) return false;
      scale = float(div ? 1.0 / *c : *c);
      product = s.inputs[size_t(1 - by)];
      if (!internal(rw, product)) return false;
      group.push_back(scale_node);
    }
  }
  const int qk = producer_of(rw, product, "MatMul");
  if (qk < 0) return false;
  int64_t heads = 0, head_size = 0, k_heads = 0, k_size = 0, v_heads = 0, v_size = 0;
  const int q = heads_of(rw, g.nodes[size_t(qk)].inputs[0], {0, 2, 1, 3}, &heads, &head_size);
  if (q < 0) return false;
  std::vector<int> front;
  add_split_nodes(rw, g.nodes[size_t(qk)].inputs[0], front);
  const int k = key_heads_of(rw, g.nodes[size_t(qk)].inputs[1], &k_heads, &k_size, front);
  if (k < 0 || k_heads != heads || k_size != head_size) return false;
  // p v, then the heads merged back.
  const int probs = sm.outputs[0];
  const int pv = reader_of(rw, sole, probs, "MatMul", 0);
  if (pv < 0) return false;
  const int vt = g.nodes[size_t(pv)].inputs[1];
  const int v = heads_of(rw, vt, {0, 2, 1, 3}, &v_heads, &v_size);
  if (v < 0 || v_heads != heads) return false;
  add_split_nodes(rw, vt, front);
  const int merge_t = reader_of(rw, sole, g.nodes[size_t(pv)].outputs[0], "Transpose", 0);
  if (merge_t < 0 || !has_perm(g.nodes[size_t(merge_t)], {0, 2, 1, 3})) return false;
  const int merge = reader_of(rw, sole, g.nodes[size_t(merge_t)].outputs[0], "Reshape", 0);
  if (merge < 0) return false;
  const std::vector<int64_t> out_shape = reshape_target(rw, g.nodes[size_t(merge)]);
  const ir::Value& qv = g.values[size_t(q)];
  if (out_shape.size() != 3 || !keeps_leading_dims(out_shape, qv.dims, out_shape[2] == heads * v_size) ||
      (out_shape[2] != heads * v_size && out_shape[2] != -1))
    return false;
  const ir::Value& kv = g.values[size_t(k)];
  const ir::Value& vv = g.values[size_t(v)];
  if (qv.dtype != kv.dtype || qv.dtype != vv.dtype || (qv.dtype != ONYX_DTYPE_FLOAT32 && qv.dtype != ONYX_DTYPE_FLOAT64))
    return false;
  if (mask >= 0 && g.values[size_t(mask)].dtype != qv.dtype) return false;

  ir::Node fused;
  const int y = g.nodes[size_t(merge)].outputs[0];
  fused.name = (g.nodes[size_t(merge)].name.empty() ? g.values[size_t(y)].name : g.nodes[size_t(merge)].name) +
               "_attention";
  fused.op_type = "MultiHeadAttention";
  fused.domain = "com.microsoft";
  fused.inputs = {q, k, v};
  if (mask >= 0) fused.inputs.insert(fused.inputs.end(), {-1, -1, mask});  // bias, key_padding_mask: none
  fused.outputs = {y};
  fused.attributes.push_back(int_attribute("num_heads", heads));
  fused.attributes.push_back(float_attribute("scale", scale));
  // The merging Reshape last: the fused node takes its slot, after Q, K, V.
  group.insert(group.begin(), front.begin(), front.end());
  group.insert(group.end(), {qk, softmax, pv, merge_t, merge});
  if (!claimed_in_place(rw, providers, fused, group)) return false;
  commit_fusion(rw, group, std::move(fused));
  return true;
}

}  // namespace

int fuse_attention(GraphRewrite& rw, const ProviderRank& providers) {
  const SoleReaders sole(rw);
  return fuse_each_node(rw, [&](int n) { return fuse_at(rw, sole, providers, n); });
}

}  // namespace onyx::runtime::optimize
