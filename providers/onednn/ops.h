// ops.h: the ops this provider runs, and its fused groups.
//
// Each op family (matmul.cpp, conv.cpp, ...) adds kernel definitions to the
// provider's registry: a check that says "" when oneDNN can run the node
// exactly as ONNX defines it, or the reason it is declined, and a factory
// that receives the opened device's settings. Claims follow the checks only,
// so unclaimed nodes fall back per the session's policy.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dnnl_common.h"

namespace onyx::onednn {

using OpRegistry = sdk::BasicKernelRegistry<DeviceConfig>;
using OpBuilder = sdk::BasicKernelDefBuilder<DeviceConfig>;

void add_matmul_ops(OpRegistry& ops);
void add_conv_ops(OpRegistry& ops);
void add_pool_ops(OpRegistry& ops);
void add_norm_ops(OpRegistry& ops);
void add_softmax_ops(OpRegistry& ops);
// com.microsoft MultiHeadAttention (query, key, value), the core's fused attention.
void add_attention_ops(OpRegistry& ops);
void add_eltwise_ops(OpRegistry& ops);
void add_reduce_ops(OpRegistry& ops);
void add_binary_ops(OpRegistry& ops);
// numpy broadcasting of shapes a and b into *out, or false (binary.cpp).
bool broadcast_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b, std::vector<int64_t>* out);
// y = a + b, each broadcast (numpy) to `out` (binary.cpp).
void add_broadcast(const float* a, const std::vector<int64_t>& a_dims, const float* b,
                   const std::vector<int64_t>& b_dims, float* y, const std::vector<int64_t>& out);
// Flatten (a view of its input) and Transpose.
void add_view_ops(OpRegistry& ops);
// QLinearConv and QLinearMatMul on int8 primitives (quantized.cpp).
void add_quantized_ops(OpRegistry& ops);
// Gradient ops of the autodiff (runtime/autodiff), domain ai.onyx.
void add_grad_ops(OpRegistry& ops);

// ---- fused groups ----------------------------------------------------------
// A group is a chain head -> [bias Add | BatchNormalization] -> [scale]
// -> [activation] -> [residual Add] where each intermediate value is read only by the next
// node of the chain.
struct ChainNode {
  NodeInfo info;
  int from_previous = -1;  // which input of this node the previous node feeds
};
using Chain = std::vector<ChainNode>;

// MatMul or Gemm, optionally + Add of a constant bias over the last axis,
// optionally + Mul or Div by a constant scalar, optionally + one activation;
// a MatMul's chain optionally ends with a residual Add of a tensor of the
// product's shape.
std::string matmul_group_supports(const Chain& chain);
std::unique_ptr<sdk::Kernel> create_matmul_group(const Chain& chain,
                                                 const DeviceConfig& config);

// Conv, optionally + inference BatchNormalization (folded into the weights),
// optionally + one activation.
std::string conv_group_supports(const Chain& chain);
std::unique_ptr<sdk::Kernel> create_conv_group(const Chain& chain,
                                               const DeviceConfig& config);

}  // namespace onyx::onednn
