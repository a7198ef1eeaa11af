// shape_rules_quantized.cpp: the com.microsoft operator-form quantized ops
// that ONNX Runtime's quantizer writes (QLinearAdd, QLinearMul,
// QLinearSigmoid, QLinearLeakyRelu, QLinearAveragePool,
// QLinearGlobalAveragePool, QLinearConcat, QGemm, DynamicQuantizeMatMul,
// QLinearConv). onnx's own schemas do not know
// this domain, so without these rules their outputs, and everything after
// them, would have no type or shape to claim nodes and plan memory with.
// Each output has the type of the op's 8-bit input and its ai.onnx
// counterpart's shape. The fused nodes the optimizer writes in that domain
// (Gelu, FastGelu, FusedConv, MultiHeadAttention) have rules here too.
#include "ir/shape_rules.h"

namespace onyx::runtime::ir::shape {
namespace {

// A, A_scale, A_zero_point, B, ...: A and B broadcast.
Status qlinear_binary(InferContext& ctx) {
  return set_broadcast(ctx, ctx.input_type(0), ctx.input_type(3), ctx.dtype(0));
}

Status qlinear_unary(InferContext& ctx) {
  same_as_input(ctx, 0, 0);
  return Status();
}

Status qlinear_average_pool(InferContext& ctx) { return pool_shape(ctx, ctx.attr_int("channels_last", 0) != 0); }

// [N, C, 1, ...], or [N, 1, ..., C] with channels_last.
Status qlinear_global_average_pool(InferContext& ctx) {
  const int32_t rank = ctx.rank(0);
  if (rank < 0) return ctx.set_output_dtype(0, ctx.dtype(0)), Status();
  if (rank < 3) return ctx.error("input must have rank >= 3, got rank " + std::to_string(rank));
  const bool channels_last = ctx.attr_int("channels_last", 0) != 0;
  Shape out(size_t(rank), 1);
  out[0] = ctx.dims(0)[0];
  const size_t c = channels_last ? size_t(rank - 1) : 1;
  out[c] = ctx.dims(0)[c];
  ctx.set_output(0, ctx.dtype(0), out);
  return Status();
}

// Y_scale, Y_zero_point, then (X, scale, zero point) per tensor: the Xs
// concatenate along `axis`; Y has Y_zero_point's type.
Status qlinear_concat(InferContext& ctx) {
  const int32_t dtype = ctx.has_input(1) ? ctx.dtype(1) : ctx.dtype(2);
  return concat_shape(ctx, 2, 3, ctx.attr_int("axis", 0), dtype);
}

// QGemm(A, a_scale, a_zero, B, b_scale, b_zero, C?, y_scale?, y_zero?): float
// output without y_scale, else y_zero_point's type (uint8 when absent).
Status qgemm(InferContext& ctx) {
  const int32_t dtype = !ctx.has_input(7) ? ONYX_DTYPE_FLOAT32 : ctx.has_input(8) ? ctx.dtype(8) : ONYX_DTYPE_UINT8;
  return gemm_shape(ctx, 0, 3, 6, dtype);
}

// DynamicQuantizeMatMul(A float, B, b_scale, b_zero?, bias?): float, matmul shape.
Status dynamic_quantize_matmul(InferContext& ctx) { return matmul_shape(ctx, 0, 1, ONYX_DTYPE_FLOAT32); }

// com.microsoft's QLinearConv: ONNX's, y of y_zero_point's type; with
// channels_last, x and y are N x spatial... x C.
Status qlinear_conv(InferContext& ctx) {
  return conv_shape(ctx, 0, 3, ctx.dtype(7), ctx.attr_int("channels_last", 0) != 0);
}

Status fused_conv(InferContext& ctx) { return conv_shape(ctx, 0, 1, ctx.dtype(0)); }
Status fused_gemm(InferContext& ctx) { return gemm_shape(ctx, 0, 1, 2, ctx.dtype(0)); }

// MultiHeadAttention(query [B, S, D], key [B, L, D], value [B, L, Dv]) or
// packed QKV (query [B, S, N, 3, h] alone): output [B, S, Dv] (packed:
// [B, S, N * h]) of the query's type, rank 3 whatever is unknown.
Status multi_head_attention(InferContext& ctx) {
  const Shape& q = ctx.dims(0);
  if (!ctx.has_input(1) && !ctx.has_input(2) && ctx.rank(0) == 5) {
    ctx.set_output(0, ctx.dtype(0), {q[0], q[1], q[2] < 0 || q[4] < 0 ? kUnknown : q[2] * q[4]});
  } else if (ctx.rank(0) == 3 && ctx.rank(2) == 3) {
    ctx.set_output(0, ctx.dtype(0), {q[0], q[1], ctx.dims(2)[2]});
  } else {
    ctx.set_output_rank(0, ctx.dtype(0), 3);
  }
  return Status();
}

}  // namespace

void add_microsoft_rules(RuleTable& table) {
  table["QGemm"] = qgemm;
  table["DynamicQuantizeMatMul"] = dynamic_quantize_matmul;
  table["QLinearConv"] = qlinear_conv;
  table["QLinearAdd"] = qlinear_binary;
  table["QLinearMul"] = qlinear_binary;
  table["QLinearSigmoid"] = qlinear_unary;
  table["QLinearLeakyRelu"] = qlinear_unary;
  table["QLinearAveragePool"] = qlinear_average_pool;
  table["QLinearGlobalAveragePool"] = qlinear_global_average_pool;
  table["QLinearConcat"] = qlinear_concat;
  // Not quantized, but com.microsoft too: the GELU forms the graph optimizer
  // writes for opsets before ONNX's Gelu (optimize/gelu_fusion.cpp).
  table["Gelu"] = qlinear_unary;
  table["FastGelu"] = qlinear_unary;
  table["FusedConv"] = fused_conv;  // Conv + activation (optimize/activation_fusion.cpp)
  table["FusedGemm"] = fused_gemm;  // Gemm + Relu (the same)
  table["MultiHeadAttention"] = multi_head_attention;  // optimize/attention_fusion.cpp
}

}  // namespace onyx::runtime::ir::shape
