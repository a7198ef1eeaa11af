// Flatten as a view (ONYX_OUTPUT_ALIASES_INPUT: no bytes move), so that a
// CNN's classifier head (GlobalAveragePool -> Flatten -> Gemm) stays on this
// provider and `--provider onednn` alone runs such a model.
#include <cstring>

#include "ops.h"

namespace onyx::onednn {
namespace {

class FlattenKernel : public sdk::Kernel {
 public:
  explicit FlattenKernel(int64_t axis) : axis_(axis) {}

  OnyxStatus* compute(ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    int64_t rank = int64_t(x.rank());
    int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    if (axis < 0 || axis > rank)
      return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "Flatten: axis %lld out of range for rank %lld",
                              (long long)axis_, (long long)rank);
    int64_t outer = 1, inner = 1;
    for (int64_t k = 0; k < rank; ++k) (k < axis ? outer : inner) *= x.dims[size_t(k)];
    std::vector<int64_t> dims = {outer, inner};
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, dims, &y));
    // The host normally hands back x's own buffer; another buffer gets a copy.
    size_t bytes = size_t(x.size()) * sdk::dtype_size(x.dtype);
    if (y.raw != x.raw && bytes > 0) std::memcpy(y.raw, x.raw, bytes);
    return nullptr;
  }
  void output_memory(std::span<OnyxOutputMemoryInfo> out) const override {
    if (!out.empty()) out[0].kind = ONYX_OUTPUT_ALIASES_INPUT, out[0].input_index = 0;
  }

 private:
  int64_t axis_;
};

std::string flatten_supports(const NodeInfo& n) {
  RETURN_IF_REASON(require_f32(n, {0}));
  if (n.inputs[0].rank < 0) return "rank of input 0 unknown at session creation";
  int64_t axis = n.get_int("axis", 1), rank = n.inputs[0].rank;
  if (axis < -rank || axis > rank) return "axis out of range";
  return {};
}

}  // namespace

void add_view_ops(OpRegistry& ops) {
  ops.add(OpBuilder("Flatten").check(flatten_supports).create([](const NodeInfo& n, const DeviceConfig&) {
    return std::unique_ptr<sdk::Kernel>(new FlattenKernel(n.get_int("axis", 1)));
  }));
}

}  // namespace onyx::onednn
