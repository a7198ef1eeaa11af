// center_crop_pad.cpp: CenterCropPad (opset 18): each listed axis
// center-cropped or zero-padded to the requested size.
#include <cinttypes>
#include <cstring>
#include <vector>

#include "kernels/kernel_util.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

// CenterCropPad: each listed axis is center-cropped or zero-padded to the
// requested size, starting at |size - target| / 2 (the odd element goes to
// the end either way).
class CenterCropPadKernel final : public sdk::Kernel {
 public:
  explicit CenterCropPadKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)), axes_(node.get_ints("axes")) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    std::vector<int64_t> shape, axes = axes_;
    if (!util::read_ints(ctx.in(1), &shape)) return util::fail(label_, "shape must be int64");
    const int64_t rank = int64_t(x.rank());
    if (axes.empty())
      for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
    if (axes.size() != shape.size()) return util::fail(label_, "%zu sizes for %zu axes", shape.size(), axes.size());
    std::vector<int64_t> in(x.dims.begin(), x.dims.end()), out = in, offset(size_t(rank), 0);
    for (size_t k = 0; k < axes.size(); ++k) {
      int64_t a = 0;
      if (!util::normalize_axis(axes[k], rank, &a)) return util::fail(label_, "axis %" PRId64 " is out of range", axes[k]);
      out[size_t(a)] = shape[k];
      // Source index = output index + offset: > 0 crops, < 0 pads.
      offset[size_t(a)] = shape[k] <= in[size_t(a)] ? (in[size_t(a)] - shape[k]) / 2 : -((shape[k] - in[size_t(a)]) / 2);
    }
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, out, &y));
    const size_t es = sdk::dtype_size(x.dtype);
    if (y.size() == 0) return nullptr;
    std::memset(y.raw, 0, size_t(y.size()) * es);
    std::vector<int64_t> pos(static_cast<size_t>(rank), 0), src(static_cast<size_t>(rank));
    do {
      bool inside = true;
      for (size_t d = 0; d < size_t(rank); ++d) {
        src[d] = pos[d] + offset[d];
        inside &= src[d] >= 0 && src[d] < in[d];
      }
      if (inside)
        std::memcpy(static_cast<unsigned char*>(y.raw) + size_t(util::row_major_index(pos, out)) * es,
                    static_cast<const unsigned char*>(x.raw) + size_t(util::row_major_index(src, in)) * es, es);
    } while (util::next_row_major(pos, out));
    return nullptr;
  }

 private:
  std::string label_;
  std::vector<int64_t> axes_;
};

}  // namespace

void register_center_crop_pad_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("CenterCropPad")
                   .since(18)
                   .check([](const sdk::NodeInfo& n) {
                     return sdk::dtype_size(n.input_dtype(0)) ? std::string() : std::string("element type has no fixed size");
                   })
                   .create<CenterCropPadKernel>());
}

}  // namespace onyx::cpu
