// quantized_conv.cpp: ConvInteger and QLinearConv (opset 10) with 1-3
// spatial dims and groups. Depthwise 2-D convolutions (one input and one
// output channel per group: MobileNet's 3x3 layers) run as direct loops over
// a zero-point-shifted, padded plane; every other convolution is an integer
// GEMM (gemm/qgemm.h) per image and group:
//   Y[filter, pixel] = W[filter, :] . im2col(x)[:, pixel]
// whose result rows are Y's rows (NCHW), so the output stage streams. 1x1
// stride-1 convolutions pack x itself (no im2col).
#include <cinttypes>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "gemm/qgemm.h"
#include "kernels/kernel_util.h"
#include "kernels/linalg/quantized_params.h"
#include "kernels/narrow_types.h"
#include "kernels/nn_util.h"
#include "kernels/quantize/requantize.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

// ConvInteger: sum over the window of (x - x_zero) * (w - w_zero[m]) in
// int32 (wrapping like an int32 accumulator). QLinearConv: the same sum plus
// the int32 bias, requantized (quantize/requantize.h).
class ConvIntegerKernel final : public sdk::Kernel {
 public:
  ConvIntegerKernel(const sdk::NodeInfo& node, bool qlinear)
      : label_(util::node_label(node)),
        attrs_(nn::WindowAttrs::read(node)),
        group_(node.get_int("group", 1)),
        qlinear_(qlinear) {
    // Constant filters and filter zero points (the usual case): packed once.
    const size_t iw = qlinear_ ? 3 : 1, iwz = qlinear_ ? 5 : 3;
    std::optional<sdk::Tensor> w = linalg::constant_input(node, iw);
    if (!w || w->rank() < 3 || group_ <= 0 || w->dim(0) % group_ != 0 || !linalg::absent_or_constant(node, iwz))
      return;  // packed per run; compute() reports what is wrong
    std::vector<int32_t> zero;
    if (!weight_zero(linalg::constant_input(node, iwz), w->dim(0), &zero).empty()) return;
    const int64_t mg = w->dim(0) / group_, k = w->size() / w->dim(0);
    if (mg == 1 && w->dim(1) == 1 && w->rank() == 4) return;  // depthwise 2-D: direct loops, no GEMM
    for (int64_t g = 0; g < group_ && k > 0; ++g)
      packed_w_.push_back(pack_qa({static_cast<const uint8_t*>(w->raw) + g * mg * k, w->dtype == ONYX_DTYPE_INT8, k, false},
                                  mg, k, zero.size() == 1 ? zero.data() : zero.data() + g * mg,
                                  zero.size() == 1 ? 1 : mg));
  }

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

    Geometry geo;
    geo.dims = dims;
    geo.n = n, geo.c = c, geo.m = m, geo.g = g;
    geo.x_zero = 0;
    if (auto t = ctx.input(ixz); t && t->size() > 0) {
      if (t->size() != 1) return util::fail(label_, "x_zero_point must be a scalar; got %s", util::dims_str(t->dims).c_str());
      geo.x_zero = int32_t(narrow::load(t->dtype, t->raw, 0));
    }
    std::vector<int32_t> w_zero;
    if (std::string e = weight_zero(ctx.input(iwz), m, &w_zero); !e.empty()) return util::fail(label_, "%s", e.c_str());

    quant::Requantizer rq;
    int32_t y_type = ONYX_DTYPE_INT32;
    if (qlinear_) {
      sdk::Tensor xs = ctx.in(1), ws = ctx.in(4), ys = ctx.in(6);
      if (xs.size() != 1 || ys.size() != 1) return util::fail(label_, "x_scale and y_scale must be scalars");
      if (ws.size() != 1 && ws.size() != m) return util::fail(label_, "w_scale must hold 1 or %" PRId64 " values", m);
      const double x_scale = narrow::load(xs.dtype, xs.raw, 0), y_scale = narrow::load(ys.dtype, ys.raw, 0);
      for (int64_t i = 0; i < ws.size(); ++i) rq.multiplier.push_back(x_scale * narrow::load(ws.dtype, ws.raw, i) / y_scale);
      y_type = ONYX_DTYPE_UINT8;
      if (std::optional<sdk::Tensor> yz = ctx.input(7)) {
        if (yz->size() != 1) return util::fail(label_, "y_zero_point must be a scalar");
        y_type = yz->dtype, rq.zero = narrow::load(yz->dtype, yz->raw, 0);
      }
      rq.is_signed = y_type == ONYX_DTYPE_INT8;
      if (std::optional<sdk::Tensor> bias = ctx.input(8)) {
        if (bias->size() != m) return util::fail(label_, "B must hold %" PRId64 " values; got %s", m, util::dims_str(bias->dims).c_str());
        rq.bias.assign(bias->data<int32_t>(), bias->data<int32_t>() + m);
      }
    }
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, y_type, y_dims, &y));
    if (y.size() == 0) return nullptr;
    if (x.size() == 0 || w.size() == 0) {  // empty sums: every output is its requantized bias
      std::vector<int32_t> zero(size_t(geo.pixels()), 0);
      for (int64_t i = 0; i < n * m; ++i) store_row(y, rq, zero.data(), 1, i % m, i * geo.pixels(), geo.pixels());
      return nullptr;
    }
    if (c == g && m == g && dims[0].kernel == 1 && dims[0].in == 1)
      depthwise(ctx, geo, x, w, w_zero, rq, y);
    else
      gemm(ctx, geo, x, w, w_zero, rq, y);
    return nullptr;
  }

 private:
  struct Geometry {
    std::vector<nn::WindowDim> dims;  // depth, height, width
    int64_t n = 0, c = 0, m = 0, g = 1;
    int32_t x_zero = 0;
    int64_t pixels() const { return dims[0].out * dims[1].out * dims[2].out; }
    int64_t plane() const { return dims[0].in * dims[1].in * dims[2].in; }
    int64_t window() const { return dims[0].kernel * dims[1].kernel * dims[2].kernel; }
    bool pointwise() const {  // 1x1(x1), stride 1, no padding: im2col(x) is x^T
      for (const auto& d : dims)
        if (d.kernel != 1 || d.stride != 1 || d.pad_begin != 0 || d.out != d.in) return false;
      return true;
    }
  };

  // w_zero: absent (0), one value, or one per filter.
  static std::string weight_zero(const std::optional<sdk::Tensor>& t, int64_t m, std::vector<int32_t>* out) {
    if (!t || t->size() == 0) {
      *out = {0};
      return "";
    }
    if (t->size() != 1 && t->size() != m)
      return "w_zero_point must hold 1 or " + std::to_string(m) + " values; got " + util::dims_str(t->dims);
    out->resize(size_t(t->size()));
    for (int64_t i = 0; i < t->size(); ++i) (*out)[size_t(i)] = int32_t(narrow::load(t->dtype, t->raw, i));
    return "";
  }

  // y[at .. at + count) for channel ch: requantized, or the int32 sums themselves.
  void store_row(const sdk::Tensor& y, const quant::Requantizer& rq, const int32_t* acc, int64_t stride,
                 int64_t ch, int64_t at, int64_t count) const {
    if (!qlinear_) {
      int32_t* out = y.data<int32_t>() + at;
      for (int64_t i = 0; i < count; ++i) out[i] = acc[i * stride];
    } else if (rq.is_signed) {
      rq.row(acc, stride, count, ch, y.data<int8_t>() + at);
    } else {
      rq.row(acc, stride, count, ch, y.data<uint8_t>() + at);
    }
  }

  // The padded image of a stride-1 2-D convolution: rows as wide as the
  // output plus the window's extent, so that tap (ky, kx) of grid column
  // p = oy * width + ox is plane[p + ky * dh * width + kx * dw]. width 0: not
  // this case. slack: the last tap of the last grid column reads past the
  // plane (a dropped column).
  struct Shifted {
    int64_t width = 0, height = 0, plane = 0, slack = 0;
  };
  static Shifted shifted(const Geometry& geo) {
    const auto& d = geo.dims;
    if (d[0].kernel != 1 || d[0].in != 1 || d[0].out != 1 || d[1].stride != 1 || d[2].stride != 1 || geo.pointwise())
      return {};
    Shifted s;
    s.width = d[2].out + (d[2].kernel - 1) * d[2].dilation;
    s.height = d[1].out + (d[1].kernel - 1) * d[1].dilation;
    s.plane = s.width * s.height;
    s.slack = (d[2].kernel - 1) * d[2].dilation + 64;
    return s;
  }

  // x[b, group]'s channels into padded planes of sh.width x sh.height, the
  // border holding x_zero.
  static void pad_image(sdk::ComputeContext& ctx, const Geometry& geo, const Shifted& sh, const uint8_t* x,
                        int64_t channels, uint8_t* out) {
    const auto& d = geo.dims;
    const auto pad = uint8_t(geo.x_zero);
    const int64_t in_w = d[2].in, in_h = d[1].in, left = d[2].pad_begin, top = d[1].pad_begin;
    const int64_t lo = std::clamp<int64_t>(left, 0, sh.width), hi = std::clamp<int64_t>(left + in_w, lo, sh.width);
    ctx.parallel_for(size_t(channels), nn::grain_for(double(sh.plane), 1 << 16), [&](size_t c0, size_t c1) {
      for (auto ci = int64_t(c0); ci < int64_t(c1); ++ci) {
        uint8_t* plane = out + ci * sh.plane;
        const uint8_t* src = x + ci * geo.plane();
        for (int64_t yy = 0; yy < sh.height; ++yy) {
          uint8_t* row = plane + yy * sh.width;
          const int64_t iy = yy - top;
          if (iy < 0 || iy >= in_h) {
            std::memset(row, pad, size_t(sh.width));
            continue;
          }
          std::memset(row, pad, size_t(lo));
          std::memcpy(row + lo, src + iy * in_w + (lo - left), size_t(hi - lo));
          std::memset(row + hi, pad, size_t(sh.width - hi));
        }
      }
    });
    std::memset(out + channels * sh.plane, pad, size_t(sh.slack));
  }

  // im2col(x[b, group]) as a K x pixels matrix: row (ci, kz, ky, kx) holds
  // that tap of every output pixel; pixels outside the input read x_zero (a
  // zero once the zero point is subtracted). Rows are written in runs.
  template <typename T>
  static void im2col(const T* x, const Geometry& geo, int64_t channels, T* cols) {
    const auto& d = geo.dims;
    const T pad = T(geo.x_zero);
    const int64_t out_w = d[2].out;
    for (int64_t ci = 0; ci < channels; ++ci)
      for (int64_t kz = 0; kz < d[0].kernel; ++kz)
        for (int64_t ky = 0; ky < d[1].kernel; ++ky)
          for (int64_t kx = 0; kx < d[2].kernel; ++kx) {
            // Output columns whose input column is inside: [lo, hi).
            const int64_t off = kx * d[2].dilation - d[2].pad_begin, st = d[2].stride;
            const int64_t lo = std::clamp<int64_t>(off >= 0 ? 0 : (-off + st - 1) / st, 0, out_w);
            const int64_t hi = std::clamp<int64_t>(d[2].in - off <= 0 ? 0 : (d[2].in - off - 1) / st + 1, lo, out_w);
            for (int64_t oz = 0; oz < d[0].out; ++oz) {
              const int64_t iz = oz * d[0].stride - d[0].pad_begin + kz * d[0].dilation;
              for (int64_t oy = 0; oy < d[1].out; ++oy, cols += out_w) {
                const int64_t iy = oy * d[1].stride - d[1].pad_begin + ky * d[1].dilation;
                if (iz < 0 || iz >= d[0].in || iy < 0 || iy >= d[1].in) {
                  std::fill(cols, cols + out_w, pad);
                  continue;
                }
                const T* line = x + ((ci * d[0].in + iz) * d[1].in + iy) * d[2].in + off;
                std::fill(cols, cols + lo, pad);
                if (st == 1)
                  std::copy(line + lo, line + hi, cols + lo);
                else
                  for (int64_t ox = lo; ox < hi; ++ox) cols[ox] = line[ox * st];
                std::fill(cols + hi, cols + out_w, pad);
              }
            }
          }
  }

  void gemm(sdk::ComputeContext& ctx, const Geometry& geo, const sdk::Tensor& x, const sdk::Tensor& w,
            const std::vector<int32_t>& w_zero, const quant::Requantizer& rq, const sdk::Tensor& y) const {
    const int64_t cg = geo.c / geo.g, mg = geo.m / geo.g, k = cg * geo.window(), pixels = geo.pixels();
    const bool x_signed = x.dtype == ONYX_DTYPE_INT8, pointwise = geo.pointwise();
    // Scratch reused across runs on this thread: the im2col matrix, its
    // packed form and the int32 sums.
    // (Bound to references here: a lambda naming a thread_local would see the
    // pool thread's own copy.)
    thread_local std::vector<uint8_t> cols_scratch;
    thread_local PackedQB packed_scratch;
    thread_local std::vector<int32_t> sums_scratch;
    thread_local std::vector<const uint8_t*> taps_scratch;
    std::vector<uint8_t>& cols = cols_scratch;
    PackedQB& packed = packed_scratch;
    std::vector<int32_t>& sums = sums_scratch;
    std::vector<const uint8_t*>& taps = taps_scratch;
    // Stride 1 in 2-D: B's rows are slices of a padded copy of the image,
    // computed over a grid as wide as the padded rows (the extra columns are
    // dropped), instead of an im2col matrix.
    const Shifted sh = shifted(geo);
    const int64_t grid = sh.width ? geo.dims[1].out * sh.width : pixels;  // B's columns
    // Grown only: resizing down and up again would zero the new part every run.
    auto grow = [](auto& v, int64_t size) {
      if (int64_t(v.size()) < size) v.resize(size_t(size));
    };
    if (sh.width)
      grow(cols, cg * sh.plane + sh.slack);
    else if (!pointwise)
      grow(cols, k * pixels);
    if (qlinear_ || sh.width) grow(sums, mg * grid);
    const ParallelFor pf = nn::host_parallel_for(ctx);
    for (int64_t b = 0; b < geo.n; ++b)
      for (int64_t grp = 0; grp < geo.g; ++grp) {
        const auto* xg = static_cast<const uint8_t*>(x.raw) + (b * geo.c + grp * cg) * geo.plane();
        const uint8_t* source = xg;  // pointwise: x_g is already K x pixels
        QMatrix bm{source, x_signed, pixels, false};
        if (sh.width) {
          pad_image(ctx, geo, sh, xg, cg, cols.data());
          taps.resize(size_t(k));
          const auto& d = geo.dims;
          for (int64_t ci = 0, r = 0; ci < cg; ++ci)
            for (int64_t ky = 0; ky < d[1].kernel; ++ky)
              for (int64_t kx = 0; kx < d[2].kernel; ++kx, ++r)
                taps[size_t(r)] = cols.data() + ci * sh.plane + ky * d[1].dilation * sh.width + kx * d[2].dilation;
          bm = {nullptr, x_signed, 0, false, taps.data()};
        } else if (!pointwise) {
          // Channels write disjoint rows of the im2col matrix: all threads help.
          const int64_t rows_per_channel = geo.window() * pixels;
          ctx.parallel_for(size_t(cg), nn::grain_for(double(rows_per_channel), 1 << 16), [&](size_t c0, size_t c1) {
            const int64_t at = int64_t(c0) * geo.plane(), n_ch = int64_t(c1 - c0);
            if (x_signed)
              im2col(reinterpret_cast<const int8_t*>(xg) + at, geo, n_ch,
                     reinterpret_cast<int8_t*>(cols.data()) + int64_t(c0) * rows_per_channel);
            else
              im2col(xg + at, geo, n_ch, cols.data() + int64_t(c0) * rows_per_channel);
          });
          bm.data = cols.data();
        }
        pack_qb_into(bm, k, grid, &geo.x_zero, 1, &packed, pf);
        const int64_t y0 = (b * geo.m + grp * mg) * pixels;
        const QMatrix wg{static_cast<const uint8_t*>(w.raw) + grp * mg * k, w.dtype == ONYX_DTYPE_INT8, k, false};
        const int32_t* wz = w_zero.size() == 1 ? w_zero.data() : w_zero.data() + grp * mg;
        const auto wz_count = int64_t(w_zero.size() == 1 ? 1 : mg);
        // Filters packed at creation, or now (run-time weights).
        auto run = [&](int32_t* c, int64_t ldc, const QTileDone& done) {
          if (!packed_w_.empty())
            qgemm(grid, *packed_w_[size_t(grp)], packed, c, ldc, done, pf);
          else
            qgemm(mg, grid, k, wg, wz, wz_count, packed, c, ldc, done, pf);
        };
        if (sh.width) {  // grid columns [c0, c1) row by row, the columns past out_w dropped
          const int64_t out_w = geo.dims[2].out;
          QTileDone done = [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
            for (int64_t p = c0; p < c1;) {
              const int64_t oy = p / sh.width, ox = p % sh.width, end = std::min(c1, (oy + 1) * sh.width);
              if (ox < out_w)
                for (int64_t f = r0; f < r1; ++f)
                  store_row(y, rq, sums.data() + f * grid + p, 1, grp * mg + f, y0 + f * pixels + oy * out_w + ox,
                            std::min(out_w, end - oy * sh.width) - ox);
              p = end;
            }
          };
          run(sums.data(), grid, done);
          continue;
        }
        if (!qlinear_) {  // ConvInteger: the sums are the output
          run(y.data<int32_t>() + y0, pixels, {});
          continue;
        }
        QTileDone done = [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
          for (int64_t f = r0; f < r1; ++f)
            store_row(y, rq, sums.data() + f * pixels + c0, 1, grp * mg + f, y0 + f * pixels + c0, c1 - c0);
        };
        run(sums.data(), pixels, done);
      }
  }

  // count values of src minus the zero point, as int16: contiguous (a loop
  // that vectorizes) or every step-th.
  template <typename T>
  static void shift_row(const T* src, int64_t step, int64_t count, int32_t zero, int16_t* dst) {
    if (step == 1) {
      for (int64_t i = 0; i < count; ++i) dst[i] = int16_t(int32_t(src[i]) - zero);
      return;
    }
    for (int64_t i = 0; i < count; ++i) dst[i] = int16_t(int32_t(src[i * step]) - zero);
  }

  // One channel per group, 2-D, any stride and dilation: the padded,
  // zero-point-shifted input plane is split into stride_y x stride_x phase
  // planes (phase (py, px) holds the padded pixels (s_y r + py, s_x c + px)),
  // so that tap (ky, kx) of output (oy, ox) is a fixed offset from oy * wq + ox
  // in one of them. All taps are then summed in registers over a grid as
  // wide as a phase plane (wq); the grid's columns past out_w are dropped.
  // Stride 1 has a single phase: the padded plane itself.
  void depthwise(sdk::ComputeContext& ctx, const Geometry& geo, const sdk::Tensor& x, const sdk::Tensor& w,
                 const std::vector<int32_t>& w_zero, const quant::Requantizer& rq, const sdk::Tensor& y) const {
    const auto& h = geo.dims[1];
    const auto& wd = geo.dims[2];
    const int64_t hp = std::max(h.in + h.pad_begin, (h.out - 1) * h.stride + h.extent()),
                  wp = std::max(wd.in + wd.pad_begin, (wd.out - 1) * wd.stride + wd.extent());
    const int64_t sy = h.stride, sx = wd.stride, hq = (hp + sy - 1) / sy, wq = (wp + sx - 1) / sx;
    const int64_t phase = hq * wq, taps = h.kernel * wd.kernel, pixels = geo.pixels();
    // The last tap of the grid's last (dropped) column reads this far past the last phase.
    const int64_t padded_size = sy * sx * phase + (wd.kernel - 1) * wd.dilation / sx;
    std::vector<int64_t> offsets(static_cast<size_t>(taps));
    for (int64_t ky = 0; ky < h.kernel; ++ky)
      for (int64_t kx = 0; kx < wd.kernel; ++kx) {
        const int64_t yy = ky * h.dilation, xx = kx * wd.dilation;
        offsets[size_t(ky * wd.kernel + kx)] = ((yy % sy) * sx + xx % sx) * phase + (yy / sy) * wq + xx / sx;
      }
    // Per column phase px: the first input column ix with (ix + pad) % sx ==
    // px, how many there are, and where they start in the phase's rows.
    struct ColumnPhase {
      int64_t first, count, dst;
    };
    std::vector<ColumnPhase> column_phases;
    for (int64_t px = 0; px < sx; ++px) {
      const int64_t first = ((px - wd.pad_begin) % sx + sx) % sx;
      if (first < wd.in)
        column_phases.push_back({first, (wd.in - first + sx - 1) / sx, px * phase + (first + wd.pad_begin) / sx});
    }
    ctx.parallel_for(size_t(geo.n * geo.c), nn::grain_for(double(pixels * taps), 1 << 16), [&](size_t lo, size_t hi) {
      // Per-thread scratch, kept across runs (fresh pages each run cost more
      // than the convolution).
      thread_local std::vector<int16_t> padded;
      thread_local std::vector<int32_t> sums, taps32;
      padded.resize(static_cast<size_t>(padded_size));
      sums.resize(static_cast<size_t>(h.out * wq));
      taps32.resize(static_cast<size_t>(taps));
      for (size_t job = lo; job < hi; ++job) {
        const int64_t ch = int64_t(job) % geo.c;
        std::fill(padded.begin(), padded.end(), int16_t(0));
        const int64_t plane_at = int64_t(job) * geo.plane();
        for (int64_t iy = 0; iy < h.in; ++iy) {
          const int64_t yy = iy + h.pad_begin;
          int16_t* row = padded.data() + (yy % sy) * sx * phase + (yy / sy) * wq;
          for (const ColumnPhase& cp : column_phases) {
            const int64_t at = plane_at + iy * wd.in + cp.first;
            if (x.dtype == ONYX_DTYPE_INT8)
              shift_row(x.data<int8_t>() + at, sx, cp.count, geo.x_zero, row + cp.dst);
            else
              shift_row(x.data<uint8_t>() + at, sx, cp.count, geo.x_zero, row + cp.dst);
          }
        }
        const int32_t wz = w_zero[w_zero.size() == 1 ? 0 : size_t(ch)];
        for (int64_t t = 0; t < taps; ++t) {
          const int64_t at = ch * taps + t;
          taps32[size_t(t)] = (w.dtype == ONYX_DTYPE_INT8 ? w.data<int8_t>()[at] : w.data<uint8_t>()[at]) - wz;
        }
        window_sums(sums.data(), padded.data(), offsets.data(), taps32.data(), taps, h.out * wq);
        // Rows packed together (each moves down, never over an unread one),
        // then one output-stage call for the whole channel.
        for (int64_t oy = 1; oy < h.out; ++oy)
          std::memmove(sums.data() + oy * wd.out, sums.data() + oy * wq, size_t(wd.out) * sizeof(int32_t));
        store_row(y, rq, sums.data(), 1, ch, int64_t(job) * pixels, pixels);
      }
    });
  }


  std::string label_;
  nn::WindowAttrs attrs_;
  int64_t group_;
  bool qlinear_;
  std::vector<std::shared_ptr<PackedQA>> packed_w_;  // per group, when the filters are constants
};

}  // namespace

void register_quantized_conv_kernels(sdk::KernelRegistry& registry) {
  // The types of the quantized tensors and zero points.
  constexpr sdk::DTypeSet k8Bit{ONYX_DTYPE_UINT8, ONYX_DTYPE_INT8};
  registry.add(sdk::KernelDefBuilder("ConvInteger")
                   .since(10)
                   .input_types({0, 1, 2, 3}, k8Bit)
                   .create([](const sdk::NodeInfo& n) { return std::make_unique<ConvIntegerKernel>(n, false); }));
  // ONNX's QLinearConv, and ONNX Runtime's com.microsoft copy of it in NCHW
  // (channels_last = 0; the NHWC form is declined with the reason).
  for (const char* domain : {"", "com.microsoft"})
    registry.add(sdk::KernelDefBuilder("QLinearConv", domain)
                     .since(*domain ? 1 : 10)
                     .inputs(8, 9)
                     .input_types({0, 2, 3, 5, 7}, k8Bit)
                     .input_types({1, 4, 6}, sdk::dtypes::kFloat32 | sdk::dtypes::kHalf)
                     .input_type(8, sdk::DTypeSet{ONYX_DTYPE_INT32})
                     .check([](const sdk::NodeInfo& n) -> std::string {
                       return n.get_int("channels_last", 0) ? "channels_last (NHWC) QLinearConv is not supported" : "";
                     })
                     .create([](const sdk::NodeInfo& n) { return std::make_unique<ConvIntegerKernel>(n, true); }));
}

}  // namespace onyx::cpu
