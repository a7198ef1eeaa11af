// ops.h: the ops this provider runs, and its fused groups.
//
// Each op family (matmul.cpp, conv.cpp, ...) adds OpDefs: a predicate that
// says "" when oneDNN can run the node exactly as ONNX defines it, or the
// reason it is declined, and a factory for the kernel. Claims follow the
// predicate only, so unclaimed nodes fall back per the session's policy.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dnnl_common.h"

namespace onyx::onednn {

struct OpDef {
  std::string op_type;
  int64_t since_version = 1;
  int64_t until_version = 1 << 30;
  std::function<std::string(const NodeInfo&)> supports;
  std::function<std::unique_ptr<sdk::Kernel>(const NodeInfo&, const DeviceConfig&)> create;
  std::string domain = "";  // "" for ai.onnx
};

void add_matmul_ops(std::vector<OpDef>& ops);
void add_conv_ops(std::vector<OpDef>& ops);
void add_pool_ops(std::vector<OpDef>& ops);
void add_norm_ops(std::vector<OpDef>& ops);
void add_softmax_ops(std::vector<OpDef>& ops);
void add_eltwise_ops(std::vector<OpDef>& ops);
void add_reduce_ops(std::vector<OpDef>& ops);
void add_binary_ops(std::vector<OpDef>& ops);
// Gradient ops of the autodiff (runtime/autodiff), domain ai.onyx.
void add_grad_ops(std::vector<OpDef>& ops);

// Every op, built once.
const std::vector<OpDef>& all_ops();
// The OpDef for a node, or nullptr with the reason in *reason.
const OpDef* find_op(const NodeInfo& node, std::string* reason);

// ---- fused groups ----------------------------------------------------------
// A group is a chain head -> [bias Add | BatchNormalization] -> [activation]
// where each intermediate value is read only by the next node of the chain.
struct ChainNode {
  NodeInfo info;
  int from_previous = -1;  // which input of this node the previous node feeds
};
using Chain = std::vector<ChainNode>;

// MatMul or Gemm, optionally + Add of a constant bias over the last axis,
// optionally + one activation.
std::string matmul_group_supports(const Chain& chain);
std::unique_ptr<sdk::Kernel> create_matmul_group(const Chain& chain,
                                                 const DeviceConfig& config);

// Conv, optionally + inference BatchNormalization (folded into the weights),
// optionally + one activation.
std::string conv_group_supports(const Chain& chain);
std::unique_ptr<sdk::Kernel> create_conv_group(const Chain& chain,
                                               const DeviceConfig& config);

}  // namespace onyx::onednn
