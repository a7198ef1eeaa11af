// compress.cpp: Compress (opset 9): the slices along an axis (or the elements
// of the flattened input) where a bool condition is true.
#include <cinttypes>
#include <cstring>
#include <vector>

#include "kernels/kernel_util.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

// Compress: the slices along `axis` (or of the flattened input) where the
// bool condition is true; a condition shorter than the axis drops the rest.
class CompressKernel final : public sdk::Kernel {
 public:
  explicit CompressKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)), has_axis_(node.has("axis")), axis_(node.get_int("axis", 0)) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), cond = ctx.in(1);
    int64_t outer = 1, n = x.size(), inner = 1, axis = 0;
    if (has_axis_) {
      if (!util::normalize_axis(axis_, int64_t(x.rank()), &axis))
        return util::fail(label_, "axis %" PRId64 " is out of range for rank %zu", axis_, x.rank());
      util::split_at(x.dims, axis, &outer, &n, &inner);
    }
    if (cond.size() > n)
      return util::fail(label_, "condition has %" PRId64 " elements; the axis has only %" PRId64, cond.size(), n);
    std::vector<int64_t> kept;
    for (int64_t k = 0; k < cond.size(); ++k)
      if (cond.data<bool>()[k]) kept.push_back(k);
    std::vector<int64_t> dims;
    if (has_axis_) {
      dims.assign(x.dims.begin(), x.dims.end());
      dims[size_t(axis)] = int64_t(kept.size());
    } else {
      dims = {int64_t(kept.size())};
    }
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, dims, &y));
    size_t esize = sdk::dtype_size(x.dtype), row = size_t(inner) * esize;
    auto* out = static_cast<unsigned char*>(y.raw);
    const auto* in = static_cast<const unsigned char*>(x.raw);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k : kept) {
        std::memcpy(out, in + size_t(o * n + k) * row, row);
        out += row;
      }
    return nullptr;
  }

 private:
  std::string label_;
  bool has_axis_;
  int64_t axis_;
};

}  // namespace

void register_compress_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("Compress")
                   .since(9)
                   .inputs(2)
                   .input_type(1, sdk::dtypes::kBool)
                   .check([](const sdk::NodeInfo& n) {
                     if (!sdk::dtype_size(n.input_dtype(0)))
                       return std::string("Compress of ") + sdk::dtype_name(n.input_dtype(0)) + " is not implemented";
                     return std::string();
                   })
                   .create<CompressKernel>());
}

}  // namespace onyx::cpu
