// det.cpp: Det (opset 11) of a batch of square matrices, by LU decomposition
// in double for every float type.
#include <cmath>
#include <utility>
#include <vector>

#include "kernels/kernel_util.h"
#include "kernels/narrow_types.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

// Det of [..., M, M] by LU decomposition with partial pivoting, in double.
class DetKernel final : public sdk::Kernel {
 public:
  explicit DetKernel(const sdk::NodeInfo& node) : label_(util::node_label(node)) {}
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    if (x.rank() < 2 || x.dim(x.rank() - 1) != x.dim(x.rank() - 2))
      return util::fail(label_, "input %s is not a batch of square matrices", util::dims_str(x.dims).c_str());
    const int64_t m = x.dim(x.rank() - 1), count = m ? x.size() / (m * m) : 0;
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, x.dims.subspan(0, x.rank() - 2), &y));
    std::vector<double> a(size_t(m * m));
    for (int64_t t = 0; t < count; ++t) {
      for (int64_t e = 0; e < m * m; ++e) a[size_t(e)] = narrow::load(x.dtype, x.raw, t * m * m + e);
      double det = 1;
      for (int64_t col = 0; col < m && det != 0; ++col) {
        int64_t pivot = col;
        for (int64_t r = col + 1; r < m; ++r)
          if (std::fabs(a[size_t(r * m + col)]) > std::fabs(a[size_t(pivot * m + col)])) pivot = r;
        if (a[size_t(pivot * m + col)] == 0) {
          det = 0;
          break;
        }
        if (pivot != col) {
          for (int64_t k = 0; k < m; ++k) std::swap(a[size_t(pivot * m + k)], a[size_t(col * m + k)]);
          det = -det;
        }
        double p = a[size_t(col * m + col)];
        det *= p;
        for (int64_t r = col + 1; r < m; ++r) {
          double f = a[size_t(r * m + col)] / p;
          for (int64_t k = col; k < m; ++k) a[size_t(r * m + k)] -= f * a[size_t(col * m + k)];
        }
      }
      narrow::store(y.dtype, y.raw, t, det, true);
    }
    return nullptr;
  }

 private:
  std::string label_;
};

}  // namespace

void register_det_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("Det").since(11).inputs(1).all_inputs(sdk::dtypes::kFloat | sdk::dtypes::kHalf).create<DetKernel>());
}

}  // namespace onyx::cpu
