// qdq_operands.cpp: reading the scales and zero points of a QDQ group
// (qdq_operands.h).
#include "optimize/qdq_operands.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace onyx::runtime::optimize {

namespace {

// QuantizeLinear of one real value: saturate(round_half_even(v / s) + zp),
// the division in float32 as the op defines it.
int64_t quantize(double v, float s, int64_t zero, int32_t dtype) {
  const double lo = dtype == ONYX_DTYPE_INT8 ? -128 : 0, hi = dtype == ONYX_DTYPE_INT8 ? 127 : 255;
  const double r = std::nearbyint(double(float(v) / s)) + double(zero);
  return int64_t(std::fmin(hi, std::fmax(lo, r)));
}

}  // namespace

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
bool dequantized(const GraphRewrite& rw, int v, Quantized& q, bool int32_ok) {
  const ir::Node* dq = live_producer(rw, v);
  if (!dq || !is_onnx_op(*dq, "DequantizeLinear") || dq->inputs.empty() || dq->inputs[0] < 0) return false;
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

// Whether Relu/Clip node `act` changes nothing that Q (per tensor) keeps:
// Q is monotone, so clamping to [lo, hi] is implied when Q(lo) is already
// the type's minimum and Q(hi) its maximum.
bool implied_by_saturation(const GraphRewrite& rw, const ir::Node& act, const Quantized& y) {
  if (!y.per_tensor()) return false;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double lo = -kInf, hi = kInf;
  if (is_onnx_op(act, "Relu")) {
    lo = 0;
  } else if (is_onnx_op(act, "Clip")) {
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


namespace {

// The zero point as a value: the operand's, or a new constant zero of its
// type and scale's shape (the operator forms take it as a required input).
int zero_value(GraphRewrite& rw, const Quantized& q) {
  if (q.zero >= 0) return q.zero;
  Tensor z = Tensor::allocate(q.dtype, rw.graph.values[size_t(q.scale)].constant->shape());
  std::memset(z.data(), 0, z.bytes());
  return add_initializer(rw, rw.graph.values[size_t(q.scale)].name + "_zero_point", std::move(z));
}

}  // namespace

void push_operand(GraphRewrite& rw, ir::Node& n, const Quantized& q) {
  n.inputs.push_back(q.data);
  n.inputs.push_back(q.scale);
  n.inputs.push_back(zero_value(rw, q));
}

void push_output_params(GraphRewrite& rw, ir::Node& n, const Quantized& y) {
  n.inputs.push_back(y.scale);
  n.inputs.push_back(zero_value(rw, y));
}

// A bias quantized as the target op expects: int32, zero point 0, scale
// x_scale * w_scale per output channel. Exporters compute that product in
// float32 or float64 and round it; a few ulps apart is the same scale.
bool bias_fits(const GraphRewrite& rw, const Quantized& b, const Quantized& x, const Quantized& w, double factor) {
  if (b.dtype != ONYX_DTYPE_INT32 || !all_zero(rw, b) || !x.per_tensor()) return false;
  // Per channel means along the bias's last axis, the output channels'.
  if (!b.per_tensor() && b.axis != rw.graph.values[size_t(b.data)].rank - 1) return false;
  if (b.count != 1 && w.count != 1 && b.count != w.count) return false;
  const int64_t channels = std::max(b.count, w.count);
  for (int64_t m = 0; m < channels; ++m) {
    const double want = factor * double(scale_at(rw, x, 0)) * double(scale_at(rw, w, m));
    const double got = scale_at(rw, b, m);
    if (std::fabs(got - want) > 1e-6 * std::fabs(want)) return false;
  }
  return true;
}

}  // namespace onyx::runtime::optimize
