// lp_norm.cpp: LpNormalization (opset 1), computed in double for every
// float type (float16/bfloat16 included) through narrow::load/store.
#include <cinttypes>
#include <cmath>

#include "kernels/kernel_util.h"
#include "kernels/narrow_types.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

// LpNormalization: x / ||x||_p along `axis` (p is 1 or 2); 0 where the norm is 0.
class LpNormKernel final : public sdk::Kernel {
 public:
  explicit LpNormKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)), axis_(node.get_int("axis", -1)), p_(node.get_int("p", 2)) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    int64_t axis = 0, outer, n, inner;
    if (!util::normalize_axis(axis_, int64_t(x.rank()), &axis))
      return util::fail(label_, "axis %" PRId64 " is out of range for rank %zu", axis_, x.rank());
    if (p_ != 1 && p_ != 2) return util::fail(label_, "p must be 1 or 2, got %" PRId64, p_);
    util::split_at(x.dims, axis, &outer, &n, &inner);
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, x.dims, &y));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        double norm = 0;
        for (int64_t k = 0; k < n; ++k) {
          double v = narrow::load(x.dtype, x.raw, (o * n + k) * inner + i);
          norm += p_ == 1 ? std::fabs(v) : v * v;
        }
        if (p_ == 2) norm = std::sqrt(norm);
        for (int64_t k = 0; k < n; ++k) {
          int64_t at = (o * n + k) * inner + i;
          narrow::store(y.dtype, y.raw, at, norm == 0 ? 0.0 : narrow::load(x.dtype, x.raw, at) / norm, true);
        }
      }
    return nullptr;
  }

 private:
  std::string label_;
  int64_t axis_, p_;
};

}  // namespace

void register_lp_norm_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("LpNormalization").inputs(1).all_inputs(sdk::dtypes::kFloat | sdk::dtypes::kHalf).create<LpNormKernel>());
}

}  // namespace onyx::cpu
