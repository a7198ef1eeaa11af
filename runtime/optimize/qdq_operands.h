// qdq_operands.h: the quantized operands of a QDQ group, read from the
// DequantizeLinear / QuantizeLinear nodes around a float op (internal to
// runtime/optimize; used by qdq_fusion.cpp).
#pragma once

#include "optimize/graph_rewrite.h"

namespace onyx::runtime::optimize {

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

inline bool is_onnx_op(const ir::Node& n, const char* op) { return n.domain.empty() && n.op_type == op; }
inline bool is_8bit(int32_t dtype) { return dtype == ONYX_DTYPE_INT8 || dtype == ONYX_DTYPE_UINT8; }

// The node producing `v`, unless removed; nullptr for none.
const ir::Node* live_producer(const GraphRewrite& rw, int v);

// Inputs 1 and 2 of a DQ or Q node as the scale and zero point of an integer
// tensor of `dtype`, `rank` (-1: unknown) and `dims`: constants, per tensor
// or along the node's axis; blocked scales are refused.
bool read_params(const GraphRewrite& rw, const ir::Node& n, int32_t dtype, int32_t rank, const Shape& dims,
                 Quantized& q);

// `v` as the output of a live DequantizeLinear of an 8-bit tensor (int32
// where `int32_ok`, for biases).
bool dequantized(const GraphRewrite& rw, int v, Quantized& q, bool int32_ok = false);

// The type QuantizeLinear node `q` writes.
int32_t quantized_type(const GraphRewrite& rw, const ir::Node& q);

float scale_at(const GraphRewrite& rw, const Quantized& q, int64_t i);
int64_t zero_at(const GraphRewrite& rw, const Quantized& q, int64_t i);
bool all_zero(const GraphRewrite& rw, const Quantized& q);
// Whether two operands share dtype, scale and zero point, per tensor.
bool same_params(const GraphRewrite& rw, const Quantized& a, const Quantized& b);

// Whether Relu/Clip node `act` before a per-tensor Q to `y` changes nothing
// the Q keeps.
bool implied_by_saturation(const GraphRewrite& rw, const ir::Node& act, const Quantized& y);

// A bias (Conv) or C (Gemm) as the operator forms read it: int32, zero
// point 0, scale factor * x_scale * w_scale per output channel.
bool bias_fits(const GraphRewrite& rw, const Quantized& b, const Quantized& x, const Quantized& w,
               double factor = 1.0);

// Appends (data, scale, zero point) of `q` to `n`'s inputs; a zero point the
// model omitted becomes a new zero constant (the operator forms require it).
void push_operand(GraphRewrite& rw, ir::Node& n, const Quantized& q);
// Appends (scale, zero point) of an output.
void push_output_params(GraphRewrite& rw, ir::Node& n, const Quantized& y);

}  // namespace onyx::runtime::optimize
