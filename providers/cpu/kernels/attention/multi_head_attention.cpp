// multi_head_attention.cpp: ONNX Runtime's com.microsoft MultiHeadAttention
// in the forms the core's attention fusion writes (optimize/attention_fusion.cpp,
// optimize/qkv_packing.cpp) and ORT's optimizer writes for unpacked
// attention: query [B, S, H * d], key [B, L, H * d], value [B, L, H * dv],
// or packed QKV alone, query [B, S, H, 3, d]; an optional attention_bias
// (input 5) that broadcasts to [B, H, S, L]; per batch and head
// softmax(scale * Q K^T + bias) V, scale 1 / sqrt(d) unless given.
//
// In float32 on the provider's sgemm, which reads each head where it lies
// (row stride H * d, or H * 3 * d packed) and writes the output already
// merged: no head split or merge is copied. Batches x heads are split over
// the pool; each task keeps one S x L score block.
#include <cmath>
#include <optional>
#include <vector>

#include "kernels/elementwise/vec_math.h"
#include "kernels/nn_util.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

class MultiHeadAttentionKernel final : public sdk::Kernel {
 public:
  explicit MultiHeadAttentionKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)), heads_(node.get_int("num_heads", 0)) {
    if (node.has("scale")) scale_ = float(node.get_float("scale", 0));
  }

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    const sdk::Tensor q = ctx.in(0);
    const std::optional<sdk::Tensor> key = ctx.input(1), value = ctx.input(2);
    const std::optional<sdk::Tensor> bias = ctx.input(5);
    // Where each head's rows lie: Q, K and V of (batch b, head h) start at
    // base + b * batch_stride + h * head_stride (+ offset) with rows `ld` apart.
    struct Operand {
      const float* base;
      int64_t batch_stride, head_stride, ld;
      const float* at(int64_t b, int64_t h) const { return base + b * batch_stride + h * head_stride; }
    };
    int64_t B = 0, S = 0, L = 0, H = heads_, d = 0, dv = 0;
    Operand qo{}, ko{}, vo{};
    if (!key && !value) {
      // Packed QKV [B, S, H, 3, d]: per token and head, q, k and v side by side.
      if (q.rank() != 5 || q.dim(2) != H || q.dim(3) != 3)
        return util::fail(label_, "packed QKV (no key and value) %s must be [B, S, num_heads %lld, 3, head size]",
                          util::dims_str(q.dims).c_str(), (long long)H);
      B = q.dim(0), S = L = q.dim(1), d = dv = q.dim(4);
      const int64_t ld = H * 3 * d;
      const float* base = q.data<float>();
      qo = {base, S * ld, 3 * d, ld};
      ko = {base + d, S * ld, 3 * d, ld};
      vo = {base + 2 * d, S * ld, 3 * d, ld};
    } else {
      if (!key || !value || q.rank() != 3 || key->rank() != 3 || value->rank() != 3 || key->dim(0) != q.dim(0) ||
          value->dim(0) != q.dim(0) || key->dim(1) != value->dim(1) || key->dim(2) != q.dim(2) || q.dim(2) % H != 0 ||
          value->dim(2) % H != 0)
        return util::fail(label_,
                          "query %s, key %s and value %s must be [B, S, D], [B, L, D] and [B, L, Dv] with D and Dv "
                          "multiples of num_heads %lld (or query packed QKV [B, S, num_heads, 3, head size] alone)",
                          util::dims_str(q.dims).c_str(), key ? util::dims_str(key->dims).c_str() : "(none)",
                          value ? util::dims_str(value->dims).c_str() : "(none)", (long long)H);
      B = q.dim(0), S = q.dim(1), L = key->dim(1), d = q.dim(2) / H, dv = value->dim(2) / H;
      qo = {q.data<float>(), S * H * d, d, H * d};
      ko = {key->data<float>(), L * H * d, d, H * d};
      vo = {value->data<float>(), L * H * dv, dv, H * dv};
    }
    // The bias's strides over [B, H, S, L], 0 on the axes it broadcasts.
    int64_t bias_stride[4] = {0, 0, 0, 0};
    if (bias) {
      const int64_t scores[4] = {B, H, S, L};
      if (bias->rank() > 4)
        return util::fail(label_, "attention_bias %s has rank above 4", util::dims_str(bias->dims).c_str());
      int64_t stride = 1;
      for (size_t i = 0; i < bias->rank(); ++i) {  // from the last axis, right-aligned with the scores'
        const size_t axis = 3 - i;
        const int64_t dim = bias->dim(bias->rank() - 1 - i);
        if (dim != 1 && dim != scores[axis])
          return util::fail(label_, "attention_bias %s does not broadcast to the scores [%lld, %lld, %lld, %lld]",
                            util::dims_str(bias->dims).c_str(), (long long)B, (long long)H, (long long)S,
                            (long long)L);
        bias_stride[axis] = dim == 1 ? 0 : stride;
        stride *= dim;
      }
    }
    sdk::Tensor y;
    const std::vector<int64_t> out = {B, S, H * dv};
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_FLOAT32, out, &y));
    if (y.size() == 0) return nullptr;
    if (L == 0) return util::fail(label_, "no keys (key %s)", util::dims_str(key->dims).c_str());  // packed: L = S
    const float scale = scale_.value_or(1.0f / std::sqrt(float(d)));
    const float* bd = bias ? bias->data<float>() : nullptr;
    float* yd = y.data<float>();
    const double work = 2.0 * double(S * L) * double(d + dv);
    ctx.parallel_for(size_t(B * H), nn::grain_for(work), [&](size_t lo, size_t hi) {
      const ParallelFor serial = nn::serial_parallel_for();
      std::vector<float> w(size_t(S * L));
      for (size_t task = lo; task < hi; ++task) {
        const int64_t b = int64_t(task) / H, h = int64_t(task) % H;
        sgemm(false, true, S, L, d, scale, qo.at(b, h), qo.ld, ko.at(b, h), ko.ld, 0.f, w.data(), L, serial);
        for (int64_t i = 0; i < S; ++i) {
          float* row = w.data() + i * L;
          if (bd) {
            const float* brow = bd + b * bias_stride[0] + h * bias_stride[1] + i * bias_stride[2];
            for (int64_t j = 0; j < L; ++j) row[j] += brow[j * bias_stride[3]];
          }
          vec::softmax_row(row, row, size_t(L));
        }
        sgemm(false, false, S, dv, L, 1.f, w.data(), L, vo.at(b, h), vo.ld, 0.f, yd + b * S * H * dv + h * dv, H * dv,
              serial);
      }
    });
    return nullptr;
  }

 private:
  std::string label_;
  int64_t heads_;
  std::optional<float> scale_;  // none: 1 / sqrt(head size)
};

std::string check_node(const sdk::NodeInfo& n) {
  for (size_t k = 3; k < n.inputs.size(); ++k)
    if (n.input_present(k) && k != 5)
      return "input " + std::to_string(k) + " (bias, key_padding_mask or past) is not supported";
  for (size_t k = 1; k < n.outputs.size(); ++k)
    if (n.outputs[k].present) return "output " + std::to_string(k) + " (present key or value) is not supported";
  if (n.get_int("num_heads", 0) <= 0) return "num_heads must be positive";
  if (n.get_int("unidirectional", 0) != 0) return "unidirectional (causal) attention is not supported";
  const bool packed = !n.input_present(1) && !n.input_present(2);
  if (packed && n.inputs[0].rank >= 0 && n.inputs[0].rank != 5)
    return "query without key and value is not packed QKV [batch, sequence, heads, 3, head size]";
  if (!packed && (!n.input_present(1) || !n.input_present(2)))
    return "key and value must both be given, or neither (packed QKV)";
  for (size_t k = 0; k < 3 && !packed; ++k)
    if (n.inputs[k].rank >= 0 && n.inputs[k].rank != 3)
      return "input " + std::to_string(k) + " is not 3-D [batch, sequence, hidden] (packed key/value is not supported)";
  return {};
}

}  // namespace

void register_multi_head_attention_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("MultiHeadAttention", "com.microsoft")
                   .since(1)
                   .inputs(1, 10)  // key and value are absent with packed QKV (check_node)
                   .input_types({0, 1, 2, 5}, sdk::dtypes::kFloat32)
                   .check(check_node)
                   .create<MultiHeadAttentionKernel>());
}

}  // namespace onyx::cpu
