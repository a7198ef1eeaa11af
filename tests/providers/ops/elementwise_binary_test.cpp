// elementwise_binary_test.cpp: binary, variadic and Where/Clip kernels:
// broadcasting against a reference computed here index by index, integer
// semantics, the opset < 7 broadcast attributes, in-place runs, errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "kernel_harness.h"
#include "test_providers.h"

namespace onyx::test {
namespace {

using Dims = std::vector<int64_t>;

std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -4, float hi = 4) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

int64_t count(const Dims& d) {
  int64_t n = 1;
  for (int64_t x : d) n *= x;
  return n;
}

// Numpy broadcasting, written independently of the kernels: the output
// shape, then for each output index the input element it reads.
Dims broadcast(const Dims& a, const Dims& b) {
  size_t r = std::max(a.size(), b.size());
  Dims out(r);
  for (size_t d = 0; d < r; ++d) {
    int64_t x = d + a.size() >= r ? a[d + a.size() - r] : 1;
    int64_t y = d + b.size() >= r ? b[d + b.size() - r] : 1;
    out[d] = x == 1 ? y : x;
  }
  return out;
}
int64_t source_index(const Dims& in, const Dims& out, int64_t flat) {
  int64_t index = 0, stride = 1;
  for (size_t d = out.size(); d-- > 0;) {
    int64_t i = flat % out[d];
    flat /= out[d];
    size_t k = d + in.size();
    if (k < out.size()) continue;  // dim missing in the input
    int64_t dim = in[k - out.size()];
    index += (dim == 1 ? 0 : i) * stride;
    stride *= dim;
  }
  return index;
}

struct BinaryCase {
  const char* op;
  std::function<double(double, double)> f;
};

// Float32 + - * / are correctly rounded, and rounding the exact double
// result of two floats to float gives the same value, so these compare
// exactly against the double reference.
ONYX_PROVIDER_SUITE(ElementwiseBinary);

ONYX_OP_TEST(ElementwiseBinary, BroadcastingMatchesIndexByIndexReference) {
  const std::vector<std::pair<Dims, Dims>> shapes = {
      {{2, 3, 4}, {2, 3, 4}}, {{2, 3, 4}, {4}},       {{2, 1, 4}, {3, 1}}, {{1}, {5}},
      {{}, {2, 2}},           {{3, 1, 5}, {1, 4, 1}}, {{2, 3, 4, 5}, {3, 1, 1}}, {{4, 1}, {}},
      {{2, 0, 3}, {3}},       {{1, 1, 1}, {1}},       {{5, 1, 1, 7}, {1, 6, 3, 1}}};
  const std::vector<BinaryCase> ops = {{"Add", std::plus<double>()},
                                       {"Sub", std::minus<double>()},
                                       {"Mul", std::multiplies<double>()},
                                       {"Div", std::divides<double>()}};
  uint32_t seed = 1;
  for (const auto& [da, db] : shapes)
    for (const BinaryCase& c : ops) {
      std::vector<float> a = random_floats(size_t(count(da)), seed++), b = random_floats(size_t(count(db)), seed++, 0.5f, 4);
      for (size_t threads : {1, 3}) {
        NodeSpec node(c.op, 14);
        node.inputs = {make_tensor<float>(da, a), make_tensor<float>(db, b)};
        RunResult r = run_node(node, {.threads = threads});
        ASSERT_TRUE(r.ok()) << c.op << ": " << r.error;
        Dims out = broadcast(da, db);
        ASSERT_EQ(r.outputs[0].dims, out) << c.op;
        std::vector<float> y = r.outputs[0].values<float>();
        for (int64_t i = 0; i < count(out); ++i) {
          double want = c.f(a[size_t(source_index(da, out, i))], b[size_t(source_index(db, out, i))]);
          ASSERT_EQ(y[size_t(i)], float(want)) << c.op << " " << ::testing::PrintToString(da) << " "
                                               << ::testing::PrintToString(db) << " at " << i;
        }
      }
    }
}

ONYX_OP_TEST(ElementwiseBinary, LargeBroadcastThreadedAndInPlace) {
  // [64, 1000] * [1000]: rows of the general path on 4 threads, and the
  // output in A's buffer.
  Dims da = {64, 1000}, db = {1000};
  std::vector<float> a = random_floats(64000, 3), b = random_floats(1000, 4);
  NodeSpec node("Mul", 14);
  node.inputs = {make_tensor<float>(da, a), make_tensor<float>(db, b)};
  RunResult r = run_node(node, {.threads = 4, .in_place = true});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_ON_REFERENCE(EXPECT_TRUE(r.shared_with_input[0]));
  std::vector<float> y = r.outputs[0].values<float>();
  for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], a[i] * b[i % 1000]) << i;

  // B larger than A: the output cannot take A's buffer.
  NodeSpec grow("Add", 14);
  grow.inputs = {make_tensor<float>({1000}, b), make_tensor<float>(da, a)};
  r = run_node(grow, {.threads = 4, .in_place = true});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_ON_REFERENCE(EXPECT_FALSE(r.shared_with_input[0]));
  y = r.outputs[0].values<float>();
  for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], b[i % 1000] + a[i]) << i;
}

ONYX_OP_TEST(ElementwiseBinary, IncompatibleShapesFailNamingOpAndShapes) {
  NodeSpec node("Add", 14);
  node.name = "add_7";
  node.inputs = {make_tensor<float>({2, 3}, std::vector<float>(6)), make_tensor<float>({4}, std::vector<float>(4))};
  RunResult r = run_node(node);
  ASSERT_FALSE(r.ok());
  EXPECT_FALSE(r.declined);
  EXPECT_ERROR_MENTIONS(r, "Add node 'add_7'");
  EXPECT_ERROR_MENTIONS(r, "[2,3]");
  EXPECT_ERROR_MENTIONS(r, "[4]");
}

ONYX_OP_TEST(ElementwiseBinary, LegacyBroadcastAttributes) {
  // Opset 6: B of shape [3] matched against A's axis 1 of [2,3,2].
  std::vector<float> a = random_floats(12, 9), b = {10, 20, 30};
  NodeSpec node("Add", 6);
  node.inputs = {make_tensor<float>({2, 3, 2}, a), make_tensor<float>({3}, b)};
  node.attr("broadcast", int64_t{1}).attr("axis", int64_t{1});
  RunResult r = run_node(node);
  ASSERT_TRUE(r.ok()) << r.error;
  std::vector<float> y = r.outputs[0].values<float>();
  for (size_t i = 0; i < 12; ++i) EXPECT_EQ(y[i], a[i] + b[i / 2 % 3]) << i;

  // Without broadcast=1 the shapes must be equal.
  NodeSpec strict("Mul", 6);
  strict.inputs = {make_tensor<float>({2, 3}, std::vector<float>(6)), make_tensor<float>({3}, b)};
  r = run_node(strict);
  ASSERT_FALSE(r.ok());
  EXPECT_ERROR_MENTIONS(r, "broadcast is 0");

  // B does not fit at the given axis.
  node.attributes.clear();
  node.attr("broadcast", int64_t{1}).attr("axis", int64_t{2});
  r = run_node(node);
  ASSERT_FALSE(r.ok());
  EXPECT_ERROR_MENTIONS(r, "axis 2");
}

ONYX_OP_TEST(ElementwiseBinary, IntegerArithmeticDivisionAndModulo) {
  const int32_t kMin = std::numeric_limits<int32_t>::min();
  auto run_i32 = [](const char* op, std::vector<int32_t> a, std::vector<int32_t> b, int64_t fmod = -1) {
    NodeSpec node(op, 14);
    node.inputs = {make_tensor<int32_t>({int64_t(a.size())}, a), make_tensor<int32_t>({int64_t(b.size())}, b)};
    if (fmod >= 0) node.attr("fmod", fmod);
    RunResult r = run_node(node);
    EXPECT_TRUE(r.ok()) << op << ": " << r.error;
    return r.ok() ? r.outputs[0].values<int32_t>() : std::vector<int32_t>{};
  };
  // Division truncates toward zero; INT_MIN / -1 wraps instead of trapping.
  EXPECT_EQ(run_i32("Div", {7, -7, 7, kMin}, {2, 2, -2, -1}), (std::vector<int32_t>{3, -3, -3, kMin}));
  // Overflow wraps (two's complement), as in numpy.
  EXPECT_EQ(run_i32("Add", {std::numeric_limits<int32_t>::max()}, {1}), (std::vector<int32_t>{kMin}));
  EXPECT_EQ(run_i32("Mul", {65536}, {65536}), (std::vector<int32_t>{0}));
  // Mod: fmod=0 takes the divisor's sign, fmod=1 the dividend's.
  EXPECT_EQ(run_i32("Mod", {7, -7, 7, -7}, {3, 3, -3, -3}, 0), (std::vector<int32_t>{1, 2, -2, -1}));
  EXPECT_EQ(run_i32("Mod", {7, -7, 7, -7}, {3, 3, -3, -3}, 1), (std::vector<int32_t>{1, -1, 1, -1}));

  NodeSpec div0("Div", 14);
  div0.inputs = {make_tensor<int64_t>({2}, {1, 2}), make_tensor<int64_t>({2}, {1, 0})};
  RunResult r = run_node(div0);
  ASSERT_FALSE(r.ok());
  EXPECT_ERROR_MENTIONS(r, "division by zero");

  NodeSpec fmod_float("Mod", 13);
  fmod_float.inputs = {make_tensor<float>({1}, {1}), make_tensor<float>({1}, {1})};
  r = run_node(fmod_float);
  EXPECT_TRUE(r.declined);
  EXPECT_ERROR_MENTIONS(r, "fmod must be 1");

  NodeSpec bad_types("Add", 14);
  bad_types.inputs = {make_tensor<int32_t>({1}, {1}), make_tensor<float>({1}, {1})};
  r = run_node(bad_types);
  EXPECT_TRUE(r.declined);
  EXPECT_ERROR_MENTIONS(r, "input 1 has type float32 but input 0 has int32");
}

ONYX_OP_TEST(ElementwiseBinary, PowTypesAndExactIntegerPowers) {
  NodeSpec ints("Pow", 15);
  ints.inputs = {make_tensor<int64_t>({4}, {3, -2, 2, 5}), make_tensor<int64_t>({4}, {20, 3, 0, -1})};
  RunResult r = run_node(ints);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].values<int64_t>(), (std::vector<int64_t>{3486784401LL, -8, 1, 0}));

  NodeSpec mixed("Pow", 15);
  mixed.inputs = {make_tensor<float>({3}, {2, 9, -2}), make_tensor<int32_t>({1}, {2})};
  r = run_node(mixed);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].dtype, ONYX_DTYPE_FLOAT32);
  EXPECT_EQ(r.outputs[0].values<float>(), (std::vector<float>{4, 81, 4}));

  NodeSpec frac("Pow", 15);
  frac.inputs = {make_tensor<double>({2}, {2, 10}), make_tensor<double>({2}, {0.5, -1.5})};
  r = run_node(frac);
  ASSERT_TRUE(r.ok()) << r.error;
  std::vector<double> y = r.outputs[0].values<double>();
  EXPECT_DOUBLE_EQ(y[0], std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(y[1], std::pow(10.0, -1.5));
}

// A scalar exponent of 2 or 1 takes a multiply or a copy instead of pow():
// the same values, specials included.
ONYX_OP_TEST(ElementwiseBinary, PowWithAScalarExponentOfTwoOrOne) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {-3.0f, -0.0f, 1e20f, nan, inf, -inf, 1.5f, 1.1f};
  for (float e : {2.0f, 1.0f, 3.0f}) {
    NodeSpec node("Pow", 15);
    node.inputs = {make_tensor<float>({2, 4}, x), make_tensor<float>({}, {e})};
    RunResult r = run_node(node);
    ASSERT_TRUE(r.ok()) << r.error;
    std::vector<float> y = r.outputs[0].values<float>();
    for (size_t i = 0; i < x.size(); ++i) {
      const float want = std::pow(x[i], e);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(y[i])) << x[i] << "^" << e;
      } else {
        EXPECT_FLOAT_EQ(y[i], want) << x[i] << "^" << e;
        EXPECT_EQ(std::signbit(y[i]), std::signbit(want)) << x[i] << "^" << e;
      }
    }
  }
}

ONYX_OP_TEST(ElementwiseBinary, ComparisonsLogicAndBitOps) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  HostTensor a = make_tensor<float>({4}, {1, 2, nan, 4}), b = make_tensor<float>({1}, {2});
  struct Case {
    const char* op;
    std::vector<uint8_t> want;
  };
  for (const Case& c : {Case{"Equal", {0, 1, 0, 0}}, Case{"Less", {1, 0, 0, 0}}, Case{"Greater", {0, 0, 0, 1}},
                        Case{"LessOrEqual", {1, 1, 0, 0}}, Case{"GreaterOrEqual", {0, 1, 0, 1}}}) {
    NodeSpec node(c.op, 16);
    node.inputs = {a, b};
    RunResult r = run_node(node);
    ASSERT_TRUE(r.ok()) << c.op << ": " << r.error;
    EXPECT_EQ(r.outputs[0].dtype, ONYX_DTYPE_BOOL);
    EXPECT_EQ(r.outputs[0].values<uint8_t>(), c.want) << c.op;
  }
  HostTensor p = make_tensor<bool>({2, 2}, {true, true, false, false}), q = make_tensor<bool>({2}, {true, false});
  for (const Case& c : {Case{"And", {1, 0, 0, 0}}, Case{"Or", {1, 1, 1, 0}}, Case{"Xor", {0, 1, 1, 0}},
                        Case{"Equal", {1, 0, 0, 1}}}) {
    NodeSpec node(c.op, 16);
    node.inputs = {p, q};
    RunResult r = run_node(node);
    ASSERT_TRUE(r.ok()) << c.op << ": " << r.error;
    EXPECT_EQ(r.outputs[0].values<uint8_t>(), c.want) << c.op;
  }
  NodeSpec shift("BitShift", 11);
  shift.inputs = {make_tensor<uint8_t>({3}, {1, 255, 16}), make_tensor<uint8_t>({3}, {3, 1, 9})};
  shift.attr("direction", "LEFT");
  RunResult r = run_node(shift);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].values<uint8_t>(), (std::vector<uint8_t>{8, 254, 0}));
  NodeSpec no_direction("BitShift", 11);
  no_direction.inputs = shift.inputs;
  EXPECT_TRUE(run_node(no_direction).declined);
  NodeSpec band("BitwiseXor", 18);
  band.inputs = {make_tensor<int16_t>({2}, {0x0F0F, -1}), make_tensor<int16_t>({1}, {0x00FF})};
  r = run_node(band);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].values<int16_t>(), (std::vector<int16_t>{0x0FF0, int16_t(0xFF00)}));
}

ONYX_OP_TEST(ElementwiseBinary, PReluBroadcastsSlopeToX) {
  std::vector<float> x = random_floats(24, 21);
  NodeSpec node("PRelu", 16);
  node.inputs = {make_tensor<float>({2, 3, 4}, x), make_tensor<float>({3, 1}, {0.1f, 0.2f, 0.3f})};
  RunResult r = run_node(node);
  ASSERT_TRUE(r.ok()) << r.error;
  std::vector<float> y = r.outputs[0].values<float>();
  for (size_t i = 0; i < 24; ++i) {
    float slope = 0.1f * float(i / 4 % 3 + 1);
    EXPECT_FLOAT_EQ(y[i], x[i] < 0 ? x[i] * slope : x[i]) << i;
  }
  // A slope that would grow X is rejected (PRelu broadcasts one way).
  NodeSpec grow("PRelu", 16);
  grow.inputs = {make_tensor<float>({3}, {1, 2, 3}), make_tensor<float>({2, 3}, std::vector<float>(6, 1))};
  EXPECT_FALSE(run_node(grow).ok());
}

ONYX_PROVIDER_SUITE(ElementwiseVariadic);

ONYX_OP_TEST(ElementwiseVariadic, SumMeanMinMaxBroadcastAndNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  HostTensor a = make_tensor<float>({2, 3}, {1, 5, nan, -1, 0, 2}), b = make_tensor<float>({3}, {2, 2, 2}),
             c = make_tensor<float>({2, 1}, {10, -10});
  auto run3 = [&](const char* op) {
    NodeSpec node(op, 13);
    node.inputs = {a, b, c};
    RunResult r = run_node(node, {.in_place = true});
    EXPECT_TRUE(r.ok()) << op << ": " << r.error;
    EXPECT_EQ(r.outputs[0].dims, (Dims{2, 3}));
    return r.outputs[0].values<float>();
  };
  std::vector<float> sum = run3("Sum"), mean = run3("Mean"), mn = run3("Min"), mx = run3("Max");
  std::vector<float> av = a.values<float>();
  for (size_t i = 0; i < 6; ++i) {
    double x = av[i], y = 2, z = i < 3 ? 10 : -10;
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(sum[i]) && std::isnan(mean[i]) && std::isnan(mn[i]) && std::isnan(mx[i])) << i;
      continue;
    }
    EXPECT_EQ(sum[i], float(x + y + z)) << i;
    EXPECT_FLOAT_EQ(mean[i], float((x + y + z) / 3)) << i;
    EXPECT_EQ(mn[i], float(std::min({x, y, z}))) << i;
    EXPECT_EQ(mx[i], float(std::max({x, y, z}))) << i;
  }
  NodeSpec ints("Max", 13);
  ints.inputs = {make_tensor<int64_t>({3}, {1, 9, -4}), make_tensor<int64_t>({1}, {0})};
  RunResult r = run_node(ints);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].values<int64_t>(), (std::vector<int64_t>{1, 9, 0}));
}

ONYX_OP_TEST(ElementwiseVariadic, WhereBroadcastsAllThreeInputs) {
  NodeSpec node("Where", 16);
  node.inputs = {make_tensor<bool>({2, 1}, {true, false}), make_tensor<int64_t>({3}, {1, 2, 3}),
                 make_tensor<int64_t>({}, {-1})};
  RunResult r = run_node(node);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].dims, (Dims{2, 3}));
  EXPECT_EQ(r.outputs[0].values<int64_t>(), (std::vector<int64_t>{1, 2, 3, -1, -1, -1}));
  NodeSpec bad("Where", 16);
  bad.inputs = {make_tensor<float>({1}, {1}), make_tensor<float>({1}, {1}), make_tensor<float>({1}, {1})};
  EXPECT_TRUE(run_node(bad).declined);
}

ONYX_OP_TEST(ElementwiseVariadic, ClipAttributeAndInputForms) {
  std::vector<float> x = {-3, -1, 0, 1, 3};
  NodeSpec old("Clip", 6);
  old.inputs = {make_tensor<float>({5}, x)};
  old.attr("min", -1.5).attr("max", 2.0);
  RunResult r = run_node(old);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].values<float>(), (std::vector<float>{-1.5f, -1, 0, 1, 2}));

  NodeSpec only_max("Clip", 13);
  only_max.inputs = {make_tensor<float>({5}, x), omitted(), make_scalar<float>(0.5f)};
  r = run_node(only_max, {.in_place = true});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_ON_REFERENCE(EXPECT_TRUE(r.shared_with_input[0]));
  EXPECT_EQ(r.outputs[0].values<float>(), (std::vector<float>{-3, -1, 0, 0.5f, 0.5f}));

  NodeSpec ints("Clip", 13);  // min > max: everything becomes max, like numpy
  ints.inputs = {make_tensor<int32_t>({3}, {-5, 0, 5}), make_scalar<int32_t>(2), make_scalar<int32_t>(1)};
  r = run_node(ints);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].values<int32_t>(), (std::vector<int32_t>{1, 1, 1}));

  NodeSpec not_scalar("Clip", 13);
  not_scalar.inputs = {make_tensor<float>({5}, x), make_tensor<float>({2}, {0, 1})};
  r = run_node(not_scalar);
  ASSERT_FALSE(r.ok());
  EXPECT_ERROR_MENTIONS(r, "input 1 must be a scalar");
}

// float16 Add: two halves add exactly in float32, so the kernel's result is
// the correctly rounded half of the exact sum.
ONYX_OP_TEST(ElementwiseBinary, Float16AddRoundsOnce) {
  std::vector<float> a = random_floats(64, 31, -100, 100), b = random_floats(64, 32, -100, 100);
  std::vector<unsigned char> ab, bb;
  std::vector<float> ar, br;
  for (size_t i = 0; i < 64; ++i) {
    uint16_t x = float_to_half(a[i]), y = float_to_half(b[i]);
    ab.insert(ab.end(), {uint8_t(x), uint8_t(x >> 8)});
    bb.insert(bb.end(), {uint8_t(y), uint8_t(y >> 8)});
    ar.push_back(half_to_float(x));
    br.push_back(half_to_float(y));
  }
  NodeSpec node("Add", 14);
  node.inputs = {make_raw(ONYX_DTYPE_FLOAT16, {64}, ab), make_raw(ONYX_DTYPE_FLOAT16, {64}, bb)};
  RunResult r = run_node(node);
  ASSERT_TRUE(r.ok()) << r.error;
  std::vector<uint16_t> y = r.outputs[0].values<uint16_t>();
  for (size_t i = 0; i < 64; ++i) EXPECT_EQ(y[i], float_to_half(ar[i] + br[i])) << i;
}

}  // namespace
}  // namespace onyx::test
