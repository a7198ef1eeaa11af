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
  sdk::KernelDef has;
  has.op_type = "OptionalHasElement";
  has.since_version = 15;
  has.create = [](const sdk::NodeInfo&) { return std::make_unique<HasElementKernel>(); };
  registry.add(std::move(has));

  sdk::KernelDef get;
  get.op_type = "OptionalGetElement";
  get.since_version = 15;
  get.supports = [](const sdk::NodeInfo& n) {
    std::string why = util::require_inputs(n, 1, 1);
    if (why.empty() && !sdk::dtype_size(n.input_dtype(0))) why = "element type has no fixed size";
    return why;
  };
  get.create = [](const sdk::NodeInfo&) { return std::make_unique<GetElementKernel>(); };
  registry.add(std::move(get));
}

}  // namespace onyx::cpu
