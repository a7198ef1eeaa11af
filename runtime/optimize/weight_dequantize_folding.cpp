// weight_dequantize_folding.cpp: DequantizeLinear of constant weights,
// dequantized once at session creation.
//
// QDQ fusion (qdq_fusion.cpp) takes the DequantizeLinear nodes of the groups
// it rewrites; one left over feeds a float op that runs in float (a QDQ
// model's classifier Gemm, whose output is not quantized again), and
// dequantized its constant weights on every run: MobileNetV2's 1280 x 1000
// classifier, about 0.5 ms of a 3.5 ms run. Such a node becomes a float32
// initializer, computed as the CPU provider computes it (float64 (x - zero
// point) * scale, rounded to float32). Only results of at most 16 MiB: a
// bigger one keeps its 8-bit copy, 4x smaller, and dequantizes per run.
#include "optimize/pattern_match.h"

namespace onyx::runtime::optimize {
namespace {

constexpr int64_t kMaxFoldedBytes = int64_t(16) << 20;

double element(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case ONYX_DTYPE_UINT8: return double(t.data_as<uint8_t>()[i]);
    case ONYX_DTYPE_INT8: return double(t.data_as<int8_t>()[i]);
    default: return double(t.data_as<int32_t>()[i]);
  }
}

bool foldable_type(int32_t dtype) {
  return dtype == ONYX_DTYPE_UINT8 || dtype == ONYX_DTYPE_INT8 || dtype == ONYX_DTYPE_INT32;
}

// The dequantized weights of node `n`, or nothing when it is not a plain
// per-tensor or per-axis DequantizeLinear of constants to float32.
std::optional<Tensor> dequantized(const GraphRewrite& rw, const ir::Node& n) {
  if (n.inputs.size() < 2 || n.inputs.size() > 3 || n.outputs.size() != 1) return std::nullopt;
  if (n.attr_int("block_size", 0) != 0 || n.attr_int("output_dtype", 0) != 0) return std::nullopt;
  const Tensor* x = rw.fixed_constant(n.inputs[0]);
  const Tensor* scale = rw.fixed_constant(n.inputs[1]);
  const Tensor* zero = n.inputs.size() == 3 ? rw.fixed_constant(n.inputs[2]) : nullptr;
  if (!x || !scale || (n.inputs.size() == 3 && n.inputs[2] >= 0 && !zero)) return std::nullopt;
  if (!foldable_type(x->dtype()) || scale->dtype() != ONYX_DTYPE_FLOAT32 || x->size() * 4 > kMaxFoldedBytes)
    return std::nullopt;
  if (zero && (zero->dtype() != x->dtype() || zero->size() != scale->size())) return std::nullopt;
  const Shape& dims = x->shape();
  int64_t inner = 1, channels = 1;
  if (scale->size() != 1) {  // per axis: a 1-D scale along `axis`
    const int64_t rank = int64_t(dims.size());
    int64_t axis = n.attr_int("axis", 1);
    if (axis < 0) axis += rank;
    if (scale->shape().size() != 1 || axis < 0 || axis >= rank || dims[size_t(axis)] != scale->size())
      return std::nullopt;
    channels = scale->size();
    for (int64_t k = axis + 1; k < rank; ++k) inner *= dims[size_t(k)];
  }
  Tensor y = Tensor::allocate(ONYX_DTYPE_FLOAT32, dims);
  float* out = y.data_as<float>();
  for (int64_t i = 0; i < x->size(); ++i) {
    const int64_t c = channels == 1 ? 0 : (i / inner) % channels;
    const double z = zero ? element(*zero, c) : 0.0;
    out[i] = float((element(*x, i) - z) * double(scale->data_as<float>()[c]));
  }
  return y;
}

}  // namespace

int fold_weight_dequantize(GraphRewrite& rw) {
  ir::Graph& g = rw.graph;
  int folded = 0;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const ir::Node& node = g.nodes[n];
    if (rw.removed[n] || node.op_type != "DequantizeLinear" || !node.domain.empty()) continue;
    const int v = node.outputs.empty() ? -1 : node.outputs[0];
    // Unread: removed later anyway; a graph output keeps its producer.
    if (v < 0 || rw.readers[size_t(v)] == 0 || rw.pinned[size_t(v)]) continue;
    std::optional<Tensor> y = dequantized(rw, node);
    if (!y) continue;
    rw.remove_node(int(n));
    ir::Value& value = g.values[size_t(v)];
    value.dtype = ONYX_DTYPE_FLOAT32;
    value.rank = int32_t(y->shape().size());
    value.dims = y->shape();
    value.producer = -1;
    value.constant = std::move(*y);
    ++folded;
  }
  return folded;
}

}  // namespace onyx::runtime::optimize
