// unary.cpp: one-input element-wise ops (math, activations,
// predicates). Each op is a functor run by UnaryKernel (elementwise.h);
// float16/bfloat16 inputs of float ops are computed in float32.
#include <cmath>
#include <limits>

#include "kernels/elementwise/elementwise.h"
#include "kernels/elementwise/vec_math.h"
#include "kernels/registry.h"

namespace onyx::cpu::ew {
namespace {

using util::kBool;
using util::kFloat;
using util::kHalf;
using util::kInt;
using util::kNumeric;
using util::kSigned;

constexpr unsigned kFloats = kFloat | kHalf;

// Two's complement negation without signed-overflow UB (INT_MIN stays INT_MIN).
template <typename T>
T wrapping_neg(T x) {
  if constexpr (std::is_integral_v<T>) return T(std::make_unsigned_t<T>(0) - std::make_unsigned_t<T>(x));
  else return -x;
}

// --- math --------------------------------------------------------------------
// A float op computed by EXPR; its optional third argument is more members
// (ONYX_FLOAT_LOOP: float32 elements through a vec_math.h loop).
#define ONYX_FLOAT_UNARY(NAME, EXPR, ...)                  \
  struct NAME {                                            \
    static constexpr unsigned kTypes = kFloats;            \
    template <typename T>                                  \
    T operator()(T x) const {                              \
      return EXPR;                                         \
    }                                                      \
    __VA_ARGS__                                            \
  };
#define ONYX_FLOAT_LOOP(LOOP) \
  void floats(const float* x, float* y, size_t n) const { LOOP(x, y, n); }
ONYX_FLOAT_UNARY(Sqrt, std::sqrt(x))
ONYX_FLOAT_UNARY(Exp, std::exp(x), ONYX_FLOAT_LOOP(vec::exp))
ONYX_FLOAT_UNARY(Log, std::log(x), ONYX_FLOAT_LOOP(vec::log))
ONYX_FLOAT_UNARY(Reciprocal, T(1) / x)
ONYX_FLOAT_UNARY(Erf, std::erf(x), ONYX_FLOAT_LOOP(vec::erf))
ONYX_FLOAT_UNARY(Floor, std::floor(x))
ONYX_FLOAT_UNARY(Ceil, std::ceil(x))
ONYX_FLOAT_UNARY(Round, std::nearbyint(x))  // default rounding mode: half to even
ONYX_FLOAT_UNARY(Sin, std::sin(x))
ONYX_FLOAT_UNARY(Cos, std::cos(x))
ONYX_FLOAT_UNARY(Tan, std::tan(x))
ONYX_FLOAT_UNARY(Asin, std::asin(x))
ONYX_FLOAT_UNARY(Acos, std::acos(x))
ONYX_FLOAT_UNARY(Atan, std::atan(x))
ONYX_FLOAT_UNARY(Sinh, std::sinh(x))
ONYX_FLOAT_UNARY(Cosh, std::cosh(x))
ONYX_FLOAT_UNARY(Asinh, std::asinh(x))
ONYX_FLOAT_UNARY(Acosh, std::acosh(x))
ONYX_FLOAT_UNARY(Atanh, std::atanh(x))
ONYX_FLOAT_UNARY(Softsign, x / (T(1) + std::fabs(x)))
// Softplus in a form that never overflows exp().
ONYX_FLOAT_UNARY(Softplus, x > T(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)))
ONYX_FLOAT_UNARY(Mish, x * std::tanh(x > T(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x))))
ONYX_FLOAT_UNARY(HardSwish, x * std::max(T(0), std::min(T(1), x / T(6) + T(0.5))))

// Sigmoid, Tanh and Swish (x sigmoid(alpha x)), as Exp and Log above, run
// vec_math.h's loops on float32 (and float16 via float32); the scalar forms
// (float64) never overflow exp().
template <typename T>
T logistic(T z) {
  return z >= T(0) ? T(1) / (T(1) + std::exp(-z)) : std::exp(z) / (T(1) + std::exp(z));
}
ONYX_FLOAT_UNARY(Sigmoid, logistic(x), ONYX_FLOAT_LOOP(vec::sigmoid))
ONYX_FLOAT_UNARY(Tanh, std::tanh(x), ONYX_FLOAT_LOOP(vec::tanh))
#undef ONYX_FLOAT_LOOP
#undef ONYX_FLOAT_UNARY

// ONNX Swish (opset 24, alpha default 1), and ONNX Runtime's com.microsoft
// QuickGelu (alpha default 1.702) that the graph optimizer writes for
// x * Sigmoid(alpha x) under earlier opsets (optimize/swish_fusion.cpp).
struct Swish {
  explicit Swish(const sdk::NodeInfo& node)
      : alpha(node.get_float("alpha", node.op_type == "QuickGelu" ? 1.702 : 1.0)) {}
  static constexpr unsigned kTypes = kFloats;
  template <typename T>
  T operator()(T x) const {
    const T s = logistic(T(alpha) * x);
    return s == T(0) ? T(0) : x * s;  // -inf: the limit 0
  }
  void floats(const float* x, float* y, size_t n) const { vec::swish(x, y, n, alpha); }
  float alpha;
};

struct Neg {
  static constexpr unsigned kTypes = kFloats | kSigned;
  template <typename T>
  T operator()(T x) const { return wrapping_neg(x); }
};
struct Abs {
  static constexpr unsigned kTypes = kNumeric | kHalf;
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_unsigned_v<T>) return x;
    else if constexpr (std::is_integral_v<T>) return x < 0 ? wrapping_neg(x) : x;
    else return std::fabs(x);
  }
};
struct Sign {
  static constexpr unsigned kTypes = kNumeric | kHalf;
  template <typename T>
  T operator()(T x) const { return x > T(0) ? T(1) : x < T(0) ? T(-1) : x; }  // keeps 0, NaN
};
struct Relu {
  static constexpr unsigned kTypes = kFloats | kSigned;
  template <typename T>
  T operator()(T x) const { return x < T(0) ? T(0) : x; }  // NaN passes through
};
struct Not {
  static constexpr unsigned kTypes = kBool;
  template <typename T>
  bool operator()(T x) const { return !x; }
};
struct BitwiseNot {
  static constexpr unsigned kTypes = kInt;
  template <typename T>
  T operator()(T x) const { return T(~x); }
};
struct IsNaN {
  static constexpr unsigned kTypes = kFloats;
  template <typename T>
  bool operator()(T x) const { return std::isnan(x); }
};
struct IsInf {
  explicit IsInf(const sdk::NodeInfo& node)
      : negative(node.get_int("detect_negative", 1) != 0),
        positive(node.get_int("detect_positive", 1) != 0) {}
  static constexpr unsigned kTypes = kFloats;
  template <typename T>
  bool operator()(T x) const { return std::isinf(x) && (x > 0 ? positive : negative); }
  bool negative, positive;
};

// --- activations with attributes ----------------------------------------------
struct LeakyRelu {
  explicit LeakyRelu(const sdk::NodeInfo& node) : alpha(node.get_float("alpha", 0.01)) {}
  static constexpr unsigned kTypes = kFloats;
  template <typename T>
  T operator()(T x) const { return x < T(0) ? T(alpha) * x : x; }
  double alpha;
};
struct ThresholdedRelu {
  explicit ThresholdedRelu(const sdk::NodeInfo& node) : alpha(node.get_float("alpha", 1.0)) {}
  static constexpr unsigned kTypes = kFloats;
  template <typename T>
  T operator()(T x) const { return x > T(alpha) ? x : T(0); }
  double alpha;
};
struct Elu {
  explicit Elu(const sdk::NodeInfo& node) : alpha(node.get_float("alpha", 1.0)) {}
  static constexpr unsigned kTypes = kFloats;
  template <typename T>
  T operator()(T x) const { return x < T(0) ? T(alpha) * std::expm1(x) : x; }
  double alpha;
};
struct Celu {
  explicit Celu(const sdk::NodeInfo& node) : alpha(node.get_float("alpha", 1.0)) {}
  static constexpr unsigned kTypes = kFloats;
  template <typename T>
  T operator()(T x) const { return x > T(0) ? x : T(alpha) * std::expm1(x / T(alpha)); }
  double alpha;
};
struct Selu {
  explicit Selu(const sdk::NodeInfo& node)
      : alpha(node.get_float("alpha", 1.67326319217681884765625)),
        gamma(node.get_float("gamma", 1.05070102214813232421875)) {}
  static constexpr unsigned kTypes = kFloats;
  template <typename T>
  T operator()(T x) const {
    return x > T(0) ? T(gamma) * x : T(gamma) * (T(alpha) * std::exp(x) - T(alpha));
  }
  double alpha, gamma;
};
struct HardSigmoid {
  explicit HardSigmoid(const sdk::NodeInfo& node)
      : alpha(node.get_float("alpha", 0.2)), beta(node.get_float("beta", 0.5)) {}
  static constexpr unsigned kTypes = kFloats;
  template <typename T>
  T operator()(T x) const { return std::max(T(0), std::min(T(1), T(alpha) * x + T(beta))); }
  double alpha, beta;
};
// ONNX Gelu, and ONNX Runtime's com.microsoft Gelu (erf) and FastGelu
// (tanh, without its optional bias input) that the graph optimizer writes
// for opsets before 20 (optimize/gelu_fusion.cpp).
struct Gelu {
  explicit Gelu(const sdk::NodeInfo& node)
      : tanh_form(node.op_type == "FastGelu" || node.get_string("approximate", "none") == "tanh") {}
  static constexpr unsigned kTypes = kFloats;
  template <typename T>
  T operator()(T x) const {
    if (tanh_form) {
      const T k = T(0.7978845608028654);  // sqrt(2 / pi)
      return T(0.5) * x * (T(1) + std::tanh(k * (x + T(0.044715) * x * x * x)));
    }
    return T(0.5) * x * (T(1) + std::erf(x * T(0.7071067811865476)));  // x / sqrt(2)
  }
  void floats(const float* x, float* y, size_t n) const {
    if (tanh_form) vec::gelu_tanh(x, y, n);
    else vec::gelu_erf(x, y, n);
  }
  bool tanh_form;
};

std::string gelu_mode(const sdk::NodeInfo& node) {
  std::string mode = node.get_string("approximate", "none");
  return mode == "none" || mode == "tanh"
             ? std::string()
             : "Gelu: attribute approximate is '" + mode + "'; expected 'none' or 'tanh'";
}

template <typename Op>
sdk::KernelDef unary(const char* op, int64_t since, sdk::DeclineCheck extra = {}) {
  return kernel_def<UnaryKernel<Op>>(op, since, 1, Op::kTypes, std::move(extra));
}

}  // namespace

void register_unary_kernels(sdk::KernelRegistry& registry) {
  registry.add(unary<Sqrt>("Sqrt", 1));
  registry.add(unary<Exp>("Exp", 1));
  registry.add(unary<Log>("Log", 1));
  registry.add(unary<Neg>("Neg", 1));
  registry.add(unary<Abs>("Abs", 1));
  registry.add(unary<Reciprocal>("Reciprocal", 1));
  registry.add(unary<Relu>("Relu", 1));
  registry.add(unary<LeakyRelu>("LeakyRelu", 1));
  registry.add(unary<Sigmoid>("Sigmoid", 1));
  registry.add(unary<Tanh>("Tanh", 1));
  registry.add(unary<Swish>("Swish", 24));
  registry.add(sdk::KernelDefBuilder("QuickGelu", "com.microsoft")
                   .since(1)
                   .inputs(1)
                   .type_constraint("T", {}, util::dtype_set(Swish::kTypes))
                   .create<UnaryKernel<Swish>>());
  registry.add(unary<Erf>("Erf", 9));
  registry.add(unary<Gelu>("Gelu", 20, gelu_mode));
  for (const char* op : {"Gelu", "FastGelu"})  // com.microsoft, version 1: one input X
    registry.add(sdk::KernelDefBuilder(op, "com.microsoft")
                     .since(1)
                     .inputs(1)
                     .type_constraint("T", {}, util::dtype_set(Gelu::kTypes))
                     .create<UnaryKernel<Gelu>>());
  registry.add(unary<Not>("Not", 1));
  registry.add(unary<Floor>("Floor", 1));
  registry.add(unary<Ceil>("Ceil", 1));
  registry.add(unary<Round>("Round", 11));
  registry.add(unary<Sign>("Sign", 9));
  registry.add(unary<Elu>("Elu", 1));
  registry.add(unary<Selu>("Selu", 1));
  registry.add(unary<HardSigmoid>("HardSigmoid", 1));
  registry.add(unary<HardSwish>("HardSwish", 14));
  registry.add(unary<Softplus>("Softplus", 1));
  registry.add(unary<Softsign>("Softsign", 1));
  registry.add(unary<Sin>("Sin", 7));
  registry.add(unary<Cos>("Cos", 7));
  registry.add(unary<Tan>("Tan", 7));
  registry.add(unary<Asin>("Asin", 7));
  registry.add(unary<Acos>("Acos", 7));
  registry.add(unary<Atan>("Atan", 7));
  registry.add(unary<Sinh>("Sinh", 9));
  registry.add(unary<Cosh>("Cosh", 9));
  registry.add(unary<Asinh>("Asinh", 9));
  registry.add(unary<Acosh>("Acosh", 9));
  registry.add(unary<Atanh>("Atanh", 9));
  registry.add(unary<IsNaN>("IsNaN", 9));
  registry.add(unary<IsInf>("IsInf", 10));
  registry.add(unary<BitwiseNot>("BitwiseNot", 18));
  registry.add(unary<ThresholdedRelu>("ThresholdedRelu", 10));
  registry.add(unary<Celu>("Celu", 12));
  registry.add(unary<Mish>("Mish", 18));
}

}  // namespace onyx::cpu::ew
