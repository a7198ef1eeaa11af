// elementwise_test.cpp: unary element-wise kernels against float64
// references computed here, integer edge cases, half precision, in-place
// runs and the threaded path. Binary and variadic ops: elementwise_binary_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>
#include <random>

#include "kernel_harness.h"
#include "test_providers.h"

namespace onyx::test {
namespace {

std::vector<double> random_values(size_t n, double lo, double hi, uint32_t seed = 7) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = dist(gen);
  return v;
}

template <typename T>
std::vector<T> cast_all(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}

struct UnaryCase {
  const char* op;
  std::function<double(double)> ref;
  double lo, hi;  // input domain
  int64_t opset = 17;
  std::vector<std::pair<std::string, double>> float_attrs = {};
  std::string approximate = "";  // Gelu
};

double softplus(double x) { return std::log1p(std::exp(x)); }

std::vector<UnaryCase> unary_cases() {
  const double kSeluAlpha = 1.67326319217681884765625, kSeluGamma = 1.05070102214813232421875;
  return {
      {"Sqrt", [](double x) { return std::sqrt(x); }, 0, 100},
      {"Exp", [](double x) { return std::exp(x); }, -20, 20},
      {"Log", [](double x) { return std::log(x); }, 1e-3, 1e3},
      {"Neg", [](double x) { return -x; }, -10, 10},
      {"Abs", [](double x) { return std::fabs(x); }, -10, 10},
      {"Reciprocal", [](double x) { return 1 / x; }, 0.1, 10},
      {"Relu", [](double x) { return x > 0 ? x : 0; }, -10, 10},
      {"LeakyRelu", [](double x) { return x > 0 ? x : as_onnx_float(0.1) * x; }, -10, 10, 17, {{"alpha", 0.1}}},
      {"Sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }, -30, 30},
      {"Tanh", [](double x) { return std::tanh(x); }, -10, 10},
      {"Erf", [](double x) { return std::erf(x); }, -4, 4},
      {"Gelu", [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, -6, 6, 20},
      {"Gelu",
       [](double x) {
         return 0.5 * x * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
       },
       -6, 6, 20, {}, "tanh"},
      {"Floor", [](double x) { return std::floor(x); }, -10, 10},
      {"Ceil", [](double x) { return std::ceil(x); }, -10, 10},
      {"Sign", [](double x) { return double((x > 0) - (x < 0)); }, -10, 10},
      {"Elu", [](double x) { return x > 0 ? x : as_onnx_float(0.7) * (std::exp(x) - 1); }, -10, 10, 17, {{"alpha", 0.7}}},
      {"Selu", [=](double x) { return kSeluGamma * (x > 0 ? x : kSeluAlpha * (std::exp(x) - 1)); }, -10, 10},
      {"HardSigmoid", [](double x) { return std::clamp(as_onnx_float(0.3) * x + as_onnx_float(0.4), 0.0, 1.0); }, -5, 5, 17,
       {{"alpha", 0.3}, {"beta", 0.4}}},
      {"HardSwish", [](double x) { return x * std::clamp(x / 6 + 0.5, 0.0, 1.0); }, -6, 6},
      {"Softplus", softplus, -20, 20},
      {"Softsign", [](double x) { return x / (1 + std::fabs(x)); }, -10, 10},
      {"Sin", [](double x) { return std::sin(x); }, -6, 6},
      {"Cos", [](double x) { return std::cos(x); }, -6, 6},
      {"Tan", [](double x) { return std::tan(x); }, -1.4, 1.4},
      {"Asin", [](double x) { return std::asin(x); }, -1, 1},
      {"Acos", [](double x) { return std::acos(x); }, -1, 1},
      {"Atan", [](double x) { return std::atan(x); }, -10, 10},
      {"Sinh", [](double x) { return std::sinh(x); }, -5, 5},
      {"Cosh", [](double x) { return std::cosh(x); }, -5, 5},
      {"Asinh", [](double x) { return std::asinh(x); }, -10, 10},
      {"Acosh", [](double x) { return std::acosh(x); }, 1, 10},
      {"Atanh", [](double x) { return std::atanh(x); }, -0.99, 0.99},
      {"ThresholdedRelu", [](double x) { return x > 1.5 ? x : 0; }, -5, 5, 17, {{"alpha", 1.5}}},
      {"Celu", [](double x) { return std::max(0.0, x) + std::min(0.0, 2 * (std::exp(x / 2) - 1)); }, -10, 10, 17,
       {{"alpha", 2.0}}},
      {"Mish", [](double x) { return x * std::tanh(softplus(x)); }, -10, 10, 18},
  };
}

NodeSpec unary_node(const UnaryCase& c, HostTensor x) {
  NodeSpec node(c.op, c.opset);
  node.inputs = {std::move(x)};
  for (const auto& [key, value] : c.float_attrs) node.attr(key, value);
  if (!c.approximate.empty()) node.attr("approximate", c.approximate);
  return node;
}

// float32 kernels on float inputs against the double formula on the same
// inputs. Tolerance: libm's float functions are within ~2 ulp and the
// composite formulas (Selu, Mish, Gelu, ...) chain a few float operations,
// so 1e-5 relative (~80 ulp) is loose enough yet catches any wrong formula;
// atol 1e-6 covers results near 0 (e.g. sin near pi), where relative error
// says nothing.
ONYX_PROVIDER_SUITE(ElementwiseUnary);

ONYX_OP_TEST(ElementwiseUnary, Float32MatchesFloat64Reference) {
  for (const UnaryCase& c : unary_cases()) {
    std::vector<float> x = cast_all<float>(random_values(1001, c.lo, c.hi));
    RunResult r = run_node(unary_node(c, make_tensor<float>({7, 11, 13}, x)));
    ASSERT_TRUE(r.ok()) << c.op << ": " << r.error;
    ASSERT_EQ(r.outputs[0].dims, (std::vector<int64_t>{7, 11, 13})) << c.op;
    std::vector<float> y = r.outputs[0].values<float>();
    for (size_t i = 0; i < x.size(); ++i) {
      double want = c.ref(double(x[i]));
      ASSERT_NEAR(y[i], want, 1e-6 + 1e-5 * std::fabs(want)) << c.op << " " << c.approximate << " at x=" << x[i];
    }
  }
}

// float64 kernels: the same formulas in double; 1e-12 relative allows for
// the kernels' numerically safer but different forms (e.g. expm1).
ONYX_OP_TEST(ElementwiseUnary, Float64MatchesReference) {
  for (const UnaryCase& c : unary_cases()) {
    std::vector<double> x = random_values(257, c.lo, c.hi, 11);
    RunResult r = run_node(unary_node(c, make_tensor<double>({257}, x)));
    ASSERT_TRUE(r.ok()) << c.op << ": " << r.error;
    std::vector<double> y = r.outputs[0].values<double>();
    for (size_t i = 0; i < x.size(); ++i) {
      double want = c.ref(x[i]);
      ASSERT_NEAR(y[i], want, 1e-13 + 1e-12 * std::fabs(want)) << c.op << " at x=" << x[i];
    }
  }
}

ONYX_OP_TEST(ElementwiseUnary, RoundIsHalfToEven) {
  NodeSpec node("Round", 11);
  node.inputs = {make_tensor<float>({8}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f, 2.6f, -2.6f})};
  RunResult r = run_node(node);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].values<float>(), (std::vector<float>{0, 2, 2, -0.f, -2, 2, 3, -3}));
}

ONYX_OP_TEST(ElementwiseUnary, ReluKeepsNaNAndSigmoidSaturates) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  NodeSpec relu("Relu");
  relu.inputs = {make_tensor<float>({3}, {nan, -1, 2})};
  RunResult r = run_node(relu);
  ASSERT_TRUE(r.ok()) << r.error;
  std::vector<float> y = r.outputs[0].values<float>();
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[1], 0);
  EXPECT_EQ(y[2], 2);

  NodeSpec sigmoid("Sigmoid");
  sigmoid.inputs = {make_tensor<float>({2}, {-1000, 1000})};
  r = run_node(sigmoid);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].values<float>(), (std::vector<float>{0, 1}));
}

ONYX_OP_TEST(ElementwiseUnary, IntegerAbsNegSignReluWrapLikeNumpy) {
  const int32_t kMin = std::numeric_limits<int32_t>::min();
  std::vector<int32_t> x = {kMin, -5, 0, 7};
  struct Case {
    const char* op;
    std::vector<int32_t> want;
  };
  for (const Case& c : {Case{"Abs", {kMin, 5, 0, 7}}, Case{"Neg", {kMin, 5, 0, -7}},
                        Case{"Sign", {-1, -1, 0, 1}}, Case{"Relu", {0, 0, 0, 7}}}) {
    NodeSpec node(c.op, 14);
    node.inputs = {make_tensor<int32_t>({4}, x)};
    RunResult r = run_node(node);
    ASSERT_TRUE(r.ok()) << c.op << ": " << r.error;
    EXPECT_EQ(r.outputs[0].values<int32_t>(), c.want) << c.op;
  }
  NodeSpec abs8("Abs");
  abs8.inputs = {make_tensor<uint8_t>({2}, {0, 255})};
  RunResult r = run_node(abs8);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].values<uint8_t>(), (std::vector<uint8_t>{0, 255}));
}

ONYX_OP_TEST(ElementwiseUnary, PredicatesAndLogic) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  HostTensor x = make_tensor<float>({4}, {inf, -inf, nan, 1});
  auto run_bool = [](NodeSpec node) {
    RunResult r = run_node(node);
    EXPECT_TRUE(r.ok()) << r.error;
    EXPECT_EQ(r.outputs[0].dtype, ONYX_DTYPE_BOOL);
    return r.outputs[0].values<uint8_t>();
  };
  NodeSpec isnan("IsNaN", 13);
  isnan.inputs = {x};
  EXPECT_EQ(run_bool(isnan), (std::vector<uint8_t>{0, 0, 1, 0}));
  NodeSpec isinf("IsInf", 10);
  isinf.inputs = {x};
  EXPECT_EQ(run_bool(isinf), (std::vector<uint8_t>{1, 1, 0, 0}));
  isinf.attr("detect_negative", int64_t{0});
  EXPECT_EQ(run_bool(isinf), (std::vector<uint8_t>{1, 0, 0, 0}));
  NodeSpec logical_not("Not");
  logical_not.inputs = {make_tensor<bool>({3}, {true, false, true})};
  EXPECT_EQ(run_bool(logical_not), (std::vector<uint8_t>{0, 1, 0}));

  NodeSpec bitwise_not("BitwiseNot", 18);
  bitwise_not.inputs = {make_tensor<int8_t>({3}, {0, -1, 5})};
  RunResult r = run_node(bitwise_not);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].values<int8_t>(), (std::vector<int8_t>{-1, 0, -6}));
}

// float16 / bfloat16 are computed in float32 and rounded once: the result
// must be the correctly rounded half of the float32 result, i.e. within one
// half-precision ulp of the double reference (2^-10 relative for float16,
// 2^-7 for bfloat16).
ONYX_OP_TEST(ElementwiseUnary, HalfTypesComputeThroughFloat) {
  std::vector<double> x = random_values(200, -4, 4, 3);
  for (int32_t dtype : {ONYX_DTYPE_FLOAT16, ONYX_DTYPE_BFLOAT16}) {
    std::vector<unsigned char> bytes;
    std::vector<double> rounded;
    for (double v : x) {
      uint16_t bits = dtype == ONYX_DTYPE_FLOAT16 ? float_to_half(float(v)) : float_to_bfloat16(float(v));
      bytes.push_back(uint8_t(bits));
      bytes.push_back(uint8_t(bits >> 8));
      rounded.push_back(dtype == ONYX_DTYPE_FLOAT16 ? half_to_float(bits) : bfloat16_to_float(bits));
    }
    NodeSpec node("Tanh");
    node.inputs = {make_raw(dtype, {200}, bytes)};
    RunResult r = run_node(node, {.in_place = true});
    ASSERT_TRUE(r.ok()) << r.error;
    EXPECT_ON_REFERENCE(EXPECT_TRUE(r.shared_with_input[0]));
    ASSERT_EQ(r.outputs[0].dtype, dtype);
    std::vector<double> y = r.outputs[0].as_doubles();
    double ulp = dtype == ONYX_DTYPE_FLOAT16 ? 0x1p-10 : 0x1p-7;
    for (size_t i = 0; i < x.size(); ++i)
      EXPECT_NEAR(y[i], std::tanh(rounded[i]), ulp * std::max(std::fabs(std::tanh(rounded[i])), 0x1p-14))
          << "dtype " << dtype << " x=" << rounded[i];
  }
}

ONYX_OP_TEST(ElementwiseUnary, InPlaceAndThreadedLargeTensor) {
  // 300k elements: many parallel_for chunks on 4 threads, output in the
  // input's buffer.
  std::vector<float> x = cast_all<float>(random_values(300000, -5, 5, 5));
  NodeSpec node("Sigmoid");
  node.inputs = {make_tensor<float>({300, 1000}, x)};
  RunResult r = run_node(node, {.threads = 4, .in_place = true});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_ON_REFERENCE(EXPECT_EQ(r.output_memory[0].kind, ONYX_OUTPUT_MAY_OVERWRITE_INPUT));
  EXPECT_ON_REFERENCE(EXPECT_TRUE(r.shared_with_input[0]));
  std::vector<float> y = r.outputs[0].values<float>();
  for (size_t i = 0; i < x.size(); i += 997) EXPECT_NEAR(y[i], 1 / (1 + std::exp(-double(x[i]))), 1e-6);
  // Predicates never share: their output type differs.
  NodeSpec isnan("IsNaN", 13);
  isnan.inputs = {make_tensor<float>({2}, {1, 2})};
  r = run_node(isnan, {.in_place = true});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_ON_REFERENCE(EXPECT_EQ(r.output_memory[0].kind, ONYX_OUTPUT_FRESH));
}

ONYX_OP_TEST(ElementwiseUnary, DeclinesWithReasons) {
  NodeSpec sqrt_int("Sqrt");
  sqrt_int.inputs = {make_tensor<int32_t>({1}, {4})};
  RunResult r = run_node(sqrt_int);
  EXPECT_TRUE(r.declined);
  EXPECT_ERROR_MENTIONS(r, "Sqrt: input 0 has type int32");

  NodeSpec gelu("Gelu", 20);
  gelu.inputs = {make_tensor<float>({1}, {1})};
  gelu.attr("approximate", "erf");
  r = run_node(gelu);
  EXPECT_TRUE(r.declined);
  EXPECT_ERROR_MENTIONS(r, "approximate");

  NodeSpec gelu_old("Gelu", 17);  // Gelu exists from opset 20
  gelu_old.inputs = {make_tensor<float>({1}, {1})};
  EXPECT_TRUE(run_node(gelu_old).declined);

  NodeSpec no_input("Relu");
  r = run_node(no_input);
  EXPECT_TRUE(r.declined);
  EXPECT_ERROR_MENTIONS(r, "Relu");
}

}  // namespace
}  // namespace onyx::test
