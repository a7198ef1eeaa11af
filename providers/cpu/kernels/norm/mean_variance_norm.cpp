// mean_variance_norm.cpp: MeanVarianceNormalization (float32, float64).
#include <cmath>
#include <vector>

#include "kernels/nn_util.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

// y = (x - mean) / (sqrt(var) + 1e-9) with the statistics taken over `axes`
// (the epsilon is the one of the ONNX function body).
class MvnKernel final : public sdk::Kernel {
 public:
  explicit MvnKernel(const sdk::NodeInfo& node)
      : label_(nn::node_label(node)), axes_(node.get_ints("axes", {0, 2, 3})) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), y;
    const int64_t rank = int64_t(x.rank());
    // group_stride[d]: step of the statistic index along dim d (0 if reduced).
    std::vector<bool> reduced(size_t(rank), false);
    for (int64_t a : axes_) {
      int64_t axis = 0;
      if (!nn::normalize_axis(a, rank, &axis))
        return nn::fail(label_, "axis %lld is out of range for input 0 of rank %lld", (long long)a,
                        (long long)rank);
      reduced[size_t(axis)] = true;
    }
    std::vector<int64_t> group_stride(size_t(rank), 0);
    int64_t groups = 1;
    for (int64_t d = rank; d-- > 0;)
      if (!reduced[size_t(d)]) {
        group_stride[size_t(d)] = groups;
        groups *= x.dim(size_t(d));
      }
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, x.dims, &y));
    if (x.size() == 0) return nullptr;
    const double count = double(x.size() / groups);
    std::vector<double> mean(size_t(groups), 0.0), var(size_t(groups), 0.0);
    bool f64 = x.dtype == ONYX_DTYPE_FLOAT64;
    auto at = [&](int64_t i) { return f64 ? x.data<double>()[i] : double(x.data<float>()[i]); };
    for_each_group_index(x.dims, group_stride,
                         [&](int64_t i, int64_t g) { mean[size_t(g)] += at(i); });
    for (double& m : mean) m /= count;
    for_each_group_index(x.dims, group_stride, [&](int64_t i, int64_t g) {
      double d = at(i) - mean[size_t(g)];
      var[size_t(g)] += d * d;
    });
    for (double& v : var) v = 1.0 / (std::sqrt(v / count) + 1e-9);  // now 1 / (std + eps)
    for_each_group_index(x.dims, group_stride, [&](int64_t i, int64_t g) {
      double v = (at(i) - mean[size_t(g)]) * var[size_t(g)];
      if (f64)
        y.data<double>()[i] = v;
      else
        y.data<float>()[i] = float(v);
    });
    return nullptr;
  }

 private:
  // Calls fn(flat index, statistic index) for every element in order.
  template <typename Fn>
  static void for_each_group_index(std::span<const int64_t> dims,
                                   const std::vector<int64_t>& group_stride, Fn&& fn) {
    std::vector<int64_t> pos(dims.size(), 0);
    int64_t total = sdk::element_count(dims), g = 0;
    for (int64_t i = 0; i < total; ++i) {
      fn(i, g);
      for (size_t d = dims.size(); d-- > 0;) {  // odometer step
        g += group_stride[d];
        if (++pos[d] < dims[d]) break;
        g -= group_stride[d] * dims[d];
        pos[d] = 0;
      }
    }
  }

  std::string label_;
  std::vector<int64_t> axes_;
};

}  // namespace

void register_mean_variance_norm_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("MeanVarianceNormalization").input_type(0, sdk::dtypes::kFloat).create<MvnKernel>());
}

}  // namespace onyx::cpu
