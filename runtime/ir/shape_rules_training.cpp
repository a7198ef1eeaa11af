// shape_rules_training.cpp: the ai.onyx ops that autodiff writes into
// training graphs (runtime/autodiff, the CPU kernels in
// providers/cpu/kernels/grad/), and the graph optimizer's MatMulBias,
// FusedConvMaxPool, FusedBatchNormalization and BatchNormGradSums. onnx's schemas do not know this domain;
// without these rules every gradient these ops make would be a dynamic
// buffer, allocated and freed on each step instead of planned.
#include "ir/shape_rules.h"

namespace onyx::runtime::ir::shape {
namespace {

// Output `out` of dtype `dtype` whose shape is the value of int64 input
// `shape_input`: exact when that value is a constant (a folded Shape of a
// parameter), else only its rank when the input's length is known.
void shape_from_input(InferContext& ctx, size_t out, int32_t dtype, size_t shape_input) {
  if (auto v = ctx.ints(shape_input)) {
    ctx.set_output(out, dtype, Shape(v->begin(), v->end()));
    return;
  }
  const Shape& d = ctx.dims(shape_input);
  if (ctx.rank(shape_input) == 1 && d[0] >= 0) ctx.set_output_rank(out, dtype, int32_t(d[0]));
  else ctx.set_output_dtype(out, dtype);
}

// SumToShape(G, shape): G summed to `shape`.
Status sum_to_shape(InferContext& ctx) {
  shape_from_input(ctx, 0, ctx.dtype(0), 1);
  return Status();
}

// NegativeLogLikelihoodLoss(log_prob [N, C, d...], labels [N, d...]):
// the labels' shape for reduction none, else a scalar.
Status nll_loss(InferContext& ctx) {
  if (ctx.attr_string("reduction", "mean") != "none") {
    ctx.set_output(0, ctx.dtype(0), {});
  } else if (ctx.rank(1) >= 0) {
    ctx.set_output(0, ctx.dtype(0), ctx.dims(1));
  } else {
    ctx.set_output_dtype(0, ctx.dtype(0));
  }
  return Status();
}

// NegativeLogLikelihoodLossGrad(dloss, labels [N, d...], shape of log_prob):
// the scores' shape, [N, C, d...] (C from the shape input alone).
Status nll_loss_grad(InferContext& ctx) {
  if (ctx.ints(2) || ctx.rank(1) < 0) {
    shape_from_input(ctx, 0, ctx.dtype(0), 2);
    return Status();
  }
  Shape dims = ctx.dims(1);
  dims.insert(dims.begin() + (dims.empty() ? 0 : 1), kUnknown);
  ctx.set_output(0, ctx.dtype(0), dims);
  return Status();
}

// BatchNormGradSums(dY, X [N, C, ...], mean) -> two [C] vectors of X's type.
Status batch_norm_grad_sums(InferContext& ctx) {
  const int64_t c = ctx.rank(1) >= 2 ? ctx.dims(1)[1] : kUnknown;
  for (size_t k = 0; k < ctx.outputs().size(); ++k) ctx.set_output(k, ctx.dtype(1), {c});
  return Status();
}

// MaxPoolGrad(dY, X): X's shape.
Status max_pool_grad(InferContext& ctx) {
  if (ctx.rank(1) >= 0) ctx.set_output(0, ctx.dtype(0), ctx.dims(1));
  else ctx.set_output_dtype(0, ctx.dtype(0));
  return Status();
}

// AveragePoolGrad(dY, shape of X), GatherGrad(dY, indices, shape of data),
// SliceGrad(dY, shape of data, starts, ends, ...): the shape input's value.
Status average_pool_grad(InferContext& ctx) {
  shape_from_input(ctx, 0, ctx.dtype(0), 1);
  return Status();
}

Status gather_grad(InferContext& ctx) {
  shape_from_input(ctx, 0, ctx.dtype(0), 2);
  return Status();
}

// ConvGrad(dY, X, W) -> (dX, dW): X's and W's shapes.
Status conv_grad(InferContext& ctx) {
  for (size_t k = 0; k < 2; ++k) {
    if (!ctx.has_output(k)) continue;
    if (ctx.rank(k + 1) >= 0) ctx.set_output(k, ctx.dtype(0), ctx.dims(k + 1));
    else ctx.set_output_dtype(k, ctx.dtype(0));
  }
  return Status();
}

// ReluGrad(dY, X) (optimize/relu_grad_fusion.cpp): the broadcast of both,
// dY's type.
Status relu_grad(InferContext& ctx) {
  return set_broadcast(ctx, ctx.input_type(0), ctx.input_type(1), ctx.dtype(0));
}

// MatMulBias(A, B, bias[, residual]) (optimize/matmul_bias_fusion.cpp):
// MatMul's shape, broadcast with the residual's.
Status matmul_bias(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(matmul_shape(ctx, 0, 1, ctx.dtype(0)));
  if (!ctx.has_input(3) || ctx.outputs().empty()) return Status();
  return set_broadcast(ctx, ctx.outputs()[0], ctx.input_type(3), ctx.dtype(0));
}

// FusedConvMaxPool(X, W[, B]) (optimize/conv_pool_fusion.cpp): Conv's
// shape, each spatial axis then max-pooled by windows of pool_size with
// stride pool_size and no padding (floor(d / pool_size)).
Status fused_conv_max_pool(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(conv_shape(ctx, 0, 1, ctx.dtype(0)));
  const int64_t size = ctx.attr_int("pool_size", 0);
  if (size < 1) return ctx.error("pool_size must be positive, got " + std::to_string(size));
  if (ctx.outputs().empty() || ctx.outputs()[0].rank < 3) return Status();
  Shape dims = ctx.outputs()[0].dims;
  for (size_t i = 2; i < dims.size(); ++i) {
    if (dims[i] < 0) continue;
    if (dims[i] < size)
      return ctx.error("the convolution's spatial axis " + std::to_string(i - 2) + " (" + std::to_string(dims[i]) +
                       ") is smaller than pool_size " + std::to_string(size));
    dims[i] /= size;
  }
  ctx.set_output(0, ctx.dtype(0), dims);
  return Status();
}

// FusedBatchNormalization(X, scale, B, mean, var)
// (optimize/activation_fusion.cpp): X's type and shape.
Status fused_batch_norm(InferContext& ctx) {
  same_as_input(ctx, 0, 0);
  return Status();
}

}  // namespace

void add_training_rules(RuleTable& table) {
  table["FusedBatchNormalization"] = fused_batch_norm;
  table["FusedConvMaxPool"] = fused_conv_max_pool;
  table["MatMulBias"] = matmul_bias;
  table["ReluGrad"] = relu_grad;
  table["SumToShape"] = sum_to_shape;
  table["NegativeLogLikelihoodLoss"] = nll_loss;
  table["NegativeLogLikelihoodLossGrad"] = nll_loss_grad;
  table["MaxPoolGrad"] = max_pool_grad;
  table["BatchNormGradSums"] = batch_norm_grad_sums;
  table["AveragePoolGrad"] = average_pool_grad;
  table["GatherGrad"] = gather_grad;
  table["SliceGrad"] = average_pool_grad;  // the shape is input 1 too
  table["ConvGrad"] = conv_grad;
}

}  // namespace onyx::runtime::ir::shape
