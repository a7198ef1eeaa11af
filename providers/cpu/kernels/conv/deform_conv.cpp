// deform_conv.cpp: DeformConv (opset 19, 2-D), a direct loop over the shared
// window geometry of nn_util.h, in double.
#include <cinttypes>
#include <cmath>
#include <optional>
#include <vector>

#include "kernels/kernel_util.h"
#include "kernels/narrow_types.h"
#include "kernels/nn_util.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

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

}  // namespace

void register_deform_conv_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("DeformConv").since(19).inputs(3, 5).all_inputs(sdk::dtypes::kFloat | sdk::dtypes::kHalf).create<DeformConvKernel>());
}

}  // namespace onyx::cpu
