// linalg_test.cpp: MatMul, Gemm, MatMulInteger and QLinearMatMul against
// float64 / exact integer reference loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "kernel_harness.h"
#include "test_providers.h"
#include "nn_test_util.h"

namespace onyx::test {
namespace {

using nn::all_near;

// numpy matmul in double (or exact integers through int64 wrap-around):
// y, the output dims, and per element the sum of |a b| (for tolerances).
struct MatRef {
  std::vector<int64_t> dims;
  std::vector<double> y, abs_sum;
  double k = 0;
};

MatRef matmul_ref(const std::vector<double>& a, std::vector<int64_t> ad,
                  const std::vector<double>& b, std::vector<int64_t> bd) {
  bool a1 = ad.size() == 1, b1 = bd.size() == 1;
  if (a1) ad.insert(ad.begin(), 1);
  if (b1) bd.push_back(1);
  int64_t m = ad[ad.size() - 2], k = ad.back(), n = bd.back();
  size_t rank = std::max(ad.size(), bd.size()) - 2;
  std::vector<int64_t> abatch(rank, 1), bbatch(rank, 1), batch(rank);
  std::copy(ad.begin(), ad.end() - 2, abatch.end() - (ad.size() - 2));
  std::copy(bd.begin(), bd.end() - 2, bbatch.end() - (bd.size() - 2));
  for (size_t i = 0; i < rank; ++i) batch[i] = std::max(abatch[i], bbatch[i]);
  MatRef r;
  r.k = double(k);
  r.dims = batch;
  if (!a1) r.dims.push_back(m);
  if (!b1) r.dims.push_back(n);
  nn::for_each_index(batch, [&](const std::vector<int64_t>& idx) {
    int64_t ai = 0, bi = 0;
    for (size_t i = 0; i < rank; ++i) {
      ai = ai * abatch[i] + (abatch[i] == 1 ? 0 : idx[i]);
      bi = bi * bbatch[i] + (bbatch[i] == 1 ? 0 : idx[i]);
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0, mag = 0;
        for (int64_t p = 0; p < k; ++p) {
          double t = a[size_t((ai * m + i) * k + p)] * b[size_t((bi * k + p) * n + j)];
          s += t;
          mag += std::fabs(t);
        }
        r.y.push_back(s);
        r.abs_sum.push_back(mag);
      }
  });
  return r;
}

// float32: nn::sum_tol (the gamma_k bound of a k-term float sum).
std::vector<double> f32_tol(const MatRef& r) {
  std::vector<double> t;
  for (double s : r.abs_sum) t.push_back(nn::sum_tol(r.k + 1, s));
  return t;
}

struct Shapes {
  std::vector<int64_t> a, b;
};

void PrintTo(const Shapes& s, std::ostream* os) {
  *os << ::testing::PrintToString(s.a) << " x " << ::testing::PrintToString(s.b);
}

std::vector<Shapes> matmul_cases() {
  return {Shapes{{3, 4}, {4, 5}}, Shapes{{17, 33}, {33, 19}},
          Shapes{{7}, {7}}, Shapes{{7}, {2, 7, 3}},
          Shapes{{2, 3, 4}, {4}}, Shapes{{2, 1, 3, 4}, {5, 4, 6}},
          Shapes{{5, 3, 4}, {4, 6}}, Shapes{{3, 4}, {3, 4, 5}},
          Shapes{{64, 3, 5}, {64, 5, 2}},
          Shapes{{2, 3, 0}, {0, 4}},
          Shapes{{1, 1, 9, 8}, {1, 8, 1}}};
}

ONYX_PROVIDER_CASE_SUITE(MatMulTest, Shapes, matmul_cases(), case_index<Shapes>);

ONYX_OP_TEST(MatMulTest, Float32MatchesReference) {
  const Shapes& s = test_case(self);
  std::vector<float> a = nn::random_floats(size_t(nn::count(s.a)), 41),
                     b = nn::random_floats(size_t(nn::count(s.b)), 42);
  MatRef want = matmul_ref(nn::to_double(a), s.a, nn::to_double(b), s.b);
  for (bool constant_b : {false, true})  // a constant B is packed at kernel creation
    for (size_t threads : {1, 4}) {
      NodeSpec node("MatMul", 13);
      node.inputs = {make_tensor<float>(s.a, a),
                     constant_b ? make_constant<float>(s.b, b) : make_tensor<float>(s.b, b)};
      RunResult r = run_node(node, {.threads = threads});
      ASSERT_TRUE(r.ok()) << r.error;
      ASSERT_EQ(r.outputs[0].dims, want.dims);
      EXPECT_TRUE(all_near(r.outputs[0].values<float>(), want.y, f32_tol(want)))
          << "constant B " << constant_b << ", threads " << threads;
    }
}

ONYX_OP_TEST(MatMulTest, Float64AndIntegersMatchReference) {
  const Shapes& s = test_case(self);
  std::vector<float> af = nn::random_floats(size_t(nn::count(s.a)), 43),
                     bf = nn::random_floats(size_t(nn::count(s.b)), 44);
  MatRef want = matmul_ref(nn::to_double(af), s.a, nn::to_double(bf), s.b);
  NodeSpec node("MatMul", 13);
  node.inputs = {make_tensor<double>(s.a, nn::to_double(af)),
                 make_tensor<double>(s.b, nn::to_double(bf))};
  RunResult r = run_node(node, {.threads = 2});
  ASSERT_TRUE(r.ok()) << r.error;
  // The same bound with the float64 unit roundoff 2^-53.
  std::vector<double> tol;
  for (double m : want.abs_sum) tol.push_back(2 * (want.k + 2) * std::ldexp(1.0, -53) * m + 1e-300);
  EXPECT_TRUE(all_near(r.outputs[0].values<double>(), want.y, tol));

  // Small integers: the products are exact, so the result must be too.
  std::vector<int32_t> ai, bi;
  for (float v : af) ai.push_back(int32_t(std::lround(v * 100)));
  for (float v : bf) bi.push_back(int32_t(std::lround(v * 100)));
  MatRef iwant = matmul_ref({ai.begin(), ai.end()}, s.a, {bi.begin(), bi.end()}, s.b);
  node.inputs = {make_tensor<int32_t>(s.a, ai), make_tensor<int32_t>(s.b, bi)};
  r = run_node(node);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_TRUE(all_near(r.outputs[0].values<int32_t>(), iwant.y, {0.0}));
  node.inputs = {make_tensor<int64_t>(s.a, {ai.begin(), ai.end()}),
                 make_tensor<int64_t>(s.b, {bi.begin(), bi.end()})};
  r = run_node(node);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_TRUE(all_near(r.outputs[0].values<int64_t>(), iwant.y, {0.0}));
}

ONYX_PROVIDER_SUITE(MatMul);

ONYX_OP_TEST(MatMul, IntegerProductsWrapAround) {
  // 2^31 - 1 times 2 wraps in int32 the way the hardware does (no UB).
  NodeSpec node("MatMul", 13);
  node.inputs = {make_tensor<int32_t>({1, 1}, {2147483647}), make_tensor<int32_t>({1, 1}, {2})};
  RunResult r = run_node(node);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].values<int32_t>(), std::vector<int32_t>{-2});
}

ONYX_OP_TEST(MatMul, ShapeErrors) {
  NodeSpec node("MatMul", 13);
  node.name = "mm";
  node.inputs = {make_tensor<float>({2, 3}, std::vector<float>(6)),
                 make_tensor<float>({4, 2}, std::vector<float>(8))};
  RunResult r = run_node(node);
  ASSERT_FALSE(r.ok());
  EXPECT_ERROR_MENTIONS(r, "MatMul node 'mm'");
  EXPECT_ERROR_MENTIONS(r, "inner dims");

  node.inputs = {make_tensor<float>({2, 2, 3}, std::vector<float>(12)),
                 make_tensor<float>({3, 3, 1}, std::vector<float>(9))};
  r = run_node(node);
  ASSERT_FALSE(r.ok());
  EXPECT_ERROR_MENTIONS(r, "batch dims");

  node.inputs = {make_scalar<float>(1), make_tensor<float>({1}, {1})};
  r = run_node(node);
  ASSERT_FALSE(r.ok());
  EXPECT_ERROR_MENTIONS(r, "rank");
}

// Gemm: Y = alpha op(A) op(B) + beta C.
struct GemmCase {
  bool ta, tb;
  std::vector<int64_t> c_dims;  // empty vector + has_c = scalar C
  bool has_c;
  double alpha, beta;
};

void PrintTo(const GemmCase& g, std::ostream* os) {
  *os << "transA " << g.ta << " transB " << g.tb << " C" << ::testing::PrintToString(g.c_dims);
}

std::vector<GemmCase> gemm_cases() {
  return {GemmCase{false, false, {5, 7}, true, 1, 1},
          GemmCase{true, false, {7}, true, 0.5, 2},
          GemmCase{false, true, {5, 1}, true, -1, 0.25},
          GemmCase{true, true, {1, 7}, true, 2, -1},
          GemmCase{false, false, {}, true, 1, 3},
          GemmCase{true, true, {}, false, 1.5, 1},
          GemmCase{false, false, {1}, true, 1, 1}};
}

ONYX_PROVIDER_CASE_SUITE(GemmTest, GemmCase, gemm_cases(), case_index<GemmCase>);

ONYX_OP_TEST(GemmTest, MatchesReference) {
  const GemmCase& g = test_case(self);
  const int64_t m = 5, n = 7, k = 9;
  std::vector<int64_t> ad = g.ta ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k};
  std::vector<int64_t> bd = g.tb ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n};
  std::vector<float> a = nn::random_floats(size_t(m * k), 51),
                     b = nn::random_floats(size_t(k * n), 52),
                     c = nn::random_floats(size_t(nn::count(g.c_dims)), 53);
  std::vector<double> want, tol;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0, mag = 0;
      for (int64_t p = 0; p < k; ++p) {
        double t = double(a[size_t(g.ta ? p * m + i : i * k + p)]) *
                   b[size_t(g.tb ? j * k + p : p * n + j)];
        s += t;
        mag += std::fabs(t);
      }
      double cv = 0;
      if (g.has_c) {
        size_t r = g.c_dims.size();
        int64_t ci = r == 2 && g.c_dims[0] > 1 ? i : 0, cj = r >= 1 && g.c_dims[r - 1] > 1 ? j : 0;
        cv = c[size_t(ci * (r >= 1 ? g.c_dims[r - 1] : 1) + cj)];
      }
      want.push_back(g.alpha * s + g.beta * cv);
      // The float32 sum bound, scaled by alpha, plus the rounding of beta * C.
      tol.push_back(std::fabs(g.alpha) * nn::sum_tol(double(k + 2), mag) +
                    4 * nn::kU32 * std::fabs(g.beta * cv));
    }
  for (bool constant_b : {false, true}) {
    NodeSpec node("Gemm", 13);
    node.attr("transA", int64_t(g.ta))
        .attr("transB", int64_t(g.tb))
        .attr("alpha", g.alpha)
        .attr("beta", g.beta);
    node.inputs = {make_tensor<float>(ad, a),
                   constant_b ? make_constant<float>(bd, b) : make_tensor<float>(bd, b)};
    if (g.has_c) node.inputs.push_back(make_tensor<float>(g.c_dims, c));
    RunResult r = run_node(node, {.threads = 3});
    ASSERT_TRUE(r.ok()) << r.error;
    EXPECT_EQ(r.outputs[0].dims, (std::vector<int64_t>{m, n}));
    EXPECT_TRUE(all_near(r.outputs[0].values<float>(), want, tol)) << "constant B " << constant_b;

    // float64 through the generic loop.
    node.inputs = {make_tensor<double>(ad, nn::to_double(a)),
                   make_tensor<double>(bd, nn::to_double(b))};
    if (g.has_c) node.inputs.push_back(make_tensor<double>(g.c_dims, nn::to_double(c)));
    r = run_node(node);
    ASSERT_TRUE(r.ok()) << r.error;
    EXPECT_TRUE(all_near(r.outputs[0].values<double>(), want, nn::rel_tol(want, 1e-14, 1e-14)));
  }
}

ONYX_PROVIDER_SUITE(Gemm);

ONYX_OP_TEST(Gemm, LegacyBroadcastAttribute) {
  // Before opset 7, C broadcasts only with broadcast = 1.
  NodeSpec node("Gemm", 6);
  node.inputs = {make_tensor<float>({2, 2}, {1, 2, 3, 4}), make_tensor<float>({2, 2}, {1, 0, 0, 1}),
                 make_tensor<float>({2}, {10, 20})};
  RunResult r = run_node(node);
  ASSERT_FALSE(r.ok());
  EXPECT_ERROR_MENTIONS(r, "broadcast=0");
  node.attr("broadcast", 1);
  r = run_node(node);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].values<float>(), (std::vector<float>{11, 22, 13, 24}));
}

ONYX_OP_TEST(Gemm, Errors) {
  NodeSpec node("Gemm", 13);
  node.inputs = {make_tensor<float>({2, 3}, std::vector<float>(6)),
                 make_tensor<float>({2, 3}, std::vector<float>(6))};
  RunResult r = run_node(node);
  ASSERT_FALSE(r.ok());
  EXPECT_ERROR_MENTIONS(r, "inner dims");
  node.inputs = {make_tensor<float>({1, 2, 3}, std::vector<float>(6)),
                 make_tensor<float>({3, 2}, std::vector<float>(6))};
  r = run_node(node);
  ASSERT_FALSE(r.ok());
  EXPECT_ERROR_MENTIONS(r, "matrices");
  node.inputs = {make_tensor<float>({2, 3}, std::vector<float>(6)),
                 make_tensor<float>({3, 2}, std::vector<float>(6)),
                 make_tensor<float>({3}, std::vector<float>(3))};
  r = run_node(node);
  ASSERT_FALSE(r.ok());
  EXPECT_ERROR_MENTIONS(r, "input 2 (C)");
}

ONYX_PROVIDER_SUITE(MatMulInteger);

ONYX_OP_TEST(MatMulInteger, ZeroPointsPerTensorRowAndColumn) {
  std::vector<uint8_t> a = {1, 200, 37, 4, 255, 0};   // [2, 3]
  std::vector<int8_t> b = {-128, 5, 127, -1, 3, 64};  // [3, 2]
  for (bool vectors : {false, true}) {
    std::vector<uint8_t> za = vectors ? std::vector<uint8_t>{3, 100} : std::vector<uint8_t>{3};
    std::vector<int8_t> zb = vectors ? std::vector<int8_t>{-2, 7} : std::vector<int8_t>{-2};
    std::vector<double> want;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) {
        double s = 0;
        for (int p = 0; p < 3; ++p)
          s += (double(a[size_t(i * 3 + p)]) - za[vectors ? size_t(i) : 0]) *
               (double(b[size_t(p * 2 + j)]) - zb[vectors ? size_t(j) : 0]);
        want.push_back(s);
      }
    NodeSpec node("MatMulInteger", 10);
    node.inputs = {make_tensor<uint8_t>({2, 3}, a), make_tensor<int8_t>({3, 2}, b),
                   make_tensor<uint8_t>({int64_t(za.size())}, za),
                   make_tensor<int8_t>({int64_t(zb.size())}, zb)};
    RunResult r = run_node(node);
    ASSERT_TRUE(r.ok()) << r.error;
    EXPECT_TRUE(all_near(r.outputs[0].values<int32_t>(), want, {0.0}));
  }
}

ONYX_PROVIDER_SUITE(QLinearMatMul);

ONYX_OP_TEST(QLinearMatMul, RequantizesWithRoundHalfToEven) {
  // a: uint8, zero 10, scale 0.5; b: uint8, zero 3, scale 0.25; y: uint8,
  // zero 5, scale 0.25: y = sum / 2 + 5, so odd sums land on .5 ties.
  std::vector<uint8_t> a = {10, 12, 11, 255, 0, 14}, b = {3, 4, 5, 9, 0, 255};
  std::vector<double> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      double s = 0;
      for (int p = 0; p < 3; ++p) s += (a[size_t(i * 3 + p)] - 10.0) * (b[size_t(p * 2 + j)] - 3.0);
      want.push_back(std::clamp(std::nearbyint(s * 0.5 * 0.25 / 0.25) + 5, 0.0, 255.0));
    }
  NodeSpec node("QLinearMatMul", 10);
  node.inputs = {make_tensor<uint8_t>({2, 3}, a), make_scalar<float>(0.5f),
                 make_scalar<uint8_t>(10),        make_tensor<uint8_t>({3, 2}, b),
                 make_scalar<float>(0.25f),       make_scalar<uint8_t>(3),
                 make_scalar<float>(0.25f),       make_scalar<uint8_t>(5)};
  RunResult r = run_node(node);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_TRUE(all_near(r.outputs[0].values<uint8_t>(), want, {0.0}));
}

}  // namespace
}  // namespace onyx::test
