// flex_attention.cpp: ai.onnx.preview FlexAttention (opset 1) without its
// score_mod / prob_mod subgraphs (a node with them is declined: kernels here
// cannot run a subgraph): softmax(scale * Q K^T) V over 4-D [B, H, S, D]
// inputs, KV heads shared by groups of query heads. In double.
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <vector>

#include "kernels/kernel_util.h"
#include "kernels/narrow_types.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

class FlexAttentionKernel final : public sdk::Kernel {
 public:
  explicit FlexAttentionKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)), has_scale_(node.has("scale")), scale_(node.get_float("scale", 0)) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor q = ctx.in(0), k = ctx.in(1), v = ctx.in(2);
    if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4 || k.dim(0) != q.dim(0) || v.dim(0) != q.dim(0) ||
        k.dim(1) != v.dim(1) || k.dim(2) != v.dim(2) || k.dim(3) != q.dim(3) || k.dim(1) == 0 || q.dim(1) % k.dim(1))
      return util::fail(label_, "Q %s, K %s, V %s must be 4-D [B, H, S, D] with q heads a multiple of kv heads",
                        util::dims_str(q.dims).c_str(), util::dims_str(k.dims).c_str(), util::dims_str(v.dims).c_str());
    const int64_t B = q.dim(0), Hq = q.dim(1), L = q.dim(2), D = q.dim(3), Hkv = k.dim(1), S = k.dim(2), Dv = v.dim(3);
    const int64_t group = Hq / Hkv;
    const double scale = has_scale_ ? scale_ : 1.0 / std::sqrt(double(D));
    int64_t dims[4] = {B, Hq, L, Dv};
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, q.dtype, dims, &y));
    std::vector<double> p(static_cast<size_t>(S));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < Hq; ++h) {
        const int64_t kh = h / group;
        for (int64_t i = 0; i < L; ++i) {
          double top = -INFINITY, sum = 0;
          for (int64_t j = 0; j < S; ++j) {
            double s = 0;
            for (int64_t d = 0; d < D; ++d)
              s += narrow::load(q.dtype, q.raw, ((b * Hq + h) * L + i) * D + d) *
                   narrow::load(k.dtype, k.raw, ((b * Hkv + kh) * S + j) * D + d);
            p[size_t(j)] = s * scale;
            top = std::max(top, p[size_t(j)]);
          }
          for (int64_t j = 0; j < S; ++j) sum += (p[size_t(j)] = std::exp(p[size_t(j)] - top));
          for (int64_t d = 0; d < Dv; ++d) {
            double acc = 0;
            for (int64_t j = 0; j < S; ++j) acc += p[size_t(j)] / sum * narrow::load(v.dtype, v.raw, ((b * Hkv + kh) * S + j) * Dv + d);
            narrow::store(y.dtype, y.raw, ((b * Hq + h) * L + i) * Dv + d, acc, true);
          }
        }
      }
    return nullptr;
  }

 private:
  std::string label_;
  bool has_scale_;
  double scale_;
};

}  // namespace

void register_flex_attention_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("FlexAttention", "ai.onnx.preview")
                   .inputs(3)
                   .all_inputs(sdk::dtypes::kFloat | sdk::dtypes::kHalf)
                   .check([](const sdk::NodeInfo& n) {
                     for (const char* mod : {"score_mod", "prob_mod", "mask_mod"})
                       if (n.has(mod))
                         return std::string("FlexAttention with a ") + mod +
                                " subgraph is not supported (kernels cannot run subgraphs)";
                     return std::string();
                   })
                   .create<FlexAttentionKernel>());
}

}  // namespace onyx::cpu
