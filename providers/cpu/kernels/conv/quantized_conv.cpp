// quantized_conv.cpp: ConvInteger and QLinearConv (opset 10), direct loops
// over the shared window geometry of nn_util.h.
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

}  // namespace

void register_quantized_conv_kernels(sdk::KernelRegistry& registry) {
  // The types of the quantized tensors and zero points.
  constexpr sdk::DTypeSet k8Bit{ONYX_DTYPE_UINT8, ONYX_DTYPE_INT8};
  registry.add(sdk::KernelDefBuilder("ConvInteger")
                   .since(10)
                   .input_types({0, 1, 2, 3}, k8Bit)
                   .create([](const sdk::NodeInfo& n) { return std::make_unique<ConvIntegerKernel>(n, false); }));
  registry.add(sdk::KernelDefBuilder("QLinearConv")
                   .since(10)
                   .inputs(8, 9)
                   .input_types({0, 2, 3, 5, 7}, k8Bit)
                   .input_types({1, 4, 6}, sdk::dtypes::kFloat32 | sdk::dtypes::kHalf)
                   .input_type(8, sdk::DTypeSet{ONYX_DTYPE_INT32})
                   .create([](const sdk::NodeInfo& n) { return std::make_unique<ConvIntegerKernel>(n, true); }));
}

}  // namespace onyx::cpu
