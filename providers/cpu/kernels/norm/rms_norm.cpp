// rms_norm.cpp: RMSNormalization (opset 23), computed in double for every
// float type (float16/bfloat16 included) through narrow::load/store.
#include <cinttypes>
#include <cmath>
#include <vector>

#include "kernels/kernel_util.h"
#include "kernels/narrow_types.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

// RMSNormalization (opset 23): Y = X / sqrt(mean(X^2 over axes >= axis) +
// epsilon) * scale, scale broadcast against the normalized dims.
class RmsNormKernel final : public sdk::Kernel {
 public:
  explicit RmsNormKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)), axis_(node.get_int("axis", -1)), epsilon_(node.get_float("epsilon", 1e-5)) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), scale = ctx.in(1);
    int64_t rank = int64_t(x.rank()), axis = 0;
    if (!util::normalize_axis(axis_, rank, &axis))
      return util::fail(label_, "axis %" PRId64 " is out of range for rank %" PRId64, axis_, rank);
    int64_t outer = 1, block = 1;
    for (int64_t d = 0; d < rank; ++d) (d < axis ? outer : block) *= x.dim(size_t(d));
    // Scale's index for each position of a normalized block (numpy broadcast
    // of scale's dims against the trailing dims of X).
    if (scale.rank() > size_t(rank - axis))
      return util::fail(label_, "scale %s has more dims than the normalized part of X %s", util::dims_str(scale.dims).c_str(),
                        util::dims_str(x.dims).c_str());
    std::vector<int64_t> scale_index(static_cast<size_t>(block));
    for (int64_t e = 0; e < block; ++e) {
      int64_t rest = e, index = 0, stride = 1;
      for (int64_t d = rank - 1, s = int64_t(scale.rank()) - 1; d >= axis; --d, --s) {
        int64_t pos = rest % x.dim(size_t(d));
        rest /= x.dim(size_t(d));
        if (s < 0) continue;
        int64_t size = scale.dim(size_t(s));
        if (size != 1 && size != x.dim(size_t(d)))
          return util::fail(label_, "scale %s does not broadcast to X %s", util::dims_str(scale.dims).c_str(),
                            util::dims_str(x.dims).c_str());
        index += (size == 1 ? 0 : pos) * stride;
        stride *= size;
      }
      scale_index[size_t(e)] = index;
    }
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, x.dims, &y));
    for (int64_t o = 0; o < outer; ++o) {
      double sum = 0;
      for (int64_t e = 0; e < block; ++e) {
        double v = narrow::load(x.dtype, x.raw, o * block + e);
        sum += v * v;
      }
      double inv = 1.0 / std::sqrt(sum / double(block) + epsilon_);
      for (int64_t e = 0; e < block; ++e) {
        double v = narrow::load(x.dtype, x.raw, o * block + e) * inv;
        narrow::store(y.dtype, y.raw, o * block + e, v * narrow::load(scale.dtype, scale.raw, scale_index[size_t(e)]), true);
      }
    }
    return nullptr;
  }

 private:
  std::string label_;
  int64_t axis_;
  double epsilon_;
};

}  // namespace

void register_rms_norm_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("RMSNormalization").since(23).inputs(2).all_inputs(sdk::dtypes::kFloat | sdk::dtypes::kHalf).create<RmsNormKernel>());
}

}  // namespace onyx::cpu
