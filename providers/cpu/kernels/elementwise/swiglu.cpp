// swiglu.cpp: SwiGLU (opset 28), y = a * sigmoid(alpha * a) * b, computed in
// double for every float type through narrow::load/store.
#include <cmath>

#include "kernels/kernel_util.h"
#include "kernels/narrow_types.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

// SwiGLU: y = a * sigmoid(alpha * a) * b, b of a's shape or one element.
class SwiGluKernel final : public sdk::Kernel {
 public:
  explicit SwiGluKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)), alpha_(node.get_float("alpha", 1.0)) {}
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor a = ctx.in(0), b = ctx.in(1), y;
    if (b.size() != a.size() && b.size() != 1)
      return util::fail(label_, "b %s must match a %s or hold one element", util::dims_str(b.dims).c_str(),
                        util::dims_str(a.dims).c_str());
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, a.dtype, a.dims, &y));
    for (int64_t i = 0; i < a.size(); ++i) {
      double av = narrow::load(a.dtype, a.raw, i), bv = narrow::load(b.dtype, b.raw, b.size() == 1 ? 0 : i);
      narrow::store(y.dtype, y.raw, i, av / (1 + std::exp(-alpha_ * av)) * bv, true);
    }
    return nullptr;
  }

 private:
  std::string label_;
  double alpha_;
};

}  // namespace

void register_swiglu_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("SwiGLU").since(28).inputs(2).all_inputs(sdk::dtypes::kFloat | sdk::dtypes::kHalf).create<SwiGluKernel>());
}

}  // namespace onyx::cpu
