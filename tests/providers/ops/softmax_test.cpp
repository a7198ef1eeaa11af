// softmax_test.cpp: Softmax, LogSoftmax and Hardmax against float64
// reference loops, for both axis conventions (opset < 13 coerces to 2-D).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "kernel_harness.h"
#include "test_providers.h"
#include "nn_test_util.h"

namespace onyx::test {
namespace {

using nn::all_near;

// Reference over [outer, n, inner]: op along n.
std::vector<double> reference(const std::string& op, const std::vector<double>& x,
                              const std::vector<int64_t>& dims, int64_t axis, bool coerce) {
  int64_t outer = 1, n = 1, inner = 1;
  for (int64_t k = 0; k < int64_t(dims.size()); ++k) {
    if (k < axis)
      outer *= dims[size_t(k)];
    else if (k == axis || coerce)
      n *= dims[size_t(k)];
    else
      inner *= dims[size_t(k)];
  }
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t j) { return size_t((o * n + j) * inner + i); };
      double max = x[at(0)];
      int64_t arg = 0;
      for (int64_t j = 1; j < n; ++j)
        if (x[at(j)] > max) max = x[at(j)], arg = j;
      double sum = 0;
      for (int64_t j = 0; j < n; ++j) sum += std::exp(x[at(j)] - max);
      for (int64_t j = 0; j < n; ++j) {
        if (op == "Softmax")
          y[at(j)] = std::exp(x[at(j)] - max) / sum;
        else if (op == "LogSoftmax")
          y[at(j)] = x[at(j)] - max - std::log(sum);
        else
          y[at(j)] = j == arg ? 1 : 0;
      }
    }
  return y;
}

// Tolerances, inputs in [-5, 5] so that |x - max| <= 10 (u = 2^-24):
//  - Softmax: each exp runs in float32 on x - max, whose rounding (<= 8 u
//    absolute for |d| < 16) becomes a relative error of the exp, and expf
//    adds <= 1 ulp: <= 11 u per term, so also <= 11 u for the double sum.
//    The kernel multiplies each term by float(1 / sum): two more roundings.
//    Worst case 11 u + 11 u + 2 u = 24 u relative.
//  - LogSoftmax: y = x - max - log(sum) is formed in double; the sum's
//    relative error (<= 11 u) is an absolute error of log(sum), then one
//    final rounding relative to |y|: 12 u absolute + 1 u relative.
//  - Hardmax: exact.
std::vector<double> tolerance(const std::string& op, const std::vector<double>& expected) {
  if (op == "Softmax") return nn::provider_tol(op, expected, nn::rel_tol(expected, 24 * nn::kU32, 1e-30));
  if (op == "LogSoftmax") return nn::provider_tol(op, expected, nn::rel_tol(expected, nn::kU32, 12 * nn::kU32));
  return {0.0};
}

struct Case {
  std::string op;
  int64_t opset;
  std::vector<int64_t> dims;
  int64_t axis;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.op << "-" << c.opset << " " << ::testing::PrintToString(c.dims) << " axis " << c.axis;
}

std::vector<Case> softmax_cases() {
  return {// opset 13: one axis; inner > 64 exercises more than one lane tile.
          Case{"Softmax", 13, {3, 4, 5}, -1}, Case{"Softmax", 13, {3, 4, 5}, 1},
          Case{"Softmax", 13, {3, 4, 5}, 0}, Case{"Softmax", 13, {2, 7, 70}, 1},
          Case{"Softmax", 13, {1}, 0}, Case{"LogSoftmax", 13, {3, 4, 5}, 1},
          Case{"LogSoftmax", 13, {5, 131}, -1},
          Case{"Hardmax", 13, {3, 4, 5}, 1},
          // opset 11: coerced to 2-D at `axis` (the default axis is 1).
          Case{"Softmax", 11, {2, 3, 4}, 1}, Case{"Softmax", 11, {2, 3, 4}, 0},
          Case{"LogSoftmax", 11, {2, 3, 4}, 2},
          Case{"Hardmax", 11, {2, 3, 4}, 1}, Case{"Hardmax", 1, {3, 5}, -1}};
}

ONYX_PROVIDER_CASE_SUITE(SoftmaxTest, Case, softmax_cases(), case_index<Case>);

ONYX_OP_TEST(SoftmaxTest, MatchesReferenceFloat32AndFloat64) {
  const Case& c = test_case(self);
  std::vector<float> x = nn::random_floats(size_t(nn::count(c.dims)), 7, -5, 5);
  int64_t rank = int64_t(c.dims.size());
  int64_t axis = c.axis < 0 ? c.axis + rank : c.axis;
  std::vector<double> want = reference(c.op, nn::to_double(x), c.dims, axis, c.opset < 13);
  for (size_t threads : {1, 4}) {
    NodeSpec node(c.op, c.opset);
    node.attr("axis", c.axis);
    node.inputs = {make_tensor<float>(c.dims, x)};
    RunResult r = run_node(node, {.threads = threads});
    ASSERT_TRUE(r.ok()) << r.error;
    EXPECT_EQ(r.outputs[0].dims, c.dims);
    EXPECT_TRUE(all_near(r.outputs[0].values<float>(), want, tolerance(c.op, want)))
        << c.op << " threads " << threads;

    // In place: output 0 may take input 0's buffer.
    RunResult in_place = run_node(node, {.threads = threads, .in_place = true});
    ASSERT_TRUE(in_place.ok()) << in_place.error;
    EXPECT_ON_REFERENCE(EXPECT_TRUE(in_place.shared_with_input[0]));
    EXPECT_TRUE(all_near(in_place.outputs[0].values<float>(), want, tolerance(c.op, want)));

    // float64 runs the same code with double math: agreement to ~1e-15.
    node.inputs = {make_tensor<double>(c.dims, nn::to_double(x))};
    r = run_node(node, {.threads = threads});
    ASSERT_TRUE(r.ok()) << r.error;
    EXPECT_TRUE(all_near(r.outputs[0].values<double>(), want, nn::rel_tol(want, 1e-14, 1e-15)));
  }
}

ONYX_PROVIDER_SUITE(Softmax);

ONYX_OP_TEST(Softmax, DefaultAxisDependsOnOpset) {
  std::vector<float> x = nn::random_floats(24, 3);
  for (int64_t opset : {11, 13}) {
    NodeSpec node("Softmax", opset);
    node.inputs = {make_tensor<float>({2, 3, 4}, x)};
    RunResult r = run_node(node);
    ASSERT_TRUE(r.ok()) << r.error;
    // Default: axis 1 coerced (opset 11), axis -1 (opset 13).
    std::vector<double> want =
        reference("Softmax", nn::to_double(x), {2, 3, 4}, opset < 13 ? 1 : 2, opset < 13);
    EXPECT_TRUE(all_near(r.outputs[0].values<float>(), want, tolerance("Softmax", want)));
  }
}

ONYX_OP_TEST(Softmax, LargeInputsStayFinite) {
  // exp(1000) overflows: only the max-subtracted form gives a finite answer.
  std::vector<float> x = {1000, 1001, 1002, -1000, 0, 1000};
  NodeSpec node("Softmax", 13);
  node.inputs = {make_tensor<float>({2, 3}, x)};
  RunResult r = run_node(node);
  ASSERT_TRUE(r.ok()) << r.error;
  std::vector<double> want = reference("Softmax", nn::to_double(x), {2, 3}, 1, false);
  EXPECT_TRUE(all_near(r.outputs[0].values<float>(), want, tolerance("Softmax", want)));

  NodeSpec log("LogSoftmax", 13);
  log.inputs = {make_tensor<float>({2, 3}, x)};
  r = run_node(log);
  ASSERT_TRUE(r.ok()) << r.error;
  want = reference("LogSoftmax", nn::to_double(x), {2, 3}, 1, false);
  // |y| reaches 2000 here: one float rounding of y is 2000 u.
  EXPECT_TRUE(all_near(r.outputs[0].values<float>(), want,
                       nn::provider_tol("LogSoftmax", want, nn::rel_tol(want, nn::kU32, 12 * nn::kU32))));
}

ONYX_PROVIDER_SUITE(Hardmax);

ONYX_OP_TEST(Hardmax, TiesPickTheFirstMaximum) {
  NodeSpec node("Hardmax", 13);
  node.inputs = {make_tensor<float>({2, 4}, {1, 3, 3, 0, 2, 2, 2, 2})};
  RunResult r = run_node(node);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].values<float>(), (std::vector<float>{0, 1, 0, 0, 1, 0, 0, 0}));
}

ONYX_OP_TEST(Softmax, AxisOutOfRangeIsAnError) {
  NodeSpec node("Softmax", 13);
  node.name = "sm";
  node.attr("axis", 3);
  node.inputs = {make_tensor<float>({2, 3}, std::vector<float>(6, 0.f))};
  RunResult r = run_node(node);
  ASSERT_FALSE(r.ok());
  EXPECT_ERROR_MENTIONS(r, "Softmax node 'sm'");
  EXPECT_ERROR_MENTIONS(r, "axis 3");
}

ONYX_OP_TEST(Softmax, DeclinesIntegerInput) {
  NodeSpec node("Softmax", 13);
  node.inputs = {make_tensor<int32_t>({2}, {1, 2})};
  RunResult r = run_node(node);
  EXPECT_TRUE(r.declined);
  EXPECT_ERROR_MENTIONS(r, "int32");
}

ONYX_OP_TEST(Softmax, EmptyInputGivesEmptyOutput) {
  NodeSpec node("LogSoftmax", 13);
  node.inputs = {make_tensor<float>({0, 3}, {})};
  RunResult r = run_node(node);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].dims, (std::vector<int64_t>{0, 3}));
}

}  // namespace
}  // namespace onyx::test
