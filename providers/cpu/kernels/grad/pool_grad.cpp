// pool_grad.cpp: ai.onyx MaxPoolGrad(dY, X) and AveragePoolGrad(dY, shape of X)
// with the forward pool's attributes. Windows follow pool.cpp exactly (same
// geometry helpers, padding excluded from max, count_include_pad for the
// average), so each gradient is the adjoint of the forward kernel.
#include <algorithm>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/elementwise/vec_math.h"
#include "kernels/nn_util.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

// Taps of one output position along one dim: [k0, k1) inside the input,
// and how many lie inside the padded input (count_include_pad).
struct Taps {
  int64_t k0, k1, padded;
};
std::vector<Taps> taps_of(const nn::WindowDim& d) {
  std::vector<Taps> r;
  for (int64_t o = 0; o < d.out; ++o) {
    int64_t start = o * d.stride - d.pad_begin;
    nn::IndexRange in = nn::index_range(start, d.dilation, d.kernel, 0, d.in);
    nn::IndexRange pad = nn::index_range(start, d.dilation, d.kernel, -d.pad_begin, d.in + d.pad_end);
    r.push_back({in.first, in.last, pad.size()});
  }
  return r;
}

class PoolGradKernel final : public sdk::Kernel {
 public:
  PoolGradKernel(const sdk::NodeInfo& node, bool max)
      : label_(nn::node_label(node)), max_(max), attrs_(nn::WindowAttrs::read(node)),
        count_include_pad_(node.get_int("count_include_pad", 0) != 0) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor dy = ctx.in(0);
    std::vector<int64_t> xdims;
    sdk::Tensor x;
    if (max_) {
      x = ctx.in(1);
      xdims = x.shape();
    } else if (!util::read_ints(ctx.in(1), &xdims)) {
      return nn::fail(label_, "input 1 (the input's shape) must be int64");
    }
    if (xdims.size() < 3) return nn::fail(label_, "the pooled input must have rank >= 3");
    std::span<const int64_t> spatial(xdims.data() + 2, xdims.size() - 2);
    std::vector<nn::WindowDim> win;
    if (std::string e = nn::resolve_forward(attrs_, spatial, attrs_.kernel_shape, &win); !e.empty())
      return nn::fail(label_, "%s", e.c_str());
    std::vector<int64_t> expected = {xdims[0], xdims[1]};
    for (const auto& w : win) expected.push_back(w.out);
    if (dy.shape() != expected)
      return nn::fail(label_, "output gradient of shape %s does not match the pool's output %s",
                      nn::dims_str(dy.dims).c_str(), nn::dims_str(expected).c_str());
    nn::lift_to_3d(&win);
    sdk::Tensor dx;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, dy.dtype, xdims, &dx));
    if (dy.dtype == ONYX_DTYPE_FLOAT64) run<double>(ctx, dy, x, dx, win);
    else run<float>(ctx, dy, x, dx, win);
    return nullptr;
  }

 private:
  template <typename T>
  void run(sdk::ComputeContext& ctx, const sdk::Tensor& dy, const sdk::Tensor& x, const sdk::Tensor& dx,
           const std::vector<nn::WindowDim>& win) const {
    const nn::WindowDim &D = win[0], &H = win[1], &W = win[2];
    if constexpr (std::is_same_v<T, float>)
      if (max_ && plain_2x2(win)) return max_2x2(ctx, dy, x, dx, win);
    std::vector<Taps> td = taps_of(D), th = taps_of(H), tw = taps_of(W);
    const int64_t in_plane = D.in * H.in * W.in, out_plane = D.out * H.out * W.out;
    const size_t planes = size_t(dx.dim(0) * dx.dim(1));
    ctx.parallel_for(planes, nn::grain_for(double(out_plane * D.kernel * H.kernel * W.kernel)),
                     [&](size_t b, size_t e) {
      for (size_t p = b; p < e; ++p) {
        T* out = dx.data<T>() + p * size_t(in_plane);
        const T* g = dy.data<T>() + p * size_t(out_plane);
        const T* in = max_ ? x.data<T>() + p * size_t(in_plane) : nullptr;
        std::fill(out, out + in_plane, T(0));
        for (int64_t od = 0; od < D.out; ++od)
          for (int64_t oh = 0; oh < H.out; ++oh)
            for (int64_t ow = 0; ow < W.out; ++ow, ++g) {
              const Taps &a = td[size_t(od)], &c = th[size_t(oh)], &w = tw[size_t(ow)];
              int64_t d0 = od * D.stride - D.pad_begin, h0 = oh * H.stride - H.pad_begin,
                      w0 = ow * W.stride - W.pad_begin;
              auto row_of = [&](int64_t kd, int64_t kh) {
                return ((d0 + kd * D.dilation) * H.in + h0 + kh * H.dilation) * W.in + w0;
              };
              if (max_) {  // the first maximum, as the forward kernel picks it
                if (a.k0 >= a.k1 || c.k0 >= c.k1 || w.k0 >= w.k1) continue;  // all padding
                int64_t best = row_of(a.k0, c.k0) + w.k0 * W.dilation;
                T best_value = in[best];
                for (int64_t kd = a.k0; kd < a.k1; ++kd)
                  for (int64_t kh = c.k0; kh < c.k1; ++kh) {
                    const int64_t row = row_of(kd, kh);
                    // Masks, not branches: on random data a branch mispredicts half the time.
                    for (int64_t kw = w.k0; kw < w.k1; ++kw) {
                      const int64_t at = row + kw * W.dilation;
                      const T v = in[at];
                      const int64_t take = -int64_t(v > best_value);
                      best = (best & ~take) | (at & take);
                      best_value = std::max(best_value, v);
                    }
                  }
                out[best] += *g;
                continue;
              }
              int64_t count = count_include_pad_ ? a.padded * c.padded * w.padded
                                                 : (a.k1 - a.k0) * (c.k1 - c.k0) * (w.k1 - w.k0);
              if (count == 0) continue;
              T share = *g / T(count);
              for (int64_t kd = a.k0; kd < a.k1; ++kd)
                for (int64_t kh = c.k0; kh < c.k1; ++kh) {
                  T* row = out + row_of(kd, kh);
                  for (int64_t kw = w.k0; kw < w.k1; ++kw) row[kw * W.dilation] += share;
                }
            }
      }
    });
  }

  // 2-D, 2x2 windows, stride 2, no padding or dilation: the common CNN pool.
  static bool plain_2x2(const std::vector<nn::WindowDim>& win) {
    if (win[0].kernel != 1 || win[0].in != 1 || win[0].out != 1) return false;
    for (size_t i : {size_t(1), size_t(2)}) {
      const nn::WindowDim& d = win[i];
      if (d.kernel != 2 || d.stride != 2 || d.dilation != 1 || d.pad_begin != 0 || d.pad_end != 0) return false;
    }
    return true;
  }

  // Each dY goes to the first maximum of its 4 taps (compared in the forward
  // kernel's order), every other tap gets 0: written directly, no fill and
  // no scattered add (rows and columns no window covers are zeroed).
  static void max_2x2(sdk::ComputeContext& ctx, const sdk::Tensor& dy, const sdk::Tensor& x, const sdk::Tensor& dx,
                      const std::vector<nn::WindowDim>& win) {
    const nn::WindowDim &H = win[1], &W = win[2];
    const int64_t in_plane = H.in * W.in, out_plane = H.out * W.out;
    const bool covered = H.in == 2 * H.out && W.in == 2 * W.out;
    ctx.parallel_for(size_t(dx.dim(0) * dx.dim(1)), nn::grain_for(double(in_plane)), [&](size_t b, size_t e) {
      for (size_t p = b; p < e; ++p) {
        float* out = dx.data<float>() + p * size_t(in_plane);
        if (!covered) std::fill(out, out + in_plane, 0.0f);
        vec::max_pool_2x2_grad(x.data<float>() + p * size_t(in_plane), dy.data<float>() + p * size_t(out_plane), out,
                               H.in, W.in, H.out, W.out);
      }
    });
  }

  std::string label_;
  bool max_;
  nn::WindowAttrs attrs_;
  bool count_include_pad_;
};

}  // namespace

void register_pool_grad_kernels(sdk::KernelRegistry& registry) {
  for (bool max : {true, false})
    registry.add(sdk::KernelDefBuilder(max ? "MaxPoolGrad" : "AveragePoolGrad", kOnyxDomain)
                     .inputs(2)
                     .input_type(0, sdk::dtypes::kFloat)
                     .check([](const sdk::NodeInfo& node) {
                       return nn::WindowAttrs::read(node).kernel_shape.empty() ? "attribute kernel_shape is required"
                                                                               : std::string();
                     })
                     .create([max](const sdk::NodeInfo& node) { return std::make_unique<PoolGradKernel>(node, max); }));
}

}  // namespace onyx::cpu
