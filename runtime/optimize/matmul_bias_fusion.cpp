// matmul_bias_fusion.cpp: a MatMul, the Add of a constant bias over its last
// axis and, optionally, an activation of the sum and a residual Add after it,
//   Y = act(MatMul(A, B) + bias) + R     act: Relu, Gelu (erf), FastGelu (tanh)
// become one ai.onyx MatMulBias(A, B, bias[, R]) with attribute activation
// ("" for none), where a provider claims it. The provider adds the bias,
// applies the activation and adds R to each block of Y while the block is
// in cache: a transformer's projections and feed-forward layers otherwise
// make a pass over memory per op (at batch 64 the bias Adds, the GELU and
// the residual Adds of one encoder block cost the CPU more than its
// attention). R: float32, of the product's rank (it may broadcast to it).
// float32; A of rank >= 2, B a matrix; the bias a constant of B's width N,
// [N] or [1, ..., 1, N] and of no higher rank than the product. The product
// and the sum must have no other reader (a training graph's pre-activation,
// read by its gradient, keeps the activation out). Runs after gelu_fusion, so
// that an op-by-op GELU is one node by then.
#include <cstring>

#include "optimize/pattern_match.h"

namespace onyx::runtime::optimize {
namespace {

// The MatMulBias activation node `n` computes, or nullptr.
const char* activation_of(const ir::Node& n) {
  if (n.inputs.size() != 1 || n.outputs.size() != 1) return nullptr;
  if (n.domain.empty()) {
    if (n.op_type == "Relu") return "Relu";
    if (n.op_type != "Gelu") return nullptr;
    const ir::Attribute* mode = n.attr("approximate");
    if (!mode || mode->s == "none") return "Gelu";
    return mode->s == "tanh" ? "FastGelu" : nullptr;
  }
  if (n.domain == "com.microsoft" && (n.op_type == "Gelu" || n.op_type == "FastGelu"))
    return n.op_type == "Gelu" ? "Gelu" : "FastGelu";
  return nullptr;
}

// The bias the Add `add` adds to `product` (of B's width n and rank
// `rank`), as a 1-D constant value: the Add's own or a reshaped copy; -1 when
// the Add is not such a bias.
int bias_of(GraphRewrite& rw, const ir::Node& add, int product, int64_t n, int32_t rank) {
  const int other = other_input(add, product);
  const Tensor* t = other >= 0 && other != product ? rw.fixed_constant(other) : nullptr;
  if (!t || t->dtype() != ONYX_DTYPE_FLOAT32 || t->shape().empty() || int32_t(t->shape().size()) > rank)
    return -1;
  const Shape& d = t->shape();
  for (size_t i = 0; i + 1 < d.size(); ++i)
    if (d[i] != 1) return -1;
  if (d.back() != n) return -1;
  if (d.size() == 1) return other;
  Tensor vector = Tensor::allocate(ONYX_DTYPE_FLOAT32, {n});
  std::memcpy(vector.data_as<float>(), t->data_as<float>(), size_t(n) * sizeof(float));
  return add_initializer(rw, rw.graph.values[size_t(other)].name + "_vector", std::move(vector));
}

// The residual the Add `add` adds to `value` (a float32 tensor of the
// product's `rank`, not `value` itself), or -1.
int residual_of(const GraphRewrite& rw, int add, int value, int32_t rank) {
  const ir::Node& n = rw.graph.nodes[size_t(add)];
  if (!n.domain.empty() || n.op_type != "Add" || n.outputs.size() != 1 || rw.removed[size_t(add)]) return -1;
  const int other = other_input(n, value);
  if (other < 0 || other == value) return -1;
  const ir::Value& r = rw.graph.values[size_t(other)];
  return r.dtype == ONYX_DTYPE_FLOAT32 && r.rank == rank ? other : -1;
}

bool fuse_at(GraphRewrite& rw, const SoleReaders& sole, const ProviderRank& providers, int mm) {
  ir::Graph& g = rw.graph;
  {
    const ir::Node& m = g.nodes[size_t(mm)];
    if (!m.domain.empty() || m.op_type != "MatMul" || m.inputs.size() != 2 || m.outputs.size() != 1) return false;
  }
  const int a = g.nodes[size_t(mm)].inputs[0], b = g.nodes[size_t(mm)].inputs[1];
  const int product = g.nodes[size_t(mm)].outputs[0];
  // Copies: bias_of may add a value, moving g.values.
  const ir::Value pv = g.values[size_t(product)];
  const ir::Value& bv = g.values[size_t(b)];
  if (pv.dtype != ONYX_DTYPE_FLOAT32 || pv.rank < 2 || g.values[size_t(a)].rank < 2 || bv.rank != 2 ||
      bv.dims[1] < 0 || !internal(rw, product) || g.opset("") < 7)
    return false;
  const int add = sole.of(product);
  if (add < 0 || !g.nodes[size_t(add)].domain.empty() || g.nodes[size_t(add)].op_type != "Add" ||
      g.nodes[size_t(add)].outputs.size() != 1)
    return false;
  const int bias = bias_of(rw, g.nodes[size_t(add)], product, bv.dims[1], pv.rank);
  if (bias < 0) return false;

  ir::Node fused;
  fused.name = (g.nodes[size_t(mm)].name.empty() ? pv.name : g.nodes[size_t(mm)].name) + "_bias";
  fused.op_type = "MatMulBias";
  fused.domain = "ai.onyx";
  fused.inputs = {a, b, bias};
  // The longest claimed form: with the activation after the sum when there
  // is one, then with a residual Add after that; else the MatMul and the Add.
  const int sum = g.nodes[size_t(add)].outputs[0];
  const int act = internal(rw, sum) ? sole.of(sum) : -1;
  const char* activation = act >= 0 && !rw.removed[size_t(act)] ? activation_of(g.nodes[size_t(act)]) : nullptr;
  std::vector<int> group = {mm, add};
  if (activation) group.push_back(act);
  fused.attributes.push_back(string_attribute("activation", activation ? activation : ""));
  if (activation) fused.name += std::string("_") + activation;
  const int end = g.nodes[size_t(group.back())].outputs[0];
  const int residual_add = internal(rw, end) ? sole.of(end) : -1;
  const int residual = residual_add >= 0 ? residual_of(rw, residual_add, end, pv.rank) : -1;
  for (bool with_residual : {true, false}) {
    if (with_residual && residual < 0) continue;
    ir::Node candidate = fused;
    std::vector<int> nodes = group;
    if (with_residual) {
      candidate.inputs.push_back(residual);
      candidate.name += "_residual";
      nodes.push_back(residual_add);
    }
    candidate.outputs = g.nodes[size_t(nodes.back())].outputs;
    if (claimed_in_place(rw, providers, candidate, nodes)) {
      commit_fusion(rw, nodes, std::move(candidate));
      return true;
    }
  }
  if (!activation) return false;
  // The activation's form unclaimed: the MatMul and the bias Add alone.
  fused.attributes.back() = string_attribute("activation", "");
  fused.name = fused.name.substr(0, fused.name.size() - std::strlen(activation) - 1);
  fused.outputs = {sum};
  if (!claimed_in_place(rw, providers, fused, {mm, add})) return false;
  commit_fusion(rw, {mm, add}, std::move(fused));
  return true;
}

}  // namespace

int fuse_matmul_biases(GraphRewrite& rw, const ProviderRank& providers) {
  const SoleReaders sole(rw);
  return fuse_each_node(rw, [&](int n) { return fuse_at(rw, sole, providers, n); });
}

}  // namespace onyx::runtime::optimize
