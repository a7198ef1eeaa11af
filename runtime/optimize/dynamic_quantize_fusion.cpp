// dynamic_quantize_fusion.cpp: the dynamically quantized MatMul that ONNX
// Runtime's quantize_dynamic writes out op by op,
//   (a_q, a_scale, a_zero) = DynamicQuantizeLinear(A)
//   scale = Mul(a_scale, b_scale)                      (either order)
//   Y = Mul(Cast<float>(MatMulInteger(a_q, B, a_zero, b_zero)), scale)
//   [Y = Add(Y, bias)]
// becomes one com.microsoft DynamicQuantizeMatMul(A, B, b_scale, b_zero,
// bias), which quantizes A, multiplies and dequantizes in one kernel (no
// int32 tensor written and read back). B, b_scale, b_zero and bias must be
// constants; the fused node is made only where a provider claims it no
// later than the originals (pattern_match.h). A DynamicQuantizeLinear that
// feeds several MatMulIntegers is fused into each and goes when unread.
#include "optimize/pattern_match.h"

namespace onyx::runtime::optimize {
namespace {

bool is_op(const ir::Node& n, const char* op) { return n.domain.empty() && n.op_type == op; }

// The constant behind `v` (any value the rewrite knows as fixed), or null.
const Tensor* constant(const GraphRewrite& rw, int v) { return v >= 0 ? rw.fixed_constant(v) : nullptr; }

struct Match {
  std::vector<int> group;  // nodes replaced, in graph order at the end
  int a = -1, b = -1, b_scale = -1, b_zero = -1, bias = -1, y = -1;
};

bool match(const GraphRewrite& rw, const SoleReaders& readers, int mm, Match& m) {
  const ir::Graph& g = rw.graph;
  const ir::Node& mi = g.nodes[size_t(mm)];
  if (!is_op(mi, "MatMulInteger") || mi.inputs.size() < 3 || mi.outputs.size() != 1) return false;
  const Tensor* b = constant(rw, mi.inputs[1]);
  if (!b || b->shape().size() != 2) return false;
  m.b = mi.inputs[1];
  m.b_zero = mi.inputs.size() > 3 ? mi.inputs[3] : -1;
  if (m.b_zero >= 0 && !constant(rw, m.b_zero)) return false;
  // a_q and a_zero from one DynamicQuantizeLinear.
  const int v = mi.inputs[0];
  const int dq = v >= 0 ? g.values[size_t(v)].producer : -1;
  if (dq < 0 || rw.removed[size_t(dq)] || !is_op(g.nodes[size_t(dq)], "DynamicQuantizeLinear")) return false;
  const ir::Node& d = g.nodes[size_t(dq)];
  if (d.outputs.size() != 3 || d.outputs[0] != v || mi.inputs[2] != d.outputs[2]) return false;
  m.a = d.inputs[0];
  // Cast to float, then the product with a_scale * b_scale.
  const int cast = readers.of(mi.outputs[0]);
  if (cast < 0 || !internal(rw, mi.outputs[0]) || !is_op(g.nodes[size_t(cast)], "Cast")) return false;
  const ir::Attribute* to = g.nodes[size_t(cast)].attr("to");
  if (!to || to->i != ONYX_DTYPE_FLOAT32) return false;
  const int casted = g.nodes[size_t(cast)].outputs[0];
  const int mul = readers.of(casted);
  if (mul < 0 || !internal(rw, casted) || !is_op(g.nodes[size_t(mul)], "Mul")) return false;
  const int scale = other_input(g.nodes[size_t(mul)], casted);
  const int scale_mul = producer_of(rw, scale, "Mul");
  if (scale_mul < 0) return false;
  const int b_scale = other_input(g.nodes[size_t(scale_mul)], d.outputs[1]);
  const Tensor* bs = constant(rw, b_scale);
  if (b_scale < 0 || !bs || bs->dtype() != ONYX_DTYPE_FLOAT32) return false;
  m.b_scale = b_scale;
  m.group = {mm, cast, mul};
  m.y = g.nodes[size_t(mul)].outputs[0];
  // The scale product may serve only this MatMul; otherwise it stays for the others.
  if (internal(rw, scale)) m.group.insert(m.group.begin(), scale_mul);
  // A bias added right after.
  const int add = readers.of(m.y);
  if (add >= 0 && internal(rw, m.y) && is_op(g.nodes[size_t(add)], "Add")) {
    const int bias = other_input(g.nodes[size_t(add)], m.y);
    const Tensor* t = constant(rw, bias);
    if (t && t->dtype() == ONYX_DTYPE_FLOAT32 && t->shape().size() == 1 && t->shape()[0] == b->shape()[1]) {
      m.bias = bias;
      m.group.push_back(add);
      m.y = g.nodes[size_t(add)].outputs[0];
    }
  }
  return true;
}

}  // namespace

int fuse_dynamic_quantized_matmuls(GraphRewrite& rw, const ProviderRank& providers) {
  int fused = 0;
  const SoleReaders readers(rw);
  for (size_t n = 0; n < rw.graph.nodes.size(); ++n) {
    Match m;
    if (rw.removed[n] || !match(rw, readers, int(n), m)) continue;
    ir::Node node;
    node.op_type = "DynamicQuantizeMatMul";
    node.domain = "com.microsoft";
    node.name = rw.graph.nodes[n].name;
    node.inputs = {m.a, m.b, m.b_scale, m.b_zero, m.bias};
    while (node.inputs.back() < 0) node.inputs.pop_back();  // absent trailing inputs
    node.outputs = {m.y};
    if (!claimed_in_place(rw, providers, node, m.group)) continue;
    commit_fusion(rw, m.group, std::move(node));
    ++fused;
  }
  return fused;
}

}  // namespace onyx::runtime::optimize
