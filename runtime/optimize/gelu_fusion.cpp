// gelu_fusion.cpp: the GELU forms exporters write out op by op,
//   erf:  0.5 * x * (1 + Erf(x / sqrt(2)))            (or x * (1 / sqrt(2)))
//   tanh: 0.5 * x * (1 + Tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))
// (x^3 as Pow(x, 3) or x * x * x; the final product in any of the orders
// (x * p) * 0.5, (x * 0.5) * p, x * (p * 0.5)) become one node: ONNX Gelu
// (approximate "none" / "tanh") where the graph imports opset >= 20, else
// ONNX Runtime's com.microsoft Gelu / FastGelu, which compute the same.
// Constants must match to 1e-4 relative (exporters round sqrt(2) and
// sqrt(2 / pi) differently); float32 and float64 only.
#include "optimize/pattern_match.h"

namespace onyx::runtime::optimize {
namespace {

constexpr double kSqrt2 = 1.4142135623730951;
constexpr double kSqrt2OverPi = 0.7978845608028654;

// The node computing `v * c` (Mul) with c a scalar constant near `factor`,
// or `v / c` (Div) with c near 1 / factor; returns v, or -1.
int scaled_input(const GraphRewrite& rw, int node, double factor) {
  const ir::Node& n = rw.graph.nodes[size_t(node)];
  if (!n.domain.empty() || n.inputs.size() != 2) return -1;
  if (n.op_type == "Div") return near(scalar_constant(rw, n.inputs[1]), 1.0 / factor) ? n.inputs[0] : -1;
  if (n.op_type != "Mul") return -1;
  for (int side = 0; side < 2; ++side)
    if (near(scalar_constant(rw, n.inputs[size_t(1 - side)]), factor)) return n.inputs[size_t(side)];
  return -1;
}

// x for the tanh form's inner value u = x + 0.044715 * x^3, or -1; the
// nodes computing u go to `group`.
int cubic_input(const GraphRewrite& rw, int u, std::vector<int>& group) {
  const ir::Graph& g = rw.graph;
  const int add = producer_of(rw, u, "Add");
  if (add < 0 || g.nodes[size_t(add)].inputs.size() != 2) return -1;
  for (int side = 0; side < 2; ++side) {
    const int x = g.nodes[size_t(add)].inputs[size_t(side)];
    const int term = g.nodes[size_t(add)].inputs[size_t(1 - side)];
    const int scale = producer_of(rw, term, "Mul");
    if (scale < 0 || !internal(rw, term)) continue;
    const int cube = scaled_input(rw, scale, 0.044715);
    if (cube < 0 || !internal(rw, cube)) continue;
    std::vector<int> nodes = {add, scale};
    if (const int pow = producer_of(rw, cube, "Pow"); pow >= 0) {
      if (g.nodes[size_t(pow)].inputs[0] != x || !near(scalar_constant(rw, g.nodes[size_t(pow)].inputs[1]), 3.0, 0.0))
        continue;
      nodes.push_back(pow);
    } else if (const int outer = producer_of(rw, cube, "Mul"); outer >= 0) {  // x * (x * x), either order
      const int square = other_input(g.nodes[size_t(outer)], x);
      const int inner = producer_of(rw, square, "Mul");
      if (square < 0 || inner < 0 || !internal(rw, square) || g.nodes[size_t(inner)].inputs[0] != x ||
          g.nodes[size_t(inner)].inputs[1] != x)
        continue;
      nodes.push_back(outer);
      nodes.push_back(inner);
    } else {
      continue;
    }
    group.insert(group.end(), nodes.begin(), nodes.end());
    return x;
  }
  return -1;
}

// Matches a GELU around the Erf or Tanh node `core`; rewrites it and
// returns true when it did.
bool fuse_at(GraphRewrite& rw, const SoleReaders& sole, const ProviderRank& providers, int core) {
  ir::Graph& g = rw.graph;
  const ir::Node& c = g.nodes[size_t(core)];
  const bool erf = c.op_type == "Erf";
  if (!c.domain.empty() || (!erf && c.op_type != "Tanh") || c.inputs.size() != 1 || c.outputs.size() != 1) return false;
  std::vector<int> group = {core};
  // The argument of Erf / Tanh.
  const int arg = c.inputs[0];
  const int arg_node = g.values[size_t(arg)].producer;
  if (!internal(rw, arg) || arg_node < 0 || rw.removed[size_t(arg_node)]) return false;
  int x = scaled_input(rw, arg_node, erf ? 1.0 / kSqrt2 : kSqrt2OverPi);
  if (x < 0) return false;
  group.push_back(arg_node);
  if (!erf) {
    if (!internal(rw, x)) return false;
    x = cubic_input(rw, x, group);
    if (x < 0) return false;
  }
  // p = 1 + core
  const int e = c.outputs[0];
  const int plus = sole.of(e);
  if (plus < 0 || rw.pinned[size_t(e)] || g.nodes[size_t(plus)].op_type != "Add" ||
      !g.nodes[size_t(plus)].domain.empty() || !near(scalar_constant(rw, other_input(g.nodes[size_t(plus)], e)), 1.0, 0.0))
    return false;
  group.push_back(plus);
  const int p = g.nodes[size_t(plus)].outputs[0];
  // The product of x, p and 0.5, in one of three orders.
  auto mul_reader = [&](int v) {  // the only reader of v, when a Mul
    const int r = sole.of(v);
    return r >= 0 && !rw.pinned[size_t(v)] && g.nodes[size_t(r)].domain.empty() && g.nodes[size_t(r)].op_type == "Mul" &&
                   g.nodes[size_t(r)].outputs.size() == 1
               ? r
               : -1;
  };
  auto is_half = [&](int v) { return near(scalar_constant(rw, v), 0.5, 0.0); };
  const int first = mul_reader(p);
  if (first < 0) return false;
  group.push_back(first);
  const int with = other_input(g.nodes[size_t(first)], p);
  int last = -1;
  if (with == x) {  // (x * p) * 0.5
    last = mul_reader(g.nodes[size_t(first)].outputs[0]);
    if (last < 0 || !is_half(other_input(g.nodes[size_t(last)], g.nodes[size_t(first)].outputs[0]))) return false;
    group.push_back(last);
  } else if (is_half(with)) {  // x * (p * 0.5)
    last = mul_reader(g.nodes[size_t(first)].outputs[0]);
    if (last < 0 || other_input(g.nodes[size_t(last)], g.nodes[size_t(first)].outputs[0]) != x) return false;
    group.push_back(last);
  } else {  // (x * 0.5) * p
    const int half = producer_of(rw, with, "Mul");
    if (half < 0 || !internal(rw, with) || other_input(g.nodes[size_t(half)], x) < 0 ||
        !is_half(other_input(g.nodes[size_t(half)], x)))
      return false;
    group.insert(group.begin(), half);
    last = first;
  }
  const ir::Value& xv = g.values[size_t(x)];
  if (xv.dtype != ONYX_DTYPE_FLOAT32 && xv.dtype != ONYX_DTYPE_FLOAT64) return false;

  ir::Node fused;
  const int y = g.nodes[size_t(last)].outputs[0];
  fused.name = (g.nodes[size_t(last)].name.empty() ? g.values[size_t(y)].name : g.nodes[size_t(last)].name) + "_gelu";
  fused.inputs = {x};
  fused.outputs = {y};
  if (g.opset("") >= 20) {
    fused.op_type = "Gelu";
    fused.attributes.push_back(string_attribute("approximate", erf ? "none" : "tanh"));
  } else {
    fused.op_type = erf ? "Gelu" : "FastGelu";
    fused.domain = "com.microsoft";
  }
  // The slot of the last node keeps the order topological.
  std::vector<int> ordered;
  for (int n : group)
    if (n != last) ordered.push_back(n);
  ordered.push_back(last);
  if (!claimed_in_place(rw, providers, fused, ordered)) return false;
  commit_fusion(rw, ordered, std::move(fused));
  return true;
}

}  // namespace

int fuse_gelus(GraphRewrite& rw, const ProviderRank& providers) {
  const SoleReaders sole(rw);
  return fuse_each_node(rw, [&](int n) { return fuse_at(rw, sole, providers, n); });
}

}  // namespace onyx::runtime::optimize
