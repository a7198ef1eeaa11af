// graph_optimizer.cpp: the pass driver, constant hoisting, bypassing
// no-op nodes, dead-node removal and compaction (graph_optimizer.h).
#include "optimize/graph_optimizer.h"

#include <unordered_set>

#include "optimize/graph_rewrite.h"

namespace onyx::runtime {
namespace optimize {

namespace {

void collect_captured_names(const ir::Graph& g, std::unordered_set<std::string>& names) {
  for (int r : g.outer_refs)
    if (r >= 0 && size_t(r) < g.values.size()) names.insert(g.values[size_t(r)].name);
  for (const ir::Node& n : g.nodes)
    for (const ir::Attribute& a : n.attributes) {
      if (a.g) collect_captured_names(*a.g, names);
      for (const auto& sub : a.graphs)
        if (sub) collect_captured_names(*sub, names);
    }
}

bool has_subgraph(const ir::Node& n) {
  for (const ir::Attribute& a : n.attributes)
    if (a.g || !a.graphs.empty()) return true;
  return false;
}

bool is_onnx(const ir::Node& n, const char* op) { return n.domain.empty() && n.op_type == op; }

}  // namespace

GraphRewrite::GraphRewrite(ir::Graph& g)
    : graph(g), readers(g.values.size(), 0), pinned(g.values.size(), false), removed(g.nodes.size(), false) {
  for (const ir::Node& n : g.nodes)
    for (int v : n.inputs)
      if (v >= 0) ++readers[size_t(v)];
  for (int v : g.outputs) pinned[size_t(v)] = true;
  // Subgraphs bind enclosing values by name (ir/graph.h): keep those names.
  std::unordered_set<std::string> captured;
  for (const ir::Node& n : g.nodes)
    for (const ir::Attribute& a : n.attributes) {
      if (a.g) collect_captured_names(*a.g, captured);
      for (const auto& sub : a.graphs)
        if (sub) collect_captured_names(*sub, captured);
    }
  for (size_t v = 0; v < g.values.size(); ++v)
    if (captured.count(g.values[v].name)) pinned[v] = true;
}

void GraphRewrite::replace_uses(int from, int to) {
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (removed[n]) continue;
    for (int& v : graph.nodes[n].inputs)
      if (v == from) {
        v = to;
        --readers[size_t(from)];
        ++readers[size_t(to)];
      }
  }
}

void GraphRewrite::remove_node(int n) {
  removed[size_t(n)] = true;
  for (int v : graph.nodes[size_t(n)].inputs)
    if (v >= 0) --readers[size_t(v)];
  for (int v : graph.nodes[size_t(n)].outputs)
    if (v >= 0 && graph.values[size_t(v)].producer == n) graph.values[size_t(v)].producer = -1;
}

int GraphRewrite::only_reader(int v) const {
  if (readers[size_t(v)] != 1) return -1;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (removed[n]) continue;
    for (int in : graph.nodes[n].inputs)
      if (in == v) return int(n);
  }
  return -1;
}

const Tensor* GraphRewrite::fixed_constant(int v) const {
  if (v < 0) return nullptr;
  const ir::Value& value = graph.values[size_t(v)];
  if (!value.constant || value.producer >= 0 || value.is_graph_input) return nullptr;
  return &*value.constant;
}

namespace {

std::string unused_name(const ir::Graph& g, const std::string& base) {
  std::string name = base;
  for (int k = 1; g.find_value(name) >= 0; ++k) name = base + "_" + std::to_string(k);
  return name;
}

}  // namespace

int add_initializer(GraphRewrite& rw, const std::string& base, Tensor t) {
  ir::Value v;
  v.name = unused_name(rw.graph, base);
  v.dtype = t.dtype();
  v.rank = int32_t(t.shape().size());
  v.dims = t.shape();
  v.constant = std::move(t);
  const int index = rw.graph.add_value(std::move(v));
  rw.readers.push_back(0);
  rw.pinned.push_back(false);
  return index;
}

int add_value(GraphRewrite& rw, const std::string& base, int32_t dtype, Shape dims) {
  ir::Value v;
  v.name = unused_name(rw.graph, base);
  v.dtype = dtype;
  v.rank = int32_t(dims.size());
  v.dims = std::move(dims);
  const int index = rw.graph.add_value(std::move(v));
  rw.readers.push_back(0);
  rw.pinned.push_back(false);
  return index;
}

namespace {

// The tensor a Constant node holds, when it is a plain tensor attribute
// (value, value_float(s), value_int(s); sparse_value was densified on import)
// or shape inference already materialized it.
const Tensor* constant_node_value(const ir::Graph& g, const ir::Node& n) {
  const ir::Value& out = g.values[size_t(n.outputs[0])];
  if (out.constant) return &*out.constant;
  if (n.attributes.size() == 1 && n.attributes[0].type == ONYX_ATTR_TENSOR && !n.attributes[0].t.empty())
    return &n.attributes[0].t;
  return nullptr;
}

void make_initializer(ir::Value& v, const Tensor& t) {
  v.constant = t;
  v.producer = -1;
  v.kind = ir::ValueKind::kTensor;
  v.dtype = t.dtype();
  v.rank = int32_t(t.shape().size());
  v.dims = t.shape();
}

int hoist_constants(GraphRewrite& rw, GraphOptimization level) {
  ir::Graph& g = rw.graph;
  int hoisted = 0;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const ir::Node& node = g.nodes[n];
    if (rw.removed[n] || node.outputs.empty() || has_subgraph(node)) continue;
    bool visible = false;  // a graph output keeps its producer
    for (int v : node.outputs) visible = visible || (v >= 0 && g.values[size_t(v)].is_graph_output);
    if (visible) continue;
    if (is_onnx(node, "Constant")) {
      if (node.outputs[0] < 0) continue;
      const Tensor* t = constant_node_value(g, node);
      if (!t) continue;
      Tensor value = *t;
      rw.remove_node(int(n));
      make_initializer(g.values[size_t(node.outputs[0])], value);
      ++hoisted;
      continue;
    }
    if (level != GraphOptimization::kAll) continue;
    bool folded = true;
    for (int v : node.outputs) folded = folded && (v < 0 || g.values[size_t(v)].constant.has_value());
    if (!folded) continue;
    rw.remove_node(int(n));
    for (int v : node.outputs)
      if (v >= 0) make_initializer(g.values[size_t(v)], *g.values[size_t(v)].constant);
    ++hoisted;
  }
  return hoisted;
}

// Whether `node` passes its first input through unchanged.
bool is_pass_through(const GraphRewrite& rw, const ir::Node& node) {
  const ir::Graph& g = rw.graph;
  if (node.inputs.empty() || node.inputs[0] < 0 || node.outputs.empty() || node.outputs[0] < 0) return false;
  if (is_onnx(node, "Identity")) return node.inputs.size() == 1;
  if (is_onnx(node, "Cast")) {
    const int32_t from = g.values[size_t(node.inputs[0])].dtype;
    return from != ONYX_DTYPE_UNDEFINED && node.attr_int("to", ONYX_DTYPE_UNDEFINED) == from &&
           g.values[size_t(node.outputs[0])].dtype == from;
  }
  if (is_onnx(node, "Dropout")) {
    // Before opset 7 Dropout trained unless is_test=1; from 12 the
    // training_mode input decides (absent: inference).
    if (g.opset("") < 7) return false;
    if (node.outputs.size() > 1 && node.outputs[1] >= 0 &&
        (rw.readers[size_t(node.outputs[1])] > 0 || rw.pinned[size_t(node.outputs[1])]))
      return false;  // the mask is read
    if (node.inputs.size() > 2 && node.inputs[2] >= 0) {
      const Tensor* mode = rw.fixed_constant(node.inputs[2]);
      return mode && mode->dtype() == ONYX_DTYPE_BOOL && mode->size() == 1 && !*mode->data_as<uint8_t>();
    }
    return true;
  }
  return false;
}

// Every pass-through node's output is forwarded to its input in one sweep
// (chains resolved at once), so a chain of N Identity nodes costs O(N).
int bypass_pass_through(GraphRewrite& rw) {
  ir::Graph& g = rw.graph;
  std::vector<int> forward(g.values.size(), -1);
  std::vector<int> bypassed;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (rw.removed[n] || !is_pass_through(rw, g.nodes[n])) continue;
    const int out = g.nodes[n].outputs[0];
    if (rw.pinned[size_t(out)]) continue;
    forward[size_t(out)] = g.nodes[n].inputs[0];
    bypassed.push_back(int(n));
  }
  if (bypassed.empty()) return 0;
  auto resolve = [&](int v) {
    int root = v;
    while (root >= 0 && forward[size_t(root)] >= 0) root = forward[size_t(root)];
    while (v >= 0 && forward[size_t(v)] >= 0) {  // path compression
      const int next = forward[size_t(v)];
      forward[size_t(v)] = root;
      v = next;
    }
    return root;
  };
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (rw.removed[n]) continue;
    for (int& v : g.nodes[n].inputs)
      if (v >= 0 && forward[size_t(v)] >= 0) {
        const int to = resolve(v);
        --rw.readers[size_t(v)];
        ++rw.readers[size_t(to)];
        v = to;
      }
  }
  for (int n : bypassed) rw.remove_node(n);
  return int(bypassed.size());
}

// Removes nodes none of whose outputs is read, then the producers that this
// leaves unread (a worklist: linear in the graph).
int remove_unread_nodes(GraphRewrite& rw) {
  ir::Graph& g = rw.graph;
  std::vector<int> producer(g.values.size(), -1);
  for (size_t n = 0; n < g.nodes.size(); ++n)
    if (!rw.removed[n])
      for (int v : g.nodes[n].outputs)
        if (v >= 0) producer[size_t(v)] = int(n);
  auto unread = [&](size_t n) {
    for (int v : g.nodes[n].outputs)
      if (v >= 0 && (rw.readers[size_t(v)] > 0 || rw.pinned[size_t(v)])) return false;
    return true;
  };
  std::vector<int> work;
  for (size_t n = g.nodes.size(); n-- > 0;)
    if (!rw.removed[n] && unread(n)) work.push_back(int(n));
  int count = 0;
  while (!work.empty()) {
    const int n = work.back();
    work.pop_back();
    if (rw.removed[size_t(n)] || !unread(size_t(n))) continue;
    rw.remove_node(n);
    ++count;
    for (int v : g.nodes[size_t(n)].inputs)
      if (v >= 0 && rw.readers[size_t(v)] == 0 && producer[size_t(v)] >= 0 && !rw.removed[size_t(producer[size_t(v)])])
        work.push_back(producer[size_t(v)]);
  }
  return count;
}

// Drops removed nodes and the values nothing refers to any more, renumbering
// the rest.
void compact(GraphRewrite& rw) {
  ir::Graph& g = rw.graph;
  std::vector<bool> keep(g.values.size(), false);
  auto mark = [&](int v) {
    if (v >= 0) keep[size_t(v)] = true;
  };
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (rw.removed[n]) continue;
    for (int v : g.nodes[n].inputs) mark(v);
    for (int v : g.nodes[n].outputs) mark(v);
  }
  for (int v : g.inputs) mark(v);
  for (int v : g.outputs) mark(v);
  for (int v : g.outer_refs) mark(v);
  for (size_t v = 0; v < g.values.size(); ++v)
    if (rw.pinned[v]) keep[v] = true;

  // In place: a second array of values or nodes would double the graph's
  // memory at its peak (a million-node model).
  std::vector<int> remap(g.values.size(), -1);
  size_t kept = 0;
  for (size_t v = 0; v < g.values.size(); ++v)
    if (keep[v]) {
      remap[v] = int(kept);
      if (kept != v) g.values[kept] = std::move(g.values[v]);
      ++kept;
    }
  g.values.resize(kept);
  auto renumber = [&](std::vector<int>& list) {
    for (int& v : list)
      if (v >= 0) v = remap[size_t(v)];
  };
  kept = 0;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (rw.removed[n]) continue;
    if (kept != n) g.nodes[kept] = std::move(g.nodes[n]);
    renumber(g.nodes[kept].inputs);
    renumber(g.nodes[kept].outputs);
    ++kept;
  }
  g.nodes.resize(kept);
  renumber(g.inputs);
  renumber(g.outputs);
  renumber(g.outer_refs);
  g.link_producers();
}

}  // namespace
}  // namespace optimize

Status optimize_graph(ir::Graph& graph, GraphOptimization level, OptimizationReport* report,
                      const ProviderRank& providers) {
  OptimizationReport local;
  OptimizationReport& r = report ? *report : local;
  if (level == GraphOptimization::kOff) return Status();
  for (const ir::Node& n : graph.nodes)
    for (int v : n.inputs)
      if (v >= int(graph.values.size())) return invalid_argument(n.describe() + ": input index out of range");
  graph.link_producers();
  optimize::GraphRewrite rw(graph);
  r.constants_hoisted += optimize::hoist_constants(rw, level);
  r.nodes_bypassed += optimize::bypass_pass_through(rw);
  r.batchnorms_folded += optimize::fold_batchnorms(rw);
  r.relu_grads_reordered += optimize::reorder_relu_grads_past_max_pools(rw);  // before fuse_relu_grads
  r.channel_sums_reused += optimize::reuse_channel_sums(rw);                  // before fuse_batchnorm_grads
  // After hoisting (QDQ scales are often Constant nodes) and before dead
  // nodes go (a DequantizeLinear left without readers is removed then).
  if (providers) optimize::fuse_qdq_groups(rw, providers, r);
  if (providers) {
    auto count = [&r](const char* op, int n) {
      r.patterns_fused += n;
      if (n) r.fused_patterns[op] += n;
    };
    count("LayerNormalization", optimize::fuse_layer_norms(rw, providers));
    count("Gelu", optimize::fuse_gelus(rw, providers));
    count("Swish", optimize::fuse_swishes(rw, providers));
    count("MultiHeadAttention", optimize::fuse_attention(rw, providers));
    count("MatMulBias", optimize::fuse_matmul_biases(rw, providers));  // after fuse_gelus
    count("packed QKV", optimize::pack_qkv_projections(rw, providers));  // after the two above
    count("ReluGrad", optimize::fuse_relu_grads(rw, providers));
    count("BatchNormGradSums", optimize::fuse_batchnorm_grads(rw, providers));
    count("DynamicQuantizeMatMul", optimize::fuse_dynamic_quantized_matmuls(rw, providers));
    const optimize::ActivationFusions activations = optimize::fuse_activations(rw, providers);
    count("FusedConv", activations.conv);
    count("FusedGemm", activations.gemm);
    count("FusedBatchNormalization", activations.batch_norm);
    count("FusedConvMaxPool", optimize::fuse_conv_pools(rw, providers));  // after fuse_activations
    // After QDQ fusion: the quantized convolutions it makes are what goes channels-last.
    r.nodes_channels_last += optimize::use_channels_last(rw, providers);
  }
  // After the fusions, which take the DequantizeLinear nodes of the groups they rewrite.
  if (level == GraphOptimization::kAll) r.constants_hoisted += optimize::fold_weight_dequantize(rw);
  r.nodes_removed += optimize::remove_unread_nodes(rw);
  optimize::compact(rw);
  return Status();
}

}  // namespace onyx::runtime
