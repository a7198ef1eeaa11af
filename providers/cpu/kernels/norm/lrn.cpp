// lrn.cpp: LRN, local response normalization across channels (float32,
// float64).
#include <algorithm>
#include <cmath>

#include "kernels/nn_util.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

// y = x / (bias + alpha / size * square_sum)^beta, the square sum running
// over the channels max(0, c - floor((size-1)/2)) .. min(C-1, c + ceil((size-1)/2)).
class LrnKernel final : public sdk::Kernel {
 public:
  explicit LrnKernel(const sdk::NodeInfo& node)
      : label_(nn::node_label(node)),
        alpha_(node.get_float("alpha", 1e-4)),
        beta_(node.get_float("beta", 0.75)),
        bias_(node.get_float("bias", 1.0)),
        size_(node.get_int("size", 1)) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), y;
    if (x.rank() < 2)
      return nn::fail(label_, "input 0 must be N x C x ..., got shape %s",
                      nn::dims_str(x.dims).c_str());
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, x.dims, &y));
    const int64_t c = x.dim(1), s = sdk::element_count(x.dims.subspan(2));
    ctx.parallel_for(
        size_t(x.dim(0) * c), nn::grain_for(double(s * size_)), [&](size_t lo, size_t hi) {
          std::vector<double> sq(static_cast<size_t>(s));
          for (size_t p = lo; p < hi; ++p) {
            int64_t ch = int64_t(p) % c, plane0 = int64_t(p) - ch;  // plane of channel 0
            int64_t first = std::max<int64_t>(0, ch - (size_ - 1) / 2);
            int64_t last = std::min<int64_t>(c - 1, ch + size_ / 2);
            if (x.dtype == ONYX_DTYPE_FLOAT64)
              plane<double>(x, y, plane0, int64_t(p), first, last, s, &sq);
            else
              plane<float>(x, y, plane0, int64_t(p), first, last, s, &sq);
          }
        });
    return nullptr;
  }

 private:
  template <typename T>
  void plane(const sdk::Tensor& x, const sdk::Tensor& y, int64_t plane0, int64_t p, int64_t first,
             int64_t last, int64_t s, std::vector<double>* sq) const {
    std::fill(sq->begin(), sq->end(), 0.0);
    for (int64_t i = first; i <= last; ++i) {
      const T* xi = x.data<T>() + (plane0 + i) * s;
      for (int64_t k = 0; k < s; ++k) (*sq)[size_t(k)] += double(xi[k]) * double(xi[k]);
    }
    const T* xp = x.data<T>() + p * s;
    T* yp = y.data<T>() + p * s;
    double a = alpha_ / double(size_);
    for (int64_t k = 0; k < s; ++k)
      yp[k] = T(double(xp[k]) / std::pow(bias_ + a * (*sq)[size_t(k)], beta_));
  }

  std::string label_;
  double alpha_, beta_, bias_;
  int64_t size_;
};

}  // namespace

void register_lrn_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("LRN")
                   .input_type(0, sdk::dtypes::kFloat)
                   .check([](const sdk::NodeInfo& node) -> std::string {
                     if (!node.has("size")) return "attribute size is required";
                     if (node.get_int("size", 0) <= 0) return "attribute size must be positive";
                     return {};
                   })
                   .create<LrnKernel>());
}

}  // namespace onyx::cpu
