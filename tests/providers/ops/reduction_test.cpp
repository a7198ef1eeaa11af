// reduction_test.cpp: Reduce* and ArgMax/ArgMin against float64 references
// computed here, both axes forms, keepdims, noop_with_empty_axes, empty
// reductions, integer types, the threaded paths and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "kernel_harness.h"
#include "nn_test_util.h"
#include "test_providers.h"

namespace onyx::test {
namespace {

using Dims = std::vector<int64_t>;

std::vector<float> random_floats(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

struct Reducer {
  const char* op;
  double init;
  double (*step)(double acc, double x);
  double (*finish)(double acc, double count);
};

const Reducer kReducers[] = {
    {"ReduceSum", 0, [](double a, double x) { return a + x; }, [](double a, double) { return a; }},
    {"ReduceMean", 0, [](double a, double x) { return a + x; }, [](double a, double n) { return a / n; }},
    {"ReduceMax", -INFINITY, [](double a, double x) { return std::max(a, x); }, [](double a, double) { return a; }},
    {"ReduceMin", INFINITY, [](double a, double x) { return std::min(a, x); }, [](double a, double) { return a; }},
    {"ReduceProd", 1, [](double a, double x) { return a * x; }, [](double a, double) { return a; }},
    {"ReduceL1", 0, [](double a, double x) { return a + std::fabs(x); }, [](double a, double) { return a; }},
    {"ReduceL2", 0, [](double a, double x) { return a + x * x; }, [](double a, double) { return std::sqrt(a); }},
    {"ReduceLogSum", 0, [](double a, double x) { return a + x; }, [](double a, double) { return std::log(a); }},
    {"ReduceLogSumExp", 0, [](double a, double x) { return a + std::exp(x); },
     [](double a, double) { return std::log(a); }},
    {"ReduceSumSquare", 0, [](double a, double x) { return a + x * x; }, [](double a, double) { return a; }},
};

// Reference: every input element folded into the output element its kept
// coordinates select.
std::vector<double> reference(const Reducer& r, const Dims& dims, const std::vector<float>& x,
                              const std::vector<bool>& reduce, Dims* out_dims, bool keepdims) {
  out_dims->clear();
  for (size_t d = 0; d < dims.size(); ++d)
    if (!reduce[d]) out_dims->push_back(dims[d]);
    else if (keepdims) out_dims->push_back(1);
  int64_t out_count = 1, per_output = 1;
  for (size_t d = 0; d < dims.size(); ++d) (reduce[d] ? per_output : out_count) *= dims[d];
  std::vector<double> acc(size_t(out_count), r.init);
  for (size_t i = 0; i < x.size(); ++i) {
    int64_t rest = int64_t(i), out = 0, stride = 1;
    for (size_t d = dims.size(); d-- > 0;) {
      int64_t c = rest % dims[d];
      rest /= dims[d];
      if (reduce[d]) continue;
      out += c * stride;
      stride *= dims[d];
    }
    acc[size_t(out)] = r.step(acc[size_t(out)], x[i]);
  }
  for (double& a : acc) a = r.finish(a, double(per_output));
  return acc;
}

// The kernels accumulate float32 inputs in double and round once, so the
// result is within an ulp or two of the double reference: 1e-6 relative.
ONYX_PROVIDER_SUITE(Reduce);

ONYX_OP_TEST(Reduce, AllKindsAllAxesBothFormsMatchReference) {
  const Dims dims = {3, 4, 5};
  std::vector<float> x = random_floats(60, 1, 0.5f, 1.5f);  // positive: LogSum, Prod stay finite
  const std::vector<std::vector<int64_t>> axes_sets = {{}, {0}, {1}, {2}, {0, 2}, {-1, 0}, {0, 1, 2}};
  for (const Reducer& r : kReducers)
    for (const auto& axes : axes_sets)
      for (bool keepdims : {true, false})
        for (bool input_form : {false, true}) {
          bool sum = std::string(r.op) == "ReduceSum";
          NodeSpec node(r.op, input_form ? 18 : (sum ? 11 : 13));
          node.inputs = {make_tensor<float>(dims, x)};
          if (input_form && !axes.empty()) node.inputs.push_back(make_tensor<int64_t>({int64_t(axes.size())}, axes));
          if (!input_form && !axes.empty()) node.attr("axes", axes);
          node.attr("keepdims", int64_t{keepdims});
          RunResult res = run_node(node, {.threads = 2});
          ASSERT_TRUE(res.ok()) << r.op << ": " << res.error;
          std::vector<bool> reduce(3, axes.empty());
          for (int64_t a : axes) reduce[size_t(a < 0 ? a + 3 : a)] = true;
          Dims want_dims;
          std::vector<double> want = reference(r, dims, x, reduce, &want_dims, keepdims);
          ASSERT_EQ(res.outputs[0].dims, want_dims) << r.op;
          std::vector<float> y = res.outputs[0].values<float>();
          for (size_t i = 0; i < want.size(); ++i)
            ASSERT_NEAR(y[i], want[i], 1e-6 * std::fabs(want[i]) + 1e-7)
                << r.op << " axes " << ::testing::PrintToString(axes) << " keepdims " << keepdims << " at " << i;
        }
}

ONYX_OP_TEST(Reduce, NoopWithEmptyAxesReducesEachElementAlone) {
  std::vector<float> x = {-2, 0.5f, 3};
  NodeSpec node("ReduceSumSquare", 18);
  node.inputs = {make_tensor<float>({3}, x)};
  node.attr("noop_with_empty_axes", int64_t{1});
  RunResult r = run_node(node);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].dims, (Dims{3}));
  EXPECT_EQ(r.outputs[0].values<float>(), (std::vector<float>{4, 0.25f, 9}));
  // The same with an empty axes tensor given explicitly.
  NodeSpec sum("ReduceSum", 13);
  sum.inputs = {make_tensor<float>({3}, x), make_tensor<int64_t>({0}, {})};
  sum.attr("noop_with_empty_axes", int64_t{1});
  r = run_node(sum);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].values<float>(), x);
}

ONYX_OP_TEST(Reduce, EmptyReductionGivesIdentityElements) {
  const Dims dims = {2, 0, 3};
  struct Case {
    const char* op;
    float want;
  };
  for (const Case& c : {Case{"ReduceSum", 0}, Case{"ReduceProd", 1}, Case{"ReduceMax", -INFINITY},
                        Case{"ReduceMin", INFINITY}, Case{"ReduceLogSumExp", -INFINITY}}) {
    NodeSpec node(c.op, 18);
    node.inputs = {make_tensor<float>(dims, {}), make_tensor<int64_t>({1}, {1})};
    RunResult r = run_node(node);
    ASSERT_TRUE(r.ok()) << c.op << ": " << r.error;
    EXPECT_EQ(r.outputs[0].dims, (Dims{2, 1, 3})) << c.op;
    for (float v : r.outputs[0].values<float>()) EXPECT_EQ(v, c.want) << c.op;
  }
}

ONYX_OP_TEST(Reduce, IntegerTypes) {
  NodeSpec sum("ReduceSum", 13);
  sum.inputs = {make_tensor<int32_t>({2, 3}, {1, 2, 3, -4, 5, 7}), make_tensor<int64_t>({1}, {1})};
  sum.attr("keepdims", int64_t{0});
  RunResult r = run_node(sum);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].values<int32_t>(), (std::vector<int32_t>{6, 8}));

  NodeSpec mean("ReduceMean", 13);  // integer mean truncates, like numpy's astype
  mean.inputs = {make_tensor<int64_t>({2, 2}, {1, 2, -3, -4})};
  mean.attr("axes", std::vector<int64_t>{1});
  r = run_node(mean);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].values<int64_t>(), (std::vector<int64_t>{1, -3}));

  NodeSpec max("ReduceMax", 13);
  max.inputs = {make_tensor<uint8_t>({4}, {3, 250, 7, 0})};
  r = run_node(max);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].values<uint8_t>(), (std::vector<uint8_t>{250}));
}

// Large enough for several chunks on 4 threads, in both walks: reducing the
// last axis (contiguous runs) and the first (rows folded into accumulators).
ONYX_OP_TEST(Reduce, ThreadedLargeTensorBothWalks) {
  const Dims dims = {300, 700};
  std::vector<float> x = random_floats(210000, 5, -1, 1);
  for (int64_t axis : {0, 1}) {
    NodeSpec node("ReduceSum", 13);
    node.inputs = {make_tensor<float>(dims, x), make_tensor<int64_t>({1}, {axis})};
    RunResult r = run_node(node, {.threads = 4});
    ASSERT_TRUE(r.ok()) << r.error;
    std::vector<bool> reduce = {axis == 0, axis == 1};
    Dims want_dims;
    std::vector<double> want = reference(kReducers[0], dims, x, reduce, &want_dims, true);
    std::vector<float> y = r.outputs[0].values<float>();
    ASSERT_EQ(y.size(), want.size());
    // Sums of up to 700 values in [-1, 1]: the double accumulator is exact
    // to ~1e-13, rounding to float adds <= 2^-24 relative.
    const std::vector<double> tol = nn::provider_tol("ReduceSum", want, nn::rel_tol(want, 1e-6, 1e-6));
    EXPECT_TRUE(nn::all_near(y, want, tol)) << axis;
  }
}

// A bias gradient's reduction ([N, C, H, W] over N, H and W: few outputs,
// many runs) folds blocks of runs and merges them in a fixed order: every
// reducer matches the float64 reference, and 1, 2 and 4 threads give the
// same bits.
ONYX_OP_TEST(Reduce, FewOutputsOverManyRunsAnyThreadCount) {
  const Dims dims = {37, 3, 5, 7};  // 37 runs per output: blocks of 4 and 5
  std::vector<float> x = random_floats(37 * 3 * 5 * 7, 9, 0.5f, 1.5f);
  const std::vector<bool> reduce = {true, false, true, true};
  for (const Reducer& red : kReducers) {
    Dims want_dims;
    std::vector<double> want = reference(red, dims, x, reduce, &want_dims, false);
    std::vector<float> first;
    for (size_t threads : {1, 2, 4}) {
      NodeSpec node(red.op, 18);
      node.attr("keepdims", 0);
      node.inputs = {make_tensor<float>(dims, x), make_tensor<int64_t>({3}, {0, 2, 3})};
      RunResult r = run_node(node, {.threads = threads});
      ASSERT_TRUE(r.ok()) << red.op << ": " << r.error;
      std::vector<float> y = r.outputs[0].values<float>();
      const std::vector<double> tol = nn::provider_tol(red.op, want, nn::rel_tol(want, 1e-6, 1e-6));
      EXPECT_TRUE(nn::all_near(y, want, tol)) << red.op << " on " << threads << " threads";
      if (threads == 1) first = y;
      else EXPECT_EQ(std::memcmp(first.data(), y.data(), y.size() * sizeof(float)), 0)
          << red.op << ": " << threads << " threads differ from 1";
    }
  }
}

// Runs are folded in 8 lanes plus a tail: a NaN or an extreme in any lane
// or in the tail must reach the result, and an integer sum must still wrap.
ONYX_OP_TEST(Reduce, LanesAndTailOfContiguousRuns) {
  for (size_t at : {size_t(3), size_t(11), size_t(18)}) {  // first block, second block, tail
    std::vector<float> x(19);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 5) - 2;
    for (const char* op : {"ReduceMax", "ReduceMin"}) {
      std::vector<float> nan = x, extreme = x;
      nan[at] = NAN;
      extreme[at] = std::string(op) == "ReduceMax" ? 100.0f : -100.0f;
      for (const auto& [input, want] : {std::pair{nan, float(NAN)}, std::pair{extreme, extreme[at]}}) {
        NodeSpec node(op, 13);
        node.inputs = {make_tensor<float>({19}, input)};
        RunResult r = run_node(node);
        ASSERT_TRUE(r.ok()) << r.error;
        float got = r.outputs[0].values<float>()[0];
        if (std::isnan(want)) EXPECT_TRUE(std::isnan(got)) << op << " NaN at " << at;
        else EXPECT_EQ(got, want) << op << " at " << at;
      }
    }
  }
  NodeSpec wrap("ReduceSum", 13);  // 10 x 2^62 wraps to 2^63 in uint64: int64 min
  wrap.inputs = {make_tensor<int64_t>({10}, std::vector<int64_t>(10, int64_t(1) << 62))};
  RunResult r = run_node(wrap);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].values<int64_t>()[0], std::numeric_limits<int64_t>::min());
  NodeSpec prod("ReduceProd", 13);
  std::vector<float> twos(21, 2.0f);
  prod.inputs = {make_tensor<float>({21}, twos)};
  r = run_node(prod);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].values<float>()[0], float(1 << 21));
}

ONYX_OP_TEST(Reduce, Errors) {
  NodeSpec bad_axis("ReduceMax", 13);
  bad_axis.name = "rmax";
  bad_axis.inputs = {make_tensor<float>({2, 2}, {1, 2, 3, 4})};
  bad_axis.attr("axes", std::vector<int64_t>{2});
  RunResult r = run_node(bad_axis);
  ASSERT_FALSE(r.ok());
  EXPECT_ERROR_MENTIONS(r, "ReduceMax node 'rmax': axis 2 is out of range");

  NodeSpec repeated("ReduceSum", 13);
  repeated.inputs = {make_tensor<float>({2, 2}, {1, 2, 3, 4}), make_tensor<int64_t>({2}, {1, -1})};
  r = run_node(repeated);
  ASSERT_FALSE(r.ok());
  EXPECT_ERROR_MENTIONS(r, "repeated");

  NodeSpec float_axes("ReduceSum", 13);
  float_axes.inputs = {make_tensor<float>({2}, {1, 2}), make_tensor<float>({1}, {0})};
  EXPECT_TRUE(run_node(float_axes).declined);
}

ONYX_PROVIDER_SUITE(ArgMaxMin);

ONYX_OP_TEST(ArgMaxMin, KeepdimsLastIndexAndTies) {
  // [[1, 5, 5], [7, 2, 7]]
  HostTensor x = make_tensor<float>({2, 3}, {1, 5, 5, 7, 2, 7});
  struct Case {
    const char* op;
    int64_t axis, keepdims, last;
    Dims dims;
    std::vector<int64_t> want;
  };
  for (const Case& c : {Case{"ArgMax", 1, 1, 0, {2, 1}, {1, 0}}, Case{"ArgMax", -1, 0, 1, {2}, {2, 2}},
                        Case{"ArgMin", 0, 1, 0, {1, 3}, {0, 1, 0}}, Case{"ArgMax", 0, 0, 0, {3}, {1, 0, 1}}}) {
    NodeSpec node(c.op, 13);
    node.inputs = {x};
    node.attr("axis", c.axis).attr("keepdims", c.keepdims).attr("select_last_index", c.last);
    RunResult r = run_node(node);
    ASSERT_TRUE(r.ok()) << r.error;
    EXPECT_EQ(r.outputs[0].dtype, ONYX_DTYPE_INT64);
    EXPECT_EQ(r.outputs[0].dims, c.dims) << c.op << " axis " << c.axis;
    EXPECT_EQ(r.outputs[0].values<int64_t>(), c.want) << c.op << " axis " << c.axis;
  }
  NodeSpec bad("ArgMin", 13);
  bad.inputs = {x};
  bad.attr("axis", int64_t{2});
  RunResult r = run_node(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_ERROR_MENTIONS(r, "axis 2 is out of range");
}

}  // namespace
}  // namespace onyx::test
