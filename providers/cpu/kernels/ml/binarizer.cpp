// binarizer.cpp: ai.onnx.ml Binarizer (opset 1): 1 where x > threshold, else 0.
#include "kernels/kernel_util.h"
#include "kernels/narrow_types.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

// Binarizer: 1 where x > threshold, else 0, in x's type.
class BinarizerKernel final : public sdk::Kernel {
 public:
  explicit BinarizerKernel(const sdk::NodeInfo& node) : threshold_(node.get_float("threshold", 0)) {}
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, x.dims, &y));
    for (int64_t i = 0; i < x.size(); ++i)
      narrow::store(y.dtype, y.raw, i, narrow::load(x.dtype, x.raw, i) > threshold_ ? 1.0 : 0.0, true);
    return nullptr;
  }

 private:
  double threshold_;
};

}  // namespace

void register_binarizer_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("Binarizer", "ai.onnx.ml").input_type(0, sdk::dtypes::kNumeric | sdk::dtypes::kHalf).create<BinarizerKernel>());
}

}  // namespace onyx::cpu
