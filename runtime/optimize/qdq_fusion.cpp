// qdq_fusion.cpp: QDQ groups become operator-form quantized nodes.
//
// A quantized model in QDQ form keeps its float ops and marks where values
// are quantized: DequantizeLinear (DQ) before an op, QuantizeLinear (Q)
// after it. The group DQ(x), DQ(w) -> Conv -> Q means what ONNX QLinearConv
// computes from x, w and the scales and zero points, so a provider with
// integer kernels can run it without seeing float tensors. Rewritten here,
// with the target op's ONNX or com.microsoft (ONNX Runtime contrib) meaning:
//   Conv -> QLinearConv               MatMul -> QLinearMatMul
//   Gemm -> com.microsoft QGemm       Add, Mul -> com.microsoft QLinearAdd, QLinearMul
//   AveragePool, GlobalAveragePool, Concat, Sigmoid, LeakyRelu
//                                     -> com.microsoft QLinear<op>
// A Relu or Clip between the op and its Q is dropped where saturating to
// the Q type's range already implies it. MaxPool and the layout ops
// (Reshape, Transpose, Squeeze, Unsqueeze, Flatten) between a DQ and a Q of
// equal scale and zero point run on the integers themselves: DQ and Q go.
//
// A group is rewritten only when every scale and zero point is a constant
// initializer, the operator form means exactly what the group means, and a
// provider of the session claims the new node, ranked no later than the one
// that would run the float op (otherwise the rewrite would move work to a
// provider the application ranked lower). A DQ whose output has other
// readers stays for them. The new node writes the Q's output value, so
// graph outputs keep their names.
#include "optimize/qdq_operands.h"

namespace onyx::runtime::optimize {
namespace {

constexpr const char* kMicrosoft = "com.microsoft";

// One QDQ group around a float op.
struct Group {
  int q = -1;    // the QuantizeLinear node
  int act = -1;  // a Relu or Clip implied by the Q's saturation, or -1
  int op = -1;   // the float op
  Quantized y;   // the Q's output
};

ir::Attribute int_attr(const char* name, int64_t v) {
  ir::Attribute a;
  a.name = name;
  a.type = ONYX_ATTR_INT;
  a.i = v;
  return a;
}

ir::Attribute float_attr(const char* name, float v) {
  ir::Attribute a;
  a.name = name;
  a.type = ONYX_ATTR_FLOAT;
  a.f = v;
  return a;
}

float float_attr_or(const ir::Node& n, const char* name, float fallback) {
  const ir::Attribute* a = n.attr(name);
  return a ? a->f : fallback;
}

bool build_conv(GraphRewrite& rw, const Group& grp, ir::Node& out) {
  const ir::Node& conv = rw.graph.nodes[size_t(grp.op)];
  if (conv.inputs.size() < 2 || conv.inputs.size() > 3) return false;
  Quantized x, w, b;
  if (!dequantized(rw, conv.inputs[0], x) || !x.per_tensor()) return false;
  if (!dequantized(rw, conv.inputs[1], w) || !(w.per_tensor() || w.axis == 0)) return false;
  const bool has_bias = conv.inputs.size() == 3 && conv.inputs[2] >= 0;
  if (has_bias && (!dequantized(rw, conv.inputs[2], b, true) || !bias_fits(rw, b, x, w))) return false;
  out.op_type = "QLinearConv";
  out.attributes = conv.attributes;
  push_operand(rw, out, x);
  push_operand(rw, out, w);
  push_output_params(rw, out, grp.y);
  if (has_bias) out.inputs.push_back(b.data);
  return true;
}

bool build_matmul(GraphRewrite& rw, const Group& grp, ir::Node& out) {
  const ir::Node& mm = rw.graph.nodes[size_t(grp.op)];
  Quantized a, b;
  if (mm.inputs.size() != 2 || !dequantized(rw, mm.inputs[0], a) || !a.per_tensor()) return false;
  // b per tensor, or per column of a matrix (ONNX: "per-column quantization").
  if (!dequantized(rw, mm.inputs[1], b)) return false;
  if (!b.per_tensor() && !(b.axis == 1 && rw.graph.values[size_t(b.data)].rank == 2)) return false;
  out.op_type = "QLinearMatMul";
  push_operand(rw, out, a);
  push_operand(rw, out, b);
  push_output_params(rw, out, grp.y);
  return true;
}

// Gemm -> com.microsoft QGemm: Y = alpha * a_scale * b_scale[j] *
// ((A' - a_zero)(B' - b_zero[j]) + C), C int32 with zero point 0. QGemm has
// no beta: the Gemm's beta * C then equals QGemm's C term exactly when C's
// scale is alpha / beta * a_scale * b_scale[j].
bool build_gemm(GraphRewrite& rw, const Group& grp, ir::Node& out) {
  const ir::Node& gemm = rw.graph.nodes[size_t(grp.op)];
  if (gemm.inputs.size() < 2 || gemm.inputs.size() > 3) return false;
  const float alpha = float_attr_or(gemm, "alpha", 1.0f), beta = float_attr_or(gemm, "beta", 1.0f);
  const int64_t trans_a = gemm.attr_int("transA", 0), trans_b = gemm.attr_int("transB", 0);
  Quantized a, b, c;
  if (!dequantized(rw, gemm.inputs[0], a) || !a.per_tensor()) return false;
  if (!dequantized(rw, gemm.inputs[1], b)) return false;
  if (!b.per_tensor() && b.axis != (trans_b ? 0 : 1)) return false;  // per column of B'
  const bool has_c = gemm.inputs.size() == 3 && gemm.inputs[2] >= 0;
  if (has_c && (beta == 0.0f || !dequantized(rw, gemm.inputs[2], c, true) ||
                !bias_fits(rw, c, a, b, double(alpha) / double(beta))))
    return false;
  out.op_type = "QGemm";
  out.domain = kMicrosoft;
  if (alpha != 1.0f) out.attributes.push_back(float_attr("alpha", alpha));
  out.attributes.push_back(int_attr("transA", trans_a));
  out.attributes.push_back(int_attr("transB", trans_b));
  push_operand(rw, out, a);
  push_operand(rw, out, b);
  out.inputs.push_back(has_c ? c.data : ir::kNoValue);
  push_output_params(rw, out, grp.y);
  return true;
}

// The com.microsoft elementwise and pooling forms: every operand and the
// output per tensor, all of one 8-bit type.
bool build_contrib(GraphRewrite& rw, const Group& grp, ir::Node& out) {
  const ir::Node& op = rw.graph.nodes[size_t(grp.op)];
  const bool binary = op.op_type == "Add" || op.op_type == "Mul";
  const bool concat = op.op_type == "Concat";
  if (op.inputs.empty() || (binary && op.inputs.size() != 2) || (!binary && !concat && op.inputs.size() != 1))
    return false;
  std::vector<Quantized> in(op.inputs.size());
  for (size_t k = 0; k < in.size(); ++k)
    if (!dequantized(rw, op.inputs[k], in[k]) || !in[k].per_tensor() || in[k].dtype != grp.y.dtype) return false;
  out.op_type = "QLinear" + op.op_type;
  out.domain = kMicrosoft;
  if (op.op_type == "AveragePool") {
    for (const ir::Attribute& a : op.attributes) {
      if (a.name == "dilations") {  // QLinearAveragePool has none
        for (int64_t d : a.ints)
          if (d != 1) return false;
        continue;
      }
      out.attributes.push_back(a);
    }
  } else if (op.op_type == "LeakyRelu") {
    out.attributes.push_back(float_attr("alpha", float_attr_or(op, "alpha", 0.01f)));
  } else if (concat) {
    if (!op.attr("axis")) return false;
    out.attributes.push_back(int_attr("axis", op.attr_int("axis", 0)));
    push_output_params(rw, out, grp.y);  // QLinearConcat: Y's parameters come first
    for (const Quantized& q : in) push_operand(rw, out, q);
    return true;
  }
  for (const Quantized& q : in) push_operand(rw, out, q);
  push_output_params(rw, out, grp.y);
  return true;
}

bool is_integer_exact(const ir::Node& n) {
  for (const char* op : {"MaxPool", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten"})
    if (is_onnx_op(n, op)) return true;
  return false;
}

// DQ -> op -> Q with one scale and zero point on both sides: the op
// commutes with (de)quantizing, so it runs on the integers.
bool build_integer_op(GraphRewrite& rw, const Group& grp, ir::Node& out) {
  const ir::Node& op = rw.graph.nodes[size_t(grp.op)];
  Quantized x;
  if (grp.act >= 0 || !dequantized(rw, op.inputs[0], x) || !same_params(rw, x, grp.y)) return false;
  out.op_type = op.op_type;
  out.attributes = op.attributes;
  out.inputs = op.inputs;
  out.inputs[0] = x.data;
  return true;
}

// The group whose Q is node `q`, when its shape fits: Q's input comes from
// an op (through an implied Relu/Clip) that nothing else reads.
bool find_group(const GraphRewrite& rw, int q, Group& grp) {
  const ir::Graph& g = rw.graph;
  const ir::Node& qn = g.nodes[size_t(q)];
  if (!is_onnx_op(qn, "QuantizeLinear") || qn.inputs.empty() || qn.outputs.size() != 1 || qn.outputs[0] < 0)
    return false;
  const int y = qn.outputs[0];
  const int32_t dtype = quantized_type(rw, qn);
  const int64_t output_dtype = qn.attr_int("output_dtype", 0);
  if (!is_8bit(dtype) || (output_dtype != 0 && output_dtype != dtype)) return false;
  if (!read_params(rw, qn, dtype, -1, {}, grp.y) || !grp.y.per_tensor()) return false;
  grp.y.data = y;
  grp.q = q;
  auto sole_input = [&](int v) { return v >= 0 && !rw.pinned[size_t(v)] && rw.readers[size_t(v)] == 1; };
  int v = qn.inputs[0];
  if (!sole_input(v)) return false;
  const ir::Node* p = live_producer(rw, v);
  const bool activation = p && (is_onnx_op(*p, "Relu") || is_onnx_op(*p, "Clip")) && !p->inputs.empty();
  if (activation && implied_by_saturation(rw, *p, grp.y)) {
    grp.act = g.values[size_t(v)].producer;
    v = p->inputs[0];
    if (!sole_input(v)) return false;
    p = live_producer(rw, v);
  }
  if (!p || p->outputs.empty() || p->outputs[0] != v) return false;
  for (size_t k = 1; k < p->outputs.size(); ++k)  // such as MaxPool's Indices: must be unread
    if (p->outputs[k] >= 0 && (rw.readers[size_t(p->outputs[k])] > 0 || rw.pinned[size_t(p->outputs[k])]))
      return false;
  grp.op = g.values[size_t(v)].producer;
  return true;
}

bool build(GraphRewrite& rw, const Group& grp, ir::Node& out) {
  const ir::Node& op = rw.graph.nodes[size_t(grp.op)];
  if (!op.domain.empty()) return false;
  out.name = op.name;
  out.outputs = {grp.y.data};
  if (op.op_type == "Conv") return build_conv(rw, grp, out);
  if (op.op_type == "MatMul") return build_matmul(rw, grp, out);
  if (op.op_type == "Gemm") return build_gemm(rw, grp, out);
  for (const char* name : {"Add", "Mul", "AveragePool", "GlobalAveragePool", "Concat", "Sigmoid", "LeakyRelu"})
    if (op.op_type == name) return build_contrib(rw, grp, out);
  if (is_integer_exact(op)) return build_integer_op(rw, grp, out);
  return false;
}

// Replaces the group's op by `fused` (same place in the node list) and drops
// its Q and activation; DQs left unread go with the dead-node pass.
void commit(GraphRewrite& rw, const Group& grp, ir::Node fused) {
  ir::Graph& g = rw.graph;
  rw.remove_node(grp.q);
  if (grp.act >= 0) rw.remove_node(grp.act);
  rw.remove_node(grp.op);
  rw.removed[size_t(grp.op)] = false;
  if (!fused.domain.empty()) g.opsets.emplace(fused.domain, 1);
  for (int v : fused.inputs)
    if (v >= 0) ++rw.readers[size_t(v)];
  g.nodes[size_t(grp.op)] = std::move(fused);
  g.values[size_t(grp.y.data)].producer = grp.op;
}

}  // namespace

void fuse_qdq_groups(GraphRewrite& rw, const ProviderRank& providers, OptimizationReport& report) {
  ir::Graph& g = rw.graph;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    Group grp;
    if (rw.removed[n] || !find_group(rw, int(n), grp)) continue;
    ir::Node fused;
    if (!build(rw, grp, fused)) continue;  // new zero points left unread are compacted away
    const int rank = providers(g, fused);
    const int float_rank = providers(g, g.nodes[size_t(grp.op)]);
    if (rank < 0 || (float_rank >= 0 && rank > float_rank)) continue;
    const std::string op = fused.op_type;
    commit(rw, grp, std::move(fused));
    ++report.qdq_groups_fused;
    ++report.qdq_fused_ops[op];
  }
}

}  // namespace onyx::runtime::optimize
