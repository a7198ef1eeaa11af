// sum_to_shape.cpp: ai.onyx SumToShape(G, shape) -> Y. Y has the given shape
// and each element is the sum of the elements of G that broadcasting Y to
// G's shape would have copied it to: the gradient of a broadcast.
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/kernel_util.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

class SumToShapeKernel final : public sdk::Kernel {
 public:
  explicit SumToShapeKernel(const sdk::NodeInfo& node) : label_(util::node_label(node)) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor g = ctx.in(0);
    std::vector<int64_t> target;
    if (!util::read_ints(ctx.in(1), &target))
      return util::fail(label_, "input 1 (the shape) must be int64 or int32");
    const size_t rank = g.rank();
    if (target.size() > rank)
      return util::fail(label_, "target shape %s has more dims than the gradient %s",
                        util::dims_str(target).c_str(), util::dims_str(g.dims).c_str());
    // The target aligned on G's last dims; every dim must be 1 or G's.
    std::vector<int64_t> padded(rank - target.size(), 1);
    padded.insert(padded.end(), target.begin(), target.end());
    for (size_t d = 0; d < rank; ++d)
      if (padded[d] != 1 && padded[d] != g.dim(d))
        return util::fail(label_, "gradient of shape %s cannot be summed to shape %s (dim %zu)",
                          util::dims_str(g.dims).c_str(), util::dims_str(target).c_str(), d);
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, g.dtype, target, &y));
    bool summed = false;
    for (size_t d = 0; d < rank; ++d) summed |= padded[d] == 1 && g.dim(d) != 1;
    if (!summed) {  // the same elements (a shape the graph could not prove equal)
      std::memcpy(y.raw, g.raw, size_t(g.size()) * sdk::dtype_size(g.dtype));
      return nullptr;
    }
    if (g.dtype == ONYX_DTYPE_FLOAT64) {
      run<double>(g, y, padded);
    } else if (util::is_half(g.dtype)) {  // summed in float32, rounded once
      util::Widened g32 = util::widen(g), y32 = util::widen(y, false);
      run<float>(g32.tensor, y32.tensor, padded);
      util::narrow_to(y32, y);
    } else {
      run<float>(g, y, padded);
    }
    return nullptr;
  }

 private:
  // Walks G in order with an odometer over the outer dims; the innermost
  // dim is either copied-and-added (kept) or summed (broadcast).
  template <typename T>
  static void run(const sdk::Tensor& g, const sdk::Tensor& y, const std::vector<int64_t>& padded) {
    const T* gd = g.data<T>();
    T* yd = y.data<T>();
    std::fill(yd, yd + y.size(), T(0));
    const size_t rank = g.rank();
    if (g.size() == 0) return;
    if (rank == 0) {
      yd[0] = gd[0];
      return;
    }
    std::vector<int64_t> ystride(rank, 0);
    int64_t s = 1;
    for (size_t d = rank; d-- > 0;) {
      ystride[d] = padded[d] == 1 ? 0 : s;
      s *= padded[d];
    }
    const int64_t inner = g.dim(rank - 1);
    const bool inner_kept = ystride[rank - 1] != 0;
    std::vector<int64_t> index(rank, 0);
    int64_t y_offset = 0;
    for (int64_t base = 0; base < g.size(); base += inner) {
      const T* row = gd + base;
      T* out = yd + y_offset;
      if (inner_kept) {
        for (int64_t i = 0; i < inner; ++i) out[i] += row[i];
      } else {
        T sum = 0;
        for (int64_t i = 0; i < inner; ++i) sum += row[i];
        out[0] += sum;
      }
      for (size_t d = rank - 1; d-- > 0;) {  // advance the outer odometer
        y_offset += ystride[d];
        if (++index[d] < g.dim(d)) break;
        y_offset -= ystride[d] * index[d];
        index[d] = 0;
      }
    }
  }

  std::string label_;
};

}  // namespace

void register_sum_to_shape_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("SumToShape", kOnyxDomain)
                   .inputs(2)
                   .input_type(0, sdk::dtypes::kFloat | sdk::dtypes::kHalf)
                   .create<SumToShapeKernel>());
}

}  // namespace onyx::cpu
