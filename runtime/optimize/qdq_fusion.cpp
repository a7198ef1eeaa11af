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
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "optimize/graph_rewrite.h"

namespace onyx::runtime::optimize {
namespace {

constexpr const char* kMicrosoft = "com.microsoft";

bool is_op(const ir::Node& n, const char* op) { return n.domain.empty() && n.op_type == op; }
bool is_8bit(int32_t dtype) { return dtype == ONYX_DTYPE_INT8 || dtype == ONYX_DTYPE_UINT8; }

// A quantized operand: real = (data - zero) * scale.
struct Quantized {
  int data = -1;   // the integer tensor
  int scale = -1;  // float32 constant
  int zero = -1;   // constant of data's type; -1: absent, i.e. zero
  int axis = -1;   // -1: per tensor; else the axis the scale runs along
  int32_t dtype = ONYX_DTYPE_UNDEFINED;
  int64_t count = 1;  // scale's element count
  bool per_tensor() const { return axis < 0; }
};

// One QDQ group around a float op.
struct Group {
  int q = -1;    // the QuantizeLinear node
  int act = -1;  // a Relu or Clip implied by the Q's saturation, or -1
  int op = -1;   // the float op
  Quantized y;   // the Q's output
};

const ir::Node* live_producer(const GraphRewrite& rw, int v) {
  if (v < 0) return nullptr;
  const int p = rw.graph.values[size_t(v)].producer;
  return p < 0 || rw.removed[size_t(p)] ? nullptr : &rw.graph.nodes[size_t(p)];
}

// Inputs 1 and 2 of a DQ or Q node as the scale and zero point of an integer
// tensor of `dtype` and `rank` (-1: unknown): constants, per tensor or along
// the node's axis; blocked scales are left alone.
bool read_params(const GraphRewrite& rw, const ir::Node& n, int32_t dtype, int32_t rank, const Shape& dims,
                 Quantized& q) {
  if (n.inputs.size() < 2 || n.attr_int("block_size", 0) != 0) return false;
  const Tensor* scale = rw.fixed_constant(n.inputs[1]);
  if (!scale || scale->dtype() != ONYX_DTYPE_FLOAT32 || scale->size() < 1 || scale->shape().size() > 1)
    return false;
  q.scale = n.inputs[1];
  q.dtype = dtype;
  q.count = scale->size();
  if (n.inputs.size() > 2 && n.inputs[2] >= 0) {
    const Tensor* zero = rw.fixed_constant(n.inputs[2]);
    if (!zero || zero->dtype() != dtype || zero->shape() != scale->shape()) return false;
    q.zero = n.inputs[2];
  }
  if (q.count == 1) return true;  // one scale: per tensor, whatever its shape
  int64_t axis = n.attr_int("axis", 1);
  if (rank < 0 || axis < -rank || axis >= rank) return false;
  q.axis = int(axis < 0 ? axis + rank : axis);
  const int64_t dim = dims[size_t(q.axis)];
  return dim < 0 || dim == q.count;
}

// `v` as the output of a live DequantizeLinear of an 8-bit tensor (int32
// where `int32_ok`, for biases).
bool dequantized(const GraphRewrite& rw, int v, Quantized& q, bool int32_ok = false) {
  const ir::Node* dq = live_producer(rw, v);
  if (!dq || !is_op(*dq, "DequantizeLinear") || dq->inputs.empty() || dq->inputs[0] < 0) return false;
  const ir::Value& x = rw.graph.values[size_t(dq->inputs[0])];
  if (!is_8bit(x.dtype) && !(int32_ok && x.dtype == ONYX_DTYPE_INT32)) return false;
  q.data = dq->inputs[0];
  return read_params(rw, *dq, x.dtype, x.rank, x.dims, q);
}

// The type a QuantizeLinear writes: its output's, else its zero point's,
// else output_dtype (opset 21), else uint8.
int32_t quantized_type(const GraphRewrite& rw, const ir::Node& q) {
  const ir::Graph& g = rw.graph;
  const int32_t out = g.values[size_t(q.outputs[0])].dtype;
  if (out != ONYX_DTYPE_UNDEFINED) return out;
  if (q.inputs.size() > 2 && q.inputs[2] >= 0 && g.values[size_t(q.inputs[2])].dtype != ONYX_DTYPE_UNDEFINED)
    return g.values[size_t(q.inputs[2])].dtype;
  const int64_t attr = q.attr_int("output_dtype", 0);  // 0: not given
  return attr != 0 ? int32_t(attr) : ONYX_DTYPE_UINT8;
}

float scale_at(const GraphRewrite& rw, const Quantized& q, int64_t i) {
  return rw.graph.values[size_t(q.scale)].constant->data_as<float>()[q.count == 1 ? 0 : i];
}

int64_t zero_at(const GraphRewrite& rw, const Quantized& q, int64_t i) {
  if (q.zero < 0) return 0;
  const Tensor& z = *rw.graph.values[size_t(q.zero)].constant;
  const int64_t k = q.count == 1 ? 0 : i;
  switch (z.dtype()) {
    case ONYX_DTYPE_INT8: return z.data_as<int8_t>()[k];
    case ONYX_DTYPE_UINT8: return z.data_as<uint8_t>()[k];
    case ONYX_DTYPE_INT32: return z.data_as<int32_t>()[k];
    default: return 0;
  }
}

bool all_zero(const GraphRewrite& rw, const Quantized& q) {
  for (int64_t i = 0; i < q.count; ++i)
    if (zero_at(rw, q, i) != 0) return false;
  return true;
}

// Whether two operands share dtype, scale and zero point, per tensor.
bool same_params(const GraphRewrite& rw, const Quantized& a, const Quantized& b) {
  if (!a.per_tensor() || !b.per_tensor() || a.dtype != b.dtype) return false;
  const float sa = scale_at(rw, a, 0), sb = scale_at(rw, b, 0);
  return std::memcmp(&sa, &sb, sizeof sa) == 0 && zero_at(rw, a, 0) == zero_at(rw, b, 0);
}

// QuantizeLinear of one real value: saturate(round_half_even(v / s) + zp),
// the division in float32 as the op defines it.
int64_t quantize(double v, float s, int64_t zero, int32_t dtype) {
  const double lo = dtype == ONYX_DTYPE_INT8 ? -128 : 0, hi = dtype == ONYX_DTYPE_INT8 ? 127 : 255;
  const double r = std::nearbyint(double(float(v) / s)) + double(zero);
  return int64_t(std::fmin(hi, std::fmax(lo, r)));
}

// Whether Relu/Clip node `act` changes nothing that Q (per tensor) keeps:
// Q is monotone, so clamping to [lo, hi] is implied when Q(lo) is already
// the type's minimum and Q(hi) its maximum.
bool implied_by_saturation(const GraphRewrite& rw, const ir::Node& act, const Quantized& y) {
  if (!y.per_tensor()) return false;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double lo = -kInf, hi = kInf;
  if (is_op(act, "Relu")) {
    lo = 0;
  } else if (is_op(act, "Clip")) {
    if (rw.graph.opset("") < 11) {
      if (const ir::Attribute* a = act.attr("min")) lo = a->f;
      if (const ir::Attribute* a = act.attr("max")) hi = a->f;
    } else {
      for (size_t k = 1; k < act.inputs.size() && k < 3; ++k) {
        if (act.inputs[k] < 0) continue;
        const Tensor* t = rw.fixed_constant(act.inputs[k]);
        if (!t || t->dtype() != ONYX_DTYPE_FLOAT32 || t->size() != 1) return false;
        (k == 1 ? lo : hi) = *t->data_as<float>();
      }
    }
  } else {
    return false;
  }
  const float s = scale_at(rw, y, 0);
  const int64_t zero = zero_at(rw, y, 0);
  const int64_t qmin = y.dtype == ONYX_DTYPE_INT8 ? -128 : 0, qmax = y.dtype == ONYX_DTYPE_INT8 ? 127 : 255;
  return (lo == -kInf || quantize(lo, s, zero, y.dtype) == qmin) &&
         (hi == kInf || quantize(hi, s, zero, y.dtype) == qmax);
}

// --- building the operator-form node ----------------------------------------

// The zero point as a value: the operand's, or a new constant zero of its
// type and scale's shape (the operator forms take it as a required input).
int zero_value(GraphRewrite& rw, const Quantized& q) {
  if (q.zero >= 0) return q.zero;
  Tensor z = Tensor::allocate(q.dtype, rw.graph.values[size_t(q.scale)].constant->shape());
  std::memset(z.data(), 0, z.bytes());
  return add_initializer(rw, rw.graph.values[size_t(q.scale)].name + "_zero_point", std::move(z));
}

void push_operand(GraphRewrite& rw, ir::Node& n, const Quantized& q) {
  n.inputs.push_back(q.data);
  n.inputs.push_back(q.scale);
  n.inputs.push_back(zero_value(rw, q));
}

void push_output_params(GraphRewrite& rw, ir::Node& n, const Quantized& y) {
  n.inputs.push_back(y.scale);
  n.inputs.push_back(zero_value(rw, y));
}

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

// A bias quantized as the target op expects: int32, zero point 0, scale
// x_scale * w_scale per output channel. Exporters compute that product in
// float32 or float64 and round it; a few ulps apart is the same scale.
bool bias_fits(const GraphRewrite& rw, const Quantized& b, const Quantized& x, const Quantized& w) {
  if (b.dtype != ONYX_DTYPE_INT32 || !all_zero(rw, b) || !x.per_tensor()) return false;
  if (b.count != 1 && w.count != 1 && b.count != w.count) return false;
  const int64_t channels = std::max(b.count, w.count);
  for (int64_t m = 0; m < channels; ++m) {
    const double want = double(scale_at(rw, x, 0)) * double(scale_at(rw, w, m));
    const double got = scale_at(rw, b, m);
    if (std::fabs(got - want) > 1e-6 * std::fabs(want)) return false;
  }
  return true;
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

// Gemm -> com.microsoft QGemm: Y = alpha * A' B' (+ C), where an int32 C is
// read with scale alpha/beta * a_scale * b_scale and zero point 0. QGemm has
// no beta: with a C, only alpha = beta = 1 is taken, the unambiguous case.
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
  if (has_c && (alpha != 1.0f || beta != 1.0f || !dequantized(rw, gemm.inputs[2], c, true) ||
                !bias_fits(rw, c, a, b)))
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
    if (is_op(n, op)) return true;
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
  if (!is_op(qn, "QuantizeLinear") || qn.inputs.empty() || qn.outputs.size() != 1 || qn.outputs[0] < 0) return false;
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
  if (p && (is_op(*p, "Relu") || is_op(*p, "Clip")) && !p->inputs.empty() && implied_by_saturation(rw, *p, grp.y)) {
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
