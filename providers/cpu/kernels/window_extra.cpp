// window_extra.cpp: ConvInteger and QLinearConv (10), DeformConv (19, 2-D) and MaxUnpool
// (9, 11, 22), direct loops over the shared window geometry of nn.h.
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

#include "kernels/extra_ops.h"
#include "kernels/narrow_types.h"
#include "kernels/nn.h"

namespace onyx::cpu {
namespace {

// ConvInteger: sum over the window of (x - x_zero) * (w - w_zero[m]) in
// int32 (wrapping like an int32 accumulator), groups and 1-3 spatial dims.
// QLinearConv (qlinear_): the same sum plus the int32 bias, requantized:
// y = saturate(round_half_even(acc * x_scale * w_scale[m] / y_scale) + y_zero).
class ConvIntegerKernel final : public sdk::Kernel {
 public:
  ConvIntegerKernel(const sdk::NodeInfo& node, bool qlinear)
      : label_(util::node_label(node)),
        attrs_(nn::WindowAttrs::read(node)),
        group_(node.get_int("group", 1)),
        qlinear_(qlinear) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    // Input positions: ConvInteger (x, w, x_zero, w_zero); QLinearConv (x,
    // x_scale, x_zero, w, w_scale, w_zero, y_scale, y_zero, B).
    const size_t iw = qlinear_ ? 3 : 1, ixz = 2, iwz = qlinear_ ? 5 : 3;
    sdk::Tensor x = ctx.in(0), w = ctx.in(iw);
    const size_t spatial = x.rank() >= 3 ? x.rank() - 2 : 0;
    if (spatial < 1 || spatial > 3 || w.rank() != x.rank())
      return util::fail(label_, "x %s and w %s must be [N, C, D1..Dk] and [M, C/group, k1..kk], k in 1..3",
                        util::dims_str(x.dims).c_str(), util::dims_str(w.dims).c_str());
    if (std::string e = attrs_.check(spatial); !e.empty()) return util::fail(label_, "%s", e.c_str());
    const int64_t n = x.dim(0), c = x.dim(1), m = w.dim(0), g = group_;
    if (g <= 0 || c % g || m % g || w.dim(1) != c / g)
      return util::fail(label_, "channels %" PRId64 " / filters %" PRId64 " do not fit group %" PRId64, c, m, g);
    std::vector<int64_t> in(x.dims.begin() + 2, x.dims.end()), kernel(w.dims.begin() + 2, w.dims.end());
    std::vector<nn::WindowDim> dims;
    if (std::string e = nn::resolve_forward(attrs_, in, kernel, &dims); !e.empty()) return util::fail(label_, "%s", e.c_str());
    std::vector<int64_t> y_dims{n, m};
    for (const auto& d : dims) y_dims.push_back(d.out);
    nn::lift_to_3d(&dims);
    double xz = 0, xs = 1, ys = 1, yz = 0;
    if (auto t = ctx.input(ixz); t && t->size() > 0) xz = narrow::load(t->dtype, t->raw, 0);
    std::optional<sdk::Tensor> wz = ctx.input(iwz), ws, bias;
    int32_t y_type = ONYX_DTYPE_INT32;
    if (qlinear_) {
      sdk::Tensor xs_t = ctx.in(1), ys_t = ctx.in(6);
      xs = narrow::load(xs_t.dtype, xs_t.raw, 0), ys = narrow::load(ys_t.dtype, ys_t.raw, 0);
      ws = ctx.in(4);
      if (ws->size() != 1 && ws->size() != m) return util::fail(label_, "w_scale must hold 1 or %" PRId64 " values", m);
      std::optional<sdk::Tensor> yz_t = ctx.input(7);
      if (yz_t) yz = narrow::load(yz_t->dtype, yz_t->raw, 0), y_type = yz_t->dtype;
      else y_type = ONYX_DTYPE_UINT8;
      bias = ctx.input(8);
    }
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, y_type, y_dims, &y));
    const int64_t cg = c / g, mg = m / g;
    int64_t out_index = 0;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t f = 0; f < m; ++f) {
        const int64_t grp = f / mg;
        const int32_t wzf = wz && wz->size() > 0 ? int32_t(narrow::load(wz->dtype, wz->raw, wz->size() == 1 ? 0 : f)) : 0;
        for (int64_t z = 0; z < dims[0].out; ++z)
          for (int64_t yy = 0; yy < dims[1].out; ++yy)
            for (int64_t xx = 0; xx < dims[2].out; ++xx) {
              uint32_t acc = 0;
              for (int64_t ch = 0; ch < cg; ++ch)
                for (int64_t kz = 0; kz < dims[0].kernel; ++kz)
                  for (int64_t ky = 0; ky < dims[1].kernel; ++ky)
                    for (int64_t kx = 0; kx < dims[2].kernel; ++kx) {
                      int64_t iz = z * dims[0].stride - dims[0].pad_begin + kz * dims[0].dilation;
                      int64_t iy = yy * dims[1].stride - dims[1].pad_begin + ky * dims[1].dilation;
                      int64_t ix = xx * dims[2].stride - dims[2].pad_begin + kx * dims[2].dilation;
                      if (iz < 0 || iz >= dims[0].in || iy < 0 || iy >= dims[1].in || ix < 0 || ix >= dims[2].in) continue;
                      int64_t xi = (((b * c + grp * cg + ch) * dims[0].in + iz) * dims[1].in + iy) * dims[2].in + ix;
                      int64_t wi = (((f * cg + ch) * dims[0].kernel + kz) * dims[1].kernel + ky) * dims[2].kernel + kx;
                      int32_t xv = int32_t(narrow::load(x.dtype, x.raw, xi)) - int32_t(xz);
                      int32_t wv = int32_t(narrow::load(w.dtype, w.raw, wi)) - wzf;
                      acc += uint32_t(xv * wv);
                    }
              if (!qlinear_) {
                y.data<int32_t>()[out_index++] = int32_t(acc);
                continue;
              }
              double real = double(int32_t(acc)) + (bias ? narrow::load(bias->dtype, bias->raw, f) : 0.0);
              real *= xs * narrow::load(ws->dtype, ws->raw, ws->size() == 1 ? 0 : f) / ys;
              double lo = y_type == ONYX_DTYPE_INT8 ? -128 : 0, hi = y_type == ONYX_DTYPE_INT8 ? 127 : 255;
              narrow::store(y_type, y.raw, out_index++, std::clamp(std::nearbyint(real) + yz, lo, hi), true);
            }
      }
    return nullptr;
  }

 private:
  std::string label_;
  nn::WindowAttrs attrs_;
  int64_t group_;
  bool qlinear_;
};

// DeformConv (2-D): Conv whose taps are displaced by learned offsets
// (offset [N, offset_group * 2 * kH * kW, oH, oW], (dy, dx) pairs) and
// scaled by an optional mask; displaced taps are read by bilinear
// interpolation, zero outside the input. In double.
class DeformConvKernel final : public sdk::Kernel {
 public:
  explicit DeformConvKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)),
        attrs_(nn::WindowAttrs::read(node)),
        group_(node.get_int("group", 1)),
        offset_group_(node.get_int("offset_group", 1)) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), w = ctx.in(1), off = ctx.in(2);
    std::optional<sdk::Tensor> bias = ctx.input(3), mask = ctx.input(4);
    if (x.rank() != 4 || w.rank() != 4 || off.rank() != 4)
      return util::fail(label_, "X %s, W %s and offset %s must be 4-D", util::dims_str(x.dims).c_str(),
                        util::dims_str(w.dims).c_str(), util::dims_str(off.dims).c_str());
    const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), wd = x.dim(3), m = w.dim(0), kh = w.dim(2), kw = w.dim(3);
    const int64_t g = group_, og = offset_group_, taps = kh * kw;
    if (g <= 0 || og <= 0 || c % g || m % g || w.dim(1) != c / g || c % og)
      return util::fail(label_, "channels %" PRId64 " / filters %" PRId64 " do not fit group %" PRId64 " and offset_group %" PRId64,
                        c, m, g, og);
    std::vector<int64_t> in{h, wd}, kernel{kh, kw};
    std::vector<nn::WindowDim> dims;
    if (std::string e = attrs_.check(2); !e.empty()) return util::fail(label_, "%s", e.c_str());
    if (std::string e = nn::resolve_forward(attrs_, in, kernel, &dims); !e.empty()) return util::fail(label_, "%s", e.c_str());
    const int64_t oh = dims[0].out, ow = dims[1].out;
    if (off.dim(0) != n || off.dim(1) != og * 2 * taps || off.dim(2) != oh || off.dim(3) != ow)
      return util::fail(label_, "offset %s must be [%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 "]",
                        util::dims_str(off.dims).c_str(), n, og * 2 * taps, oh, ow);
    if (mask && mask->size() != n * og * taps * oh * ow) return util::fail(label_, "mask %s does not fit", util::dims_str(mask->dims).c_str());
    int64_t y_dims[4] = {n, m, oh, ow};
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, y_dims, &y));
    const int64_t cg = c / g, mg = m / g, per_offset_group = c / og;
    auto pixel = [&](int64_t plane, int64_t yy, int64_t xx) {
      return yy < 0 || yy >= h || xx < 0 || xx >= wd ? 0.0 : narrow::load(x.dtype, x.raw, plane + yy * wd + xx);
    };
    for (int64_t b = 0; b < n; ++b)
      for (int64_t f = 0; f < m; ++f)
        for (int64_t py = 0; py < oh; ++py)
          for (int64_t px = 0; px < ow; ++px) {
            double acc = bias ? narrow::load(bias->dtype, bias->raw, f) : 0.0;
            for (int64_t cl = 0; cl < cg; ++cl) {
              const int64_t ch = (f / mg) * cg + cl, grp = ch / per_offset_group, plane = (b * c + ch) * h * wd;
              for (int64_t t = 0; t < taps; ++t) {
                const int64_t ky = t / kw, kx = t % kw;
                auto off_at = [&](int64_t channel) { return narrow::load(off.dtype, off.raw, ((b * off.dim(1) + channel) * oh + py) * ow + px); };
                double dy = off_at(grp * 2 * taps + 2 * t), dx = off_at(grp * 2 * taps + 2 * t + 1);
                double sy = double(py * dims[0].stride - dims[0].pad_begin + ky * dims[0].dilation) + dy;
                double sx = double(px * dims[1].stride - dims[1].pad_begin + kx * dims[1].dilation) + dx;
                double v = 0;
                if (sy > -1 && sy < double(h) && sx > -1 && sx < double(wd)) {
                  int64_t y0 = int64_t(std::floor(sy)), x0 = int64_t(std::floor(sx));
                  double ly = sy - double(y0), lx = sx - double(x0);
                  v = (1 - ly) * (1 - lx) * pixel(plane, y0, x0) + (1 - ly) * lx * pixel(plane, y0, x0 + 1) +
                      ly * (1 - lx) * pixel(plane, y0 + 1, x0) + ly * lx * pixel(plane, y0 + 1, x0 + 1);
                }
                if (mask) v *= narrow::load(mask->dtype, mask->raw, ((b * og * taps + grp * taps + t) * oh + py) * ow + px);
                acc += v * narrow::load(w.dtype, w.raw, ((f * cg + cl) * kh + ky) * kw + kx);
              }
            }
            narrow::store(y.dtype, y.raw, ((b * m + f) * oh + py) * ow + px, acc, true);
          }
    return nullptr;
  }

 private:
  std::string label_;
  nn::WindowAttrs attrs_;
  int64_t group_, offset_group_;
};

// MaxUnpool: scatters X into zeros at the flat positions I (as MaxPool's
// indices: over the whole output tensor), output shape from output_shape or
// (in - 1) * stride + kernel - pads.
class MaxUnpoolKernel final : public sdk::Kernel {
 public:
  explicit MaxUnpoolKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)),
        kernel_(node.get_ints("kernel_shape")),
        pads_(node.get_ints("pads")),
        strides_(node.get_ints("strides")) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), idx = ctx.in(1);
    const size_t spatial = x.rank() >= 3 ? x.rank() - 2 : 0;
    if (spatial == 0 || kernel_.size() != spatial || idx.size() != x.size())
      return util::fail(label_, "X %s, I %s and kernel_shape do not fit", util::dims_str(x.dims).c_str(),
                        util::dims_str(idx.dims).c_str());
    std::vector<int64_t> dims{x.dim(0), x.dim(1)};
    for (size_t d = 0; d < spatial; ++d) {
      int64_t stride = strides_.empty() ? 1 : strides_[d];
      int64_t pads = pads_.empty() ? 0 : pads_[d] + pads_[spatial + d];
      dims.push_back((x.dim(d + 2) - 1) * stride + kernel_[d] - pads);
    }
    // The indices address the default shape; a larger output_shape pads
    // each dim at its end with zeros (as ONNX's reference).
    std::vector<int64_t> out_dims = dims;
    if (auto t = ctx.input(2); t && t->size() > 0) {
      if (!util::read_ints(*t, &out_dims) || out_dims.size() != x.rank())
        return util::fail(label_, "output_shape must list %zu dims", x.rank());
      for (size_t d = 0; d < dims.size(); ++d)
        if (out_dims[d] < dims[d])
          return util::fail(label_, "output_shape %s is smaller than the unpooled shape %s", util::dims_str(out_dims).c_str(),
                            util::dims_str(dims).c_str());
    }
    int64_t total = 1;
    for (int64_t d : dims) total *= d;
    const size_t es = sdk::dtype_size(x.dtype);
    std::vector<unsigned char> full(size_t(total) * es, 0);
    std::vector<int64_t> where;
    if (!util::read_ints(idx, &where)) return util::fail(label_, "I must be int64");
    for (int64_t i = 0; i < x.size(); ++i) {
      int64_t at = where[size_t(i)];
      if (at < 0 || at >= total)
        return util::fail(label_, "index %" PRId64 " at position %" PRId64 " is outside the output of %" PRId64 " elements", at, i,
                          total);
      std::memcpy(full.data() + size_t(at) * es, static_cast<const unsigned char*>(x.raw) + size_t(i) * es, es);
    }
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, out_dims, &y));
    std::memset(y.raw, 0, size_t(y.size()) * es);
    const int64_t row = dims.back();
    for (int64_t r = 0; r < total / row; ++r) {
      // Row r of the default shape -> its place in the padded output.
      int64_t rest = r, at = 0, stride = out_dims.back();
      for (size_t d = dims.size() - 1; d-- > 0;) {
        at += (rest % dims[d]) * stride;
        rest /= dims[d];
        stride *= out_dims[d];
      }
      std::memcpy(static_cast<unsigned char*>(y.raw) + size_t(at) * es, full.data() + size_t(r * row) * es, size_t(row) * es);
    }
    return nullptr;
  }

 private:
  std::string label_;
  std::vector<int64_t> kernel_, pads_, strides_;
};

}  // namespace

void register_window_extra_kernels(sdk::KernelRegistry& registry) {
  sdk::KernelDef conv;
  conv.op_type = "ConvInteger";
  conv.since_version = 10;
  conv.supports = [](const sdk::NodeInfo& n) {
    return nn::require_types(n, {0, 1, 2, 3}, {ONYX_DTYPE_UINT8, ONYX_DTYPE_INT8});
  };
  conv.create = [](const sdk::NodeInfo& n) { return std::make_unique<ConvIntegerKernel>(n, false); };
  registry.add(std::move(conv));
  sdk::KernelDef qconv;
  qconv.op_type = "QLinearConv";
  qconv.since_version = 10;
  qconv.supports = [](const sdk::NodeInfo& n) {
    std::string why = util::require_inputs(n, 8, 9);
    if (why.empty()) why = nn::require_types(n, {0, 2, 3, 5, 7}, {ONYX_DTYPE_UINT8, ONYX_DTYPE_INT8});
    if (why.empty()) why = nn::require_types(n, {1, 4, 6}, {ONYX_DTYPE_FLOAT32, ONYX_DTYPE_FLOAT16, ONYX_DTYPE_BFLOAT16});
    if (why.empty()) why = nn::require_types(n, {8}, {ONYX_DTYPE_INT32});
    return why;
  };
  qconv.create = [](const sdk::NodeInfo& n) { return std::make_unique<ConvIntegerKernel>(n, true); };
  registry.add(std::move(qconv));
  sdk::KernelDef deform;
  deform.op_type = "DeformConv";
  deform.since_version = 19;
  deform.supports = [](const sdk::NodeInfo& n) {
    std::string why = util::require_inputs(n, 3, 5);
    return why.empty() ? util::require_types(n, util::kFloat | util::kHalf) : why;
  };
  deform.create = [](const sdk::NodeInfo& n) { return std::make_unique<DeformConvKernel>(n); };
  registry.add(std::move(deform));
  sdk::KernelDef unpool;
  unpool.op_type = "MaxUnpool";
  unpool.since_version = 9;
  unpool.supports = [](const sdk::NodeInfo& n) {
    return sdk::dtype_size(n.input_dtype(0)) ? std::string() : std::string("element type has no fixed size");
  };
  unpool.create = [](const sdk::NodeInfo& n) { return std::make_unique<MaxUnpoolKernel>(n); };
  registry.add(std::move(unpool));
}

}  // namespace onyx::cpu
