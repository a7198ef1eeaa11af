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
    if (out.empty()) return;
    out[0].kind = ONYX_OUTPUT_MAY_OVERWRITE_INPUT;
    out[0].input_index = 0;
  }

 private:
  int32_t to_;
};

}  // namespace

void register_bit_cast_kernels(sdk::KernelRegistry& registry) {
  sdk::KernelDef def;
  def.op_type = "BitCast";
  def.since_version = 26;
  def.supports = [](const sdk::NodeInfo& n) {
    std::string why = util::require_inputs(n, 1, 1);
    int32_t to = int32_t(n.get_int("to", 0));
    size_t from_size = sdk::dtype_size(n.input_dtype(0)), to_size = sdk::dtype_size(to);
    if (why.empty() && (!from_size || from_size != to_size))
      why = std::string("BitCast from ") + sdk::dtype_name(n.input_dtype(0)) + " to " + sdk::dtype_name(to) +
            ": both types need the same whole-byte element size";
    return why;
  };
  def.create = [](const sdk::NodeInfo& n) { return std::make_unique<BitCastKernel>(int32_t(n.get_int("to", 0))); };
  registry.add(std::move(def));
}

}  // namespace onyx::cpu
