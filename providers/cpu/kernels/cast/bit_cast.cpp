// bit_cast.cpp: BitCast (opset 26): the same bytes seen as another type of
// the same whole-byte element size.
#include <cstring>

#include "kernels/kernel_util.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

// BitCast: the same bytes seen as another type of the same element size.
class BitCastKernel final : public sdk::Kernel {
 public:
  explicit BitCastKernel(int32_t to) : to_(to) {}
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, to_, x.dims, &y));
    size_t bytes = size_t(x.size()) * sdk::dtype_size(x.dtype);
    if (y.raw != x.raw && bytes) std::memcpy(y.raw, x.raw, bytes);
    return nullptr;
  }
  void output_memory(std::span<OnyxOutputMemoryInfo> out) const override {
    util::output0_may_overwrite_input(out);
  }

 private:
  int32_t to_;
};

}  // namespace

void register_bit_cast_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("BitCast")
                   .since(26)
                   .inputs(1)
                   .check([](const sdk::NodeInfo& n) {
                     int32_t to = int32_t(n.get_int("to", 0));
                     size_t from_size = sdk::dtype_size(n.input_dtype(0)), to_size = sdk::dtype_size(to);
                     if (!from_size || from_size != to_size)
                       return std::string("BitCast from ") + sdk::dtype_name(n.input_dtype(0)) + " to " +
                              sdk::dtype_name(to) + ": both types need the same whole-byte element size";
                     return std::string();
                   })
                   .create([](const sdk::NodeInfo& n) {
                     return std::make_unique<BitCastKernel>(int32_t(n.get_int("to", 0)));
                   }));
}

}  // namespace onyx::cpu
