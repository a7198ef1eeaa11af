// sum_to_shape.cpp: ai.onyx SumToShape(G, shape) -> Y. Y has the given shape
// and each element is the sum of the elements of G that broadcasting Y to
// G's shape would have copied it to: the gradient of a broadcast. The sums
// are the Reduce* kernels' (double, split over the threads).
#include <cstring>
#include <vector>

#include "kernels/kernel_util.h"
#include "kernels/reduce/reduction.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

class SumToShapeKernel final : public sdk::Kernel {
 public:
  explicit SumToShapeKernel(const sdk::NodeInfo& node) : label_(util::node_label(node)) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor g = ctx.in(0);
    std::vector<int64_t> target;
    if (!util::read_ints(ctx.in(1), &target))
      return util::fail(label_, "input 1 (the shape) must be int64 or int32");
    const size_t rank = g.rank();
    if (target.size() > rank)
      return util::fail(label_, "target shape %s has more dims than the gradient %s",
                        util::dims_str(target).c_str(), util::dims_str(g.dims).c_str());
    // The target aligned on G's last dims; every dim must be 1 or G's.
    std::vector<int64_t> padded(rank - target.size(), 1);
    padded.insert(padded.end(), target.begin(), target.end());
    for (size_t d = 0; d < rank; ++d)
      if (padded[d] != 1 && padded[d] != g.dim(d))
        return util::fail(label_, "gradient of shape %s cannot be summed to shape %s (dim %zu)",
                          util::dims_str(g.dims).c_str(), util::dims_str(target).c_str(), d);
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, g.dtype, target, &y));
    if (y.size() == 0) return nullptr;
    std::vector<bool> summed(rank);
    bool any = false;
    for (size_t d = 0; d < rank; ++d) any |= summed[d] = padded[d] == 1 && g.dim(d) != 1;
    if (!any) {  // the same elements (a shape the graph could not prove equal)
      std::memcpy(y.raw, g.raw, size_t(g.size()) * sdk::dtype_size(g.dtype));
      return nullptr;
    }
    if (g.dtype == ONYX_DTYPE_FLOAT64) {
      reduce::sum(ctx, g.dims, summed, g.data<double>(), y.data<double>());
    } else if (util::is_half(g.dtype)) {  // summed in float32 copies, rounded once
      util::Widened g32 = util::widen(g), y32 = util::widen(y, false);
      reduce::sum(ctx, g.dims, summed, g32.tensor.data<float>(), y32.tensor.data<float>());
      util::narrow_to(y32, y);
    } else {
      reduce::sum(ctx, g.dims, summed, g.data<float>(), y.data<float>());
    }
    return nullptr;
  }

 private:
  std::string label_;
};

}  // namespace

void register_sum_to_shape_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("SumToShape", kOnyxDomain)
                   .inputs(2)
                   .input_type(0, sdk::dtypes::kFloat | sdk::dtypes::kHalf)
                   .create<SumToShapeKernel>());
}

}  // namespace onyx::cpu
