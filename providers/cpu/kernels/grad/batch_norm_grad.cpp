// batch_norm_grad.cpp: ai.onyx BatchNormGradSums(dY, X, mean) -> (sum_centered,
// sum): per channel c of X [N, C, ...], the sums over every other axis of
// dY * (X - mean[c]) and of dY, which BatchNormalization's scale and bias
// gradients are (its statistics as inputs; optimize/batchnorm_grad_fusion.cpp
// makes the node from the Sub, Mul and ReduceSums autodiff writes). One pass
// over dY and X instead of four passes and two intermediates (a CNN's
// BatchNorm backward at batch 64: a fifth of its training step).
//
// Each (image, channel) plane is summed alone, in parallel, into lanes of
// float then one double; the planes of a channel are then added in image
// order, so the result does not depend on the thread count.
#include <algorithm>
#include <vector>

#include "kernels/nn_util.h"
#include "kernels/registry.h"
#include "target_clones.h"

namespace onyx::cpu {
namespace {

struct PlaneSums {
  double centered = 0, sum = 0;
};

// Two 8-float vectors per sum: four independent chains of adds. (Vectors of
// 16 floats are split by GCC's AVX2 clone through the stack.)
typedef float Floats8 __attribute__((vector_size(32)));

ONYX_CLONES PlaneSums plane_sums(const float* dy, const float* x, float mean, int64_t n) {
  Floats8 c0 = {}, c1 = {}, s0 = {}, s1 = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    Floats8 d0, d1, v0, v1;
    __builtin_memcpy(&d0, dy + i, sizeof d0);
    __builtin_memcpy(&d1, dy + i + 8, sizeof d1);
    __builtin_memcpy(&v0, x + i, sizeof v0);
    __builtin_memcpy(&v1, x + i + 8, sizeof v1);
    c0 += d0 * (v0 - mean);
    c1 += d1 * (v1 - mean);
    s0 += d0;
    s1 += d1;
  }
  PlaneSums r;
  for (int l = 0; l < 8; ++l) r.centered += double(c0[l]) + double(c1[l]), r.sum += double(s0[l]) + double(s1[l]);
  for (; i < n; ++i) r.centered += double(dy[i] * (x[i] - mean)), r.sum += double(dy[i]);
  return r;
}

PlaneSums plane_sums(const double* dy, const double* x, double mean, int64_t n) {
  PlaneSums r;
  for (int64_t i = 0; i < n; ++i) r.centered += dy[i] * (x[i] - mean), r.sum += dy[i];
  return r;
}

class BatchNormGradSumsKernel final : public sdk::Kernel {
 public:
  explicit BatchNormGradSumsKernel(const sdk::NodeInfo& node)
      : label_(nn::node_label(node)), want_sum_(node.outputs.size() > 1 && node.outputs[1].present) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor dy = ctx.in(0), x = ctx.in(1), mean = ctx.in(2);
    if (x.rank() < 2 || dy.shape() != x.shape())
      return nn::fail(label_, "dY %s and X %s must have one shape of rank >= 2", nn::dims_str(dy.dims).c_str(),
                      nn::dims_str(x.dims).c_str());
    if (dy.dtype != x.dtype || mean.dtype != x.dtype)
      return nn::fail(label_, "dY, X and mean must have one type");
    const int64_t n = x.dim(0), c = x.dim(1), plane = x.size() / std::max<int64_t>(1, n * c);
    if (mean.size() != c)
      return nn::fail(label_, "mean %s must hold one value per channel of X %s (%lld)", nn::dims_str(mean.dims).c_str(),
                      nn::dims_str(x.dims).c_str(), (long long)c);
    const int64_t channel_dims[] = {c};
    sdk::Tensor centered, sum;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, channel_dims, &centered));
    if (want_sum_) ONYX_SDK_RETURN_IF_ERROR(ctx.output(1, x.dtype, channel_dims, &sum));
    if (x.dtype == ONYX_DTYPE_FLOAT64)
      run<double>(ctx, dy, x, mean, n, c, plane, centered, sum);
    else
      run<float>(ctx, dy, x, mean, n, c, plane, centered, sum);
    return nullptr;
  }

 private:
  template <typename T>
  void run(sdk::ComputeContext& ctx, const sdk::Tensor& dy, const sdk::Tensor& x, const sdk::Tensor& mean, int64_t n,
           int64_t c, int64_t plane, const sdk::Tensor& centered, const sdk::Tensor& sum) const {
    std::vector<PlaneSums> planes(size_t(n * c));
    const T *dyp = dy.data<T>(), *xp = x.data<T>(), *mp = mean.data<T>();
    ctx.parallel_for(planes.size(), nn::grain_for(double(plane)), [&](size_t lo, size_t hi) {
      for (size_t i = lo; i < hi; ++i)
        planes[i] = plane_sums(dyp + int64_t(i) * plane, xp + int64_t(i) * plane, mp[int64_t(i) % c], plane);
    });
    for (int64_t ch = 0; ch < c; ++ch) {
      PlaneSums total;
      for (int64_t b = 0; b < n; ++b) {
        const PlaneSums& p = planes[size_t(b * c + ch)];
        total.centered += p.centered;
        total.sum += p.sum;
      }
      centered.data<T>()[ch] = T(total.centered);
      if (want_sum_) sum.data<T>()[ch] = T(total.sum);
    }
  }

  std::string label_;
  bool want_sum_;  // the sum of dY, when the graph reads it
};

}  // namespace

void register_batch_norm_grad_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("BatchNormGradSums", kOnyxDomain)
                   .inputs(3)
                   .input_types({0, 1, 2}, sdk::dtypes::kFloat)
                   .create<BatchNormGradSumsKernel>());
}

}  // namespace onyx::cpu
