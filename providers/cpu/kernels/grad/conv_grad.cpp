// conv_grad.cpp: ai.onyx ConvGrad(dY, X, W) -> (dX, dW) with Conv's
// attributes (either output may be omitted, and is then not computed).
//   dW: per image and group, where the direct convolution fits, its
//       weight-gradient kernels over a padded copy of X (output channels in
//       the vector lanes when they fill them); else im2col of X (in chunks
//       of output lines) and dW += dY [M/g, OHW] x col^T; images split over
//       the threads, each summing into its own copy of dW.
//   dX, stride 1 (float32): dX is the convolution of dY with W transposed
//       and flipped (W'[c, m] = W[m, c] rotated 180 degrees), dilated as W,
//       padded extent - 1 - pad: on Winograd F(4x4, 3x3) where the forward
//       Conv would take it (winograd.h; finite dY and W'), else on the
//       direct convolution where it fits.
//   dX otherwise: dY laid out as dY^T [M/g, N*OHW], dcol = W^T x dY^T (one
//       GEMM per group), scattered back into dX.
// float32 runs on the provider's blocked SGEMM, float64 (used by the
// gradient checks) on its plain DGEMM (both gemm/gemm.h).
#include <algorithm>
#include <type_traits>
#include <vector>

#include "kernels/conv/conv_lowering.h"
#include "kernels/conv/direct_conv.h"
#include "kernels/conv/winograd.h"
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
      ONYX_SDK_RETURN_IF_ERROR(run<double>(ctx, dy, x, w, dx, dw, win));
    } else if (util::is_half(x.dtype)) {  // mixed-precision training: widened, rounded back once
      util::Widened dy32 = util::widen(dy), x32 = util::widen(x), w32 = util::widen(w);
      util::Widened dx32 = util::widen(dx, false), dw32 = util::widen(dw, false);
      ONYX_SDK_RETURN_IF_ERROR(run<float>(ctx, dy32.tensor, x32.tensor, w32.tensor, dx32.tensor, dw32.tensor, win));
      util::narrow_to(dx32, dx);
      util::narrow_to(dw32, dw);
    } else {
      ONYX_SDK_RETURN_IF_ERROR(run<float>(ctx, dy, x, w, dx, dw, win));
    }
    return nullptr;
  }

 private:
  template <typename T>
  OnyxStatus* run(sdk::ComputeContext& ctx, const sdk::Tensor& dy, const sdk::Tensor& x, const sdk::Tensor& w,
                  const sdk::Tensor& dx, const sdk::Tensor& dw, const std::vector<nn::WindowDim>& win) const {
    if (want_dw_) weight_gradient<T>(ctx, dy, x, dw, win);
    if (!want_dx_) return nullptr;
    if constexpr (std::is_same_v<T, float>) {
      std::vector<nn::WindowDim> flipped;
      if (flipped_windows(win, &flipped)) {
        // dX = conv(dY, W'), on Winograd where the forward Conv would take
        // it (3x3, enough channels and tiles; dY and W' finite), else on the
        // direct convolution where it fits.
        const int64_t n = dy.dim(0), m = w.dim(0), mg = m / group_, cg = w.dim(1), c = cg * group_;
        const std::vector<float> wt = flipped_weights(w);
        if (winograd::fits(flipped, n, mg, cg) && winograd::finite(dy.data<float>(), dy.size())) {
          const std::vector<float> u = winograd::transform_weights(wt.data(), c, mg, group_);
          if (winograd::finite(u.data(), int64_t(u.size())))
            return winograd::convolve(ctx, dy.data<float>(), n, group_, m, c, flipped, u.data(), nullptr,
                                      direct_conv::Epilogue{}, dx.data<float>());
        }
        const int64_t taps = conv_lowering::kernel_volume(win);
        if (direct_conv::fits(flipped, mg * taps)) {
          const int64_t per_group = cg * mg * taps;
          std::vector<float> packed;
          packed.reserve(wt.size());
          for (int64_t g = 0; g < group_; ++g) {
            const std::vector<float> part =
                direct_conv::pack_weights(wt.data() + g * per_group, cg, mg, taps);
            packed.insert(packed.end(), part.begin(), part.end());
          }
          return direct_conv::convolve(ctx, dy.data<float>(), n, group_, m, c, flipped, packed.data(), nullptr,
                                       nullptr, direct_conv::Epilogue{}, dx.data<float>());
        }
      }
    }
    input_gradient_by_columns<T>(ctx, dy, w, dx, win);
    return nullptr;
  }

  // Per image and group, added into dW: where the direct convolution fits,
  // its weight-gradient kernel over a padded copy of X; else col [C/g*K,
  // lines x W] of X for a chunk of output lines and dW_g += dY_g [M/g,
  // chunk] x col^T. Images run in parallel when there are as many as
  // threads, each into its own copy of dW, summed at the end.
  template <typename T>
  void weight_gradient(sdk::ComputeContext& ctx, const sdk::Tensor& dy, const sdk::Tensor& x, const sdk::Tensor& dw,
                       const std::vector<nn::WindowDim>& win) const {
    using conv_lowering::Worker;
    const int64_t n = x.dim(0), cg = x.dim(1) / group_, m = dw.dim(0), mg = m / group_;
    const int64_t taps = conv_lowering::kernel_volume(win), ck = cg * taps, in_plane = conv_lowering::in_volume(win);
    const int64_t width = win[2].out, lines = win[0].out * win[1].out, ohw = lines * width;
    bool direct = false;
    if constexpr (std::is_same_v<T, float>) direct = direct_conv::fits(win, ck);
    const direct_conv::Shape shape = direct ? direct_conv::shape_for(win, cg, mg) : direct_conv::Shape{};
    const direct_conv::Plan plan = direct ? direct_conv::make_plan(shape, direct_conv::lanes()) : direct_conv::Plan{};
    // Output channels that fill the vector lanes go in them, over dY
    // transposed per image (sums [group][pair][channel]); else the direct
    // kernel leaves each weight's sum as a vector of partial sums, one per
    // lane, added over the images and reduced once at the end.
    const bool channel_lanes = direct && direct_conv::weight_lanes_fit(shape);
    const int64_t lanes = direct && !channel_lanes ? direct_conv::lanes() : 1, sums = m * ck * lanes;
    const int64_t chunk = conv_lowering::lines_per_chunk<T>(ctx, n, ck, width, lines);
    const bool parallel = conv_lowering::items_in_parallel(ctx, n);
    const size_t slots = parallel ? ctx.thread_count() : 1;
    // Per slot: the padded input or the column buffer, then its own sums.
    const int64_t padded = cg * shape.padded_h * shape.padded_w + direct_conv::kSlack;
    const int64_t buffer = direct ? padded + (channel_lanes ? ohw * mg : 0) : ck * chunk * width;
    const int64_t per_slot = buffer + sums;
    std::vector<T> scratch(slots * size_t(per_slot));
    auto image = [&](int64_t b, T* buf, T* acc, Worker<T>& worker) {
      for (int64_t g = 0; g < group_; ++g) {
        const T* xg = x.data<T>() + (b * group_ + g) * cg * in_plane;
        const T* dyg = dy.data<T>() + (b * group_ + g) * mg * ohw;
        T* accg = acc + g * mg * ck * lanes;
        if constexpr (std::is_same_v<T, float>) {
          if (direct) {
            // buf is only ever this shape's padded planes: its padding,
            // zeroed with the vector, stays written.
            direct_conv::pad_planes(xg, win, shape, buf, /*padding_written=*/true);
            if (channel_lanes) {
              T* dyt = buf + padded;
              direct_conv::transpose_planes(dyg, mg, ohw, dyt);
              constexpr int64_t kPairs = 12;  // the kernels' pair blocks divide it
              worker.for_range(size_t((ck + kPairs - 1) / kPairs), 1, [&](size_t lo, size_t hi) {
                direct_conv::accumulate_weight_gradient_lanes(plan, buf, dyt, accg, int64_t(lo) * kPairs,
                                                              std::min(ck, int64_t(hi) * kPairs));
              });
              continue;
            }
            worker.for_range(size_t(plan.blocks), 1, [&](size_t lo, size_t hi) {
              direct_conv::accumulate_weight_gradient(plan, buf, dyg, accg, int64_t(lo), int64_t(hi));
            });
            continue;
          }
        }
        for (int64_t l0 = 0; l0 < lines; l0 += chunk) {
          const int64_t l1 = std::min(lines, l0 + chunk), cols = (l1 - l0) * width;
          conv_lowering::im2col(xg, cg, win, l0, l1, buf, worker);
          gemm(false, true, mg, ck, cols, dyg + l0 * width, ohw, buf, cols, T(1), accg, ck, worker.gemm);
        }
      }
    };
    if (!parallel) {
      T* acc = scratch.data() + buffer;
      std::fill(acc, acc + sums, T(0));
      Worker<T> worker{nullptr, nn::host_parallel_for(ctx), &ctx};
      for (int64_t b = 0; b < n; ++b) image(b, scratch.data(), acc, worker);
    } else {
      ctx.parallel_for(slots, 1, [&](size_t lo, size_t hi) {
        for (size_t slot = lo; slot < hi; ++slot) {
          T* buf = scratch.data() + slot * size_t(per_slot);
          T* acc = buf + buffer;
          std::fill(acc, acc + sums, T(0));
          Worker<T> worker{nullptr, nn::serial_parallel_for(), nullptr};
          // A contiguous share of the images, as the elementwise loops
          // before split them (chunk k on thread k): each image's X and dY
          // are in this core's cache. Fixed shares, not taken over: each
          // slot's sums, and so dW, come out the same on every run.
          const int64_t first = n * int64_t(slot) / int64_t(slots), end = n * int64_t(slot + 1) / int64_t(slots);
          for (int64_t b = first; b < end; ++b) image(b, buf, acc, worker);
        }
      });
    }
    T* out = dw.data<T>();
    for (int64_t i = 0; i < m * ck; ++i) {
      // Weight i = (g * mg + mi) * ck + pair; with channel lanes its sums
      // are at (g * ck + pair) * mg + mi.
      const int64_t at = channel_lanes ? (i / (mg * ck) * ck + i % ck) * mg + i / ck % mg : i * lanes;
      T sum = T(0);
      for (size_t slot = 0; slot < slots; ++slot)
        for (int64_t l = 0; l < lanes; ++l) sum += scratch[slot * size_t(per_slot) + size_t(buffer + at + l)];
      out[i] = sum;
    }
  }

  // The windows of dX = conv(dY, W flipped): dY's planes are the input, X's
  // the output, padding extent - 1 - pad. False unless every stride is 1
  // and the padding is at most the kernel's extent - 1 (then the flipped
  // padding is not negative).
  static bool flipped_windows(const std::vector<nn::WindowDim>& win, std::vector<nn::WindowDim>* flipped) {
    *flipped = win;
    for (nn::WindowDim& d : *flipped) {
      if (d.stride != 1 || d.pad_begin > d.extent() - 1 || d.pad_end > d.extent() - 1) return false;
      std::swap(d.in, d.out);
      d.pad_begin = d.extent() - 1 - d.pad_begin;
      d.pad_end = d.extent() - 1 - d.pad_end;
    }
    return true;
  }

  // W' [C/g, M/g, kh, kw] = W [M/g, C/g, kh, kw] with both axes swapped and
  // the taps reversed, group after group: dX's convolution of dY.
  std::vector<float> flipped_weights(const sdk::Tensor& w) const {
    const int64_t m = w.dim(0), mg = m / group_, cg = w.dim(1), taps = w.size() / std::max<int64_t>(1, m * cg);
    std::vector<float> wt(size_t(group_ * cg * mg * taps));
    for (int64_t g = 0; g < group_; ++g) {
      const float* wg = w.data<float>() + g * mg * cg * taps;
      float* wtg = wt.data() + g * cg * mg * taps;
      for (int64_t ci = 0; ci < cg; ++ci)
        for (int64_t mi = 0; mi < mg; ++mi)
          for (int64_t t = 0; t < taps; ++t)
            wtg[(ci * mg + mi) * taps + t] = wg[(mi * cg + ci) * taps + (taps - 1 - t)];
    }
    return wt;
  }

  // All images of a group at once: dY^T [M/g, N*OHW], dcol = W^T x dY^T
  // [C/g*K, N*OHW], then each column added into dX where its tap reads.
  template <typename T>
  void input_gradient_by_columns(sdk::ComputeContext& ctx, const sdk::Tensor& dy, const sdk::Tensor& w,
                                 const sdk::Tensor& dx, const std::vector<nn::WindowDim>& win) const {
    const int64_t n = dx.dim(0), cg = dx.dim(1) / group_, mg = w.dim(0) / group_;
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
