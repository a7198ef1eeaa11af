// affine_grid.cpp: AffineGrid (opset 20): the sampling grid of an affine
// transform, GridSample's usual input. Float math in double.
#include <vector>

#include "kernels/kernel_util.h"
#include "kernels/narrow_types.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

// AffineGrid: theta [N, 2, 3] (or [N, 3, 4]) applied to the normalized
// coordinates of an output of size (N, C, H, W) (or (N, C, D, H, W)):
// grid [N, H, W, 2] (or [N, D, H, W, 3]) in (x, y[, z]) order.
class AffineGridKernel final : public sdk::Kernel {
 public:
  explicit AffineGridKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)), align_(node.get_int("align_corners", 0) != 0) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor theta = ctx.in(0);
    std::vector<int64_t> size;
    if (!util::read_ints(ctx.in(1), &size) || (size.size() != 4 && size.size() != 5))
      return util::fail(label_, "size must hold 4 or 5 int64 values");
    const size_t r = size.size() - 2;
    const int64_t n = size[0];
    if (theta.rank() != 3 || theta.dim(0) != n || theta.dim(1) != int64_t(r) || theta.dim(2) != int64_t(r) + 1)
      return util::fail(label_, "theta %s does not fit size (expected [N, %zu, %zu])", util::dims_str(theta.dims).c_str(), r, r + 1);
    std::vector<int64_t> spatial(size.begin() + 2, size.end()), dims{n};
    for (int64_t d : spatial) dims.push_back(d);
    dims.push_back(int64_t(r));
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, theta.dtype, dims, &y));
    auto coord = [&](int64_t i, int64_t len) {
      if (len <= 1) return 0.0;
      return align_ ? -1.0 + 2.0 * double(i) / double(len - 1) : (2.0 * double(i) + 1.0) / double(len) - 1.0;
    };
    int64_t out = 0;
    std::vector<int64_t> pos(r, 0);
    for (int64_t b = 0; b < n; ++b) {
      std::fill(pos.begin(), pos.end(), 0);
      do {
        // Homogeneous input (x, y[, z], 1): x follows the last spatial dim.
        std::vector<double> in(r + 1, 1.0);
        for (size_t k = 0; k < r; ++k) in[k] = coord(pos[r - 1 - k], spatial[r - 1 - k]);
        for (size_t row = 0; row < r; ++row) {
          double v = 0;
          for (size_t k = 0; k <= r; ++k)
            v += narrow::load(theta.dtype, theta.raw, (b * int64_t(r) + int64_t(row)) * int64_t(r + 1) + int64_t(k)) * in[k];
          narrow::store(y.dtype, y.raw, out++, v, true);
        }
      } while (util::next_row_major(pos, spatial));
    }
    return nullptr;
  }

 private:
  std::string label_;
  bool align_;
};

}  // namespace

void register_affine_grid_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("AffineGrid").since(20).input_type(0, sdk::dtypes::kFloat | sdk::dtypes::kHalf).create<AffineGridKernel>());
}

}  // namespace onyx::cpu
