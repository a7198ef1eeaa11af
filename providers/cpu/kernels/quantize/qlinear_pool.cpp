// qlinear_pool.cpp: com.microsoft QLinearAveragePool (1-3 spatial dims,
// AveragePool's attributes) and QLinearGlobalAveragePool (any rank), both
// with `channels_last` (N x D1 x ... x C instead of N x C x D1 x ...):
//   Y = quantize(AveragePool(dequantize(X)))
// Each window's codes are summed exactly in int32 (int64 for windows of more
// than 2^23 taps, where 255 per tap could overflow). Padding is a real 0,
// i.e. the code x_zero_point, so the real sum is (sum - taps * zx) * sx, and
//   y = round_half_even((sum - taps * zx) * sx / (count * sy)) + zy
// in float64: the product and count * sy are exact, so the one division gives
// the correctly rounded quotient and exact ties round to even.
#include <cmath>
#include <memory>

#include "kernels/nn_util.h"
#include "kernels/quantize/qlinear_common.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

// Inputs: X, x_scale, x_zero_point (optional), y_scale, y_zero_point (optional).
constexpr quant::QParamSpec kX{1, 2, "x_scale", "x_zero_point"};
constexpr quant::QParamSpec kY{3, 4, "y_scale", "y_zero_point"};

// The kernel taps [k0, k1) of one output position inside the input, and how
// many lie inside the padded input (the divisor with count_include_pad).
struct TapRange {
  int64_t k0 = 0, k1 = 0, padded = 0;
  int64_t inside() const { return k1 - k0; }
};

std::vector<TapRange> tap_ranges(const nn::WindowDim& d) {
  std::vector<TapRange> r(size_t(d.out));
  for (int64_t o = 0; o < d.out; ++o) {
    const int64_t start = o * d.stride - d.pad_begin;
    const nn::IndexRange inside = nn::index_range(start, d.dilation, d.kernel, 0, d.in);
    const nn::IndexRange padded = nn::index_range(start, d.dilation, d.kernel, -d.pad_begin, d.in + d.pad_end);
    r[size_t(o)] = {inside.first, inside.last, padded.size()};
  }
  return r;
}

// The geometry of one call, lifted to 3 spatial dims.
struct Geometry {
  std::vector<nn::WindowDim> dims;
  std::vector<TapRange> rd, rh, rw;
  int64_t batch = 0, channels = 0;
  int64_t in_plane() const { return dims[0].in * dims[1].in * dims[2].in; }
  int64_t out_plane() const { return dims[0].out * dims[1].out * dims[2].out; }
  int64_t window() const { return dims[0].kernel * dims[1].kernel * dims[2].kernel; }
};

class QLinearPoolKernel final : public sdk::Kernel {
 public:
  QLinearPoolKernel(const sdk::NodeInfo& node, bool global)
      : label_(nn::node_label(node)),
        global_(global),
        channels_last_(node.get_int("channels_last", 0) != 0),
        count_include_pad_(node.get_int("count_include_pad", 0) != 0),
        attrs_(nn::WindowAttrs::read(node)) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    const sdk::Tensor x = ctx.in(0);
    const size_t rank = x.rank();
    if (rank < 3)
      return nn::fail(label_, "X must be %s, got shape %s",
                      channels_last_ ? "N x D1 x ... x C" : "N x C x D1 x ...", nn::dims_str(x.dims).c_str());
    quant::QParam xq, yq;
    std::string e = quant::read_qparam(ctx, kX, x.dtype, "X", &xq);
    if (e.empty()) e = quant::read_qparam(ctx, kY, x.dtype, "X", &yq);
    if (!e.empty()) return nn::fail(label_, "%s", e.c_str());

    Geometry g;
    g.batch = x.dim(0);
    g.channels = channels_last_ ? x.dim(rank - 1) : x.dim(1);
    std::vector<int64_t> in(x.dims.begin() + (channels_last_ ? 1 : 2), x.dims.end() - (channels_last_ ? 1 : 0));
    std::vector<int64_t> kernel = attrs_.kernel_shape;
    nn::WindowAttrs attrs = attrs_;
    if (global_) {  // one window over all spatial dims, run as one flat dim
      in = {sdk::element_count(in)};
      kernel = in;
      attrs = nn::WindowAttrs{};
    } else if (in.size() != kernel.size()) {
      return nn::fail(label_, "X of shape %s has %zu spatial dims but kernel_shape has %zu", nn::dims_str(x.dims).c_str(),
                      in.size(), kernel.size());
    }
    if (std::string w = nn::resolve_forward(attrs, in, kernel, &g.dims); !w.empty())
      return nn::fail(label_, "X of shape %s: %s", nn::dims_str(x.dims).c_str(), w.c_str());

    std::vector<int64_t> out_shape = {g.batch};
    if (!channels_last_) out_shape.push_back(g.channels);
    if (global_) out_shape.resize(channels_last_ ? rank - 1 : rank, 1);
    else for (const nn::WindowDim& d : g.dims) out_shape.push_back(d.out);
    if (channels_last_) out_shape.push_back(g.channels);
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, out_shape, &y));
    if (y.size() == 0) return nullptr;
    if (x.size() == 0) return nn::fail(label_, "X of shape %s has an empty spatial dim", nn::dims_str(x.dims).c_str());

    nn::lift_to_3d(&g.dims);
    g.rd = tap_ranges(g.dims[0]), g.rh = tap_ranges(g.dims[1]), g.rw = tap_ranges(g.dims[2]);
    const bool wide = g.window() > (int64_t(1) << 23);  // 255 * 2^23 < 2^31
    quant::visit_8bit(x.dtype, [&](auto tag) {
      using T = decltype(tag);
      if (wide) run<T, int64_t>(ctx, g, xq, yq, x.data<T>(), y.data<T>());
      else run<T, int32_t>(ctx, g, xq, yq, x.data<T>(), y.data<T>());
    });
    return nullptr;
  }

 private:
  template <typename T, typename Acc>
  void run(sdk::ComputeContext& ctx, const Geometry& g, const quant::QParam& xq, const quant::QParam& yq, const T* x,
           T* y) const {
    const nn::WindowDim &D = g.dims[0], &H = g.dims[1], &W = g.dims[2];
    const int64_t out_plane = g.out_plane(), in_plane = g.in_plane(), c = g.channels;
    const bool include_pad = count_include_pad_;
    // The output code of a window: `centered` = sum - taps * zx.
    const double sx = xq.scale, sy = yq.scale, zy = yq.zero;
    auto code = [=](Acc centered, int64_t count) {
      const double q = double(centered) * sx / (double(count) * sy);
      return quant::saturate_round<T>(quant::round_half_even(q) + zy);
    };
    // Calls fn(row offset in the spatial plane, first kw, last kw) per row of
    // taps of output position (od, oh, ow), and returns (taps inside, divisor).
    auto window = [&](int64_t od, int64_t oh, int64_t ow, auto&& fn) {
      const TapRange &td = g.rd[size_t(od)], &th = g.rh[size_t(oh)], &tw = g.rw[size_t(ow)];
      const int64_t d0 = od * D.stride - D.pad_begin, h0 = oh * H.stride - H.pad_begin, w0 = ow * W.stride - W.pad_begin;
      for (int64_t kd = td.k0; kd < td.k1; ++kd)
        for (int64_t kh = th.k0; kh < th.k1; ++kh)
          fn(((d0 + kd * D.dilation) * H.in + h0 + kh * H.dilation) * W.in + w0, tw.k0, tw.k1);
      const int64_t inside = td.inside() * th.inside() * tw.inside();
      return std::pair<int64_t, int64_t>(inside, include_pad ? td.padded * th.padded * tw.padded : inside);
    };
    const Acc zx = Acc(xq.zero);
    if (!channels_last_) {
      // One plane (n, c) per item. Per output row, the rows of taps (over D
      // and H) are first summed into one row of column sums (long loops
      // that vectorize); each output then adds its W taps of that row.
      ctx.parallel_for(size_t(g.batch * c), nn::grain_for(double(out_plane * g.window())), [&](size_t b, size_t e) {
        std::vector<Acc> column(static_cast<size_t>(W.in));
        Acc* col = column.data();
        for (size_t p = b; p < e; ++p) {
          const T* xp = x + int64_t(p) * in_plane;
          T* yp = y + int64_t(p) * out_plane;
          for (int64_t od = 0; od < D.out; ++od)
            for (int64_t oh = 0; oh < H.out; ++oh) {
              const TapRange &td = g.rd[size_t(od)], &th = g.rh[size_t(oh)];
              const int64_t d0 = od * D.stride - D.pad_begin, h0 = oh * H.stride - H.pad_begin;
              std::fill(column.begin(), column.end(), Acc(0));
              for (int64_t kd = td.k0; kd < td.k1; ++kd)
                for (int64_t kh = th.k0; kh < th.k1; ++kh) {
                  const T* row = xp + ((d0 + kd * D.dilation) * H.in + h0 + kh * H.dilation) * W.in;
                  for (int64_t w = 0; w < W.in; ++w) col[w] += Acc(row[w]);
                }
              const int64_t inside_dh = td.inside() * th.inside(), padded_dh = td.padded * th.padded;
              for (int64_t ow = 0; ow < W.out; ++ow) {
                const TapRange& tw = g.rw[size_t(ow)];
                const int64_t w0 = ow * W.stride - W.pad_begin;
                Acc sum = 0;
                for (int64_t kw = tw.k0; kw < tw.k1; ++kw) sum += col[w0 + kw * W.dilation];
                const int64_t inside = inside_dh * tw.inside();
                *yp++ = code(sum - Acc(inside) * zx, include_pad ? padded_dh * tw.padded : inside);
              }
            }
        }
      });
      return;
    }
    // channels_last: one output position (n, o) per item; each tap adds a
    // row of C contiguous codes into C sums.
    ctx.parallel_for(size_t(g.batch * out_plane), nn::grain_for(double(g.window() * c)), [&](size_t b, size_t e) {
      std::vector<Acc> sums(static_cast<size_t>(c));
      for (size_t item = b; item < e; ++item) {
        const int64_t n = int64_t(item) / out_plane, o = int64_t(item) % out_plane;
        const T* xn = x + n * in_plane * c;
        std::fill(sums.begin(), sums.end(), Acc(0));
        Acc* s = sums.data();
        auto [inside, count] = window(o / (W.out * H.out), o / W.out % H.out, o % W.out, [&](int64_t row, int64_t k0, int64_t k1) {
          for (int64_t kw = k0; kw < k1; ++kw) {
            const T* px = xn + (row + kw * W.dilation) * c;
            for (int64_t ch = 0; ch < c; ++ch) s[ch] += Acc(px[ch]);
          }
        });
        T* yp = y + int64_t(item) * c;
        for (int64_t ch = 0; ch < c; ++ch) yp[ch] = code(s[ch] - Acc(inside) * zx, count);
      }
    });
  }

  std::string label_;
  bool global_, channels_last_, count_include_pad_;
  nn::WindowAttrs attrs_;
};

std::string check_pool_attrs(const sdk::NodeInfo& node) {
  const nn::WindowAttrs attrs = nn::WindowAttrs::read(node);
  if (attrs.kernel_shape.empty()) return "attribute kernel_shape is required";
  if (attrs.kernel_shape.size() > 3)
    return "kernel_shape has " + std::to_string(attrs.kernel_shape.size()) + " dims; 1 to 3 are supported";
  return attrs.check(attrs.kernel_shape.size());
}

}  // namespace

void register_qlinear_pool_kernels(sdk::KernelRegistry& registry) {
  constexpr sdk::DTypeSet k8Bit{ONYX_DTYPE_UINT8, ONYX_DTYPE_INT8};
  for (bool global : {false, true}) {
    sdk::KernelDefBuilder def(global ? "QLinearGlobalAveragePool" : "QLinearAveragePool", "com.microsoft");
    def.inputs(1, 5).input_type(0, k8Bit).input_types({1, 3}, sdk::dtypes::kFloat32);
    def.check([](const sdk::NodeInfo& node) { return quant::missing_input(node, {0, 1, 3}); });
    if (!global) def.check(check_pool_attrs);
    registry.add(def.create([global](const sdk::NodeInfo& node) { return std::make_unique<QLinearPoolKernel>(node, global); }));
  }
}

}  // namespace onyx::cpu
