// graph_rewrite.h: the bookkeeping the optimizer's passes share (internal to
// runtime/optimize).
#pragma once

#include <vector>

#include "ir/graph.h"
#include "optimize/graph_optimizer.h"

namespace onyx::runtime::optimize {

struct GraphRewrite {
  explicit GraphRewrite(ir::Graph& g);

  ir::Graph& graph;
  std::vector<int> readers;   // per value: how many node inputs read it
  std::vector<bool> pinned;   // graph outputs and values a subgraph reads by name
  std::vector<bool> removed;  // per node

  // Every node input reading `from` reads `to` instead.
  void replace_uses(int from, int to);
  // Drops node `n` (its outputs lose their producer).
  void remove_node(int n);
  // The single live node reading `v`, or -1.
  int only_reader(int v) const;
  // An initializer nobody may override: constant, produced by no node, not a
  // graph input.
  const Tensor* fixed_constant(int v) const;
};

// batchnorm_folding.cpp: BatchNormalization (inference) after a Conv with
// constant weights, folded into them; returns how many.
int fold_batchnorms(GraphRewrite& rw);

// qdq_fusion.cpp: QDQ groups rewritten into operator-form quantized nodes
// that a provider claims (ranked no worse than the float op they replace);
// counts go to `report`.
void fuse_qdq_groups(GraphRewrite& rw, const ProviderRank& providers, OptimizationReport& report);

// layer_norm_fusion.cpp: decomposed LayerNorm -> LayerNormalization;
// gelu_fusion.cpp: erf / tanh GELU -> Gelu (or com.microsoft Gelu, FastGelu);
// swish_fusion.cpp: x * Sigmoid(alpha x) -> Swish (or com.microsoft QuickGelu).
// Each fuses only where a provider claims the fused node (pattern_match.h)
// and returns how many groups it fused.
int fuse_layer_norms(GraphRewrite& rw, const ProviderRank& providers);
int fuse_gelus(GraphRewrite& rw, const ProviderRank& providers);
int fuse_swishes(GraphRewrite& rw, const ProviderRank& providers);
// attention_fusion.cpp: head split, scaled Q K^T, Softmax, P V and head
// merge -> com.microsoft MultiHeadAttention.
int fuse_attention(GraphRewrite& rw, const ProviderRank& providers);
// matmul_bias_fusion.cpp: MatMul -> Add of a constant bias (-> Relu | Gelu
// | FastGelu) -> ai.onyx MatMulBias.
int fuse_matmul_biases(GraphRewrite& rw, const ProviderRank& providers);
// qkv_packing.cpp: the Q, K and V projections (MatMulBias or MatMul) of one
// input into a MultiHeadAttention -> one product with the weights side by
// side per head, a Reshape to [B, S, H, 3, d] and the attention on packed
// QKV. Returns how many.
int pack_qkv_projections(GraphRewrite& rw, const ProviderRank& providers);
// relu_grad_fusion.cpp: Where(Greater(X, 0), dY, 0) -> ai.onyx ReluGrad(dY, X).
int fuse_relu_grads(GraphRewrite& rw, const ProviderRank& providers);
// relu_grad_reorder.cpp: Where(Greater(R, 0), MaxPoolGrad(dP, R), 0) ->
// MaxPoolGrad(Where(Greater(P, 0), dP, 0), R) where P = MaxPool(R): the
// Relu's mask on the pooled tensor. Returns how many.
int reorder_relu_grads_past_max_pools(GraphRewrite& rw);
// batchnorm_grad_fusion.cpp: ReduceSum(Mul(dY, Sub(X, mean))) over all axes
// but the channels (and ReduceSum(dY) over them) -> ai.onyx
// BatchNormGradSums(dY, X, mean).
int fuse_batchnorm_grads(GraphRewrite& rw, const ProviderRank& providers);
// batchnorm_grad_fusion.cpp too: ReduceSum(Mul(G, Unsqueeze(k))) over every
// axis but the channels, where the graph also sums G over them, ->
// Mul(that sum, k) (a bias gradient below BatchNormalization). Standard
// ops; returns how many.
int reuse_channel_sums(GraphRewrite& rw);
// dynamic_quantize_fusion.cpp: DynamicQuantizeLinear -> MatMulInteger ->
// Cast -> Mul (-> Add) -> com.microsoft DynamicQuantizeMatMul.
int fuse_dynamic_quantized_matmuls(GraphRewrite& rw, const ProviderRank& providers);
// activation_fusion.cpp: Conv -> Relu / LeakyRelu / Clip (after
// BatchNormalization folding) -> com.microsoft FusedConv; Gemm -> Relu ->
// com.microsoft FusedGemm. Returns the number of each made.
struct ActivationFusions {
  int conv = 0, gemm = 0, batch_norm = 0;
};
ActivationFusions fuse_activations(GraphRewrite& rw, const ProviderRank& providers);
// conv_pool_fusion.cpp: Conv | FusedConv -> MaxPool 2 x 2, stride 2 ->
// ai.onyx FusedConvMaxPool (after fuse_activations); returns how many.
int fuse_conv_pools(GraphRewrite& rw, const ProviderRank& providers);

// channels_last.cpp: QLinearConv (and the quantized elementwise nodes and
// global pooling between convolutions) rewritten to com.microsoft's
// channels_last = 1 forms where a provider claims them; Transposes at the
// edges. Returns how many nodes now run channels-last.
int use_channels_last(GraphRewrite& rw, const ProviderRank& providers);

// weight_dequantize_folding.cpp: DequantizeLinear of constant weights (a
// result of at most 16 MiB) replaced by its float32 value; returns how many.
int fold_weight_dequantize(GraphRewrite& rw);

// A new initializer named after `base` (made unique); returns its index.
int add_initializer(GraphRewrite& rw, const std::string& base, Tensor t);
// A new value a node will write, named after `base` (made unique), of that
// type and shape (-1: an unknown dim); returns its index.
int add_value(GraphRewrite& rw, const std::string& base, int32_t dtype, Shape dims);

}  // namespace onyx::runtime::optimize
