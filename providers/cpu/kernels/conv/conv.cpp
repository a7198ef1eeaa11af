// conv.cpp: Conv and ConvTranspose for float32 and float64 (Conv also
// float16/bfloat16, widened to float32), 1-D to 3-D, with groups, pads,
// strides, dilations and auto_pad.
//
// Conv, float32 on an AVX2/AVX-512 CPU: a 3x3, stride-1 Conv with enough
// channels and outputs by Winograd's F(4x4, 3x3) (winograd.h: 36 GEMMs on
// transformed tiles, a quarter of the multiply-adds), when its inputs and
// weights are finite; few input channels per group (the lowered GEMM too
// small to pay for its column matrix): a direct convolution over a padded
// copy of each image (direct_conv.h). Otherwise per (image, group),
// im2col of the input into a [C/group * K, cols]
// matrix (in chunks of output lines to bound the scratch memory), then one
// GEMM with the group's weights [M/group, C/group * K]. A 1x1, stride-1,
// unpadded Conv is a plain GEMM on the input. Depthwise Convs (one input
// channel per group) run a direct loop: a GEMM with one row is a poor fit
// (float32 2-D: over zero-padded phase planes, or on AVX2 with 8 channels
// to a vector where rows are strided or narrow).
// ConvTranspose: per (image, group), one GEMM W_g^T x X_g gives every
// (output channel, tap) contribution, which col2im adds into the output.
//
// float32 runs on the provider's blocked SGEMM, float64 on the plain DGEMM
// (gemm/gemm.h). im2col / col2im and the work split: conv_lowering.h.
#include "kernels/conv/conv_lowering.h"
#include "kernels/conv/direct_conv.h"
#include "kernels/conv/image_lanes.h"
#include "kernels/conv/phase_planes.h"
#include "kernels/conv/winograd.h"
#include "kernels/elementwise/vec_math.h"
#include "kernels/registry.h"

#include <cmath>
#include <mutex>

namespace onyx::cpu {
namespace {

using namespace conv_lowering;

// Common input checks; fills the channel counts.
struct Channels {
  int64_t n = 0, c = 0, m = 0, group = 1;
};

class ConvBase : public sdk::Kernel {
 protected:
  explicit ConvBase(const sdk::NodeInfo& node)
      : label_(nn::node_label(node)),
        attrs_(nn::WindowAttrs::read(node)),
        group_(node.get_int("group", 1)) {}

  // X [N, C, ...], W [M, C/group, k...] (Conv) or [C, M/group, k...]
  // (ConvTranspose), B [M].
  OnyxStatus* check_inputs(const sdk::Tensor& x, const sdk::Tensor& w,
                           const std::optional<sdk::Tensor>& b, bool transposed,
                           Channels* ch) const {
    if (x.rank() < 3 || x.rank() > 5)
      return nn::fail(label_, "input 0 (X) must be N x C x D1 [x D2 [x D3]], got shape %s",
                      nn::dims_str(x.dims).c_str());
    if (w.rank() != x.rank())
      return nn::fail(label_, "input 1 (W) has shape %s; expected rank %zu like X %s",
                      nn::dims_str(w.dims).c_str(), x.rank(), nn::dims_str(x.dims).c_str());
    ch->n = x.dim(0);
    ch->c = x.dim(1);
    ch->group = group_;
    int64_t w_in = transposed ? w.dim(0) : w.dim(1) * group_;
    ch->m = transposed ? w.dim(1) * group_ : w.dim(0);
    if (w_in != ch->c || ch->c % group_ || ch->m % group_)
      return nn::fail(label_, "X %s and W %s do not match with group %lld (W must be %s)",
                      nn::dims_str(x.dims).c_str(), nn::dims_str(w.dims).c_str(), (long long)group_,
                      transposed ? "C x M/group x k..." : "M x C/group x k...");
    std::span<const int64_t> kernel = w.dims.subspan(2);
    if (!attrs_.kernel_shape.empty() &&
        !std::equal(kernel.begin(), kernel.end(), attrs_.kernel_shape.begin(),
                    attrs_.kernel_shape.end()))
      return nn::fail(label_, "kernel_shape %s does not match W %s",
                      nn::dims_str(attrs_.kernel_shape).c_str(), nn::dims_str(w.dims).c_str());
    for (int64_t k : kernel)
      if (k < 1)
        return nn::fail(label_, "input 1 (W) has an empty kernel: %s",
                        nn::dims_str(w.dims).c_str());
    if (b && (b->rank() != 1 || b->dim(0) != ch->m))
      return nn::fail(label_, "input 2 (B) has shape %s; expected [%lld]",
                      nn::dims_str(b->dims).c_str(), (long long)ch->m);
    return nullptr;
  }

  // Writes the bias (or 0) into every output plane.
  template <typename T>
  static void fill_bias(sdk::ComputeContext& ctx, T* y, const Channels& ch, int64_t plane,
                        const std::optional<sdk::Tensor>& b) {
    ctx.parallel_for(size_t(ch.n * ch.m), nn::grain_for(double(plane)), [&](size_t lo, size_t hi) {
      for (size_t p = lo; p < hi; ++p)
        std::fill(y + int64_t(p) * plane, y + int64_t(p + 1) * plane,
                  b ? b->data<T>()[int64_t(p) % ch.m] : T(0));
    });
  }

  std::string label_;
  nn::WindowAttrs attrs_;
  int64_t group_;
};

// com.microsoft FusedConv's activation, applied to each output block while
// it is still in cache (the graph optimizer writes FusedConv for Conv -> Relu
// and Conv -> Clip / LeakyRelu / Sigmoid / Tanh / Swish (QuickGelu) / HardSwish:
// optimize/activation_fusion.cpp). Relu, Clip and LeakyRelu are the direct
// convolution's and the GEMM's own (kind); the others a vector loop over
// each finished block (map).
struct Activation : direct_conv::Epilogue {
  // "" and the activation of a FusedConv node, or why it is not supported.
  static std::string read(const sdk::NodeInfo& node, Activation* out) {
    if (node.op_type != "FusedConv" && node.op_type != "FusedConvMaxPool") return {};
    const std::string name = node.get_string("activation", "");
    if (name.empty() && node.op_type == "FusedConvMaxPool") return {};  // its activation is optional
    const std::vector<float> params = node.get_floats("activation_params");
    if (name == "Relu" && params.empty()) out->kind = kRelu;
    else if (name == "Clip" && params.size() == 2) out->kind = kClip, out->a = params[0], out->b = params[1];
    else if (name == "LeakyRelu" && params.size() == 1) out->kind = kLeakyRelu, out->a = params[0];
    // Not monotonic (Swish) or not worth it: FusedConvMaxPool pools in the
    // convolution's loops, before any map could run.
    else if (node.op_type == "FusedConvMaxPool") return "FusedConvMaxPool activation '" + name + "' is not supported";
    else if (name == "Sigmoid" && params.empty()) out->map = kSigmoid;
    else if (name == "Tanh" && params.empty()) out->map = kTanh;
    else if (name == "HardSwish" && params.empty()) out->map = kHardSwish;
    else if ((name == "Swish" || name == "QuickGelu") && params.size() == 1) out->map = kSwish, out->a = params[0];
    else return "FusedConv activation '" + name + "' with " + std::to_string(params.size()) + " parameters is not supported";
    return {};
  }

  enum Map { kNoMap, kSigmoid, kTanh, kSwish, kHardSwish } map = kNoMap;

  // HardSwish as the op computes it (kernels/elementwise/unary.cpp).
  template <typename T>
  static T hard_swish(T x) {
    return x * std::max(T(0), std::min(T(1), x / T(6) + T(0.5)));
  }

  // The map as a GEMM epilogue's activation (its parameter: a).
  using MapFn = void (*)(const float*, float*, size_t, float);
  MapFn map_fn() const {
    switch (map) {
      case kNoMap: return nullptr;
      case kSigmoid: return [](const float* x, float* y, size_t n, float) { vec::sigmoid(x, y, n); };
      case kTanh: return [](const float* x, float* y, size_t n, float) { vec::tanh(x, y, n); };
      case kSwish: return vec::swish;
      case kHardSwish:
        return [](const float* x, float* y, size_t n, float) {
          for (size_t i = 0; i < n; ++i) y[i] = hard_swish(x[i]);
        };
    }
    return nullptr;
  }

  // Activations the direct and GEMM loops cannot apply in registers.
  bool separate_pass() const { return kind == kLeakyRelu || map != kNoMap; }

  // y = act(y + add), the activation as its op computes it (NaN stays NaN),
  // in one pass.
  template <typename T>
  void apply(T* y, int64_t n, T add = T(0)) const {
    if (map != kNoMap) {
      if (add != T(0))
        for (int64_t i = 0; i < n; ++i) y[i] += add;
      if constexpr (std::is_same_v<T, float>) {
        map_fn()(y, y, size_t(n), a);
      } else {
        for (int64_t i = 0; i < n; ++i) {
          const T v = y[i], z = map == kSwish ? T(a) * v : v;
          const T s = z >= T(0) ? T(1) / (T(1) + std::exp(-z)) : std::exp(z) / (T(1) + std::exp(z));
          y[i] = map == kTanh ? std::tanh(v) : map == kSigmoid ? s : map == kHardSwish ? hard_swish(v) : s == T(0) ? T(0) : v * s;
        }
      }
      return;
    }
    switch (kind) {
      case kNone:
        if (add != T(0))
          for (int64_t i = 0; i < n; ++i) y[i] += add;
        return;
      case kRelu:
        for (int64_t i = 0; i < n; ++i) {
          const T v = y[i] + add;
          y[i] = v < T(0) ? T(0) : v;
        }
        return;
      case kClip:
        for (int64_t i = 0; i < n; ++i) {  // min(max(y, a), b): a > b gives b, as Clip does
          const T v = y[i] + add;
          const T lo = v < T(a) ? T(a) : v;
          y[i] = lo > T(b) ? T(b) : lo;
        }
        return;
      case kLeakyRelu:
        for (int64_t i = 0; i < n; ++i) {
          const T v = y[i] + add;
          y[i] = v < T(0) ? T(a) * v : v;
        }
        return;
    }
  }
};

class ConvKernel final : public ConvBase {
 public:
  explicit ConvKernel(const sdk::NodeInfo& node)
      : ConvBase(node), pool_(node.op_type == "FusedConvMaxPool" ? node.get_int("pool_size", 0) : 0) {
    Activation::read(node, &act_);
    // A constant float32 W is reordered for the direct convolution once.
    const sdk::ValueDesc& w = node.inputs[1];
    if (w.constant && w.dtype == ONYX_DTYPE_FLOAT32) constant_dims_ = w.constant->dims;
    if (w.constant && w.dtype == ONYX_DTYPE_FLOAT32 && w.constant->dims.size() >= 3 &&
        w.constant->size() > 0 && direct_conv::available()) {
      packed_dims_ = w.constant->dims;
      packed_w_ = pack_direct(w.constant->data<float>(), packed_dims_);
    }
  }

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), w = ctx.in(1), y;
    std::optional<sdk::Tensor> b = ctx.input(2);
    Channels ch;
    ONYX_SDK_RETURN_IF_ERROR(check_inputs(x, w, b, false, &ch));
    std::vector<nn::WindowDim> win;
    std::vector<int64_t> in(x.dims.begin() + 2, x.dims.end());
    if (std::string e = nn::resolve_forward(attrs_, in, w.dims.subspan(2), &win); !e.empty())
      return nn::fail(label_, "X %s, W %s: %s", nn::dims_str(x.dims).c_str(),
                      nn::dims_str(w.dims).c_str(), e.c_str());
    std::vector<int64_t> y_dims = {ch.n, ch.m};
    for (const nn::WindowDim& d : win) y_dims.push_back(d.out);
    if (pool_) {  // FusedConvMaxPool: y is the pooled output
      if (x.rank() != 4)
        return nn::fail(label_, "input 0 (X) has shape %s; only 2-D convolutions (rank 4) are supported",
                        nn::dims_str(x.dims).c_str());
      for (size_t i = 2; i < y_dims.size(); ++i) {
        if (y_dims[i] < pool_)
          return nn::fail(label_, "X %s, W %s: the convolution's output %s is smaller than the %lld x %lld pool",
                          nn::dims_str(x.dims).c_str(), nn::dims_str(w.dims).c_str(), nn::dims_str(y_dims).c_str(),
                          (long long)pool_, (long long)pool_);
        y_dims[i] /= pool_;
      }
    }
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, y_dims, &y));
    if (y.size() == 0) return nullptr;
    nn::lift_to_3d(&win);
    if (pool_) return run_pooled(ctx, x, w, b, ch, win, y);
    if (x.dtype == ONYX_DTYPE_FLOAT64) return run<double>(ctx, x, w, b, ch, win, y);
    if (!util::is_half(x.dtype)) return run<float>(ctx, x, w, b, ch, win, y);
    // float16/bfloat16: widened to float32, convolved, rounded back.
    std::vector<float> xf(size_t(x.size())), wf(size_t(w.size())), bf(b ? size_t(b->size()) : 0), yf(size_t(y.size()));
    util::halves_to_floats(x.dtype, x.data<uint16_t>(), xf.data(), xf.size());
    util::halves_to_floats(w.dtype, w.data<uint16_t>(), wf.data(), wf.size());
    if (b) util::halves_to_floats(b->dtype, b->data<uint16_t>(), bf.data(), bf.size());
    sdk::Tensor x32 = x, w32 = w, y32 = y;
    x32.raw = xf.data(), w32.raw = wf.data(), y32.raw = yf.data();
    x32.dtype = w32.dtype = y32.dtype = ONYX_DTYPE_FLOAT32;
    std::optional<sdk::Tensor> b32 = b;
    if (b32) b32->raw = bf.data(), b32->dtype = ONYX_DTYPE_FLOAT32;
    ONYX_SDK_RETURN_IF_ERROR(run<float>(ctx, x32, w32, b32, ch, win, y32));
    util::floats_to_halves(y.dtype, yf.data(), y.data<uint16_t>(), yf.size());
    return nullptr;
  }

 private:
  template <typename T>
  OnyxStatus* run(sdk::ComputeContext& ctx, const sdk::Tensor& x, const sdk::Tensor& w,
                  const std::optional<sdk::Tensor>& b, const Channels& ch,
                  const std::vector<nn::WindowDim>& win, const sdk::Tensor& y) {
    if (ch.group > 1 && ch.c == ch.group) return depthwise<T>(ctx, x, w, b, ch, win, y);
    if constexpr (std::is_same_v<T, float>) {
      std::vector<float> local;
      const float* u = nullptr;
      if (winograd::fits(win, ch.n, ch.c / ch.group, ch.m / ch.group) && winograd::finite(x.data<float>(), x.size()) &&
          (u = winograd_weights(w, ch, &local)))
        return mapped(ctx, winograd::convolve(ctx, x.data<float>(), ch.n, ch.group, ch.c, ch.m, win, u,
                                              b ? b->data<float>() : nullptr, act_, y.data<float>()),
                      y);
      if (direct_fits(ch, win)) return mapped(ctx, direct(ctx, x, w, b, ch, win, y), y);
    }
    return im2col_gemm<T>(ctx, x, w, b, ch, win, y);
  }

  // The direct and Winograd loops apply Relu, Clip and LeakyRelu in
  // registers; a map activation then runs over their output (`status`: theirs).
  OnyxStatus* mapped(sdk::ComputeContext& ctx, OnyxStatus* status, const sdk::Tensor& y) const {
    if (status || act_.map == Activation::kNoMap) return status;
    float* yd = y.data<float>();
    ctx.parallel_for(size_t(y.size()), nn::grain_for(16.0), [&](size_t lo, size_t hi) {
      act_.apply(yd + lo, int64_t(hi - lo));
    });
    return nullptr;
  }

  // FusedConvMaxPool (float32, 2-D, pool_ 2): the direct convolution and
  // Winograd's image lanes pool each item's output while it is in cache;
  // any other path convolves the whole batch into scratch, then pools it.
  OnyxStatus* run_pooled(sdk::ComputeContext& ctx, const sdk::Tensor& x, const sdk::Tensor& w,
                         const std::optional<sdk::Tensor>& b, const Channels& ch,
                         const std::vector<nn::WindowDim>& win, const sdk::Tensor& y) {
    const int64_t cg = ch.c / ch.group, mg = ch.m / ch.group;
    const bool depthwise = ch.group > 1 && ch.c == ch.group;
    std::vector<float> local;
    const float* u = nullptr;
    if (!depthwise && winograd::fits(win, ch.n, cg, mg) && winograd::image_lanes(win, ch.n, cg, mg) &&
        winograd::finite(x.data<float>(), x.size()) && (u = winograd_weights(w, ch, &local)))
      return winograd::convolve(ctx, x.data<float>(), ch.n, ch.group, ch.c, ch.m, win, u,
                                b ? b->data<float>() : nullptr, act_, y.data<float>(), /*pool_2x2=*/true);
    if (!depthwise && direct_fits(ch, win)) return direct(ctx, x, w, b, ch, win, y, /*pool_2x2=*/true);
    const int64_t out_h = win[1].out, out_w = win[2].out, plane = out_h * out_w;
    void* mem = nullptr;
    ONYX_SDK_RETURN_IF_ERROR(ctx.scratch(size_t(ch.n * ch.m * plane) * sizeof(float), &mem));
    sdk::Tensor full = y;  // only its data is read from here on
    full.raw = mem;
    ONYX_SDK_RETURN_IF_ERROR(run<float>(ctx, x, w, b, ch, win, full));
    const float* conv = static_cast<const float*>(mem);
    const int64_t pooled = (out_h / 2) * (out_w / 2);
    ctx.parallel_for(size_t(ch.n * ch.m), nn::grain_for(double(plane)), [&](size_t lo, size_t hi) {
      for (size_t p = lo; p < hi; ++p)
        vec::max_pool_2x2(conv + int64_t(p) * plane, y.data<float>() + int64_t(p) * pooled, out_h, out_w,
                          out_h / 2, out_w / 2);
    });
    return nullptr;
  }

  // A pointwise Conv (1x1, stride 1, unpadded) is a plain GEMM on x with no
  // im2col to save, and the direct loops would fill a 7-pixel row into
  // 16-lane vectors (MobileNetV2's last 1x1 layers: 2.3x slower).
  static bool direct_fits(const Channels& ch, const std::vector<nn::WindowDim>& win) {
    bool pointwise = true;
    for (const nn::WindowDim& d : win)
      pointwise = pointwise && d.kernel == 1 && d.stride == 1 && d.pad_begin == 0 && d.pad_end == 0;
    const int64_t cg = ch.c / ch.group;
    return !pointwise && (direct_conv::fits(win, cg * win[1].kernel * win[2].kernel) ||
                          direct_conv::fits_strided(win, cg, ch.m / ch.group));
  }

  // W [M, C/group, k...] reordered group by group for direct_conv::run
  // (its [channel][tap] order is W's own, so (c, tap) count as one axis).
  std::vector<float> pack_direct(const float* w, std::span<const int64_t> dims) const {
    const int64_t m = dims[0], per_filter = sdk::element_count(dims) / m;
    if (m % group_) return {};  // check_inputs() refuses it at run time
    const int64_t mg = m / group_;
    std::vector<float> packed;
    packed.reserve(size_t(m * per_filter));
    for (int64_t g = 0; g < group_; ++g) {
      std::vector<float> part = direct_conv::pack_weights(w + g * mg * per_filter, mg, 1, per_filter);
      packed.insert(packed.end(), part.begin(), part.end());
    }
    return packed;
  }

  OnyxStatus* direct(sdk::ComputeContext& ctx, const sdk::Tensor& x, const sdk::Tensor& w,
                     const std::optional<sdk::Tensor>& b, const Channels& ch,
                     const std::vector<nn::WindowDim>& win, const sdk::Tensor& y, bool pool_2x2 = false) {
    std::vector<float> repacked;
    const float* packed = packed_w_.data();
    const float* lanes = nullptr;  // reordered by convolve() when it needs them
    if (packed_w_.empty() || !std::equal(packed_dims_.begin(), packed_dims_.end(), w.dims.begin(), w.dims.end())) {
      repacked = pack_direct(w.data<float>(), w.dims);
      packed = repacked.data();
    } else if (const int64_t lane_channels =
                   direct_conv::lane_channels(direct_conv::shape_for(win, ch.c / ch.group, ch.m / ch.group), pool_2x2)) {
      // The constant W in the channel-lane or flat form's order, made on its
      // first use (per form: another input size may take the other).
      const size_t form = lane_channels == direct_conv::kFlatChannels;
      std::call_once(lane_once_[form], [&] {
        lane_w_[form] = direct_conv::lane_weights(packed, ch.group, ch.m / ch.group, ch.c / ch.group,
                                                  kernel_volume(win), lane_channels);
      });
      lanes = lane_w_[form].data();
    }
    return direct_conv::convolve(ctx, x.data<float>(), ch.n, ch.group, ch.c, ch.m, win, packed, lanes,
                                 b ? b->data<float>() : nullptr, act_, y.data<float>(), pool_2x2);
  }

  // The Winograd-transformed W, or null when W is not all finite (then
  // winograd::convolve() may not run). A constant W is transformed on the
  // first run that takes this path, not when the session is made: a 3x3
  // Conv on a small image at batch 1 never does, and the transformed
  // weights are 4x the size of W. Else into `local`.
  const float* winograd_weights(const sdk::Tensor& w, const Channels& ch, std::vector<float>* local) {
    const int64_t cg = ch.c / ch.group;
    if (!constant_dims_.empty() && std::equal(constant_dims_.begin(), constant_dims_.end(), w.dims.begin(), w.dims.end())) {
      std::call_once(winograd_once_, [&] {
        winograd_w_ = winograd::transform_weights(w.data<float>(), ch.m, cg, ch.group);
        if (!winograd::finite(winograd_w_.data(), int64_t(winograd_w_.size()))) winograd_w_.clear();
      });
      return winograd_w_.empty() ? nullptr : winograd_w_.data();
    }
    *local = winograd::transform_weights(w.data<float>(), ch.m, cg, ch.group);
    return winograd::finite(local->data(), int64_t(local->size())) ? local->data() : nullptr;
  }

  // Output planes up to this size take the transposed pointwise GEMM.
  static constexpr int64_t kTransposedPlane = 100;

  // A constant W [M, C/group] packed as W^T per group for the transposed
  // pointwise GEMM, on its first use; null for any other W.
  const PackedB* const* transposed_weights(const sdk::Tensor& w, const Channels& ch) {
    if (constant_dims_.empty() || !std::equal(constant_dims_.begin(), constant_dims_.end(), w.dims.begin(), w.dims.end()))
      return nullptr;
    std::call_once(transposed_once_, [&] {
      const int64_t cg = ch.c / ch.group, mg = ch.m / ch.group;
      for (int64_t g = 0; g < ch.group; ++g) {
        transposed_w_.push_back(pack_b(true, cg, mg, w.data<float>() + g * mg * cg, cg));
        transposed_ptrs_.push_back(transposed_w_.back().get());
      }
    });
    return transposed_ptrs_.data();
  }

  template <typename T>
  OnyxStatus* im2col_gemm(sdk::ComputeContext& ctx, const sdk::Tensor& x, const sdk::Tensor& w,
                          const std::optional<sdk::Tensor>& b, const Channels& ch,
                          const std::vector<nn::WindowDim>& win, const sdk::Tensor& y) {
    const int64_t cg = ch.c / ch.group, mg = ch.m / ch.group, rows = cg * kernel_volume(win);
    const int64_t in_plane = in_volume(win), out_plane = out_volume(win);
    const int64_t width = win[2].out, lines = win[0].out * win[1].out;
    // 1x1, no pad: with stride 1 the input already is the column matrix
    // (pointwise); strided, its subsample is, gathered whole first (ResNet's
    // downsampling layers: a GEMM on the gathered plane is 1.3-1.7x faster
    // than the direct strided loops, and small planes take the transposed
    // GEMM below).
    bool one_by_one = true, strided = false;
    for (const nn::WindowDim& d : win) {
      one_by_one &= d.kernel == 1 && d.pad_begin == 0 && d.pad_end == 0;
      strided |= d.stride > 1;
    }
    const bool subsampled = one_by_one && strided, pointwise = one_by_one;
    const int64_t items = ch.n * ch.group;
    const int64_t chunk =
        pointwise ? lines : lines_per_chunk<T>(ctx, items, rows, width, lines);
    // A pointwise Conv on a small plane (7 x 7: 49 GEMM columns, which fill
    // 16-wide panels badly) as y^T [plane x mg] = x^T W^T with W^T packed
    // once, then transposed into y: 0.53-0.67 -> 0.74-0.90 of the FMA peak
    // for MobileNetV2's last 1x1 layers (320 -> 1280, 960 -> 320 on 7 x 7).
    const PackedB* const* packed_wt = nullptr;
    if constexpr (std::is_same_v<T, float>)
      if (pointwise && out_plane <= kTransposedPlane) packed_wt = transposed_weights(w, ch);
    // The gathered subsample first, then the transposed GEMM's y^T.
    const int64_t gathered = subsampled ? cg * out_plane : 0;
    int64_t scratch = pointwise ? gathered : rows * chunk * width;
    if (packed_wt) scratch = gathered + out_plane * mg;
    // The GEMMs write the output; the bias is added with the activation in
    // one pass over each item's block while it is in cache (not a fill of the
    // whole output first and GEMMs accumulating onto it).
    const T beta = T(0);
    const T* bias = b ? b->data<T>() : nullptr;
    auto run_item = [&](int64_t item, Worker<T>& worker) {
      int64_t n = item / ch.group, g = item % ch.group;
      const T* xg = x.data<T>() + (n * ch.c + g * cg) * in_plane;
      const T* wg = w.data<T>() + g * mg * rows;
      T* yg = y.data<T>() + (n * ch.m + g * mg) * out_plane;
      int64_t x_plane = in_plane;  // between xg's channels
      if (subsampled) {
        im2col(xg, cg, win, 0, lines, worker.scratch, worker);
        xg = worker.scratch;
        x_plane = out_plane;
      }
      if (packed_wt) {
        if constexpr (std::is_same_v<T, float>) {
          // The bias and a Relu or Clip by the GEMM: the channels are its columns here.
          GemmEpilogue epilogue;
          const bool fused = epilogue_for(bias ? bias + g * mg : nullptr, &epilogue, /*channels_are_rows=*/false);
          float* yt = worker.scratch + gathered;  // y^T
          sgemm_packed(true, out_plane, mg, cg, 1.0f, xg, x_plane, *packed_wt[g], 0.0f, yt, mg, worker.gemm,
                       epilogue);
          // In blocks of 8 channels: the transpose's vector blocks.
          const int64_t blocks = (mg + 7) / 8;
          worker.for_range(size_t(blocks), nn::grain_for(double(8 * out_plane)), [&](size_t lo, size_t hi) {
            const int64_t c0 = int64_t(lo) * 8, c1 = std::min(mg, int64_t(hi) * 8);
            vec::transpose(yt + c0, out_plane, c1 - c0, mg, yg + c0 * out_plane, out_plane);
          });
          if (!fused) finish(worker, yg, bias ? bias + g * mg : nullptr, mg, out_plane, out_plane);
        }
        return;
      }
      const T* bg = bias ? bias + g * mg : nullptr;
      // float32: the bias and a Relu or Clip applied by the GEMM to each
      // block of the output while it is in cache (MobileNetV2's 16 -> 96
      // pointwise layer on 112 x 112 writes 4.8 MB: a pass of its own over
      // them cost a quarter of the layer).
      GemmEpilogue epilogue;
      const bool fused = std::is_same_v<T, float> && epilogue_for(bg, &epilogue);
      if (pointwise) {
        gemm(false, false, mg, out_plane, cg, wg, rows, xg, x_plane, beta, yg, out_plane, worker.gemm, epilogue);
        if (!fused) finish(worker, yg, bg, mg, out_plane, out_plane);
        return;
      }
      for (int64_t l0 = 0; l0 < lines; l0 += chunk) {
        int64_t l1 = std::min(lines, l0 + chunk), cols = (l1 - l0) * width;
        im2col(xg, cg, win, l0, l1, worker.scratch, worker);
        gemm(false, false, mg, cols, rows, wg, rows, worker.scratch, cols, beta, yg + l0 * width,
             out_plane, worker.gemm, epilogue);
        if (!fused) finish(worker, yg + l0 * width, bg, mg, out_plane, cols);
      }
    };
    return for_each_item<T>(ctx, items, scratch, run_item);
  }

  // One input channel per group: y[n, m] = B[m] + sum over taps of
  // W[m, 0, tap] * x[n, m / (M/group)] under the tap. Each tap adds a
  // scaled input row segment into the output row: contiguous (and
  // vectorizable) for stride 1, with no bounds checks in the inner loop.
  template <typename T>
  OnyxStatus* depthwise(sdk::ComputeContext& ctx, const sdk::Tensor& x, const sdk::Tensor& w,
                        const std::optional<sdk::Tensor>& b, const Channels& ch,
                        const std::vector<nn::WindowDim>& win, const sdk::Tensor& y) {
    if constexpr (std::is_same_v<T, float>) {
      if (lanes_fit(ch, win)) return depthwise_lanes(ctx, x, w, b, ch, win, y);
      const conv::PhasePlanes ph = conv::PhasePlanes::of(win);
      if (ph.block > 0) return depthwise_phases(ctx, x, w, b, ch, win, ph, y);
    }
    const nn::WindowDim &D = win[0], &H = win[1], &W = win[2];
    // Taps of each output d and h inside the input; output columns of each kw.
    std::vector<nn::IndexRange> d_taps, h_taps, w_cols;
    for (int64_t o = 0; o < D.out; ++o)
      d_taps.push_back(nn::index_range(o * D.stride - D.pad_begin, D.dilation, D.kernel, 0, D.in));
    for (int64_t o = 0; o < H.out; ++o)
      h_taps.push_back(nn::index_range(o * H.stride - H.pad_begin, H.dilation, H.kernel, 0, H.in));
    for (int64_t kw = 0; kw < W.kernel; ++kw)
      w_cols.push_back(nn::index_range(kw * W.dilation - W.pad_begin, W.stride, W.out, 0, W.in));
    const int64_t mg = ch.m / ch.group, in_plane = in_volume(win), out_plane = out_volume(win);
    const int64_t k = kernel_volume(win);
    ctx.parallel_for(
        size_t(ch.n * ch.m), nn::grain_for(double(out_plane * k)), [&](size_t lo, size_t hi) {
          for (size_t p = lo; p < hi; ++p) {
            int64_t n = int64_t(p) / ch.m, m = int64_t(p) % ch.m;
            const T* xp = x.data<T>() + (n * ch.c + m / mg) * in_plane;
            const T* wm = w.data<T>() + m * k;
            T* const plane = y.data<T>() + int64_t(p) * out_plane;
            T* yrow = plane;
            T bias = b ? b->data<T>()[m] : T(0);
            for (int64_t od = 0; od < D.out; ++od)
              for (int64_t oh = 0; oh < H.out; ++oh, yrow += W.out) {
                std::fill(yrow, yrow + W.out, bias);
                int64_t d0 = od * D.stride - D.pad_begin, h0 = oh * H.stride - H.pad_begin;
                for (int64_t kd = d_taps[size_t(od)].first; kd < d_taps[size_t(od)].last; ++kd)
                  for (int64_t kh = h_taps[size_t(oh)].first; kh < h_taps[size_t(oh)].last; ++kh) {
                    const T* xrow =
                        xp + ((d0 + kd * D.dilation) * H.in + h0 + kh * H.dilation) * W.in;
                    const T* wrow = wm + (kd * H.kernel + kh) * W.kernel;
                    for (int64_t kw = 0; kw < W.kernel; ++kw) {
                      const T wv = wrow[kw];
                      const int64_t off = kw * W.dilation - W.pad_begin;
                      const nn::IndexRange& cols = w_cols[size_t(kw)];
                      if (W.stride == 1)
                        for (int64_t ow = cols.first; ow < cols.last; ++ow)
                          yrow[ow] += wv * xrow[ow + off];
                      else
                        for (int64_t ow = cols.first; ow < cols.last; ++ow)
                          yrow[ow] += wv * xrow[ow * W.stride + off];
                    }
                  }
              }
            act_.apply(plane, out_plane);
          }
        });
    return nullptr;
  }

  // Whether the float32 depthwise takes depthwise_lanes(): 2-D (or 1-D)
  // windows of at most 7 x 7, 8 or more channels, on AVX2, strided or with
  // rows narrower than a vector. Measured on MobileNetV2's 3 x 3 layers
  // alone (1 thread, Zen 4), lanes / depthwise_phases(): stride 2 0.45
  // (576 ch, 14 x 14), 0.58 (192, 28), 0.81 (144, 56), 0.91 (96, 112);
  // stride 1 on 7 x 7 0.79 (960 ch), on 14 x 14 to 28 x 28 1.03-1.05, on
  // 56 x 56 and 112 x 112 1.3 (the phase form's rows fill their vectors,
  // and the interleaved planes outgrow the cache). Each thread keeps an
  // interleaved plane: at most 512 KB (MobileNetV2's largest, 113 x 113 x 8
  // floats, is 408 KB).
  static bool lanes_fit(const Channels& ch, const std::vector<nn::WindowDim>& win) {
    const nn::WindowDim &D = win[0], &H = win[1], &W = win[2];
    return image_lanes::supported() && D.kernel == 1 && D.in == 1 && D.out == 1 && ch.m >= 8 &&
           H.kernel * W.kernel <= image_lanes::kMaxWindowTaps &&
           (H.stride > 1 || W.stride > 1 || W.out < image_lanes::kImages) &&
           lanes_padded(H) * lanes_padded(W) * image_lanes::kImages * int64_t(sizeof(float)) <= (512 << 10);
  }
  // The padded extent of one dimension of depthwise_lanes()'s plane.
  static int64_t lanes_padded(const nn::WindowDim& d) {
    return std::max(d.in + d.pad_begin, (d.out - 1) * d.stride + d.extent());
  }

  // The float32 depthwise with 8 channels to a vector (image_lanes.h): per
  // image and block of 8 channels, the input planes interleaved into one
  // zero-padded plane, every output position summed over the window's taps
  // with all 8 lanes busy whatever the stride or the width (7-wide rows
  // fill 7 of 8 lanes of the row form; stride 2 splits rows into phases),
  // then split back into the output planes. A last block of fewer than 8
  // channels repeats its last channel in the spare lanes.
  OnyxStatus* depthwise_lanes(sdk::ComputeContext& ctx, const sdk::Tensor& x, const sdk::Tensor& w,
                              const std::optional<sdk::Tensor>& b, const Channels& ch,
                              const std::vector<nn::WindowDim>& win, const sdk::Tensor& y) {
    constexpr int64_t L = image_lanes::kImages;
    const nn::WindowDim &H = win[1], &W = win[2];
    const int64_t mg = ch.m / ch.group, in_plane = in_volume(win), out_plane = out_volume(win);
    const int64_t taps = kernel_volume(win), blocks = (ch.m + L - 1) / L;
    const int64_t padded_h = lanes_padded(H), padded_w = lanes_padded(W);
    const int64_t floats = (padded_h * padded_w + out_plane + taps + 1) * L;
    float lo = -INFINITY, hi = INFINITY;
    if (act_.kind == Activation::kRelu) lo = 0;
    if (act_.kind == Activation::kClip) lo = act_.a, hi = act_.b;
    const bool separate_pass = act_.separate_pass();
    const float* xd = x.data<float>();
    const float* wd = w.data<float>();
    const float* bd = b ? b->data<float>() : nullptr;
    float* yd = y.data<float>();
    ctx.parallel_for(size_t(ch.n * blocks), nn::grain_for(double(out_plane * taps * L)), [&](size_t first, size_t end) {
      thread_local std::vector<float> scratch;  // per thread, grown only
      if (scratch.size() < size_t(floats)) scratch.resize(size_t(floats));
      float* padded = scratch.data();
      float* out = padded + padded_h * padded_w * L;
      float* tap = out + out_plane * L;
      float* bias = tap + taps * L;
      for (size_t item = first; item < end; ++item) {
        const int64_t n = int64_t(item) / blocks, m0 = int64_t(item) % blocks * L;
        const int64_t count = std::min(L, ch.m - m0);
        image_lanes::Interleave in{{}, H.in, W.in, H.pad_begin, W.pad_begin, padded_h, padded_w, padded};
        float* planes[L];
        for (int64_t k = 0; k < L; ++k) {
          const int64_t m = m0 + std::min(k, count - 1);
          in.planes[k] = xd + (n * ch.c + m / mg) * in_plane;
          planes[k] = yd + (n * ch.m + m) * out_plane;
          for (int64_t t = 0; t < taps; ++t) tap[t * L + k] = wd[m * taps + t];
          bias[k] = bd ? bd[m] : 0.0f;
        }
        image_lanes::interleave(in);
        image_lanes::depthwise({padded, padded_w, H.out, W.out, H.stride, W.stride, H.dilation, W.dilation,
                                H.kernel, W.kernel, tap, bias, lo, hi, out});
        image_lanes::deinterleave(out, out_plane, planes, count);
        if (separate_pass)
          for (int64_t k = 0; k < count; ++k) act_.apply(planes[k], out_plane);
      }
    });
    return nullptr;
  }

  // The float32 2-D (and 1-D) depthwise: each input plane copied once into
  // its zero-padded phase planes (conv/phase_planes.h), then every tap of
  // the window summed in registers over the output rows (vec::window_rows,
  // bias first, then the activation's clamp), written straight to the
  // output plane. One pass over the output instead of one per tap (and one
  // for the activation: a fifth of MobileNetV2's depthwise layers' time).
  OnyxStatus* depthwise_phases(sdk::ComputeContext& ctx, const sdk::Tensor& x, const sdk::Tensor& w,
                               const std::optional<sdk::Tensor>& b, const Channels& ch,
                               const std::vector<nn::WindowDim>& win, const conv::PhasePlanes& ph,
                               const sdk::Tensor& y) {
    const int64_t mg = ch.m / ch.group, in_plane = in_volume(win), out_plane = out_volume(win);
    const int64_t taps = int64_t(ph.offsets.size()), in_h = win[1].in, in_w = win[2].in, out_w = win[2].out;
    const int64_t buffer = ph.block + ph.slack + vec::kWindowReadPast;
    // Relu and Clip are a clamp of the sums in registers; LeakyRelu a pass of its own.
    float lo = -INFINITY, hi = INFINITY;
    if (act_.kind == Activation::kRelu) lo = 0;
    if (act_.kind == Activation::kClip) lo = act_.a, hi = act_.b;
    const bool separate_pass = act_.separate_pass();
    ctx.parallel_for(size_t(ch.n * ch.m), nn::grain_for(double(out_plane * taps)), [&](size_t lo_item, size_t hi_item) {
      float* padded = ph.zero_padded_buffer(buffer, in_h, in_w);
      thread_local std::vector<int64_t> rows;
      rows.resize(size_t(in_h));
      for (int64_t iy = 0; iy < in_h; ++iy) rows[size_t(iy)] = ph.row_at(iy);
      for (size_t p = lo_item; p < hi_item; ++p) {
        const int64_t n = int64_t(p) / ch.m, m = int64_t(p) % ch.m;
        const float* xp = x.data<float>() + (n * ch.c + m / mg) * in_plane;
        ph.place_plane(xp, in_h, in_w, rows.data(), padded);
        float* plane = y.data<float>() + int64_t(p) * out_plane;
        vec::window_rows(plane, out_w, padded, ph.wq, ph.out_h, out_w, ph.offsets.data(),
                         w.data<float>() + m * taps, taps, b ? b->data<float>()[m] : 0.0f, lo, hi);
        if (separate_pass) act_.apply(plane, out_plane);
      }
    });
    return nullptr;
  }

  // Adds bias[m] to the first `cols` values of each of the `channels` rows
  // of `y`, `stride` apart (when there is a bias), and applies the
  // activation, in one pass, on the worker's threads.
  template <typename T>
  void finish(Worker<T>& worker, T* y, const T* bias, int64_t channels, int64_t stride, int64_t cols) const {
    worker.for_range(size_t(channels), nn::grain_for(double(cols)), [&](size_t lo, size_t hi) {
      for (size_t m = lo; m < hi; ++m) act_.apply(y + int64_t(m) * stride, cols, bias ? bias[m] : T(0));
    });
  }

  // The GEMM epilogue that adds `bias` (per output channel: a row of the
  // GEMM's output, or a column) and applies the activation, when it can
  // (not LeakyRelu: its slope is not a GEMM epilogue's).
  template <typename T>
  bool epilogue_for(const T* bias, GemmEpilogue* e, bool channels_are_rows = true) const {
    if constexpr (!std::is_same_v<T, float>) {
      return false;
    } else {
      if (act_.kind == Activation::kLeakyRelu) return false;
      (channels_are_rows ? e->row_bias : e->bias) = bias;
      if (act_.kind == Activation::kRelu) e->lo = 0.0f;
      if (act_.kind == Activation::kClip) e->lo = act_.a, e->hi = act_.b;
      e->activation = act_.map_fn();
      e->activation_param = act_.a;
      return true;
    }
  }

  Activation act_;
  int64_t pool_;  // FusedConvMaxPool's pool_size (2), else 0
  std::vector<int64_t> packed_dims_;  // W's dims when packed_w_ was made from a constant W
  std::vector<float> packed_w_;
  std::once_flag lane_once_[2];
  std::vector<float> lane_w_[2];  // packed_w_ in the channel-lane, flat form's order
  std::vector<int64_t> constant_dims_;  // a constant float32 W's dims, else empty
  std::once_flag winograd_once_, transposed_once_;
  std::vector<std::shared_ptr<PackedB>> transposed_w_;  // W^T per group, packed
  std::vector<const PackedB*> transposed_ptrs_;
  std::vector<float> winograd_w_;  // winograd::transform_weights() of the constant W
};

class ConvTransposeKernel final : public ConvBase {
 public:
  explicit ConvTransposeKernel(const sdk::NodeInfo& node)
      : ConvBase(node),
        output_padding_(node.get_ints("output_padding")),
        output_shape_(node.get_ints("output_shape")) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), w = ctx.in(1), y;
    std::optional<sdk::Tensor> b = ctx.input(2);
    Channels ch;
    ONYX_SDK_RETURN_IF_ERROR(check_inputs(x, w, b, true, &ch));
    std::vector<nn::WindowDim> win;
    if (std::string e = resolve(x.dims.subspan(2), w.dims.subspan(2), &win); !e.empty())
      return nn::fail(label_, "X %s, W %s: %s", nn::dims_str(x.dims).c_str(),
                      nn::dims_str(w.dims).c_str(), e.c_str());
    std::vector<int64_t> y_dims = {ch.n, ch.m};
    for (const nn::WindowDim& d : win) y_dims.push_back(d.out);
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, y_dims, &y));
    if (y.size() == 0) return nullptr;
    nn::lift_to_3d(&win);
    if (x.dtype == ONYX_DTYPE_FLOAT64) return run<double>(ctx, x, w, b, ch, win, y);
    if (!util::is_half(x.dtype)) return run<float>(ctx, x, w, b, ch, win, y);
    // float16/bfloat16 (mixed-precision training): widened, rounded back once.
    util::Widened x32 = util::widen(x), w32 = util::widen(w), y32 = util::widen(y, false);
    std::optional<util::Widened> b32;
    if (b) b32 = util::widen(*b);
    ONYX_SDK_RETURN_IF_ERROR(
        run<float>(ctx, x32.tensor, w32.tensor, b32 ? std::optional(b32->tensor) : std::nullopt, ch, win, y32.tensor));
    util::narrow_to(y32, y);
    return nullptr;
  }

 private:
  template <typename T>
  OnyxStatus* run(sdk::ComputeContext& ctx, const sdk::Tensor& x, const sdk::Tensor& w,
                  const std::optional<sdk::Tensor>& b, const Channels& ch,
                  const std::vector<nn::WindowDim>& win, const sdk::Tensor& y) {
    const int64_t cg = ch.c / ch.group, mg = ch.m / ch.group, rows = mg * kernel_volume(win);
    const int64_t in_plane = in_volume(win), out_plane = out_volume(win);
    const int64_t width = win[2].in, lines = win[0].in * win[1].in, items = ch.n * ch.group;
    const int64_t chunk = lines_per_chunk<T>(ctx, items, rows, width, lines);
    fill_bias(ctx, y.data<T>(), ch, out_plane, b);
    return for_each_item<T>(ctx, items, rows * chunk * width, [&](int64_t item, Worker<T>& worker) {
      int64_t n = item / ch.group, g = item % ch.group;
      const T* xg = x.data<T>() + (n * ch.c + g * cg) * in_plane;
      const T* wg = w.data<T>() + g * cg * rows;
      T* yg = y.data<T>() + (n * ch.m + g * mg) * out_plane;
      for (int64_t l0 = 0; l0 < lines; l0 += chunk) {
        int64_t l1 = std::min(lines, l0 + chunk), cols = (l1 - l0) * width;
        // col[(m, tap), position] = sum over c of W[c, m, tap] * x[c, position]
        gemm(true, false, rows, cols, cg, wg, rows, xg + l0 * width, in_plane, T(0),
             worker.scratch, cols, worker.gemm);
        col2im(worker.scratch, mg, win, l0, l1, yg, worker);
      }
    });
  }

  // Output size and pads: out = stride * (in - 1) + output_padding +
  // extent - pads. With output_shape (or SAME_*: out = in * stride) the
  // pads are derived: the odd one goes at the end for SAME_UPPER, at the
  // beginning otherwise (ONNX spec), and may be negative.
  std::string resolve(std::span<const int64_t> in, std::span<const int64_t> kernel,
                      std::vector<nn::WindowDim>* dims) const {
    size_t n = in.size();
    if (std::string e = attrs_.check(n); !e.empty()) return e;
    std::vector<int64_t> shape = output_shape_;
    if (shape.size() == n + 2) shape.erase(shape.begin(), shape.begin() + 2);  // N, C given too
    if (!shape.empty() && shape.size() != n)
      return "output_shape " + nn::dims_str(output_shape_) + " does not have " + std::to_string(n) +
             " spatial dims";
    if (!output_padding_.empty() && output_padding_.size() != n)
      return "output_padding " + nn::dims_str(output_padding_) + " does not have " +
             std::to_string(n) + " entries";
    bool same = attrs_.auto_pad == "SAME_UPPER" || attrs_.auto_pad == "SAME_LOWER";
    dims->assign(n, nn::WindowDim{});
    for (size_t i = 0; i < n; ++i) {
      nn::WindowDim& d = (*dims)[i];
      d.in = in[i];
      d.kernel = kernel[i];
      d.stride = attrs_.strides.empty() ? 1 : attrs_.strides[i];
      d.dilation = attrs_.dilations.empty() ? 1 : attrs_.dilations[i];
      int64_t full =
          d.stride * (d.in - 1) + (output_padding_.empty() ? 0 : output_padding_[i]) + d.extent();
      if (!shape.empty() || same) {
        d.out = !shape.empty() ? shape[i] : d.in * d.stride;
        int64_t total = full - d.out;
        int64_t half = total >= 0 ? total / 2 : -((1 - total) / 2);  // floor(total / 2)
        d.pad_begin = attrs_.auto_pad == "SAME_UPPER" ? half : total - half;
        d.pad_end = total - d.pad_begin;
      } else {
        if (attrs_.auto_pad == "NOTSET" && !attrs_.pads.empty()) {
          d.pad_begin = attrs_.pads[i];
          d.pad_end = attrs_.pads[i + n];
        }
        d.out = full - d.pad_begin - d.pad_end;
      }
      if (d.out < 0 || d.in < 1)
        return "spatial dim " + std::to_string(i) + " gives output size " + std::to_string(d.out);
    }
    return {};
  }

  std::vector<int64_t> output_padding_, output_shape_;
};

std::string check_conv_node(const sdk::NodeInfo& node, bool transposed) {
  if (node.get_int("group", 1) < 1) return "group must be at least 1";
  nn::WindowAttrs attrs = nn::WindowAttrs::read(node);
  size_t spatial = attrs.kernel_shape.size();
  if (spatial == 0 && node.inputs.size() > 1 && node.inputs[1].rank > 2)
    spatial = size_t(node.inputs[1].rank - 2);
  if (spatial > 3) return std::to_string(spatial) + " spatial dims; 1 to 3 are supported";
  if (std::string e = attrs.check(spatial); !e.empty()) return e;
  if (transposed)
    for (int64_t p : node.get_ints("output_padding"))
      if (p < 0) return "output_padding has a negative entry";
  return {};
}

}  // namespace

void register_conv_kernels(sdk::KernelRegistry& registry) {
  // float32 or float64, and float16/bfloat16 (via float32). All inputs of
  // one type.
  registry.add(sdk::KernelDefBuilder("Conv")
                   .type_constraint("T", {0, 1, 2}, sdk::dtypes::kFloat | sdk::dtypes::kHalf)
                   .check([](const sdk::NodeInfo& node) { return check_conv_node(node, false); })
                   .create<ConvKernel>());
  // ONNX Runtime's com.microsoft FusedConv: Conv, then an activation; the
  // optional Z input (added before the activation) is not supported.
  registry.add(sdk::KernelDefBuilder("FusedConv", "com.microsoft")
                   .since(1)
                   .type_constraint("T", {0, 1, 2}, sdk::dtypes::kFloat | sdk::dtypes::kHalf)
                   .check([](const sdk::NodeInfo& node) {
                     if (node.inputs.size() > 3) return std::string("input 3 (Z) is not supported");
                     Activation act;
                     if (std::string e = Activation::read(node, &act); !e.empty()) return e;
                     return check_conv_node(node, false);
                   })
                   .create<ConvKernel>());
  // ai.onyx FusedConvMaxPool (optimize/conv_pool_fusion.cpp): FusedConv (or
  // Conv, with no activation), then MaxPool over 2 x 2 windows of stride 2;
  // float32 and 2-D.
  registry.add(sdk::KernelDefBuilder("FusedConvMaxPool", kOnyxDomain)
                   .since(1)
                   .type_constraint("T", {0, 1, 2}, sdk::dtypes::kFloat32)
                   .check([](const sdk::NodeInfo& node) {
                     if (node.get_int("pool_size", 0) != 2)
                       return "pool_size " + std::to_string(node.get_int("pool_size", 0)) + " is not supported (2 is)";
                     if (node.inputs.size() > 3) return std::string("it takes X, W and an optional B");
                     if (node.inputs.size() > 1 && node.inputs[1].rank != 4)
                       return std::string("only 2-D convolutions (W of rank 4) are supported");
                     Activation act;
                     if (std::string e = Activation::read(node, &act); !e.empty()) return e;
                     return check_conv_node(node, false);
                   })
                   .create<ConvKernel>());
  registry.add(sdk::KernelDefBuilder("ConvTranspose")
                   .type_constraint("T", {0, 1, 2}, sdk::dtypes::kFloat | sdk::dtypes::kHalf)
                   .check([](const sdk::NodeInfo& node) { return check_conv_node(node, true); })
                   .create<ConvTransposeKernel>());
}

}  // namespace onyx::cpu
