// elementwise.h: the broadcasting loops and the generic unary/binary kernels
// behind the element-wise op files (unary.cpp, binary.cpp, variadic.cpp).
// Private to the CPU provider.
//
// An op is a small struct:
//   struct Relu {
//     static constexpr unsigned kTypes = util::kFloat | util::kSigned;  // input types
//     template <typename T> T operator()(T x) const { return x > T(0) ? x : T(0); }
//   };
// optionally constructible from the NodeInfo to read attributes. Its return
// type is the output element type (T, or bool for predicates). With
// util::kHalf in kTypes, float16/bfloat16 inputs run the float32 functor.
#pragma once

#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "kernels/kernel_util.h"

namespace onyx::cpu::ew {

// Output shape of multidirectional (numpy) broadcasting of `shapes`: "" or
// the reason they are incompatible ("shapes [2,3] and [4] cannot be
// broadcast (dim 1 of the result: 3 vs 4)").
std::string broadcast_shape(std::initializer_list<std::span<const int64_t>> shapes,
                            std::vector<int64_t>* out);

// The opset < 7 form of broadcasting of binary ops (attributes broadcast and
// axis): with broadcast=0 the shapes must be equal; with broadcast=1 B is
// matched against a contiguous run of A's dims starting at `axis` (default:
// B's dims are A's trailing dims).
struct LegacyBroadcast {
  bool enabled = false;  // the node's opset is < 7
  bool broadcast = false;
  bool has_axis = false;
  int64_t axis = 0;
  static LegacyBroadcast read(const sdk::NodeInfo& node);
  // "" and B's shape padded with 1s to A's rank, or why B does not fit.
  std::string apply(std::span<const int64_t> a, std::span<const int64_t> b,
                    std::vector<int64_t>* b_padded) const;
};

// How to walk up to 3 inputs broadcast to an output shape: dims of size 1
// dropped and neighbouring dims merged wherever every input is either
// broadcast along both or along neither, so that the innermost loop is as
// long as possible. strides[k][d] is 0 where input k is broadcast.
struct BroadcastPlan {
  int64_t count = 0;
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides;
};
BroadcastPlan make_plan(std::initializer_list<std::span<const int64_t>> inputs,
                        std::span<const int64_t> out);

// Calls row(offsets, out_offset, n) for runs of n output elements that are
// contiguous in the output; offsets[k] is where input k starts and
// plan.strides[k].back() its step within the run (0 or 1). Parallel.
template <size_t N, typename RowFn>
void for_each_run(sdk::ComputeContext& ctx, const BroadcastPlan& plan, RowFn&& row) {
  if (plan.count == 0) return;
  size_t rank = plan.dims.size();
  int64_t inner = plan.dims.back();
  int64_t rows = plan.count / inner;
  if (rows == 1) {  // one long run: split it between threads
    ctx.parallel_for(size_t(inner), util::kGrain, [&](size_t begin, size_t end) {
      std::array<int64_t, N> offsets;
      for (size_t k = 0; k < N; ++k) offsets[k] = int64_t(begin) * plan.strides[k][rank - 1];
      row(offsets, int64_t(begin), int64_t(end - begin));
    });
    return;
  }
  size_t grain = std::max<size_t>(1, util::kGrain / size_t(inner));
  ctx.parallel_for(size_t(rows), grain, [&](size_t begin, size_t end) {
    // The multi-index of row `begin` over the outer dims, and the inputs'
    // offsets there; then an odometer increment per row.
    std::vector<int64_t> index(rank - 1, 0);
    std::array<int64_t, N> offsets{};
    int64_t rest = int64_t(begin);
    for (size_t d = rank - 1; d-- > 0;) {
      index[d] = rest % plan.dims[d];
      rest /= plan.dims[d];
      for (size_t k = 0; k < N; ++k) offsets[k] += index[d] * plan.strides[k][d];
    }
    for (size_t r = begin; r < end; ++r) {
      row(offsets, int64_t(r) * inner, inner);
      for (size_t d = rank - 1; d-- > 0;) {
        ++index[d];
        for (size_t k = 0; k < N; ++k) offsets[k] += plan.strides[k][d];
        if (index[d] < plan.dims[d]) break;
        index[d] = 0;
        for (size_t k = 0; k < N; ++k) offsets[k] -= plan.strides[k][d] * plan.dims[d];
      }
    }
  });
}

// y = f(a, b) over a plan of two inputs. The inner loops are specialised on
// the steps (both contiguous, one broadcast) so that the compiler vectorises
// them. y may be the same buffer as a or b (element i is read before written).
template <typename TA, typename TB, typename TY, typename F>
void binary_loop(sdk::ComputeContext& ctx, const BroadcastPlan& plan, const TA* a, const TB* b,
                 TY* y, const F& f) {
  int64_t sa = plan.strides[0].back(), sb = plan.strides[1].back();
  for_each_run<2>(ctx, plan, [&](const std::array<int64_t, 2>& off, int64_t out, int64_t n) {
    const TA* pa = a + off[0];
    const TB* pb = b + off[1];
    TY* py = y + out;
    if (sa == 1 && sb == 1) {
      for (int64_t i = 0; i < n; ++i) py[i] = f(pa[i], pb[i]);
    } else if (sa == 1) {
      const TB vb = pb[0];
      for (int64_t i = 0; i < n; ++i) py[i] = f(pa[i], vb);
    } else if (sb == 1) {
      const TA va = pa[0];
      for (int64_t i = 0; i < n; ++i) py[i] = f(va, pb[i]);
    } else {
      const TY v = f(pa[0], pb[0]);
      for (int64_t i = 0; i < n; ++i) py[i] = v;
    }
  });
}

// The output element type of op F on inputs of type T.
template <typename F, typename T>
using result_t = decltype(std::declval<const F&>()(std::declval<T>()));
template <typename F, typename T>
using binary_result_t = decltype(std::declval<const F&>()(std::declval<T>(), std::declval<T>()));

// Builds an op from the node when it has attributes, else default-constructs.
template <typename Op>
Op make_op(const sdk::NodeInfo& node) {
  if constexpr (std::is_constructible_v<Op, const sdk::NodeInfo&>) return Op(node);
  else return Op();
}

// An op may add `void floats(const float* x, float* y, size_t n) const`, a
// vectorized loop (vec_math.h) that float32 (and float16 via float32) runs.
template <typename Op>
concept has_float_loop = requires(const Op& op, const float* x, float* y, size_t n) { op.floats(x, y, n); };

// Y = op(X) element by element, for the types in Op::kTypes.
template <typename Op>
class UnaryKernel final : public sdk::Kernel {
  // A member template, not a branch inside compute's generic lambda: clang
  // checks a discarded branch there when it names no template parameter of
  // the lambda (Sqrt has no floats()).
  template <typename T, typename Y>
  static void loop(const Op& op, const T* x, Y* y, size_t n) {
    if constexpr (std::is_same_v<T, float> && std::is_same_v<Y, float> && has_float_loop<Op>)
      op.floats(x, y, n);
    else
      for (size_t i = 0; i < n; ++i) y[i] = op(x[i]);
  }

 public:
  explicit UnaryKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)), op_(make_op<Op>(node)) {
    util::visit<Op::kTypes>(node.input_dtype(0), [&](auto tag) {
      using T = decltype(tag);
      in_place_ = std::is_same_v<result_t<Op, T>, T>;
    });
    if constexpr ((Op::kTypes & util::kHalf) != 0)
      if (util::is_half(node.input_dtype(0))) in_place_ = !std::is_same_v<result_t<Op, float>, bool>;
  }

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    if constexpr ((Op::kTypes & util::kHalf) != 0)
      if (util::is_half(x.dtype)) return compute_half(ctx, x);
    OnyxStatus* status = nullptr;
    bool known = util::visit<Op::kTypes>(x.dtype, [&](auto tag) {
      using T = decltype(tag);
      using Y = result_t<Op, T>;
      sdk::Tensor y;
      status = ctx.output(0, util::dtype_of<Y>(), x.dims, &y);
      if (status) return;
      const T* xp = x.data<T>();
      Y* yp = y.data<Y>();
      const Op& op = op_;
      ctx.parallel_for(size_t(x.size()), util::kGrain,
                       [&](size_t begin, size_t end) { loop(op, xp + begin, yp + begin, end - begin); });
    });
    if (!known)
      return util::fail(label_, "input 0 has unsupported type %s", sdk::dtype_name(x.dtype));
    return status;
  }

  // In place when the output type is the input type (not for predicates).
  void output_memory(std::span<OnyxOutputMemoryInfo> out) const override {
    if (in_place_) util::output0_may_overwrite_input(out);
  }

 private:
  // float16/bfloat16: converted to float32 in blocks, computed, converted back.
  OnyxStatus* compute_half(sdk::ComputeContext& ctx, const sdk::Tensor& x) {
    using Y = result_t<Op, float>;
    constexpr bool kPredicate = std::is_same_v<Y, bool>;
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, kPredicate ? ONYX_DTYPE_BOOL : x.dtype, x.dims, &y));
    const uint16_t* xp = x.data<uint16_t>();
    const Op& op = op_;
    int32_t dtype = x.dtype;
    ctx.parallel_for(size_t(x.size()), util::kGrain, [&](size_t begin, size_t end) {
      constexpr size_t kBlock = 256;
      float buf[kBlock];
      for (size_t s = begin; s < end; s += kBlock) {
        size_t m = std::min(kBlock, end - s);
        util::halves_to_floats(dtype, xp + s, buf, m);
        if constexpr (kPredicate) {
          for (size_t i = 0; i < m; ++i) y.data<bool>()[s + i] = op(buf[i]);
        } else {
          if constexpr (has_float_loop<Op>) op.floats(buf, buf, m);
          else for (size_t i = 0; i < m; ++i) buf[i] = op(buf[i]);
          util::floats_to_halves(dtype, buf, y.data<uint16_t>() + s, m);
        }
      }
    });
    return nullptr;
  }

  std::string label_;
  Op op_;
  bool in_place_ = false;
};

// The definition of element-wise kernel K for `op`: `inputs` inputs of one
// type in `types`, then the `extra` check if any.
template <typename K>
sdk::KernelDef kernel_def(const char* op, int64_t since, size_t inputs, unsigned types,
                          sdk::DeclineCheck extra = {}) {
  sdk::KernelDefBuilder def(op);
  def.since(since).inputs(inputs).type_constraint("T", {}, util::dtype_set(types));
  if (extra) def.check(std::move(extra));
  return def.create<K>();
}

}  // namespace onyx::cpu::ew
