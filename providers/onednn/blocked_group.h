// blocked_group.h: fused groups that keep activations in oneDNN's blocked
// layouts (nChw8c on AVX2, nChw16c on AVX-512).
//
// Why: handed plain NCHW memory, oneDNN takes its slow paths (pooling's
// simple_nchw, convolution as im2col + GEMM) or reorders around every
// primitive. A group here is a connected, convex run of claimed Conv
// (constant weights), BatchNormalization (folded into its Conv), pooling,
// activation and same-shape Add nodes: the kernel creates each primitive
// with format_tag::any, passes oneDNN's chosen layouts from primitive to
// primitive in a private arena, and reorders only the group's inputs and
// outputs. Convolution weights are reordered once per shape into the layout
// the primitive wants; primitives are created once per input shapes.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "ops.h"

namespace onyx::onednn {

// Producers and readers of a graph view's values.
struct GraphLinks {
  explicit GraphLinks(const OnyxGraphView& g);
  // True when `value` is read by exactly one node and is not a graph output.
  bool sole_reader(const OnyxGraphView& g, int32_t value) const;
  std::vector<int32_t> producer;                 // per value: its node, -1 for none
  std::vector<std::vector<uint32_t>> readers;    // per value: reading nodes (once per input)
};

// "" when claimed node `n` may be a member of a blocked group.
std::string blocked_member_reason(const OnyxGraphView& g, const GraphLinks& links, uint32_t n);

// The blocked groups of the claimed nodes, each in topological order, with
// at least two members; convex, and no value passed between members is read
// outside the group (the host's rules for fused groups).
std::vector<std::vector<uint32_t>> blocked_groups(const OnyxGraphView& g, std::span<const OnyxNodeClaim> claims);

// The kernel of one such group (nodes in topological order).
sdk::KernelResult create_blocked_group(const OnyxGraphView& g, std::span<const uint32_t> nodes,
                                       const DeviceConfig& config);

}  // namespace onyx::onednn
