// trilu.cpp: Trilu (opset 14): the upper or lower triangle of every matrix
// in the last two dims, the rest zeroed. Any fixed-size element type.
#include "kernels/registry.h"
#include "kernels/shape/shape_util.h"

namespace onyx::cpu {
namespace {

// Trilu: keeps the upper (j - i >= k) or lower (j - i <= k) triangle of
// every matrix in the last two dims and zeroes the rest (all-zero bytes are
// 0 in every numeric type and false in bool).
class TriluKernel final : public sdk::Kernel {
 public:
  explicit TriluKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)), upper_(node.get_int("upper", 1) != 0) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    if (x.rank() < 2) return util::fail(label_, "input 0 must have rank >= 2, got %zu", x.rank());
    int64_t k = 0;
    if (auto kt = ctx.input(1)) {
      std::vector<int64_t> v;
      if (!util::read_ints(*kt, &v) || v.size() != 1) return util::fail(label_, "input 1 (k) must be an int64 scalar");
      k = v[0];
    }
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, x.dims, &y));
    if (y.raw != x.raw && shape::byte_size(x)) std::memcpy(y.raw, x.raw, shape::byte_size(x));
    int64_t rows = x.dim(x.rank() - 2), cols = x.dim(x.rank() - 1);
    int64_t matrices = rows * cols != 0 ? x.size() / (rows * cols) : 0;
    size_t esize = sdk::dtype_size(x.dtype);
    for (int64_t m = 0; m < matrices; ++m)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          bool keep = upper_ ? j - i >= k : j - i <= k;
          if (!keep) std::memset(static_cast<unsigned char*>(y.raw) + size_t((m * rows + i) * cols + j) * esize, 0, esize);
        }
    return nullptr;
  }

  void output_memory(std::span<OnyxOutputMemoryInfo> out) const override {
    util::output0_may_overwrite_input(out);
  }

 private:
  std::string label_;
  bool upper_;
};

}  // namespace

void register_trilu_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("Trilu")
                   .since(14)
                   .inputs(1, 2)
                   .input_type(0, sdk::dtypes::kNumeric | sdk::dtypes::kHalf | sdk::dtypes::kBool)
                   .input_type(1, shape::kIndexTypes)
                   .create<TriluKernel>());
}

}  // namespace onyx::cpu
