// variadic.cpp: Sum, Mean, Min, Max (any number of inputs,
// broadcast together), Where (three inputs) and Clip.
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/elementwise/elementwise.h"
#include "kernels/registry.h"

namespace onyx::cpu::ew {
namespace {

using util::kBool;
using util::kFloat;
using util::kHalf;
using util::kNumeric;

struct SumOp {
  static constexpr unsigned kTypes = kFloat | kHalf;
  template <typename T>
  T operator()(T a, T b) const { return a + b; }
};
// Min and Max propagate NaN (like numpy.minimum / numpy.maximum).
struct MinOp {
  static constexpr unsigned kTypes = kNumeric | kHalf;
  template <typename T>
  T operator()(T a, T b) const { return (a < b || a != a) ? a : b; }
};
struct MaxOp {
  static constexpr unsigned kTypes = kNumeric | kHalf;
  template <typename T>
  T operator()(T a, T b) const { return (a > b || a != a) ? a : b; }
};

// Folds the inputs pairwise into the output: y = x0 op x1, then y = y op xk.
// Mean is Sum followed by a division.
template <typename Op>
class VariadicKernel final : public sdk::Kernel {
 public:
  VariadicKernel(const sdk::NodeInfo& node, bool mean) : label_(util::node_label(node)), mean_(mean) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    std::vector<sdk::Tensor> in;
    for (size_t k = 0; k < ctx.input_count(); ++k) {
      auto t = ctx.input(k);
      if (!t) return util::fail(label_, "input %zu is missing", k);
      if (t->dtype != ctx.in(0).dtype)
        return util::fail(label_, "input %zu has type %s but input 0 has %s", k,
                          sdk::dtype_name(t->dtype), sdk::dtype_name(ctx.in(0).dtype));
      in.push_back(*t);
    }
    std::vector<int64_t> out_dims;
    for (const sdk::Tensor& t : in) {
      std::vector<int64_t> joined;
      std::string why = broadcast_shape({out_dims, t.dims}, &joined);
      if (!why.empty()) return util::fail(label_, "%s", why.c_str());
      out_dims = std::move(joined);
    }
    int32_t dtype = in[0].dtype;
    bool half = util::is_half(dtype);
    if (half) {  // widen every input to float32 scratch
      for (sdk::Tensor& t : in) {
        void* wide = nullptr;
        ONYX_SDK_RETURN_IF_ERROR(ctx.scratch(size_t(t.size()) * 4, &wide));
        util::halves_to_floats(dtype, t.data<uint16_t>(), static_cast<float*>(wide), size_t(t.size()));
        t = sdk::Tensor{ONYX_DTYPE_FLOAT32, t.dims, wide};
      }
    }
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, dtype, out_dims, &y));
    int64_t count = sdk::element_count(out_dims);
    // Accumulate in scratch when the output is not a plain destination: a
    // float32 image of a half output, or a buffer shared with a later input
    // (the host may hand input 0's buffer out; another input may be the
    // same value).
    void* acc = y.raw;
    bool shared = false;
    for (size_t k = 1; k < in.size(); ++k) shared |= in[k].raw == y.raw;
    if (half || shared) ONYX_SDK_RETURN_IF_ERROR(ctx.scratch(size_t(count) * 8, &acc));
    bool known = util::visit<Op::kTypes>(in[0].dtype, [&](auto tag) {
      using T = decltype(tag);
      fold<T>(ctx, in, out_dims, static_cast<T*>(acc));
      if (acc != y.raw && !half) std::memcpy(y.raw, acc, size_t(count) * sizeof(T));
    });
    if (!known) return util::fail(label_, "input 0 has unsupported type %s", sdk::dtype_name(dtype));
    if (half) util::floats_to_halves(dtype, static_cast<float*>(acc), y.data<uint16_t>(), size_t(count));
    return nullptr;
  }

  void output_memory(std::span<OnyxOutputMemoryInfo> out) const override {
    util::output0_may_overwrite_input(out);
  }

 private:
  template <typename T>
  void fold(sdk::ComputeContext& ctx, const std::vector<sdk::Tensor>& in,
            const std::vector<int64_t>& out_dims, T* y) {
    Op op;
    if (in.size() == 1) {
      BroadcastPlan plan = make_plan({in[0].dims}, out_dims);
      for_each_run<1>(ctx, plan, [&](const std::array<int64_t, 1>& off, int64_t out, int64_t n) {
        std::memmove(y + out, in[0].data<T>() + off[0], size_t(n) * sizeof(T));
      });
    } else {
      binary_loop(ctx, make_plan({in[0].dims, in[1].dims}, out_dims), in[0].data<T>(),
                  in[1].data<T>(), y, op);
    }
    for (size_t k = 2; k < in.size(); ++k)
      binary_loop(ctx, make_plan({out_dims, in[k].dims}, out_dims), y, in[k].data<T>(), y, op);
    if (mean_) {
      T scale = T(1) / T(in.size());
      int64_t count = sdk::element_count(out_dims);
      ctx.parallel_for(size_t(count), util::kGrain, [&](size_t begin, size_t end) {
        for (size_t i = begin; i < end; ++i) y[i] *= scale;
      });
    }
  }

  std::string label_;
  bool mean_;
};

// Where(condition, X, Y): moves elements, so it works on element sizes.
class WhereKernel final : public sdk::Kernel {
 public:
  explicit WhereKernel(const sdk::NodeInfo& node) : label_(util::node_label(node)) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor c = ctx.in(0), x = ctx.in(1), v = ctx.in(2);
    if (c.dtype != ONYX_DTYPE_BOOL)
      return util::fail(label_, "input 0 (condition) has type %s; expected bool", sdk::dtype_name(c.dtype));
    if (x.dtype != v.dtype)
      return util::fail(label_, "input 2 has type %s but input 1 has %s", sdk::dtype_name(v.dtype),
                        sdk::dtype_name(x.dtype));
    std::vector<int64_t> out_dims;
    std::string why = broadcast_shape({c.dims, x.dims, v.dims}, &out_dims);
    if (!why.empty()) return util::fail(label_, "%s", why.c_str());
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, out_dims, &y));
    BroadcastPlan plan = make_plan({c.dims, x.dims, v.dims}, out_dims);
    switch (sdk::dtype_size(x.dtype)) {
      case 1: run<uint8_t>(ctx, plan, c, x, v, y); break;
      case 2: run<uint16_t>(ctx, plan, c, x, v, y); break;
      case 4: run<uint32_t>(ctx, plan, c, x, v, y); break;
      case 8: run<uint64_t>(ctx, plan, c, x, v, y); break;
      default:
        return util::fail(label_, "unsupported element type %s", sdk::dtype_name(x.dtype));
    }
    return nullptr;
  }

  void output_memory(std::span<OnyxOutputMemoryInfo> out) const override {
    util::output0_may_overwrite_input(out, 1);
  }

 private:
  template <typename E>
  static void run(sdk::ComputeContext& ctx, const BroadcastPlan& plan, const sdk::Tensor& c,
                  const sdk::Tensor& x, const sdk::Tensor& v, const sdk::Tensor& y) {
    const bool* cp = c.data<bool>();
    const E *xp = x.data<E>(), *vp = v.data<E>();
    E* yp = y.data<E>();
    int64_t sc = plan.strides[0].back(), sx = plan.strides[1].back(), sv = plan.strides[2].back();
    for_each_run<3>(ctx, plan, [&](const std::array<int64_t, 3>& off, int64_t out, int64_t n) {
      // The condition as bytes: a select through a mask of all ones or all
      // zeros, with no branch, so the contiguous runs vectorize.
      const uint8_t* pc = reinterpret_cast<const uint8_t*>(cp) + off[0];
      const E *px = xp + off[1], *pv = vp + off[2];
      E* py = yp + out;
      auto mask = [](uint8_t b) { return E(E(0) - E(b != 0)); };
      // Contiguous runs with at most one broadcast value (a gradient's
      // Where(mask, dY, 0)).
      if (sc == 1 && sx == 1 && sv == 1) {
        for (int64_t i = 0; i < n; ++i) py[i] = E((px[i] & mask(pc[i])) | (pv[i] & E(~mask(pc[i]))));
      } else if (sc == 1 && sx == 1 && sv == 0) {
        const E v0 = pv[0];
        for (int64_t i = 0; i < n; ++i) py[i] = E((px[i] & mask(pc[i])) | (v0 & E(~mask(pc[i]))));
      } else if (sc == 1 && sx == 0 && sv == 1) {
        const E x0 = px[0];
        for (int64_t i = 0; i < n; ++i) py[i] = E((x0 & mask(pc[i])) | (pv[i] & E(~mask(pc[i]))));
      } else {
        for (int64_t i = 0; i < n; ++i) py[i] = pc[i * sc] != 0 ? px[i * sx] : pv[i * sv];
      }
    });
  }

  std::string label_;
};

// Clip: bounds from attributes min/max before opset 11, from the optional
// scalar inputs 1 and 2 after. y = min(max(x, lo), hi), so lo > hi gives hi.
class ClipKernel final : public sdk::Kernel {
 public:
  static constexpr unsigned kTypes = kNumeric | kHalf;

  explicit ClipKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)),
        from_attributes_(node.opset < 11),
        attr_min_(node.get_float("min", -std::numeric_limits<float>::max())),
        attr_max_(node.get_float("max", std::numeric_limits<float>::max())) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    std::optional<sdk::Tensor> lo, hi;
    if (!from_attributes_) {
      lo = ctx.input(1);
      hi = ctx.input(2);
      for (auto [t, index] : {std::pair{&lo, 1}, std::pair{&hi, 2}}) {
        if (!*t) continue;
        if ((*t)->dtype != x.dtype)
          return util::fail(label_, "input %d has type %s but input 0 has %s", index,
                            sdk::dtype_name((*t)->dtype), sdk::dtype_name(x.dtype));
        if ((*t)->size() != 1)
          return util::fail(label_, "input %d must be a scalar, got shape %s", index,
                            util::dims_str((*t)->dims).c_str());
      }
    }
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, x.dims, &y));
    size_t n = size_t(x.size());
    if (util::is_half(x.dtype)) {
      int32_t dtype = x.dtype;
      float low = lo ? util::half_value(dtype, *lo->data<uint16_t>()) : -INFINITY;
      float high = hi ? util::half_value(dtype, *hi->data<uint16_t>()) : INFINITY;
      const uint16_t* xp = x.data<uint16_t>();
      uint16_t* yp = y.data<uint16_t>();
      ctx.parallel_for(n, util::kGrain, [&](size_t begin, size_t end) {
        for (size_t i = begin; i < end; ++i) {
          float v = util::half_value(dtype, xp[i]);
          v = v < low ? low : v;
          yp[i] = v > high ? util::half_bits(dtype, high) : util::half_bits(dtype, v);
        }
      });
      return nullptr;
    }
    bool known = util::visit<kNumeric>(x.dtype, [&](auto tag) {
      using T = decltype(tag);
      T low = std::numeric_limits<T>::lowest(), high = std::numeric_limits<T>::max();
      if (from_attributes_) {
        low = T(attr_min_);
        high = T(attr_max_);
      }
      if (lo) low = *lo->data<T>();
      if (hi) high = *hi->data<T>();
      const T* xp = x.data<T>();
      T* yp = y.data<T>();
      ctx.parallel_for(n, util::kGrain, [&](size_t begin, size_t end) {
        for (size_t i = begin; i < end; ++i) {
          T v = xp[i] < low ? low : xp[i];  // NaN compares false: stays NaN
          yp[i] = v > high ? high : v;
        }
      });
    });
    if (!known) return util::fail(label_, "input 0 has unsupported type %s", sdk::dtype_name(x.dtype));
    return nullptr;
  }

  void output_memory(std::span<OnyxOutputMemoryInfo> out) const override {
    util::output0_may_overwrite_input(out);
  }

 private:
  std::string label_;
  bool from_attributes_;
  double attr_min_, attr_max_;
};

// The definition of a VariadicKernel<Op> (Mean: `mean`): one or more inputs,
// all present, of one type in Op::kTypes.
template <typename Op>
sdk::KernelDef variadic(const char* op, bool mean) {
  return sdk::KernelDefBuilder(op)
      .inputs(1, 1 << 20)
      .type_constraint("T", {}, util::dtype_set(Op::kTypes))
      .check([](const sdk::NodeInfo& node) {
        for (size_t k = 0; k < node.inputs.size(); ++k)
          if (!node.input_present(k)) return node.op_type + ": input " + std::to_string(k) + " is missing";
        return std::string();
      })
      .create([mean](const sdk::NodeInfo& node) { return std::make_unique<VariadicKernel<Op>>(node, mean); });
}

}  // namespace

void register_variadic_kernels(sdk::KernelRegistry& registry) {
  registry.add(variadic<SumOp>("Sum", false));
  registry.add(variadic<SumOp>("Mean", true));
  registry.add(variadic<MinOp>("Min", false));
  registry.add(variadic<MaxOp>("Max", false));
  registry.add(sdk::KernelDefBuilder("Where")
                   .since(9)
                   .inputs(3)
                   .input_type(0, sdk::dtypes::kBool)
                   .type_constraint("T", {1, 2}, {})
                   .check([](const sdk::NodeInfo& node) {
                     if (sdk::dtype_size(node.input_dtype(1)) == 0)
                       return std::string("Where: element type ") + sdk::dtype_name(node.input_dtype(1)) +
                              " is not supported";
                     return std::string();
                   })
                   .create<WhereKernel>());
  // Clip's min and max are attributes before opset 11, inputs from it on.
  constexpr sdk::DTypeSet kClipTypes = util::dtype_set(ClipKernel::kTypes);
  registry.add(sdk::KernelDefBuilder("Clip").opsets(1, 10).inputs(1).all_inputs(kClipTypes).create<ClipKernel>());
  registry.add(sdk::KernelDefBuilder("Clip")
                   .since(11)
                   .inputs(1, 3)
                   .type_constraint("T", {0, 1, 2}, kClipTypes)
                   .create<ClipKernel>());
}

}  // namespace onyx::cpu::ew
