// shrink.cpp: Shrink (opset 9), an element-wise map computed in double for
// every type (float16/bfloat16 and integers included) through
// narrow::load/store.
#include "kernels/kernel_util.h"
#include "kernels/narrow_types.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

// Element-wise maps computed in double.
class MapKernel final : public sdk::Kernel {
 public:
  using Fn = double (*)(double, double, double);
  MapKernel(Fn fn, double a, double b) : fn_(fn), a_(a), b_(b) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, x.dims, &y));
    for (int64_t i = 0; i < x.size(); ++i)
      narrow::store(y.dtype, y.raw, i, fn_(narrow::load(x.dtype, x.raw, i), a_, b_), true);
    return nullptr;
  }
  void output_memory(std::span<OnyxOutputMemoryInfo> out) const override {
    util::output0_may_overwrite_input(out);
  }

 private:
  Fn fn_;
  double a_, b_;
};

double shrink(double x, double lambd, double bias) { return x < -lambd ? x + bias : x > lambd ? x - bias : 0.0; }

}  // namespace

void register_shrink_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("Shrink")
                   .since(9)
                   .inputs(1)
                   .all_inputs(sdk::dtypes::kFloat | sdk::dtypes::kHalf | sdk::dtypes::kInt)
                   .create([](const sdk::NodeInfo& n) {
                     return std::make_unique<MapKernel>(&shrink, n.get_float("lambd", 0.5), n.get_float("bias", 0.0));
                   }));
}

}  // namespace onyx::cpu
