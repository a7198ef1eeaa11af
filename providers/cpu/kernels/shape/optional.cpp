// optional.cpp: OptionalHasElement and OptionalGetElement (opsets 15, 18) on
// plain tensors or absent inputs (optional types themselves are not carried).
#include <cstring>

#include "kernels/kernel_util.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

// OptionalHasElement: true when the input is given (a plain tensor here).
class HasElementKernel final : public sdk::Kernel {
 public:
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_BOOL, {}, &y));
    y.data<bool>()[0] = ctx.input(0).has_value();
    return nullptr;
  }
};

// OptionalGetElement of a plain tensor: the tensor itself.
class GetElementKernel final : public sdk::Kernel {
 public:
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, x.dims, &y));
    size_t bytes = size_t(x.size()) * sdk::dtype_size(x.dtype);
    if (y.raw != x.raw && bytes) std::memcpy(y.raw, x.raw, bytes);
    return nullptr;
  }
};

}  // namespace

void register_optional_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("OptionalHasElement").since(15).create([](const sdk::NodeInfo&) {
    return std::make_unique<HasElementKernel>();
  }));
  registry.add(sdk::KernelDefBuilder("OptionalGetElement")
                   .since(15)
                   .inputs(1)
                   .check([](const sdk::NodeInfo& n) {
                     return sdk::dtype_size(n.input_dtype(0)) ? std::string() : std::string("element type has no fixed size");
                   })
                   .create([](const sdk::NodeInfo&) { return std::make_unique<GetElementKernel>(); }));
}

}  // namespace onyx::cpu
