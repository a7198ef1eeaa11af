// conv_pool_fusion.cpp: a convolution and the 2 x 2 max pool of stride 2
// after it,
//   Conv | com.microsoft FusedConv -> MaxPool(kernel_shape [2, 2],
//                                             strides [2, 2], no pads)
// become one ai.onyx FusedConvMaxPool (the convolution's inputs and
// attributes, plus pool_size 2) where a provider claims it: the provider
// pools each image's convolution output while it is in cache, and the
// convolution's full-size output (4x the pooled one) never goes through
// memory. Runs after activation_fusion.cpp, so Conv -> Relu -> MaxPool
// fuses whole. float32; the MaxPool has no Indices output and the
// convolution's output no other reader (a training graph's MaxPoolGrad
// reads it, so training graphs keep them apart).
#include "optimize/pattern_match.h"

namespace onyx::runtime::optimize {
namespace {

// The live Conv or com.microsoft FusedConv writing `v` as its only output, or -1.
int convolution_of(const GraphRewrite& rw, int v) {
  const int p = rw.graph.values[size_t(v)].producer;
  if (p < 0 || rw.removed[size_t(p)]) return -1;
  const ir::Node& n = rw.graph.nodes[size_t(p)];
  const bool conv = n.domain.empty() && n.op_type == "Conv";
  const bool fused = n.domain == "com.microsoft" && n.op_type == "FusedConv";
  if (!(conv || fused) || n.outputs.size() != 1 || n.outputs[0] != v) return -1;
  return p;
}

// Whether ints attribute `name` of `n` is absent or every entry is `value`;
// `count`: the entries it must have when present (0: any).
bool all_equal(const ir::Node& n, const char* name, int64_t value, size_t count = 0) {
  const ir::Attribute* a = n.attr(name);
  if (!a) return true;
  if (count && a->ints.size() != count) return false;
  for (int64_t v : a->ints)
    if (v != value) return false;
  return true;
}

// A MaxPool over 2-D planes with 2 x 2 windows, stride 2, no padding,
// dilation or ceil mode, and no Indices output.
bool is_max_pool_2x2(const ir::Node& n) {
  if (!n.domain.empty() || n.op_type != "MaxPool" || n.inputs.size() != 1 || n.outputs.size() != 1) return false;
  const ir::Attribute *kernel = n.attr("kernel_shape"), *strides = n.attr("strides");
  if (!kernel || !strides || !all_equal(n, "kernel_shape", 2, 2) || !all_equal(n, "strides", 2, 2)) return false;
  const ir::Attribute *auto_pad = n.attr("auto_pad"), *ceil_mode = n.attr("ceil_mode");
  if (auto_pad && auto_pad->s != "NOTSET" && auto_pad->s != "VALID") return false;
  if (ceil_mode && ceil_mode->i != 0) return false;
  return all_equal(n, "pads", 0, 4) && all_equal(n, "dilations", 1, 2);
}

bool fuse_at(GraphRewrite& rw, const ProviderRank& providers, int pool) {
  ir::Graph& g = rw.graph;
  const ir::Node& p = g.nodes[size_t(pool)];
  if (!is_max_pool_2x2(p)) return false;
  const int v = p.inputs[0];
  const int c = v >= 0 ? convolution_of(rw, v) : -1;
  if (c < 0 || !internal(rw, v) || g.values[size_t(v)].dtype != ONYX_DTYPE_FLOAT32) return false;
  const ir::Node& conv = g.nodes[size_t(c)];
  if (conv.inputs.size() < 2 || conv.inputs.size() > 3) return false;  // FusedConv's Z: not this op's
  ir::Node fused;
  fused.name = (conv.name.empty() ? g.values[size_t(v)].name : conv.name) + "_MaxPool";
  fused.op_type = "FusedConvMaxPool";
  fused.domain = "ai.onyx";
  fused.inputs = conv.inputs;
  fused.outputs = p.outputs;
  fused.attributes = conv.attributes;  // FusedConv's activation and activation_params too
  fused.attributes.push_back(int_attribute("pool_size", 2));
  if (!claimed_in_place(rw, providers, fused, {c, pool})) return false;
  commit_fusion(rw, {c, pool}, std::move(fused));
  return true;
}

}  // namespace

int fuse_conv_pools(GraphRewrite& rw, const ProviderRank& providers) {
  return fuse_each_node(rw, [&](int n) { return fuse_at(rw, providers, n); });
}

}  // namespace onyx::runtime::optimize
