// pool.cpp: MaxPool (optional Indices output), AveragePool, LpPool and their
// Global* forms, for 1-, 2- and 3-D windows (global pools: any rank).
//
// Every window is run as a 3-D one (nn::lift_to_3d). For each output position
// the valid kernel taps of a dimension form one contiguous range, computed
// once per compute and shared by all N x C planes, so the inner loops carry
// no bounds checks.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/elementwise/vec_math.h"
#include "kernels/nn_util.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

enum class PoolKind { kMax, kAverage, kLp };

// The kernel taps [k0, k1) of one output position that land inside the
// input, and how many land inside the padded input (count_include_pad).
struct TapRange {
  int64_t k0 = 0, k1 = 0, padded_count = 0;
};

std::vector<TapRange> tap_ranges(const nn::WindowDim& d) {
  std::vector<TapRange> r(size_t(d.out));
  for (int64_t o = 0; o < d.out; ++o) {
    int64_t start = o * d.stride - d.pad_begin;
    nn::IndexRange inside = nn::index_range(start, d.dilation, d.kernel, 0, d.in);
    nn::IndexRange padded =
        nn::index_range(start, d.dilation, d.kernel, -d.pad_begin, d.in + d.pad_end);
    r[size_t(o)] = {inside.first, inside.last, padded.size()};
  }
  return r;
}

// The largest tap of one window, without branches on the data (random
// signs make a data-dependent branch mispredict half the time). Same NaN
// rule as the indexed path: a NaN first tap sticks, later NaNs are skipped.
template <typename T>
T window_max(const T* x, int64_t d0, int64_t h0, int64_t w0, const TapRange& td, const TapRange& th,
             const TapRange& tw, const std::vector<nn::WindowDim>& dims) {
  const nn::WindowDim &D = dims[0], &H = dims[1], &W = dims[2];
  T best = std::numeric_limits<T>::lowest();
  bool first = true;
  for (int64_t kd = td.k0; kd < td.k1; ++kd)
    for (int64_t kh = th.k0; kh < th.k1; ++kh) {
      const T* row = x + ((d0 + kd * D.dilation) * H.in + h0 + kh * H.dilation) * W.in + w0;
      int64_t kw = tw.k0;
      if (first && kw < tw.k1) best = row[kw++ * W.dilation], first = false;
      for (; kw < tw.k1; ++kw) {
        T v = row[kw * W.dilation];
        best = v > best ? v : best;
      }
    }
  return best;
}

// MaxPool without indices, one output row at a time: the outputs whose
// windows lie inside the row are computed across the row (float:
// vec::max_window_row, all taps of 8 or 16 outputs in registers; else tap
// by tap), the edges window by window. Taps are visited in the same order
// as window_max, so both give the same result.
template <typename T>
void max_plane(const T* x, T* y, const std::vector<nn::WindowDim>& dims, const std::vector<TapRange>& rd,
               const std::vector<TapRange>& rh, const std::vector<TapRange>& rw) {
  const nn::WindowDim &D = dims[0], &H = dims[1], &W = dims[2];
  std::vector<int64_t> offsets;  // float: one output row's taps (vec::max_window_row)
  int64_t lo = 0, hi = W.out;  // [lo, hi): outputs with every W tap inside
  while (lo < hi && (rw[size_t(lo)].k0 != 0 || rw[size_t(lo)].k1 != W.kernel)) ++lo;
  while (hi > lo && (rw[size_t(hi - 1)].k0 != 0 || rw[size_t(hi - 1)].k1 != W.kernel)) --hi;
  for (int64_t od = 0; od < D.out; ++od)
    for (int64_t oh = 0; oh < H.out; ++oh, y += W.out) {
      const TapRange &td = rd[size_t(od)], &th = rh[size_t(oh)];
      int64_t d0 = od * D.stride - D.pad_begin, h0 = oh * H.stride - H.pad_begin;
      for (int64_t ow = 0; ow < W.out; ++ow) {
        if (ow == lo && lo < hi) ow = hi;
        if (ow < W.out) y[ow] = window_max(x, d0, h0, ow * W.stride - W.pad_begin, td, th, rw[size_t(ow)], dims);
      }
      if (lo >= hi) continue;
      if constexpr (std::is_same_v<T, float>) {  // every tap's offset from x + lo * stride, in order
        offsets.clear();
        for (int64_t kd = td.k0; kd < td.k1; ++kd)
          for (int64_t kh = th.k0; kh < th.k1; ++kh)
            for (int64_t kw = 0; kw < W.kernel; ++kw)
              offsets.push_back(((d0 + kd * D.dilation) * H.in + h0 + kh * H.dilation) * W.in - W.pad_begin +
                                kw * W.dilation);
        if (offsets.empty())  // the window lies in the padding
          std::fill(y + lo, y + hi, std::numeric_limits<T>::lowest());
        else
          vec::max_window_row(y + lo, x + lo * W.stride, hi - lo, W.stride, offsets.data(), int64_t(offsets.size()));
        continue;
      }
      bool first = true;
      const int64_t stride = W.stride;
      T* yr = y + lo;
      const int64_t n = hi - lo;
      for (int64_t kd = td.k0; kd < td.k1; ++kd)
        for (int64_t kh = th.k0; kh < th.k1; ++kh) {
          const T* row = x + ((d0 + kd * D.dilation) * H.in + h0 + kh * H.dilation) * W.in +
                         lo * stride - W.pad_begin;
          for (int64_t kw = 0; kw < W.kernel; ++kw, first = false) {
            const T* tap = row + kw * W.dilation;
            if (first)
              for (int64_t i = 0; i < n; ++i) yr[i] = tap[i * stride];
            else
              for (int64_t i = 0; i < n; ++i) {
                T v = tap[i * stride];
                yr[i] = v > yr[i] ? v : yr[i];
              }
          }
        }
      if (first)  // no tap at all: the window lies in the padding
        for (int64_t i = 0; i < n; ++i) yr[i] = std::numeric_limits<T>::lowest();
    }
}

// A 2-D float MaxPool without dilation whose every window holds an input
// element, strided 1 or 2 along W: max_plane_replicated() applies.
bool replicates(const std::vector<nn::WindowDim>& dims, const std::vector<TapRange>& rh,
                const std::vector<TapRange>& rw) {
  const nn::WindowDim &D = dims[0], &H = dims[1], &W = dims[2];
  auto nonempty = [](const std::vector<TapRange>& r) {
    return std::all_of(r.begin(), r.end(), [](const TapRange& t) { return t.k0 < t.k1; });
  };
  return D.in == 1 && D.out == 1 && D.kernel == 1 && D.pad_begin == 0 && H.dilation == 1 && W.dilation == 1 &&
         (W.stride == 1 || W.stride == 2) && nonempty(rh) && nonempty(rw);
}

// MaxPool over one 2-D plane through a copy whose borders repeat its edge
// rows and columns, so that every window is whole and one vector loop
// (vec::max_window_row, stride 1) runs each output row, edges included.
// Strided by 2 along W, each copied row is split into its even and odd
// columns (the taps of a row of windows then lie in contiguous runs; ResNet's
// 3 x 3 / 2, padded, on 64 x 112 x 112: 0.69 -> 0.23-0.26 ms, ORT 0.24).
// Same result as the generic loop: without dilation a window's taps past an
// edge repeat its first or last inside tap, max is unchanged by repeats,
// and the first tap in row-major order is still the window's first inside
// tap (the NaN rule).
struct ReplicatedScratch {
  std::vector<float> staged;
  std::vector<int64_t> offsets;
};
void max_plane_replicated(const float* x, float* y, const std::vector<nn::WindowDim>& dims, ReplicatedScratch* s) {
  const nn::WindowDim &H = dims[1], &W = dims[2];
  const int64_t rows = (H.out - 1) * H.stride + H.kernel, cols = (W.out - 1) * W.stride + W.kernel;
  const bool split = W.stride == 2;
  const int64_t half = (cols + 1) / 2;  // a split row: [evens (half) | odds]
  s->staged.resize(size_t(rows * cols));
  const int64_t left = std::min(W.pad_begin, cols), inside = std::clamp(cols - W.pad_begin, int64_t(0), W.in);
  for (int64_t r = 0; r < rows; ++r) {
    const float* src = x + std::clamp(r - H.pad_begin, int64_t(0), H.in - 1) * W.in;
    float* dst = s->staged.data() + r * cols;
    // Column c of the copied row, in its split place. Written straight from
    // src: a split of a freshly written row would wait on its stores.
    auto at = [&](int64_t c) -> float& { return !split ? dst[c] : c % 2 == 0 ? dst[c / 2] : dst[half + c / 2]; };
    for (int64_t c = 0; c < left; ++c) at(c) = src[0];
    for (int64_t c = left + inside; c < cols; ++c) at(c) = src[W.in - 1];
    if (!split) {
      std::copy_n(src, inside, dst + left);
    } else {  // src[0] lands in column `left`: its evens in the evens' half when left is even
      const int64_t first_even = left % 2 == 0 ? 0 : 1;
      vec::copy_strided(src + first_even, 2, (inside - first_even + 1) / 2, dst + (left + first_even) / 2);
      vec::copy_strided(src + 1 - first_even, 2, (inside - 1 + first_even + 1) / 2,
                        dst + half + (left + 1 - first_even) / 2);
    }
  }
  s->offsets.clear();
  for (int64_t kh = 0; kh < H.kernel; ++kh)
    for (int64_t kw = 0; kw < W.kernel; ++kw)
      s->offsets.push_back(kh * cols + (!split ? kw : kw % 2 == 0 ? kw / 2 : half + kw / 2));
  for (int64_t oh = 0; oh < H.out; ++oh)
    vec::max_window_row(y + oh * W.out, s->staged.data() + oh * H.stride * cols, W.out, 1, s->offsets.data(),
                        int64_t(s->offsets.size()));
}

// A 2-D window of 2x2, stride 2, no padding or dilation, every window
// inside the input: the vectorized vec::max_pool_2x2 (the common CNN
// downsampling) applies.
bool is_2x2_stride_2(const std::vector<nn::WindowDim>& dims) {
  const nn::WindowDim &D = dims[0], &H = dims[1], &W = dims[2];
  if (D.in != 1 || D.out != 1 || D.kernel != 1 || D.pad_begin != 0) return false;
  for (const nn::WindowDim* d : {&H, &W})
    if (d->kernel != 2 || d->stride != 2 || d->dilation != 1 || d->pad_begin != 0 || 2 * d->out > d->in) return false;
  return true;
}

class PoolKernel final : public sdk::Kernel {
 public:
  PoolKernel(const sdk::NodeInfo& node, PoolKind kind, bool global)
      : label_(nn::node_label(node)),
        kind_(kind),
        global_(global),
        attrs_(nn::WindowAttrs::read(node)),
        count_include_pad_(node.get_int("count_include_pad", 0) != 0),
        column_major_(node.get_int("storage_order", 0) == 1),
        want_indices_(node.outputs.size() > 1 && node.outputs[1].present) {
    const sdk::Attribute* p = node.attr("p");
    if (p) p_ = p->type == ONYX_ATTR_FLOAT ? p->f : double(p->i);  // LpPool-1 has a float p
  }

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    if (x.rank() < 3)
      return nn::fail(label_, "input 0 must be N x C x D1 x ..., got shape %s",
                      nn::dims_str(x.dims).c_str());
    std::vector<int64_t> in(x.dims.begin() + 2, x.dims.end()), kernel = attrs_.kernel_shape;
    if (global_) {  // one window over all spatial dims, run as a single flat dim
      in = {sdk::element_count(in)};
      kernel = in;
    } else if (in.size() > 3) {
      return nn::fail(label_, "input 0 has %zu spatial dims; 1 to 3 are supported", in.size());
    }
    std::vector<nn::WindowDim> dims;
    nn::WindowAttrs attrs = global_ ? nn::WindowAttrs{} : attrs_;
    if (std::string e = nn::resolve_forward(attrs, in, kernel, &dims); !e.empty())
      return nn::fail(label_, "input 0 shape %s: %s", nn::dims_str(x.dims).c_str(), e.c_str());

    std::vector<int64_t> out_shape = {x.dim(0), x.dim(1)};
    if (global_)
      out_shape.resize(x.rank(), 1);
    else
      for (const nn::WindowDim& d : dims) out_shape.push_back(d.out);
    sdk::Tensor y, indices;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, out_shape, &y));
    if (want_indices_)
      ONYX_SDK_RETURN_IF_ERROR(ctx.output(1, ONYX_DTYPE_INT64, out_shape, &indices));
    if (y.size() == 0) return nullptr;
    if (x.size() == 0) return nn::fail(label_, "input 0 has an empty spatial dim");

    nn::lift_to_3d(&dims);
    switch (x.dtype) {
      case ONYX_DTYPE_FLOAT32:
        run<float>(ctx, x, y, indices, dims);
        break;
      case ONYX_DTYPE_FLOAT64:
        run<double>(ctx, x, y, indices, dims);
        break;
      case ONYX_DTYPE_INT8:
        run<int8_t>(ctx, x, y, indices, dims);
        break;
      case ONYX_DTYPE_UINT8:
        run<uint8_t>(ctx, x, y, indices, dims);
        break;
      default:
        return nn::fail(label_, "unsupported type %s", sdk::dtype_name(x.dtype));
    }
    return nullptr;
  }

 private:
  template <typename T>
  void run(sdk::ComputeContext& ctx, const sdk::Tensor& x, const sdk::Tensor& y,
           const sdk::Tensor& indices, const std::vector<nn::WindowDim>& dims) const {
    std::vector<TapRange> rd = tap_ranges(dims[0]), rh = tap_ranges(dims[1]),
                          rw = tap_ranges(dims[2]);
    const int64_t in_plane = dims[0].in * dims[1].in * dims[2].in;
    const int64_t out_plane = dims[0].out * dims[1].out * dims[2].out;
    const int64_t window = dims[0].kernel * dims[1].kernel * dims[2].kernel;
    const size_t planes = size_t(x.dim(0) * x.dim(1));
    const bool max_only = std::is_same_v<T, float> && kind_ == PoolKind::kMax && !indices.raw;
    const bool two_by_two = max_only && is_2x2_stride_2(dims);
    const bool replicated = max_only && !two_by_two && replicates(dims, rh, rw);
    ctx.parallel_for(planes, nn::grain_for(double(out_plane * window)), [&](size_t b, size_t e) {
      ReplicatedScratch scratch;  // reused across this range's planes
      for (size_t p = b; p < e; ++p) {
        if constexpr (std::is_same_v<T, float>) {
          if (global_ && kind_ == PoolKind::kAverage) {  // no padding: the mean of the plane
            y.data<float>()[p] = float(vec::sum(x.data<float>() + p * in_plane, size_t(in_plane)) / double(in_plane));
            continue;
          }
          if (two_by_two) {
            vec::max_pool_2x2(x.data<float>() + p * in_plane, y.data<float>() + p * out_plane, dims[1].in,
                              dims[2].in, dims[1].out, dims[2].out);
            continue;
          }
          if (replicated) {
            max_plane_replicated(x.data<float>() + p * in_plane, y.data<float>() + p * out_plane, dims, &scratch);
            continue;
          }
        }
        if (kind_ == PoolKind::kMax && !indices.raw)
          max_plane<T>(x.data<T>() + p * in_plane, y.data<T>() + p * out_plane, dims, rd, rh, rw);
        else
          pool_plane<T>(x.data<T>() + p * in_plane, y.data<T>() + p * out_plane,
                      indices.raw ? indices.data<int64_t>() + p * out_plane : nullptr,
                      int64_t(p) * in_plane, dims, rd, rh, rw);
      }
    });
  }

  template <typename T>
  void pool_plane(const T* x, T* y, int64_t* idx, int64_t plane_offset,
                  const std::vector<nn::WindowDim>& dims, const std::vector<TapRange>& rd,
                  const std::vector<TapRange>& rh, const std::vector<TapRange>& rw) const {
    const nn::WindowDim &D = dims[0], &H = dims[1], &W = dims[2];
    for (int64_t od = 0; od < D.out; ++od)
      for (int64_t oh = 0; oh < H.out; ++oh)
        for (int64_t ow = 0; ow < W.out; ++ow, ++y) {
          const TapRange &td = rd[size_t(od)], &th = rh[size_t(oh)], &tw = rw[size_t(ow)];
          int64_t d0 = od * D.stride - D.pad_begin, h0 = oh * H.stride - H.pad_begin,
                  w0 = ow * W.stride - W.pad_begin;
          if (kind_ == PoolKind::kMax && !idx) {
            *y = window_max(x, d0, h0, w0, td, th, tw, dims);
            continue;
          }
          if (kind_ == PoolKind::kMax) {
            T best = std::numeric_limits<T>::lowest();
            int64_t best_pos = -1;
            for (int64_t kd = td.k0; kd < td.k1; ++kd)
              for (int64_t kh = th.k0; kh < th.k1; ++kh) {
                int64_t row = ((d0 + kd * D.dilation) * H.in + h0 + kh * H.dilation) * W.in + w0;
                for (int64_t kw = tw.k0; kw < tw.k1; ++kw) {
                  T v = x[row + kw * W.dilation];
                  if (v > best || best_pos < 0) {
                    best = v;
                    best_pos = row + kw * W.dilation;
                  }
                }
              }
            *y = best;
            // A window entirely inside the padding has no element to point at.
            if (idx) *idx++ = best_pos < 0 ? -1 : plane_offset + storage_index(best_pos, dims);
            continue;
          }
          double sum = 0;
          for (int64_t kd = td.k0; kd < td.k1; ++kd)
            for (int64_t kh = th.k0; kh < th.k1; ++kh) {
              const T* row = x + ((d0 + kd * D.dilation) * H.in + h0 + kh * H.dilation) * W.in + w0;
              if (kind_ == PoolKind::kAverage)
                for (int64_t kw = tw.k0; kw < tw.k1; ++kw) sum += double(row[kw * W.dilation]);
              else
                for (int64_t kw = tw.k0; kw < tw.k1; ++kw)
                  sum += lp_term(double(row[kw * W.dilation]));
            }
          if (kind_ == PoolKind::kLp) {
            *y = T(p_ == 2 ? std::sqrt(sum) : std::pow(sum, 1.0 / p_));
          } else {
            int64_t count = count_include_pad_
                                ? td.padded_count * th.padded_count * tw.padded_count
                                : (td.k1 - td.k0) * (th.k1 - th.k0) * (tw.k1 - tw.k0);
            *y = T(sum / double(count));
          }
        }
  }

  double lp_term(double v) const { return p_ == 2 ? v * v : std::pow(std::fabs(v), p_); }

  // MaxPool's Indices count over the flattened input: row-major spatial
  // position, or column-major (storage_order = 1) with the first spatial dim
  // varying fastest.
  int64_t storage_index(int64_t row_major, const std::vector<nn::WindowDim>& dims) const {
    if (!column_major_) return row_major;
    int64_t w = row_major % dims[2].in, h = row_major / dims[2].in % dims[1].in,
            d = row_major / (dims[2].in * dims[1].in);
    return d + dims[0].in * (h + dims[1].in * w);
  }

  std::string label_;
  PoolKind kind_;
  bool global_;
  nn::WindowAttrs attrs_;
  bool count_include_pad_, column_major_, want_indices_;
  double p_ = 2;
};

// The window attributes of a (non-global) pool.
std::string check_pool_attrs(const sdk::NodeInfo& node, PoolKind kind) {
  nn::WindowAttrs attrs = nn::WindowAttrs::read(node);
  if (attrs.kernel_shape.empty()) return "attribute kernel_shape is required";
  if (attrs.kernel_shape.size() > 3)
    return "kernel_shape has " + std::to_string(attrs.kernel_shape.size()) +
           " dims; 1 to 3 are supported";
  if (std::string c = attrs.check(attrs.kernel_shape.size()); !c.empty()) return c;
  int64_t order = node.get_int("storage_order", 0);
  if (order != 0 && order != 1)
    return "storage_order " + std::to_string(order) + " is not 0 or 1";
  if (kind == PoolKind::kLp && node.has("p")) {
    const sdk::Attribute* p = node.attr("p");
    double pv = p->type == ONYX_ATTR_FLOAT ? p->f : double(p->i);
    if (!(pv > 0)) return "p must be positive";
  }
  return {};
}

}  // namespace

void register_pool_kernels(sdk::KernelRegistry& registry) {
  constexpr sdk::DTypeSet kMaxTypes = sdk::dtypes::kFloat | sdk::DTypeSet{ONYX_DTYPE_INT8, ONYX_DTYPE_UINT8};
  struct Pool {
    const char* op;
    PoolKind kind;
    bool global;
  };
  for (Pool p : {Pool{"MaxPool", PoolKind::kMax, false}, Pool{"AveragePool", PoolKind::kAverage, false},
                 Pool{"LpPool", PoolKind::kLp, false}, Pool{"GlobalMaxPool", PoolKind::kMax, true},
                 Pool{"GlobalAveragePool", PoolKind::kAverage, true}, Pool{"GlobalLpPool", PoolKind::kLp, true}}) {
    sdk::KernelDefBuilder def(p.op);
    def.input_type(0, p.kind == PoolKind::kMax ? kMaxTypes : sdk::dtypes::kFloat);
    if (!p.global) def.check([kind = p.kind](const sdk::NodeInfo& node) { return check_pool_attrs(node, kind); });
    registry.add(def.create([p](const sdk::NodeInfo& node) { return std::make_unique<PoolKernel>(node, p.kind, p.global); }));
  }
}

}  // namespace onyx::cpu
