// binary.cpp: two-input element-wise ops with multidirectional
// broadcasting: arithmetic, Pow, Mod, bit ops, logic, comparisons, PRelu,
// and ai.onyx ReluGrad (optimize/relu_grad_fusion.cpp).
// Integer arithmetic wraps around (two's complement), as in numpy.
#include <cmath>

#include "kernels/elementwise/elementwise.h"
#include "kernels/registry.h"

namespace onyx::cpu::ew {
namespace {

using util::kBool;
using util::kFloat;
using util::kHalf;
using util::kInt;
using util::kNumeric;
using util::kSigned;
using util::kUnsigned;

template <typename T>
using wide_unsigned_t = util::wrapping_t<T>;

struct Add {
  static constexpr unsigned kTypes = kNumeric | kHalf;
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) return T(wide_unsigned_t<T>(a) + wide_unsigned_t<T>(b));
    else return a + b;
  }
};
struct Sub {
  static constexpr unsigned kTypes = kNumeric | kHalf;
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) return T(wide_unsigned_t<T>(a) - wide_unsigned_t<T>(b));
    else return a - b;
  }
};
struct Mul {
  static constexpr unsigned kTypes = kNumeric | kHalf;
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) return T(wide_unsigned_t<T>(a) * wide_unsigned_t<T>(b));
    else return a * b;
  }
};
// Integer division truncates toward zero; zero divisors are rejected before
// the loop runs (kIntDivisor), and x / -1 is a negation (INT_MIN / -1 traps).
struct Div {
  static constexpr unsigned kTypes = kNumeric | kHalf;
  static constexpr bool kIntDivisor = true;
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T> && std::is_signed_v<T>)
      return b == T(-1) ? T(wide_unsigned_t<T>(0) - wide_unsigned_t<T>(a)) : T(a / b);
    else return T(a / b);
  }
};
// fmod=1: remainder with the dividend's sign (C fmod / %); fmod=0 (integers
// only): the divisor's sign, like Python's %.
struct Mod {
  explicit Mod(const sdk::NodeInfo& node) : fmod(node.get_int("fmod", 0) != 0) {}
  static constexpr unsigned kTypes = kNumeric | kHalf;
  static constexpr bool kIntDivisor = true;
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      return std::fmod(a, b);
    } else {
      if constexpr (std::is_signed_v<T>)
        if (b == T(-1)) return T(0);
      T r = T(a % b);
      if constexpr (std::is_signed_v<T>)
        if (!fmod && r != 0 && ((r < 0) != (b < 0))) r = T(r + b);
      return r;
    }
  }
  bool fmod;
};
struct BitShift {
  explicit BitShift(const sdk::NodeInfo& node) : left(node.get_string("direction", "") == "LEFT") {}
  static constexpr unsigned kTypes = kUnsigned;
  template <typename T>
  T operator()(T a, T b) const {
    if (b >= T(8 * sizeof(T))) return T(0);  // shifting out every bit (UB in C++)
    return left ? T(wide_unsigned_t<T>(a) << b) : T(a >> b);
  }
  bool left;
};
struct BitwiseAnd {
  static constexpr unsigned kTypes = kInt;
  template <typename T>
  T operator()(T a, T b) const { return T(a & b); }
};
struct BitwiseOr {
  static constexpr unsigned kTypes = kInt;
  template <typename T>
  T operator()(T a, T b) const { return T(a | b); }
};
struct BitwiseXor {
  static constexpr unsigned kTypes = kInt;
  template <typename T>
  T operator()(T a, T b) const { return T(a ^ b); }
};
struct And {
  static constexpr unsigned kTypes = kBool;
  template <typename T>
  bool operator()(T a, T b) const { return a && b; }
};
struct Or {
  static constexpr unsigned kTypes = kBool;
  template <typename T>
  bool operator()(T a, T b) const { return a || b; }
};
struct Xor {
  static constexpr unsigned kTypes = kBool;
  template <typename T>
  bool operator()(T a, T b) const { return a != b; }
};
struct Equal {
  static constexpr unsigned kTypes = kNumeric | kBool | kHalf;
  template <typename T>
  bool operator()(T a, T b) const { return a == b; }
};
struct Less {
  static constexpr unsigned kTypes = kNumeric | kHalf;
  template <typename T>
  bool operator()(T a, T b) const { return a < b; }
};
struct Greater {
  static constexpr unsigned kTypes = kNumeric | kHalf;
  template <typename T>
  bool operator()(T a, T b) const { return a > b; }
};
struct LessOrEqual {
  static constexpr unsigned kTypes = kNumeric | kHalf;
  template <typename T>
  bool operator()(T a, T b) const { return a <= b; }
};
struct GreaterOrEqual {
  static constexpr unsigned kTypes = kNumeric | kHalf;
  template <typename T>
  bool operator()(T a, T b) const { return a >= b; }
};
// PRelu: the slope broadcasts to X (unidirectionally).
struct PRelu {
  static constexpr unsigned kTypes = kNumeric | kHalf;
  static constexpr bool kUnidirectional = true;
  template <typename T>
  T operator()(T x, T slope) const {
    if constexpr (std::is_integral_v<T>) return x < T(0) ? T(wide_unsigned_t<T>(x) * wide_unsigned_t<T>(slope)) : x;
    else return x < T(0) ? x * slope : x;
  }
};

// ai.onyx ReluGrad(dY, X) = X > 0 ? dY : 0, the Greater + Where that
// autodiff writes for Relu's gradient in one pass (NaN in X gives 0, as
// Greater's false does).
struct ReluGrad {
  static constexpr unsigned kTypes = kFloat | kHalf;
  template <typename T>
  T operator()(T dy, T x) const { return x > T(0) ? dy : T(0); }
};

template <typename Op>
class BinaryKernel final : public sdk::Kernel {
 public:
  explicit BinaryKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)), op_(make_op<Op>(node)), legacy_(LegacyBroadcast::read(node)) {
    // PRelu never had the broadcast/axis attributes: its slope broadcasts.
    if (kUnidirectional) legacy_.enabled = false;
    int32_t dtype = node.input_dtype(0);
    util::visit<Op::kTypes>(dtype, [&](auto tag) {
      using T = decltype(tag);
      in_place_ = std::is_same_v<binary_result_t<Op, T>, T>;
    });
    if (util::is_half(dtype)) in_place_ = !std::is_same_v<binary_result_t<Op, float>, bool>;
  }

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor a = ctx.in(0), b = ctx.in(1);
    if (a.dtype != b.dtype)
      return util::fail(label_, "input 1 has type %s but input 0 has %s", sdk::dtype_name(b.dtype),
                        sdk::dtype_name(a.dtype));
    std::vector<int64_t> b_dims(b.dims.begin(), b.dims.end()), out_dims;
    std::string why = legacy_.enabled ? legacy_.apply(a.dims, b.dims, &b_dims) : "";
    if (why.empty()) why = broadcast_shape({a.dims, b_dims}, &out_dims);
    if (why.empty() && kUnidirectional && !std::equal(a.dims.begin(), a.dims.end(), out_dims.begin(),
                                                      out_dims.end()))
      why = "input 1 of shape " + util::dims_str(b.dims) + " does not broadcast to input 0 of shape " +
            util::dims_str(a.dims);
    if (!why.empty()) return util::fail(label_, "%s", why.c_str());
    BroadcastPlan plan = make_plan({a.dims, b_dims}, out_dims);
    if constexpr ((Op::kTypes & util::kHalf) != 0)
      if (util::is_half(a.dtype)) return compute_half(ctx, a, b, plan, out_dims);

    OnyxStatus* status = nullptr;
    bool known = util::visit<Op::kTypes>(a.dtype, [&](auto tag) {
      using T = decltype(tag);
      using Y = binary_result_t<Op, T>;
      if constexpr (kIntDivisor && std::is_integral_v<T>) {
        const T* bp = b.data<T>();
        if (std::find(bp, bp + b.size(), T(0)) != bp + b.size()) {
          status = util::fail(label_, "integer division by zero (input 1 holds a 0)");
          return;
        }
      }
      sdk::Tensor y;
      status = ctx.output(0, util::dtype_of<Y>(), out_dims, &y);
      if (!status) binary_loop(ctx, plan, a.data<T>(), b.data<T>(), y.data<Y>(), op_);
    });
    if (!known)
      return util::fail(label_, "input 0 has unsupported type %s", sdk::dtype_name(a.dtype));
    return status;
  }

  void output_memory(std::span<OnyxOutputMemoryInfo> out) const override {
    if (in_place_) util::output0_may_overwrite_input(out);
  }

 private:
  static constexpr bool kIntDivisor = requires { Op::kIntDivisor; };
  static constexpr bool kUnidirectional = requires { Op::kUnidirectional; };

  // float16/bfloat16: both inputs converted to float32 scratch, the result
  // computed in float32 and converted back.
  OnyxStatus* compute_half(sdk::ComputeContext& ctx, const sdk::Tensor& a, const sdk::Tensor& b,
                           const BroadcastPlan& plan, const std::vector<int64_t>& out_dims) {
    using Y = binary_result_t<Op, float>;
    void *fa = nullptr, *fb = nullptr, *fy = nullptr;
    ONYX_SDK_RETURN_IF_ERROR(ctx.scratch(size_t(a.size()) * 4, &fa));
    ONYX_SDK_RETURN_IF_ERROR(ctx.scratch(size_t(b.size()) * 4, &fb));
    util::halves_to_floats(a.dtype, a.data<uint16_t>(), static_cast<float*>(fa), size_t(a.size()));
    util::halves_to_floats(b.dtype, b.data<uint16_t>(), static_cast<float*>(fb), size_t(b.size()));
    sdk::Tensor y;
    if constexpr (std::is_same_v<Y, bool>) {
      ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_BOOL, out_dims, &y));
      binary_loop(ctx, plan, static_cast<float*>(fa), static_cast<float*>(fb), y.data<bool>(), op_);
    } else {
      ONYX_SDK_RETURN_IF_ERROR(ctx.scratch(size_t(plan.count) * 4, &fy));
      binary_loop(ctx, plan, static_cast<float*>(fa), static_cast<float*>(fb),
                  static_cast<float*>(fy), op_);
      ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, a.dtype, out_dims, &y));
      util::floats_to_halves(a.dtype, static_cast<float*>(fy), y.data<uint16_t>(), size_t(plan.count));
    }
    return nullptr;
  }

  std::string label_;
  Op op_;
  LegacyBroadcast legacy_;
  bool in_place_ = false;
};

// Pow: the exponent may have another type than the base (opset >= 12).
// Integer bases with integer exponents are computed exactly by squaring.
class PowKernel final : public sdk::Kernel {
 public:
  static constexpr unsigned kBaseTypes = kFloat | util::kSigned | kHalf;
  static constexpr unsigned kExponentTypes = kFloat | kInt | kHalf;

  explicit PowKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)), legacy_(LegacyBroadcast::read(node)) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor a = ctx.in(0), b = ctx.in(1);
    std::vector<int64_t> b_dims(b.dims.begin(), b.dims.end()), out_dims;
    std::string why = legacy_.enabled ? legacy_.apply(a.dims, b.dims, &b_dims) : "";
    if (why.empty()) why = broadcast_shape({a.dims, b_dims}, &out_dims);
    if (!why.empty()) return util::fail(label_, "%s", why.c_str());
    BroadcastPlan plan = make_plan({a.dims, b_dims}, out_dims);
    // Half inputs are widened to float32 first (either side).
    sdk::Tensor fa = a, fb = b;
    ONYX_SDK_RETURN_IF_ERROR(widen(ctx, a, &fa));
    ONYX_SDK_RETURN_IF_ERROR(widen(ctx, b, &fb));
    sdk::Tensor y;
    float* half_out = nullptr;
    if (util::is_half(a.dtype)) {
      void* scratch = nullptr;
      ONYX_SDK_RETURN_IF_ERROR(ctx.scratch(size_t(plan.count) * 4, &scratch));
      half_out = static_cast<float*>(scratch);
    } else {
      ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, a.dtype, out_dims, &y));
    }
    bool known = util::visit<kFloat | kSigned>(fa.dtype, [&](auto base_tag) {
      using T = decltype(base_tag);
      util::visit<kFloat | kInt>(fb.dtype, [&](auto exp_tag) {
        using E = decltype(exp_tag);
        T* out = half_out ? reinterpret_cast<T*>(half_out) : y.data<T>();
        // One exponent of 2 or 1 (a variance's square, and the 2 - 1 of its
        // gradient, computed at run time when the 2 is a graph input):
        // x * x, rounded once, and x, instead of a pow() per element.
        const double e0 = fb.size() == 1 ? double(fb.data<E>()[0]) : 0.0;
        if (std::is_floating_point_v<T> && fb.size() == 1 && (e0 == 2.0 || e0 == 1.0)) {
          if (e0 == 2.0) binary_loop(ctx, plan, fa.data<T>(), fb.data<E>(), out, [](T x, E) { return T(x * x); });
          else binary_loop(ctx, plan, fa.data<T>(), fb.data<E>(), out, [](T x, E) { return x; });
          return;
        }
        binary_loop(ctx, plan, fa.data<T>(), fb.data<E>(), out, [](T x, E e) { return power(x, e); });
      });
    });
    if (!known || !util::in_set(fb.dtype, kFloat | kInt))
      return util::fail(label_, "unsupported types %s ^ %s", sdk::dtype_name(a.dtype),
                        sdk::dtype_name(b.dtype));
    if (half_out) {
      ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, a.dtype, out_dims, &y));
      util::floats_to_halves(a.dtype, half_out, y.data<uint16_t>(), size_t(plan.count));
    }
    return nullptr;
  }

 private:
  template <typename T, typename E>
  static T power(T x, E e) {
    if constexpr (std::is_integral_v<T> && std::is_integral_v<E>) {
      if (e < E(0)) return x == 1 ? T(1) : x == -1 ? T((e & 1) ? -1 : 1) : T(0);  // 1/x^|e| truncated
      wide_unsigned_t<T> result = 1, base = wide_unsigned_t<T>(x);
      for (auto n = static_cast<std::make_unsigned_t<E>>(e); n; n >>= 1) {
        if (n & 1) result *= base;
        base *= base;
      }
      return T(result);
    } else if constexpr (std::is_same_v<T, float> && std::is_same_v<E, float>) {
      return std::pow(x, e);
    } else {
      return T(std::pow(double(x), double(e)));
    }
  }

  // A float32 copy of a float16/bfloat16 tensor in scratch; others as is.
  static OnyxStatus* widen(sdk::ComputeContext& ctx, const sdk::Tensor& t, sdk::Tensor* out) {
    if (!util::is_half(t.dtype)) return nullptr;
    void* scratch = nullptr;
    ONYX_SDK_RETURN_IF_ERROR(ctx.scratch(size_t(t.size()) * 4, &scratch));
    util::halves_to_floats(t.dtype, t.data<uint16_t>(), static_cast<float*>(scratch), size_t(t.size()));
    *out = sdk::Tensor{ONYX_DTYPE_FLOAT32, t.dims, scratch};
    return nullptr;
  }

  std::string label_;
  LegacyBroadcast legacy_;
};

std::string mod_attrs(const sdk::NodeInfo& node) {
  int32_t dtype = node.input_dtype(0);
  if (node.get_int("fmod", 0) == 0 && (util::in_set(dtype, kFloat | kHalf)))
    return "Mod: attribute fmod must be 1 for floating-point inputs (input 0 is " +
           std::string(sdk::dtype_name(dtype)) + ")";
  return {};
}

std::string bitshift_attrs(const sdk::NodeInfo& node) {
  std::string direction = node.get_string("direction", "");
  return direction == "LEFT" || direction == "RIGHT"
             ? std::string()
             : "BitShift: attribute direction is '" + direction + "'; expected LEFT or RIGHT";
}

template <typename Op>
sdk::KernelDef binary(const char* op, int64_t since, sdk::DeclineCheck extra = {}) {
  return kernel_def<BinaryKernel<Op>>(op, since, 2, Op::kTypes, std::move(extra));
}

}  // namespace

void register_binary_kernels(sdk::KernelRegistry& registry) {
  registry.add(binary<Add>("Add", 1));
  registry.add(binary<Sub>("Sub", 1));
  registry.add(binary<Mul>("Mul", 1));
  registry.add(binary<Div>("Div", 1));
  registry.add(binary<Mod>("Mod", 10, mod_attrs));
  registry.add(binary<BitShift>("BitShift", 11, bitshift_attrs));
  registry.add(binary<BitwiseAnd>("BitwiseAnd", 18));
  registry.add(binary<BitwiseOr>("BitwiseOr", 18));
  registry.add(binary<BitwiseXor>("BitwiseXor", 18));
  registry.add(binary<And>("And", 1));
  registry.add(binary<Or>("Or", 1));
  registry.add(binary<Xor>("Xor", 1));
  registry.add(binary<Equal>("Equal", 1));
  registry.add(binary<Less>("Less", 1));
  registry.add(binary<Greater>("Greater", 1));
  registry.add(binary<LessOrEqual>("LessOrEqual", 12));
  registry.add(binary<GreaterOrEqual>("GreaterOrEqual", 12));
  registry.add(binary<PRelu>("PRelu", 1));
  registry.add(sdk::KernelDefBuilder("ReluGrad", kOnyxDomain)
                   .since(1)
                   .inputs(2)
                   .type_constraint("T", {}, util::dtype_set(ReluGrad::kTypes))
                   .create<BinaryKernel<ReluGrad>>());

  registry.add(sdk::KernelDefBuilder("Pow")
                   .inputs(2)
                   .input_type(0, util::dtype_set(PowKernel::kBaseTypes))
                   .input_type(1, util::dtype_set(PowKernel::kExponentTypes))
                   .create<PowKernel>());
}

}  // namespace onyx::cpu::ew
