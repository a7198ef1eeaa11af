// conv_grad.cpp: ai.onyx ConvGrad(dY, X, W) -> (dX, dW) with Conv's
// attributes (either output may be omitted, and is then not computed). Per
// group, im2col turns X into col [C/g*K, N*OHW] and dY is laid out as
// dY^T [M/g, N*OHW]; then
//   dW = dY^T x col^T                  (one GEMM)
//   dcol = W^T [C/g*K, M/g] x dY^T     (one GEMM), scattered back by col2im into dX.
// float32 runs on the provider's blocked SGEMM, float64 (used by the
// gradient checks) on its plain DGEMM (both gemm/gemm.h).
#include <vector>

#include "kernels/conv/conv_lowering.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

using conv_lowering::gemm;

// Calls fn(tap, output_position, input_offset or -1 for padding) for every
// tap of every output position of one channel (3-D lifted windows): one
// channel's rows of the im2col matrix.
template <typename Fn>
void for_each_tap(const std::vector<nn::WindowDim>& w, Fn&& fn) {
  const nn::WindowDim &D = w[0], &H = w[1], &W = w[2];
  for (int64_t kd = 0; kd < D.kernel; ++kd)
    for (int64_t kh = 0; kh < H.kernel; ++kh)
      for (int64_t kw = 0; kw < W.kernel; ++kw) {
        const int64_t tap = (kd * H.kernel + kh) * W.kernel + kw;
        int64_t o = 0;
        for (int64_t od = 0; od < D.out; ++od) {
          const int64_t id = od * D.stride - D.pad_begin + kd * D.dilation;
          for (int64_t oh = 0; oh < H.out; ++oh) {
            const int64_t ih = oh * H.stride - H.pad_begin + kh * H.dilation;
            const bool row_in = id >= 0 && id < D.in && ih >= 0 && ih < H.in;
            const int64_t base = (id * H.in + ih) * W.in;
            for (int64_t ow = 0; ow < W.out; ++ow, ++o) {
              const int64_t iw = ow * W.stride - W.pad_begin + kw * W.dilation;
              fn(tap, o, row_in && iw >= 0 && iw < W.in ? base + iw : -1);
            }
          }
        }
      }
}

class ConvGradKernel final : public sdk::Kernel {
 public:
  explicit ConvGradKernel(const sdk::NodeInfo& node)
      : label_(nn::node_label(node)), attrs_(nn::WindowAttrs::read(node)), group_(node.get_int("group", 1)),
        want_dx_(node.outputs.size() > 0 && node.outputs[0].present),
        want_dw_(node.outputs.size() > 1 && node.outputs[1].present) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor dy = ctx.in(0), x = ctx.in(1), w = ctx.in(2);
    if (x.rank() < 3 || w.rank() != x.rank() || dy.rank() != x.rank())
      return nn::fail(label_, "X %s, W %s and dY %s must have one rank >= 3", nn::dims_str(x.dims).c_str(),
                      nn::dims_str(w.dims).c_str(), nn::dims_str(dy.dims).c_str());
    const int64_t n = x.dim(0), c = x.dim(1), m = w.dim(0);
    if (group_ <= 0 || c % group_ || m % group_ || w.dim(1) != c / group_)
      return nn::fail(label_, "W %s does not fit X %s with group %lld", nn::dims_str(w.dims).c_str(),
                      nn::dims_str(x.dims).c_str(), (long long)group_);
    std::vector<nn::WindowDim> win;
    if (std::string e = nn::resolve_forward(attrs_, x.dims.subspan(2), w.dims.subspan(2), &win); !e.empty())
      return nn::fail(label_, "%s", e.c_str());
    std::vector<int64_t> expected = {n, m};
    for (const auto& d : win) expected.push_back(d.out);
    if (dy.shape() != expected)
      return nn::fail(label_, "output gradient of shape %s does not match the convolution's output %s",
                      nn::dims_str(dy.dims).c_str(), nn::dims_str(expected).c_str());
    nn::lift_to_3d(&win);
    sdk::Tensor dx, dw;
    if (want_dx_) ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, x.dims, &dx));
    if (want_dw_) ONYX_SDK_RETURN_IF_ERROR(ctx.output(1, w.dtype, w.dims, &dw));
    if (x.dtype == ONYX_DTYPE_FLOAT64) {
      run<double>(ctx, dy, x, w, dx, dw, win);
    } else if (util::is_half(x.dtype)) {  // mixed-precision training: widened, rounded back once
      util::Widened dy32 = util::widen(dy), x32 = util::widen(x), w32 = util::widen(w);
      util::Widened dx32 = util::widen(dx, false), dw32 = util::widen(dw, false);
      run<float>(ctx, dy32.tensor, x32.tensor, w32.tensor, dx32.tensor, dw32.tensor, win);
      util::narrow_to(dx32, dx);
      util::narrow_to(dw32, dw);
    } else {
      run<float>(ctx, dy, x, w, dx, dw, win);
    }
    return nullptr;
  }

 private:
  // All images of a group at once: col [C/g*K, N*OHW] and dY^T [M/g, N*OHW]
  // make each gradient one large GEMM.
  template <typename T>
  void run(sdk::ComputeContext& ctx, const sdk::Tensor& dy, const sdk::Tensor& x, const sdk::Tensor& w,
           const sdk::Tensor& dx, const sdk::Tensor& dw, const std::vector<nn::WindowDim>& win) const {
    const int64_t n = x.dim(0), cg = x.dim(1) / group_, mg = w.dim(0) / group_;
    const int64_t k = win[0].kernel * win[1].kernel * win[2].kernel, ck = cg * k;
    const int64_t in_plane = win[0].in * win[1].in * win[2].in, ohw = win[0].out * win[1].out * win[2].out;
    const int64_t cols = n * ohw;
    std::vector<T> col(size_t(ck * cols)), dyt(size_t(mg * cols));
    const ParallelFor pf = nn::host_parallel_for(ctx);
    const size_t grain = nn::grain_for(double(k * ohw));
    for (int64_t g = 0; g < group_; ++g) {
      ctx.parallel_for(size_t(mg * n), grain, [&](size_t lo, size_t hi) {
        for (size_t i = lo; i < hi; ++i) {
          const int64_t m = int64_t(i) / n, b = int64_t(i) % n;
          const T* src = dy.data<T>() + ((b * group_ + g) * mg + m) * ohw;
          std::copy(src, src + ohw, dyt.data() + m * cols + b * ohw);
        }
      });
      if (want_dw_) {
        ctx.parallel_for(size_t(cg * n), grain, [&](size_t lo, size_t hi) {
          for (size_t i = lo; i < hi; ++i) {
            const int64_t c = int64_t(i) / n, b = int64_t(i) % n;
            const T* plane = x.data<T>() + ((b * group_ + g) * cg + c) * in_plane;
            T* rows = col.data() + c * k * cols + b * ohw;
            for_each_tap(win, [&](int64_t tap, int64_t o, int64_t at) { rows[tap * cols + o] = at < 0 ? T(0) : plane[at]; });
          }
        });
        gemm(false, true, mg, ck, cols, dyt.data(), cols, col.data(), cols, T(0), dw.data<T>() + g * mg * ck, ck, pf);
      }
      if (want_dx_) {  // dcol reuses col's buffer
        gemm(true, false, ck, cols, mg, w.data<T>() + g * mg * ck, ck, dyt.data(), cols, T(0), col.data(), cols, pf);
        ctx.parallel_for(size_t(cg * n), grain, [&](size_t lo, size_t hi) {
          for (size_t i = lo; i < hi; ++i) {
            const int64_t c = int64_t(i) / n, b = int64_t(i) % n;
            T* plane = dx.data<T>() + ((b * group_ + g) * cg + c) * in_plane;
            const T* rows = col.data() + c * k * cols + b * ohw;
            std::fill(plane, plane + in_plane, T(0));
            for_each_tap(win, [&](int64_t tap, int64_t o, int64_t at) {
              if (at >= 0) plane[at] += rows[tap * cols + o];
            });
          }
        });
      }
    }
  }

  std::string label_;
  nn::WindowAttrs attrs_;
  int64_t group_;
  bool want_dx_, want_dw_;  // outputs the graph left out are not computed
};

}  // namespace

void register_conv_grad_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("ConvGrad", kOnyxDomain)
                   .inputs(3)
                   .input_types({0, 1, 2}, sdk::dtypes::kFloat | sdk::dtypes::kHalf)
                   .create<ConvGradKernel>());
}

}  // namespace onyx::cpu
