// multi_head_attention.cpp: ONNX Runtime's com.microsoft MultiHeadAttention
// in the form the core's attention fusion writes (optimize/attention_fusion.cpp)
// and ORT's optimizer writes for unpacked attention: query [B, S, H * d],
// key [B, L, H * d], value [B, L, H * dv], an optional attention_bias
// (input 5) that broadcasts to [B, H, S, L]; per batch and head
// softmax(scale * Q K^T + bias) V, scale 1 / sqrt(d) unless given.
//
// In float32 on the provider's sgemm, which reads each head where it lies
// (row stride H * d) and writes the output already merged: no head split or
// merge is copied. Batches x heads are split over the pool; each task keeps
// one S x L score block.
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
    const sdk::Tensor q = ctx.in(0), k = ctx.in(1), v = ctx.in(2);
    const std::optional<sdk::Tensor> bias = ctx.input(5);
    if (q.rank() != 3 || k.rank() != 3 || v.rank() != 3 || k.dim(0) != q.dim(0) || v.dim(0) != q.dim(0) ||
        k.dim(1) != v.dim(1) || k.dim(2) != q.dim(2) || q.dim(2) % heads_ != 0 || v.dim(2) % heads_ != 0)
      return util::fail(label_,
                        "query %s, key %s and value %s must be [B, S, D], [B, L, D] and [B, L, Dv] with D and Dv "
                        "multiples of num_heads %lld",
                        util::dims_str(q.dims).c_str(), util::dims_str(k.dims).c_str(),
                        util::dims_str(v.dims).c_str(), (long long)heads_);
    const int64_t B = q.dim(0), S = q.dim(1), L = k.dim(1), H = heads_, d = q.dim(2) / H, dv = v.dim(2) / H;
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
    if (L == 0) return util::fail(label_, "no keys (key %s)", util::dims_str(k.dims).c_str());
    const float scale = scale_.value_or(1.0f / std::sqrt(float(d)));
    const float *qd = q.data<float>(), *kd = k.data<float>(), *vd = v.data<float>();
    const float* bd = bias ? bias->data<float>() : nullptr;
    float* yd = y.data<float>();
    const double work = 2.0 * double(S * L) * double(d + dv);
    ctx.parallel_for(size_t(B * H), nn::grain_for(work), [&](size_t lo, size_t hi) {
      const ParallelFor serial = nn::serial_parallel_for();
      std::vector<float> w(size_t(S * L));
      for (size_t task = lo; task < hi; ++task) {
        const int64_t b = int64_t(task) / H, h = int64_t(task) % H;
        sgemm(false, true, S, L, d, scale, qd + b * S * H * d + h * d, H * d, kd + b * L * H * d + h * d, H * d, 0.f,
              w.data(), L, serial);
        for (int64_t i = 0; i < S; ++i) {
          float* row = w.data() + i * L;
          if (bd) {
            const float* brow = bd + b * bias_stride[0] + h * bias_stride[1] + i * bias_stride[2];
            for (int64_t j = 0; j < L; ++j) row[j] += brow[j * bias_stride[3]];
          }
          vec::softmax_row(row, row, size_t(L));
        }
        sgemm(false, false, S, dv, L, 1.f, w.data(), L, vd + b * L * H * dv + h * dv, H * dv, 0.f,
              yd + b * S * H * dv + h * dv, H * dv, serial);
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
  for (size_t k = 0; k < 3; ++k)
    if (n.inputs[k].rank >= 0 && n.inputs[k].rank != 3)
      return "input " + std::to_string(k) + " is not 3-D [batch, sequence, hidden] (packed forms are not supported)";
  return {};
}

}  // namespace

void register_multi_head_attention_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("MultiHeadAttention", "com.microsoft")
                   .since(1)
                   .inputs(3, 10)
                   .input_types({0, 1, 2, 5}, sdk::dtypes::kFloat32)
                   .check(check_node)
                   .create<MultiHeadAttentionKernel>());
}

}  // namespace onyx::cpu
