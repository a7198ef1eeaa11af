// pattern_match.cpp: helpers of the pattern fusions (pattern_match.h).
#include "optimize/pattern_match.h"

#include <algorithm>
#include <cmath>

namespace onyx::runtime::optimize {

int producer_of(const GraphRewrite& rw, int v, const char* op) {
  if (v < 0) return -1;
  const int p = rw.graph.values[size_t(v)].producer;
  if (p < 0 || rw.removed[size_t(p)]) return -1;
  const ir::Node& n = rw.graph.nodes[size_t(p)];
  if (!n.domain.empty() || n.op_type != op || n.outputs.size() != 1 || n.outputs[0] != v) return -1;
  return p;
}

bool internal(const GraphRewrite& rw, int v, int uses) {
  return v >= 0 && !rw.pinned[size_t(v)] && rw.readers[size_t(v)] == uses;
}

std::optional<double> scalar_constant(const GraphRewrite& rw, int v) {
  const Tensor* t = rw.fixed_constant(v);
  if (!t || t->size() != 1) return std::nullopt;
  if (t->dtype() == ONYX_DTYPE_FLOAT32) return double(*t->data_as<float>());
  if (t->dtype() == ONYX_DTYPE_FLOAT64) return *t->data_as<double>();
  return std::nullopt;
}

bool is_zero(const GraphRewrite& rw, int v, int32_t rank) {
  const Tensor* t = rw.fixed_constant(v);
  return t && rank >= 0 && int32_t(t->shape().size()) <= rank && scalar_constant(rw, v) == 0.0;
}

std::vector<int64_t> reduced_axes(const GraphRewrite& rw, const ir::Node& n, int32_t rank, bool keepdims) {
  if (n.attr_int("keepdims", 1) != (keepdims ? 1 : 0)) return {};
  std::vector<int64_t> axes;
  if (const ir::Attribute* a = n.attr("axes")) {
    axes = a->ints;
  } else if (n.inputs.size() > 1 && n.inputs[1] >= 0) {
    const Tensor* t = rw.fixed_constant(n.inputs[1]);
    if (!t || t->dtype() != ONYX_DTYPE_INT64) return {};
    axes.assign(t->data_as<int64_t>(), t->data_as<int64_t>() + t->size());
  }
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) return {};
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

bool near(std::optional<double> x, double want, double tol) {
  return x && std::fabs(*x - want) <= tol * std::fabs(want);
}

SoleReaders::SoleReaders(const GraphRewrite& rw) : rw_(rw), reader_(rw.graph.values.size(), -1) {
  for (size_t n = 0; n < rw.graph.nodes.size(); ++n)
    if (!rw.removed[n])
      for (int v : rw.graph.nodes[n].inputs)
        if (v >= 0 && size_t(v) < reader_.size()) reader_[size_t(v)] = int(n);
}

int SoleReaders::of(int v) const {
  if (v < 0 || rw_.readers[size_t(v)] != 1) return -1;
  if (size_t(v) < reader_.size()) {
    const int n = reader_[size_t(v)];
    if (n >= 0 && !rw_.removed[size_t(n)]) {
      const auto& in = rw_.graph.nodes[size_t(n)].inputs;
      if (std::find(in.begin(), in.end(), v) != in.end()) return n;
    }
  }
  return rw_.only_reader(v);
}

int other_input(const ir::Node& n, int v) {
  if (n.inputs.size() != 2) return -1;
  if (n.inputs[0] == v) return n.inputs[1];
  if (n.inputs[1] == v) return n.inputs[0];
  return -1;
}

bool claimed_in_place(const GraphRewrite& rw, const ProviderRank& providers, const ir::Node& fused,
                      const std::vector<int>& group) {
  if (!providers) return false;
  const int rank = providers(rw.graph, fused);
  if (rank < 0) return false;
  for (int n : group) {
    const int original = providers(rw.graph, rw.graph.nodes[size_t(n)]);
    if (original >= 0 && rank > original) return false;
  }
  return true;
}

namespace {

// Puts `node` into the removed slot `slot`, as the producer of its outputs.
void place(GraphRewrite& rw, int slot, ir::Node node) {
  rw.removed[size_t(slot)] = false;
  if (!node.domain.empty()) rw.graph.opsets.emplace(node.domain, 1);
  for (int v : node.inputs)
    if (v >= 0) ++rw.readers[size_t(v)];
  for (int v : node.outputs)
    if (v >= 0) rw.graph.values[size_t(v)].producer = slot;
  rw.graph.nodes[size_t(slot)] = std::move(node);
}

}  // namespace

void commit_fusion(GraphRewrite& rw, const std::vector<int>& group, ir::Node fused) {
  for (int n : group) rw.remove_node(n);
  place(rw, group.back(), std::move(fused));
}

void commit_fusion(GraphRewrite& rw, const std::vector<int>& group, std::vector<ir::Node> fused) {
  std::vector<int> slots = group;
  std::sort(slots.begin(), slots.end());
  for (int n : group) rw.remove_node(n);
  slots.erase(slots.begin(), slots.end() - std::ptrdiff_t(fused.size()));
  for (size_t i = 0; i < fused.size(); ++i) place(rw, slots[i], std::move(fused[i]));
}

ir::Attribute int_attribute(const char* name, int64_t v) {
  ir::Attribute a;
  a.name = name;
  a.type = ONYX_ATTR_INT;
  a.i = v;
  return a;
}

ir::Attribute float_attribute(const char* name, float v) {
  ir::Attribute a;
  a.name = name;
  a.type = ONYX_ATTR_FLOAT;
  a.f = v;
  return a;
}

ir::Attribute string_attribute(const char* name, const char* v) {
  ir::Attribute a;
  a.name = name;
  a.type = ONYX_ATTR_STRING;
  a.s = v;
  return a;
}

}  // namespace onyx::runtime::optimize
