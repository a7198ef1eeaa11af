// graph_optimizer.h: provider-neutral rewrites of a graph before it is
// partitioned. Each keeps the graph's meaning (up to float rounding where
// stated) and removes work every provider would otherwise do:
//   - Constant nodes become initializers, so that no provider has to claim
//     them and a fused group never waits on a node that has not run;
//   - (level kAll) nodes whose outputs shape inference folded from the
//     declared input shapes (Shape -> Gather -> Concat chains) become
//     initializers too; sound because a run refuses inputs whose shape
//     disagrees with a declared fixed dim;
//   - Identity, Cast to the same type and inference-mode Dropout are
//     bypassed where their output is not a graph output;
//   - an inference-mode BatchNormalization after a Conv whose weights are
//     constant is folded into the Conv's weights and bias (computed in
//     float64, rounded once);
//   - QDQ groups (DequantizeLinear -> float op -> QuantizeLinear) become the
//     operator-form quantized node (QLinearConv, QLinearMatMul, com.microsoft
//     QGemm, QLinearAdd, ...; qdq_fusion.cpp), but only where a provider of
//     the session claims that node (`ProviderRank`): no provider should have
//     to recognize the pattern, and none should be handed a node it cannot run;
//   - the op-by-op forms exporters write for LayerNorm, GELU and SiLU / Swish
//     become one LayerNormalization / Gelu / Swish node (layer_norm_fusion.cpp,
//     gelu_fusion.cpp, swish_fusion.cpp), again only where a provider claims
//     the result;
//   - multi-head attention written op by op (head split, scaled Q K^T,
//     Softmax, P V, head merge) becomes one com.microsoft
//     MultiHeadAttention (attention_fusion.cpp), where a provider claims it;
//   - a MatMul, its constant bias Add and an activation become one ai.onyx
//     MatMulBias (matmul_bias_fusion.cpp), where a provider claims it;
//   - Relu's gradient as autodiff writes it, Where(Greater(X, 0), dY, 0),
//     becomes one ai.onyx ReluGrad (relu_grad_fusion.cpp), the same way;
//   - BatchNormalization's scale and bias gradients as autodiff writes them,
//     ReduceSum(Mul(dY, Sub(X, mean))) and ReduceSum(dY) over all axes but
//     the channels, become one ai.onyx BatchNormGradSums
//     (batchnorm_grad_fusion.cpp), the same way;
//   - an activation after a Conv or Gemm, or a Relu after an inference-mode
//     BatchNormalization, becomes one FusedConv / FusedGemm / ai.onyx
//     FusedBatchNormalization node (activation_fusion.cpp), the same way;
//   - a Conv or FusedConv and the 2 x 2, stride-2 MaxPool after it become
//     one ai.onyx FusedConvMaxPool (conv_pool_fusion.cpp), the same way;
//   - nodes whose outputs nothing reads are removed, then unused values.
// Values read by name from a subgraph (If/Loop/Scan bodies) and graph
// outputs are never renamed or removed.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "core/status.h"
#include "ir/graph.h"

namespace onyx::runtime {

enum class GraphOptimization {
  kOff,    // the graph runs as written
  kBasic,  // rewrites that hold for any input shape
  kAll,    // kBasic plus values folded from the declared input shapes
};

struct OptimizationReport {
  int constants_hoisted = 0;  // nodes replaced by initializers
  int nodes_bypassed = 0;     // Identity, no-op Cast, inference Dropout
  int batchnorms_folded = 0;
  int relu_grads_reordered = 0;  // a Relu's gradient mask moved past a MaxPool's, onto the pooled tensor
  int channel_sums_reused = 0;   // per-channel sums of a scaled gradient taken from its plain sum
  int nodes_removed = 0;      // unread nodes
  int qdq_groups_fused = 0;   // QDQ groups rewritten into operator form
  std::map<std::string, int> qdq_fused_ops;  // per operator-form op ("QLinearConv", ...)
  int patterns_fused = 0;                    // op-by-op groups rewritten into one fused node
  std::map<std::string, int> fused_patterns;  // per fused op ("LayerNormalization", "Gelu", ...)
  int nodes_channels_last = 0;  // quantized nodes rewritten to read and write channels-last layout
};

// Asks the session's providers about a node the optimizer would create:
// `node` reads and writes values of `graph` (it need not be in graph.nodes).
// Returns the position, in the session's priority order, of the first
// provider that would claim it, or -1 when none would. Rewrites that only
// pay off when some provider runs the result (QDQ fusion) are skipped
// without one.
using ProviderRank = std::function<int(const ir::Graph& graph, const ir::Node& node)>;

// Rewrites `graph` in place (not its subgraphs: each control-flow child
// session optimizes its own copy). Fails only on a graph that is already
// malformed (a node reading a value index out of range).
// `providers` is empty where no session is known (QDQ groups then stay).
Status optimize_graph(ir::Graph& graph, GraphOptimization level, OptimizationReport* report = nullptr,
                      const ProviderRank& providers = {});

}  // namespace onyx::runtime
