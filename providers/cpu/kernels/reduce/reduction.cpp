// reduction.cpp: Reduce* (Sum, Mean, Max, Min, Prod, L1, L2, LogSum,
// LogSumExp, SumSquare) and ArgMax/ArgMin.
//
// Axes come from the attribute `axes` before opset 18 (ReduceSum: 13) and
// from the optional input 1 after. No axes means all axes, unless
// noop_with_empty_axes is set: then nothing is reduced and every output
// element is the reduction of the single matching input element.
//
// The walk: dims of size 1 are dropped and neighbouring dims that are both
// reduced or both kept are merged. When the last dim is reduced, each output
// sums contiguous runs (case "runs", in independent lanes); when it is kept, whole rows of the
// input are folded into a row of accumulators (case "rows"), which keeps the
// memory access contiguous either way.
#include <cmath>
#include <limits>

#include "kernels/kernel_util.h"
#include "kernels/registry.h"
#include "target_clones.h"

namespace onyx::cpu {
namespace {

using util::kBool;
using util::kFloat;
using util::kHalf;
using util::kNumeric;

// Accumulator types: float sums in double; integer sums and products in
// uint64 so that they wrap (as numpy's do) instead of overflowing.
template <typename T>
using sum_t = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;

template <typename T>
T from_wrapped(uint64_t v) {
  return T(std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>(v));
}

// A reducer: init(), step(acc, x, shift), combine(acc, acc) (merges partial
// folds), finish(acc, count, shift). `shift` is the output's maximum for
// LogSumExp (0 for every other reducer).
template <typename T>
struct SumR {
  using Acc = sum_t<T>;
  // step() is a + Acc(x): float32 folds take the vector loops below.
  static constexpr bool kPlainSum = true;
  Acc init() const { return 0; }
  Acc step(Acc a, T x, double) const { return a + Acc(x); }
  Acc combine(Acc a, Acc b) const { return a + b; }
  T finish(Acc a, int64_t, double) const {
    if constexpr (std::is_floating_point_v<T>) return T(a);
    else return from_wrapped<T>(a);
  }
};
template <typename T>
struct MeanR : SumR<T> {
  T finish(typename SumR<T>::Acc a, int64_t n, double) const {
    if constexpr (std::is_floating_point_v<T>) return T(a / double(n));  // n == 0: NaN
    else if (n == 0) return T(0);
    else if constexpr (std::is_signed_v<T>) return T(int64_t(a) / n);
    else return T(a / uint64_t(n));
  }
};
template <typename T>
struct SumSquareR : SumR<T> {
  using Acc = typename SumR<T>::Acc;
  static constexpr bool kPlainSum = false;
  Acc step(Acc a, T x, double) const { return a + Acc(x) * Acc(x); }
};
template <typename T>
struct L1R : SumR<T> {
  using Acc = typename SumR<T>::Acc;
  static constexpr bool kPlainSum = false;
  Acc step(Acc a, T x, double) const {
    if constexpr (std::is_floating_point_v<T>) return a + std::fabs(Acc(x));
    else if constexpr (std::is_signed_v<T>) return a + (x < 0 ? Acc(0) - Acc(x) : Acc(x));
    else return a + Acc(x);
  }
};
template <typename T>
struct ProdR : SumR<T> {
  using Acc = typename SumR<T>::Acc;
  static constexpr bool kPlainSum = false;
  Acc init() const { return 1; }
  Acc step(Acc a, T x, double) const { return a * Acc(x); }
  Acc combine(Acc a, Acc b) const { return a * b; }
};
// L2, LogSum and LogSumExp work in double whatever T is.
template <typename T>
struct L2R {
  using Acc = double;
  Acc init() const { return 0; }
  Acc step(Acc a, T x, double) const { return a + double(x) * double(x); }
  Acc combine(Acc a, Acc b) const { return a + b; }
  T finish(Acc a, int64_t, double) const { return T(std::sqrt(a)); }
};
template <typename T>
struct LogSumR : L2R<T> {
  double step(double a, T x, double) const { return a + double(x); }
  T finish(double a, int64_t, double) const { return T(std::log(a)); }
};
template <typename T>
struct LogSumExpR : L2R<T> {
  double step(double a, T x, double shift) const { return a + std::exp(double(x) - shift); }
  T finish(double a, int64_t, double shift) const { return T(shift + std::log(a)); }
};
// Max and Min propagate NaN; an empty reduction gives -inf / +inf (the
// lowest / highest value for integers).
template <typename T>
struct MaxR {
  using Acc = T;
  T init() const {
    if constexpr (std::is_floating_point_v<T>) return -std::numeric_limits<T>::infinity();
    else return std::numeric_limits<T>::lowest();
  }
  T step(T a, T x, double) const { return (x > a || x != x) ? x : a; }
  T combine(T a, T b) const { return step(a, b, 0); }
  T finish(T a, int64_t, double) const { return a; }
};
template <typename T>
struct MinR {
  using Acc = T;
  T init() const {
    if constexpr (std::is_floating_point_v<T>) return std::numeric_limits<T>::infinity();
    else return std::numeric_limits<T>::max();
  }
  T step(T a, T x, double) const { return (x < a || x != x) ? x : a; }
  T combine(T a, T b) const { return step(a, b, 0); }
  T finish(T a, int64_t, double) const { return a; }
};

enum class Kind { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

// Offsets of every position of an odometer over `dims` with `strides`.
std::vector<int64_t> offsets(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides) {
  std::vector<int64_t> out{0};
  for (size_t d = 0; d < dims.size(); ++d) {
    std::vector<int64_t> next;
    next.reserve(out.size() * size_t(dims[d]));
    for (int64_t base : out)
      for (int64_t i = 0; i < dims[d]; ++i) next.push_back(base + i * strides[d]);
    out = std::move(next);
  }
  return out;
}

// Where every output element reads its inputs.
struct Walk {
  bool rows = false;              // last dim kept: fold rows of `inner`
  int64_t inner = 1;              // rows: row length; runs: run length
  std::vector<int64_t> kept;      // runs: per output; rows: per output row
  std::vector<int64_t> reduced;   // runs: start of each run; rows: each reduced position
  int64_t reduce_count = 1;       // input elements per output element
};

Walk make_walk(std::span<const int64_t> dims, const std::vector<bool>& reduce) {
  std::vector<int64_t> strides = util::strides_of(dims);
  // Collapse: drop size-1 dims, merge neighbours of the same kind.
  std::vector<int64_t> cd, cs;
  std::vector<bool> cr;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1) continue;
    if (!cd.empty() && cr.back() == reduce[d] && cs.back() == strides[d] * dims[d]) {
      cd.back() *= dims[d];
      cs.back() = strides[d];
    } else {
      cd.push_back(dims[d]);
      cs.push_back(strides[d]);
      cr.push_back(reduce[d]);
    }
  }
  Walk w;
  std::vector<int64_t> kd, ks, rd, rs;
  for (size_t d = 0; d < cd.size(); ++d) {
    (cr[d] ? rd : kd).push_back(cd[d]);
    (cr[d] ? rs : ks).push_back(cs[d]);
    if (cr[d]) w.reduce_count *= cd[d];
  }
  w.rows = cd.empty() || !cr.back();
  if (w.rows) {
    if (!kd.empty()) {
      w.inner = kd.back();
      kd.pop_back();
      ks.pop_back();
    }
  } else {
    w.inner = rd.back();
    rd.pop_back();
    rs.pop_back();
  }
  w.kept = offsets(kd, ks);
  w.reduced = offsets(rd, rs);
  return w;
}

// A float32 sum's inner loops, widened to double, compiled per vector ISA:
// written with the reducer's step() they stayed scalar (cvtss2sd, addsd:
// a [1024, 1024] -> [1024] bias gradient at 1 ns an element).
template <typename R>
constexpr bool plain_float_sum() {
  if constexpr (requires { R::kPlainSum; }) return R::kPlainSum && std::is_same_v<typename R::Acc, double>;
  return false;
}

// acc[i] += p[i], i < n.
ONYX_CLONES void add_widened(double* acc, const float* p, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] += double(p[i]);
}

// The sum of p[0, n), in 16 independent lanes.
ONYX_CLONES double sum_widened(const float* p, int64_t n) {
  constexpr int64_t kLanes = 16;
  double lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int64_t j = 0; j < kLanes; ++j) lane[j] += double(p[i + j]);
  for (; i < n; ++i) lane[0] += double(p[i]);
  for (int64_t w = kLanes / 2; w >= 1; w /= 2)
    for (int64_t j = 0; j < w; ++j) lane[j] += lane[j + w];
  return lane[0];
}

// Runs reducer r over the walk: y[o] = finish(fold of step over the inputs
// of output o). shifts (LogSumExp) has one entry per output, or is null.
template <typename T, typename Y, typename R>
void run_reduce(sdk::ComputeContext& ctx, const Walk& w, const T* x, Y* y, const R& r,
                const double* shifts) {
  using Acc = typename R::Acc;
  auto shift_of = [&](int64_t o) {
    double s = shifts ? shifts[o] : 0.0;
    return std::isfinite(s) ? s : 0.0;  // +-inf or NaN max: no shift needed
  };
  if (!w.rows) {
    // Each run is folded into kLanes independent accumulators (a chain of
    // dependent adds would wait on the add latency at every element; lanes
    // also let the compiler vectorize), merged at the end of the output.
    constexpr int64_t kLanes = 8;
    // The fold of output o over runs [r0, r1) of w.reduced.
    auto fold = [&](size_t o, size_t r0, size_t r1) {
      const double shift = shift_of(int64_t(o));
      Acc lane[kLanes];
      for (Acc& a : lane) a = r.init();
      for (size_t k = r0; k < r1; ++k) {
        const T* p = x + w.kept[o] + w.reduced[k];
        if constexpr (std::is_same_v<T, float> && plain_float_sum<R>()) {
          lane[k % kLanes] += sum_widened(p, w.inner);
          continue;
        }
        int64_t i = 0;
        for (; i + kLanes <= w.inner; i += kLanes)
          for (int64_t j = 0; j < kLanes; ++j) lane[j] = r.step(lane[j], p[i + j], shift);
        for (; i < w.inner; ++i) lane[0] = r.step(lane[0], p[i], shift);
      }
      Acc acc = lane[0];
      for (int64_t j = 1; j < kLanes; ++j) acc = r.combine(acc, lane[j]);
      return acc;
    };
    // Few outputs over many runs (a bias gradient: [N, C, H, W] summed over
    // N, H and W): the runs are cut into kBlocks blocks, each folded for every
    // output and merged in block order, so that the threads split the
    // leading dim as the elementwise ops before them did (each reads what its
    // core wrote) and the result does not depend on the thread count.
    constexpr size_t kBlocks = 8;
    if (w.kept.size() <= 64 && w.reduced.size() >= 2 * kBlocks) {
      const size_t outputs = w.kept.size(), runs = w.reduced.size();
      std::vector<Acc> partial(kBlocks * outputs);
      ctx.parallel_for(kBlocks, 1, [&](size_t begin, size_t end) {
        for (size_t b = begin; b < end; ++b)
          for (size_t o = 0; o < outputs; ++o) partial[b * outputs + o] = fold(o, runs * b / kBlocks, runs * (b + 1) / kBlocks);
      });
      for (size_t o = 0; o < outputs; ++o) {
        Acc acc = partial[o];
        for (size_t b = 1; b < kBlocks; ++b) acc = r.combine(acc, partial[b * outputs + o]);
        y[o] = Y(r.finish(acc, w.reduce_count, shift_of(int64_t(o))));
      }
      return;
    }
    size_t grain = std::max<size_t>(1, util::kGrain / size_t(std::max<int64_t>(1, w.reduce_count)));
    ctx.parallel_for(w.kept.size(), grain, [&](size_t begin, size_t end) {
      for (size_t o = begin; o < end; ++o)
        y[o] = Y(r.finish(fold(o, 0, w.reduced.size()), w.reduce_count, shift_of(int64_t(o))));
    });
    return;
  }
  // Rows: work items are (output row, block of `inner`).
  constexpr int64_t kBlock = 256;
  int64_t blocks = (w.inner + kBlock - 1) / kBlock;
  size_t items = w.kept.size() * size_t(blocks);
  size_t grain = std::max<size_t>(1, util::kGrain / size_t(kBlock * std::max<int64_t>(1, w.reduce_count)));
  ctx.parallel_for(items, grain, [&](size_t begin, size_t end) {
    Acc acc[kBlock];
    for (size_t item = begin; item < end; ++item) {
      size_t row = item / size_t(blocks);
      int64_t i0 = int64_t(item % size_t(blocks)) * kBlock, n = std::min(kBlock, w.inner - i0);
      int64_t out0 = int64_t(row) * w.inner + i0;
      for (int64_t i = 0; i < n; ++i) acc[i] = r.init();
      for (int64_t pos : w.reduced) {
        const T* p = x + w.kept[row] + pos + i0;
        if constexpr (std::is_same_v<T, float> && plain_float_sum<R>())
          add_widened(acc, p, n);
        else
          for (int64_t i = 0; i < n; ++i) acc[i] = r.step(acc[i], p[i], shift_of(out0 + i));
      }
      for (int64_t i = 0; i < n; ++i)
        y[out0 + i] = Y(r.finish(acc[i], w.reduce_count, shift_of(out0 + i)));
    }
  });
}

class ReduceKernel final : public sdk::Kernel {
 public:
  ReduceKernel(const sdk::NodeInfo& node, Kind kind, int64_t axes_input_since)
      : label_(util::node_label(node)),
        kind_(kind),
        axes_from_input_(node.opset >= axes_input_since),
        attr_axes_(node.get_ints("axes")),
        keepdims_(node.get_int("keepdims", 1) != 0),
        noop_(node.get_int("noop_with_empty_axes", 0) != 0) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    std::vector<int64_t> axes = attr_axes_;
    if (axes_from_input_) {
      axes.clear();
      if (auto t = ctx.input(1); t && !util::read_ints(*t, &axes))
        return util::fail(label_, "input 1 (axes) has type %s; expected int64",
                          sdk::dtype_name(t->dtype));
    }
    int64_t rank = int64_t(x.rank());
    std::vector<bool> reduce(size_t(rank), axes.empty() && !noop_);
    for (int64_t a : axes) {
      int64_t axis = 0;
      if (!util::normalize_axis(a, rank, &axis))
        return util::fail(label_, "axis %lld is out of range for input 0 of rank %lld",
                          (long long)a, (long long)rank);
      if (reduce[size_t(axis)]) return util::fail(label_, "axis %lld is repeated", (long long)a);
      reduce[size_t(axis)] = true;
    }
    std::vector<int64_t> out_dims;
    for (int64_t d = 0; d < rank; ++d)
      if (!reduce[size_t(d)]) out_dims.push_back(x.dim(size_t(d)));
      else if (keepdims_) out_dims.push_back(1);
    Walk walk = make_walk(x.dims, reduce);

    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, out_dims, &y));
    int64_t out_count = sdk::element_count(out_dims);
    if (out_count == 0) return nullptr;
    sdk::Tensor src = x;
    void* dst = y.raw;
    if (util::is_half(x.dtype)) {  // reduce a float32 copy into float32 scratch
      void *wide = nullptr, *wide_out = nullptr;
      ONYX_SDK_RETURN_IF_ERROR(ctx.scratch(size_t(x.size()) * 4, &wide));
      ONYX_SDK_RETURN_IF_ERROR(ctx.scratch(size_t(out_count) * 4, &wide_out));
      util::halves_to_floats(x.dtype, x.data<uint16_t>(), static_cast<float*>(wide), size_t(x.size()));
      src = sdk::Tensor{ONYX_DTYPE_FLOAT32, x.dims, wide};
      dst = wide_out;
    }
    double* shifts = nullptr;
    if (kind_ == Kind::kLogSumExp) {
      void* s = nullptr;
      ONYX_SDK_RETURN_IF_ERROR(ctx.scratch(size_t(out_count) * sizeof(double), &s));
      shifts = static_cast<double*>(s);
    }
    bool known = util::visit<kNumeric | kBool>(src.dtype, [&](auto tag) {
      using T = decltype(tag);
      run<T>(ctx, walk, src.data<T>(), static_cast<T*>(dst), shifts);
    });
    if (!known) return util::fail(label_, "input 0 has unsupported type %s", sdk::dtype_name(x.dtype));
    if (dst != y.raw)
      util::floats_to_halves(x.dtype, static_cast<float*>(dst), y.data<uint16_t>(), size_t(out_count));
    return nullptr;
  }

 private:
  template <typename T>
  void run(sdk::ComputeContext& ctx, const Walk& w, const T* x, T* y, double* shifts) {
    if constexpr (std::is_same_v<T, bool>) {  // bool: Max (any) and Min (all) only
      if (kind_ == Kind::kMax) run_reduce(ctx, w, x, y, MaxR<T>{}, nullptr);
      else run_reduce(ctx, w, x, y, MinR<T>{}, nullptr);
    } else {
      switch (kind_) {
        case Kind::kSum: run_reduce(ctx, w, x, y, SumR<T>{}, nullptr); break;
        case Kind::kMean: run_reduce(ctx, w, x, y, MeanR<T>{}, nullptr); break;
        case Kind::kMax: run_reduce(ctx, w, x, y, MaxR<T>{}, nullptr); break;
        case Kind::kMin: run_reduce(ctx, w, x, y, MinR<T>{}, nullptr); break;
        case Kind::kProd: run_reduce(ctx, w, x, y, ProdR<T>{}, nullptr); break;
        case Kind::kL1: run_reduce(ctx, w, x, y, L1R<T>{}, nullptr); break;
        case Kind::kL2: run_reduce(ctx, w, x, y, L2R<T>{}, nullptr); break;
        case Kind::kLogSum: run_reduce(ctx, w, x, y, LogSumR<T>{}, nullptr); break;
        case Kind::kSumSquare: run_reduce(ctx, w, x, y, SumSquareR<T>{}, nullptr); break;
        case Kind::kLogSumExp:
          // Two passes: the maximum of each output, then log(sum(exp(x - max))) + max.
          run_reduce(ctx, w, x, shifts, MaxR<T>{}, nullptr);
          run_reduce(ctx, w, x, y, LogSumExpR<T>{}, shifts);
          break;
      }
    }
  }

  std::string label_;
  Kind kind_;
  bool axes_from_input_;
  std::vector<int64_t> attr_axes_;
  bool keepdims_, noop_;
};

// ArgMax / ArgMin along one axis: the index of the first extreme value (the
// last one with select_last_index). NaN counts as the extreme, like numpy.
class ArgKernel final : public sdk::Kernel {
 public:
  ArgKernel(const sdk::NodeInfo& node, bool max)
      : label_(util::node_label(node)),
        max_(max),
        axis_(node.get_int("axis", 0)),
        keepdims_(node.get_int("keepdims", 1) != 0),
        last_(node.get_int("select_last_index", 0) != 0) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    int64_t rank = int64_t(x.rank()), axis = 0;
    if (!util::normalize_axis(axis_, rank, &axis))
      return util::fail(label_, "axis %lld is out of range for input 0 of rank %lld",
                        (long long)axis_, (long long)rank);
    int64_t outer = 1, n = x.dim(size_t(axis)), inner = 1;
    std::vector<int64_t> out_dims;
    for (int64_t d = 0; d < rank; ++d) {
      if (d < axis) outer *= x.dim(size_t(d));
      if (d > axis) inner *= x.dim(size_t(d));
      if (d != axis) out_dims.push_back(x.dim(size_t(d)));
      else if (keepdims_) out_dims.push_back(1);
    }
    if (n == 0 && outer * inner > 0)
      return util::fail(label_, "cannot take the arg%s of an empty axis %lld", max_ ? "max" : "min",
                        (long long)axis);
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_INT64, out_dims, &y));
    sdk::Tensor src = x;
    if (util::is_half(x.dtype)) {
      void* wide = nullptr;
      ONYX_SDK_RETURN_IF_ERROR(ctx.scratch(size_t(x.size()) * 4, &wide));
      util::halves_to_floats(x.dtype, x.data<uint16_t>(), static_cast<float*>(wide), size_t(x.size()));
      src = sdk::Tensor{ONYX_DTYPE_FLOAT32, x.dims, wide};
    }
    bool known = util::visit<kNumeric>(src.dtype, [&](auto tag) {
      using T = decltype(tag);
      const T* xp = src.data<T>();
      int64_t* yp = y.data<int64_t>();
      size_t grain = std::max<size_t>(1, util::kGrain / size_t(std::max<int64_t>(1, n)));
      ctx.parallel_for(size_t(outer * inner), grain, [&](size_t begin, size_t end) {
        for (size_t o = begin; o < end; ++o) {
          const T* p = xp + int64_t(o) / inner * n * inner + int64_t(o) % inner;
          int64_t best = 0;
          for (int64_t j = 1; j < n; ++j) {
            T v = p[j * inner], b = p[best * inner];
            if (b != b) break;  // NaN already found: it wins
            bool better = v != v || (max_ ? v > b : v < b) || (last_ && v == b);
            if (better) best = j;
          }
          yp[o] = best;
        }
      });
    });
    if (!known) return util::fail(label_, "input 0 has unsupported type %s", sdk::dtype_name(x.dtype));
    return nullptr;
  }

 private:
  std::string label_;
  bool max_;
  int64_t axis_;
  bool keepdims_, last_;
};

// Adds a Reduce* op whose axes are an attribute before opset
// `axes_input_since` and an optional input (1) from it on.
void add_reduce(sdk::KernelRegistry& registry, const char* op, Kind kind, int64_t axes_input_since,
                unsigned types) {
  auto create = [kind, axes_input_since](const sdk::NodeInfo& node) {
    return std::make_unique<ReduceKernel>(node, kind, axes_input_since);
  };
  registry.add(sdk::KernelDefBuilder(op)
                   .opsets(1, axes_input_since - 1)
                   .inputs(1)
                   .input_type(0, util::dtype_set(types))
                   .create(create));
  registry.add(sdk::KernelDefBuilder(op)
                   .since(axes_input_since)
                   .inputs(1, 2)
                   .input_type(0, util::dtype_set(types))
                   .input_type(1, sdk::dtypes::kSigned)
                   .create(create));
}

}  // namespace

void register_reduction_kernels(sdk::KernelRegistry& registry) {
  constexpr unsigned kTypes = kNumeric | kHalf;
  add_reduce(registry, "ReduceSum", Kind::kSum, 13, kTypes);
  add_reduce(registry, "ReduceMean", Kind::kMean, 18, kTypes);
  add_reduce(registry, "ReduceMax", Kind::kMax, 18, kTypes | kBool);
  add_reduce(registry, "ReduceMin", Kind::kMin, 18, kTypes | kBool);
  add_reduce(registry, "ReduceProd", Kind::kProd, 18, kTypes);
  add_reduce(registry, "ReduceL1", Kind::kL1, 18, kTypes);
  add_reduce(registry, "ReduceL2", Kind::kL2, 18, kTypes);
  add_reduce(registry, "ReduceLogSum", Kind::kLogSum, 18, kTypes);
  add_reduce(registry, "ReduceLogSumExp", Kind::kLogSumExp, 18, kTypes);
  add_reduce(registry, "ReduceSumSquare", Kind::kSumSquare, 18, kTypes);
  for (bool max : {true, false})
    registry.add(sdk::KernelDefBuilder(max ? "ArgMax" : "ArgMin")
                     .inputs(1)
                     .input_type(0, util::dtype_set(kTypes))
                     .create([max](const sdk::NodeInfo& node) { return std::make_unique<ArgKernel>(node, max); }));
}

}  // namespace onyx::cpu
