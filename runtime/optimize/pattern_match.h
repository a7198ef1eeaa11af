// pattern_match.h: what the pattern fusions (layer_norm_fusion.cpp,
// gelu_fusion.cpp, matmul_bias_fusion.cpp) share: walking from a value to
// the node that makes it, reading scalar constants, and replacing a matched
// group of nodes by one fused node that a provider claims. Internal to
// runtime/optimize.
#pragma once

#include <optional>
#include <vector>

#include "optimize/graph_rewrite.h"

namespace onyx::runtime::optimize {

// The live ai.onnx node of type `op` writing `v` as its only output, or -1.
int producer_of(const GraphRewrite& rw, int v, const char* op);

// A value only the pattern reads: not a graph output, not captured by a
// subgraph, read by exactly `uses` node inputs.
bool internal(const GraphRewrite& rw, int v, int uses = 1);

// The value of a one-element float32/float64 constant, or nothing.
std::optional<double> scalar_constant(const GraphRewrite& rw, int v);

// A constant holding one zero, of rank no higher than `rank` (known), so that
// it broadcasts against a rank-`rank` operand without changing its shape.
bool is_zero(const GraphRewrite& rw, int v, int32_t rank);

// The axes a reduction node (ReduceMean, ReduceSum, ...) reduces, as axes of
// a rank-`rank` input, sorted; empty when they are not a constant list (an
// attribute, or a fixed constant input) or its keepdims is not `keepdims`.
std::vector<int64_t> reduced_axes(const GraphRewrite& rw, const ir::Node& n, int32_t rank, bool keepdims);

// True when `x` is within a relative `tol` of `want`.
bool near(std::optional<double> x, double want, double tol = 1e-4);

// The one live node reading each value read once, looked up in O(1) (the
// rewrite's only_reader scans the graph; a pass asking about every node
// would be quadratic). Built once per pass; an entry a fusion made stale
// falls back to the scan.
class SoleReaders {
 public:
  explicit SoleReaders(const GraphRewrite& rw);
  int of(int v) const;  // as GraphRewrite::only_reader

 private:
  const GraphRewrite& rw_;
  std::vector<int> reader_;
};

// The other input of a two-input node, given one of them; -1 if `v` is not
// an input of it.
int other_input(const ir::Node& n, int v);

// Whether the session's providers claim `fused` no later, in priority order,
// than every node of the original group would run (ProviderRank): a fusion
// must not move work to a provider the application ranked lower. With no
// providers known, nothing is fused.
bool claimed_in_place(const GraphRewrite& rw, const ProviderRank& providers, const ir::Node& fused,
                      const std::vector<int>& group);

// Replaces the nodes of `group` by `fused`, which writes the group's output
// value(s) and takes the slot of the group's last node (`group.back()`), so
// that the node order stays topological. Registers a domain the fused node
// introduces (at version 1) in the graph's opsets.
void commit_fusion(GraphRewrite& rw, const std::vector<int>& group, ir::Node fused);
// The same for a group replaced by several nodes (no more than the group's),
// which take the slots of the group's last nodes in graph order, in the
// order given: each must read only values made before its slot or by the
// nodes before it.
void commit_fusion(GraphRewrite& rw, const std::vector<int>& group, std::vector<ir::Node> fused);

// Calls fuse_at(n) (true: it fused there) at every node n still live, in
// graph order; returns how many fused.
template <class FuseAt>
int fuse_each_node(const GraphRewrite& rw, FuseAt&& fuse_at) {
  int fused = 0;
  for (size_t n = 0; n < rw.graph.nodes.size(); ++n)
    if (!rw.removed[n] && fuse_at(int(n))) ++fused;
  return fused;
}

ir::Attribute int_attribute(const char* name, int64_t v);
ir::Attribute float_attribute(const char* name, float v);
ir::Attribute string_attribute(const char* name, const char* v);

}  // namespace onyx::runtime::optimize
