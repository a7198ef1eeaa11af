// quantized_conv.cpp: ConvInteger and QLinearConv (opset 10) with 1-3
// spatial dims and groups. Depthwise 2-D convolutions (one input and one
// output channel per group: MobileNet's 3x3 layers) run as direct loops over
// a zero-point-shifted, padded plane split by stride (phase_planes.h); every other
// convolution is an integer GEMM (gemm/qgemm.h) per image and group:
//   Y[filter, pixel] = W[filter, :] . im2col(x)[:, pixel]
// whose result rows are Y's rows (NCHW), so the output stage streams. The
// im2col rows are read in place: from x for 1x1 stride-1 layers, from the
// phase planes of x for other 1-D and 2-D layers; only 3-D layers write an
// im2col matrix.
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
#include "kernels/conv/phase_planes.h"
#include "kernels/elementwise/vec_math.h"
#include "kernels/nn_util.h"
#include "kernels/quantize/requantize.h"
#include "kernels/registry.h"
#include "target_clones.h"

namespace onyx::cpu {
namespace {

using conv::PhasePlanes;

// n 8-bit codes minus their zero point, as floats: small integers, exact
// in float32. One long vector loop over a whole plane (rows of 7 or 14
// codes left most of a row-by-row loop in its scalar tail).
template <typename T>
[[gnu::always_inline]] inline void shift_codes(const T* x, int64_t n, int32_t zero, float* out) {
  const auto z = float(zero);
  for (int64_t i = 0; i < n; ++i) out[i] = float(x[i]) - z;
}
ONYX_CLONES void shift_codes(const uint8_t* x, bool is_signed, int64_t n, int32_t zero, float* out) {
  if (is_signed)
    shift_codes(reinterpret_cast<const int8_t*>(x), n, zero, out);
  else
    shift_codes(x, n, zero, out);
}

// Float sums that hold integers, as int32.
ONYX_CLONES void to_int32(const float* sums, int64_t n, int32_t* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = int32_t(sums[i]);
}

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
    if (c == g && m == g && dims[0].kernel == 1 && dims[0].in == 1 && geo.window() <= kExactTaps)
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

  // x[b, group]'s channels as blocks of phase planes (raw bytes, the border
  // holding x_zero) into out, plus the slack after the last.
  static void fill_phases(sdk::ComputeContext& ctx, const Geometry& geo, const PhasePlanes& ph, const uint8_t* x,
                          int64_t channels, uint8_t* out) {
    const auto pad = uint8_t(geo.x_zero);
    const int64_t in_w = geo.dims[2].in;
    ctx.parallel_for(size_t(channels), nn::grain_for(double(ph.block), 1 << 16), [&](size_t c0, size_t c1) {
      for (auto ci = int64_t(c0); ci < int64_t(c1); ++ci) {
        uint8_t* block = out + ci * ph.block;
        std::memset(block, pad, size_t(ph.block));
        const uint8_t* src = x + ci * geo.plane();
        for (int64_t iy = 0; iy < geo.dims[1].in; ++iy)
          ph.place_row(src + iy * in_w, in_w, block + ph.row_at(iy), [](uint8_t v) { return v; });
      }
    });
    std::memset(out + channels * ph.block, pad, size_t(ph.slack));
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

  // Per thread, kept across runs and grown only (resizing down and up again
  // would zero the new part every run): the phase planes (or the im2col
  // matrix), B's packed form, the int32 sums and B's row pointers.
  struct Scratch {
    std::vector<uint8_t> cols;
    PackedQB packed;
    std::vector<int32_t> sums;
    std::vector<const uint8_t*> taps;
  };
  static Scratch& thread_scratch() {
    thread_local Scratch scratch;
    return scratch;
  }
  template <typename V>
  static void grow(V& v, int64_t size) {
    if (int64_t(v.size()) < size) v.resize(size_t(size));
  }

  // With several images or groups and threads to share, each (image, group)
  // product runs whole on one thread: the threads then split whole GEMMs
  // instead of each small GEMM (a batch of late, 7x7 layers) along its tiles.
  void gemm(sdk::ComputeContext& ctx, const Geometry& geo, const sdk::Tensor& x, const sdk::Tensor& w,
            const std::vector<int32_t>& w_zero, const quant::Requantizer& rq, const sdk::Tensor& y) const {
    const ParallelFor pf = nn::host_parallel_for(ctx);
    const int64_t jobs = geo.n * geo.g;
    if (jobs >= 2 && pf.threads > 1) {
      ctx.parallel_for(size_t(jobs), 1, [&](size_t lo, size_t hi) {
        for (size_t t = lo; t < hi; ++t)
          gemm_one(ctx, geo, x, w, w_zero, rq, y, int64_t(t) / geo.g, int64_t(t) % geo.g, thread_scratch(),
                   nn::serial_parallel_for());
      });
      return;
    }
    for (int64_t b = 0; b < geo.n; ++b)
      for (int64_t grp = 0; grp < geo.g; ++grp) gemm_one(ctx, geo, x, w, w_zero, rq, y, b, grp, thread_scratch(), pf);
  }

  // The GEMM of image b, group grp; pf splits its parts (phase planes, B's
  // packing, the product) or is serial.
  void gemm_one(sdk::ComputeContext& ctx, const Geometry& geo, const sdk::Tensor& x, const sdk::Tensor& w,
                const std::vector<int32_t>& w_zero, const quant::Requantizer& rq, const sdk::Tensor& y, int64_t b,
                int64_t grp, Scratch& s, const ParallelFor& pf) const {
    const int64_t cg = geo.c / geo.g, mg = geo.m / geo.g, k = cg * geo.window(), pixels = geo.pixels();
    const bool x_signed = x.dtype == ONYX_DTYPE_INT8, pointwise = geo.pointwise();
    // 2-D and 1-D: B's rows are slices of phase planes of the image (each
    // tap a fixed offset), over a grid as wide as a phase plane whose extra
    // columns are dropped, instead of an im2col matrix; 1x1 stride-1 layers
    // read x itself.
    const PhasePlanes ph = pointwise ? PhasePlanes{} : PhasePlanes::of(geo.dims);
    const bool phased = ph.block > 0;
    const int64_t grid = phased ? ph.grid() : pixels;  // B's columns
    if (phased)
      grow(s.cols, cg * ph.block + ph.slack);
    else if (!pointwise)
      grow(s.cols, k * pixels);
    if (qlinear_ || phased) grow(s.sums, mg * grid);
    const auto* xg = static_cast<const uint8_t*>(x.raw) + (b * geo.c + grp * cg) * geo.plane();
    QMatrix bm{xg, x_signed, pixels, false};  // pointwise: x_g is already K x pixels
    if (phased) {
      fill_phases(ctx, geo, ph, xg, cg, s.cols.data());
      s.taps.resize(size_t(k));
      for (int64_t ci = 0, r = 0; ci < cg; ++ci)
        for (const int64_t offset : ph.offsets) s.taps[size_t(r++)] = s.cols.data() + ci * ph.block + offset;
      bm = {nullptr, x_signed, 0, false, s.taps.data()};
    } else if (!pointwise) {
      // Channels write disjoint rows of the im2col matrix: all threads help.
      const int64_t rows_per_channel = geo.window() * pixels;
      uint8_t* cols = s.cols.data();
      ctx.parallel_for(size_t(cg), nn::grain_for(double(rows_per_channel), 1 << 16), [&](size_t c0, size_t c1) {
        const int64_t at = int64_t(c0) * geo.plane(), n_ch = int64_t(c1 - c0);
        if (x_signed)
          im2col(reinterpret_cast<const int8_t*>(xg) + at, geo, n_ch,
                 reinterpret_cast<int8_t*>(cols) + int64_t(c0) * rows_per_channel);
        else
          im2col(xg + at, geo, n_ch, cols + int64_t(c0) * rows_per_channel);
      });
      bm.data = cols;
    }
    pack_qb_into(bm, k, grid, &geo.x_zero, 1, &s.packed, pf, packed_w_.empty() ? nullptr : packed_w_[size_t(grp)].get());
    const int64_t y0 = (b * geo.m + grp * mg) * pixels;
    const QMatrix wg{static_cast<const uint8_t*>(w.raw) + grp * mg * k, w.dtype == ONYX_DTYPE_INT8, k, false};
    const int32_t* wz = w_zero.size() == 1 ? w_zero.data() : w_zero.data() + grp * mg;
    const auto wz_count = int64_t(w_zero.size() == 1 ? 1 : mg);
    // Filters packed at creation, or now (run-time weights).
    auto run = [&](int32_t* c, int64_t ldc, const QTileDone& done) {
      if (!packed_w_.empty())
        qgemm(grid, *packed_w_[size_t(grp)], s.packed, c, ldc, done, pf);
      else
        qgemm(mg, grid, k, wg, wz, wz_count, s.packed, c, ldc, done, pf);
    };
    int32_t* sums = s.sums.data();
    if (phased) {  // grid columns [c0, c1) row by row, the columns past out_w dropped
      const int64_t out_w = geo.dims[2].out, wq = ph.wq;
      QTileDone done = [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
        for (int64_t p = c0; p < c1;) {
          const int64_t oy = p / wq, ox = p % wq, end = std::min(c1, (oy + 1) * wq);
          if (ox < out_w)
            for (int64_t f = r0; f < r1; ++f)
              store_row(y, rq, sums + f * grid + p, 1, grp * mg + f, y0 + f * pixels + oy * out_w + ox,
                        std::min(out_w, end - oy * wq) - ox);
          p = end;
        }
      };
      run(sums, grid, done);
      return;
    }
    if (!qlinear_) {  // ConvInteger: the sums are the output
      run(y.data<int32_t>() + y0, pixels, {});
      return;
    }
    QTileDone done = [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
      for (int64_t f = r0; f < r1; ++f)
        store_row(y, rq, sums + f * pixels + c0, 1, grp * mg + f, y0 + f * pixels + c0, c1 - c0);
    };
    run(sums, pixels, done);
  }


  // Window sums of 8-bit codes in float32 are exact: products are at most
  // 255 * 255, so sums of up to this many taps stay integers below 2^24.
  static constexpr int64_t kExactTaps = (int64_t(1) << 24) / (255 * 255);

  // One channel per group, 2-D, any stride and dilation: each channel's
  // phase planes (PhasePlanes, the padding zeroed once per thread) hold the
  // zero-point-shifted input as float32 (shifted whole, then placed), all taps are summed in registers
  // over the output rows (vec::window_rows, the float Conv's loop, exact
  // here: at most kExactTaps taps), and the integer sums go to the output
  // stage.
  void depthwise(sdk::ComputeContext& ctx, const Geometry& geo, const sdk::Tensor& x, const sdk::Tensor& w,
                 const std::vector<int32_t>& w_zero, const quant::Requantizer& rq, const sdk::Tensor& y) const {
    const PhasePlanes ph = PhasePlanes::of(geo.dims);
    const int64_t in_h = geo.dims[1].in, in_w = geo.dims[2].in, out_h = geo.dims[1].out, out_w = geo.dims[2].out;
    const auto taps = int64_t(ph.offsets.size()), pixels = geo.pixels();
    const int64_t buffer = ph.block + ph.slack + vec::kWindowReadPast;
    const bool x_signed = x.dtype == ONYX_DTYPE_INT8;
    ctx.parallel_for(size_t(geo.n * geo.c), nn::grain_for(double(pixels * taps), 1 << 16), [&](size_t lo, size_t hi) {
      float* padded = ph.zero_padded_buffer(buffer, in_h, in_w);
      // Per-thread scratch, kept across runs (fresh pages each run cost more
      // than the convolution).
      thread_local std::vector<float> shifted, tap_values, float_sums;
      thread_local std::vector<int32_t> sums;
      thread_local std::vector<int64_t> rows;
      shifted.resize(static_cast<size_t>(geo.plane()));
      float_sums.resize(static_cast<size_t>(pixels));
      sums.resize(static_cast<size_t>(pixels));
      tap_values.resize(static_cast<size_t>(taps));
      rows.resize(size_t(in_h));
      for (int64_t iy = 0; iy < in_h; ++iy) rows[size_t(iy)] = ph.row_at(iy);
      for (size_t job = lo; job < hi; ++job) {
        const int64_t ch = int64_t(job) % geo.c;
        shift_codes(static_cast<const uint8_t*>(x.raw) + int64_t(job) * geo.plane(), x_signed, geo.plane(), geo.x_zero,
                    shifted.data());
        ph.place_plane(shifted.data(), in_h, in_w, rows.data(), padded);
        const int32_t wz = w_zero[w_zero.size() == 1 ? 0 : size_t(ch)];
        for (int64_t t = 0; t < taps; ++t) {
          const int64_t at = ch * taps + t;
          tap_values[size_t(t)] = float((w.dtype == ONYX_DTYPE_INT8 ? w.data<int8_t>()[at] : w.data<uint8_t>()[at]) - wz);
        }
        vec::window_rows(float_sums.data(), out_w, padded, ph.wq, out_h, out_w, ph.offsets.data(),
                         tap_values.data(), taps, 0.0f, -INFINITY, INFINITY);
        // The sums as int32 (exact), then one output-stage call for the whole channel.
        to_int32(float_sums.data(), pixels, sums.data());
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
