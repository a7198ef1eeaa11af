// quantized_gemm_test.cpp: com.microsoft QGemm and DynamicQuantizeMatMul
// against float64 references built from their documented semantics.
// QGemm's quantized output must match exactly (integer sums, one float64
// rounding with the same multiplier); float outputs are one float64 value
// rounded to float32 (relative 2^-24). DynamicQuantizeMatMul's reference
// quantizes A itself the way DynamicQuantizeLinear specifies (float32), so
// the integer sums are exact and only the final float32 rounding differs.
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernel_harness.h"
#include "nn_test_util.h"
#include "test_providers.h"

namespace onyx::test {
namespace {

template <typename T>
std::vector<T> random_ints(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<T> v(n);
  for (T& x : v) x = T(rng());
  return v;
}

// One float32 rounding of each float64 value: |error| <= u * |value|.
std::vector<double> relative(const std::vector<double>& want, double u) {
  std::vector<double> tol;
  for (double w : want) tol.push_back(u * std::fabs(w));
  return tol;
}

ONYX_PROVIDER_SUITE(QGemm);

ONYX_OP_TEST(QGemm, QuantizedAndFloatOutputsWithBiasTransposesAndPerColumnScales) {
  const int64_t m = 5, k = 19, n = 21;
  for (bool trans_a : {false, true})
    for (bool trans_b : {false, true})
      for (bool quantized_out : {false, true})
        for (int c_kind : {0, 1, 2}) {  // C absent, [N], [M, N]
          SCOPED_TRACE(testing::Message() << "transA " << trans_a << " transB " << trans_b << " quantized "
                                          << quantized_out << " C kind " << c_kind);
          auto a = random_ints<uint8_t>(size_t(m * k), 1), za = std::vector<uint8_t>{117};
          auto b = random_ints<int8_t>(size_t(k * n), 2);
          std::vector<int8_t> zb(static_cast<size_t>(n));
          std::vector<float> sb(static_cast<size_t>(n));
          for (int64_t j = 0; j < n; ++j) zb[size_t(j)] = int8_t(j % 3 - 1), sb[size_t(j)] = 0.001f * float(1 + j % 4);
          std::vector<int32_t> c = random_ints<int32_t>(size_t(c_kind == 2 ? m * n : n), 3);
          for (int32_t& v : c) v %= 5000;
          const float alpha = 0.75f, sa = 0.05f, sy = 0.4f;
          const uint8_t zy = 100;
          // A' is m x k; stored transposed when trans_a (and B' likewise).
          auto at = [&](int64_t i, int64_t p) { return int64_t(a[size_t(trans_a ? p * m + i : i * k + p)]); };
          auto bt = [&](int64_t p, int64_t j) { return int64_t(b[size_t(trans_b ? j * k + p : p * n + j)]); };
          std::vector<double> want;
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
              int64_t sum = 0;
              for (int64_t p = 0; p < k; ++p) sum += (at(i, p) - za[0]) * (bt(p, j) - zb[size_t(j)]);
              if (c_kind) sum += c[size_t(c_kind == 2 ? i * n + j : j)];
              double real = double(sum) * (double(alpha) * double(sa) * double(sb[size_t(j)]) / (quantized_out ? double(sy) : 1.0));
              want.push_back(quantized_out ? std::clamp(std::nearbyint(real) + zy, 0.0, 255.0) : real);
            }
          NodeSpec node("QGemm");
          node.domain = "com.microsoft";
          node.opset = 1;
          node.attr("alpha", double(alpha)).attr("transA", int64_t(trans_a)).attr("transB", int64_t(trans_b));
          node.inputs = {make_tensor<uint8_t>(trans_a ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k}, a),
                         make_scalar<float>(sa), make_scalar<uint8_t>(za[0]),
                         make_constant<int8_t>(trans_b ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n}, b),
                         make_constant<float>({n}, sb), make_constant<int8_t>({n}, zb)};
          node.inputs.push_back(c_kind == 0 ? omitted()
                                : c_kind == 1 ? make_tensor<int32_t>({n}, c)
                                              : make_tensor<int32_t>({m, n}, c));
          if (quantized_out) node.inputs.insert(node.inputs.end(), {make_scalar<float>(sy), make_scalar<uint8_t>(zy)});
          RunResult r = run_node(node);
          ASSERT_TRUE(r.ok()) << r.error;
          ASSERT_EQ(r.outputs[0].dims, (std::vector<int64_t>{m, n}));
          if (quantized_out)
            EXPECT_TRUE(nn::all_near(r.outputs[0].values<uint8_t>(), want, {0.0}));
          else
            EXPECT_TRUE(nn::all_near(r.outputs[0].values<float>(), want, relative(want, nn::kU32)));
        }
}

ONYX_OP_TEST(QGemm, CThatDoesNotBroadcastIsAnError) {
  NodeSpec node("QGemm");
  node.domain = "com.microsoft";
  node.opset = 1;
  node.inputs = {make_tensor<uint8_t>({2, 3}, std::vector<uint8_t>(6, 1)), make_scalar<float>(1), make_scalar<uint8_t>(0),
                 make_tensor<int8_t>({3, 4}, std::vector<int8_t>(12, 1)), make_scalar<float>(1), make_scalar<int8_t>(0),
                 make_tensor<int32_t>({3}, {1, 2, 3})};
  RunResult r = run_node(node);
  EXPECT_ERROR_MENTIONS(r, "does not broadcast");
}

ONYX_PROVIDER_SUITE(DynamicQuantizeMatMul);

// constants: 0, B and its parameters are run-time tensors; 1, B is a
// constant; 2, everything but A is (what the fusion makes, and all that the
// oneDNN provider claims).
void check_dynamic_quantize_matmul(int64_t batch, int64_t m, int64_t k, int64_t n, std::initializer_list<int> constants);

// A small product, and one whose A (153,600 values) is quantized in
// parallel chunks: the range and the codes must not depend on the split.
ONYX_OP_TEST(DynamicQuantizeMatMul, MatchesDynamicQuantizeLinearThenIntegerProduct) {
  for (const auto [batch, m, k, n] : {std::array<int64_t, 4>{2, 3, 33, 10}, std::array<int64_t, 4>{4, 150, 256, 40}}) {
    SCOPED_TRACE("m=" + std::to_string(batch * m) + " k=" + std::to_string(k));
    check_dynamic_quantize_matmul(batch, m, k, n, {0, 1});
  }
}

ONYX_OP_TEST(DynamicQuantizeMatMul, ConstantParametersMatchTheChainBitForBit) {
  for (const auto [batch, m, k, n] : {std::array<int64_t, 4>{2, 3, 33, 10}, std::array<int64_t, 4>{4, 150, 256, 40}}) {
    SCOPED_TRACE("m=" + std::to_string(batch * m) + " k=" + std::to_string(k));
    check_dynamic_quantize_matmul(batch, m, k, n, {2});
  }
}

void check_dynamic_quantize_matmul(int64_t batch, int64_t m, int64_t k, int64_t n, std::initializer_list<int> variants) {
  std::vector<float> a = nn::random_floats(size_t(batch * m * k), 4, -2.0f, 3.0f);
  auto b = random_ints<int8_t>(size_t(k * n), 5);
  // Weights minus their zero point (-5 .. 34) kept within int8 where B is
  // constant with its parameters: a provider may fold the zero point into
  // int8 weights (oneDNN does), as symmetric quantizers' weights allow.
  if (std::find(variants.begin(), variants.end(), 2) != variants.end())
    for (int8_t& v : b) v = std::clamp<int8_t>(v, -90, 90);
  std::vector<float> sb(static_cast<size_t>(n)), bias(static_cast<size_t>(n));
  std::vector<int8_t> zb(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) sb[size_t(j)] = 0.01f * float(1 + j), bias[size_t(j)] = float(j) - 4.5f, zb[size_t(j)] = int8_t(j - 5);
  // DynamicQuantizeLinear as its kernel computes it (the float32 scale of the
  // exact range, the zero point from that scale).
  float lo = 0, hi = 0;
  for (float v : a) lo = std::min(lo, v), hi = std::max(hi, v);
  const float scale = float((double(hi) - double(lo)) / 255.0);
  const float zero = float(std::clamp(std::nearbyint(-double(lo) / double(scale)), 0.0, 255.0));
  // Then Cast, Mul by a_scale * b_scale and Add bias, in float32 as those
  // ops compute them: the graph optimizer fuses that chain into this node,
  // which must give the chain's values bit for bit.
  std::vector<float> want;
  for (int64_t i = 0; i < batch * m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int64_t sum = 0;
      for (int64_t p = 0; p < k; ++p) {
        const float q = std::clamp(std::nearbyint(a[size_t(i * k + p)] / scale) + zero, 0.0f, 255.0f);
        sum += (int64_t(q) - int64_t(zero)) * (b[size_t(p * n + j)] - zb[size_t(j)]);
      }
      want.push_back(float(sum) * (scale * sb[size_t(j)]) + bias[size_t(j)]);
    }
  for (int constants : variants) {
    NodeSpec node("DynamicQuantizeMatMul");
    node.domain = "com.microsoft";
    node.opset = 1;
    node.inputs = {make_tensor<float>({batch, m, k}, a),
                   constants ? make_constant<int8_t>({k, n}, b) : make_tensor<int8_t>({k, n}, b),
                   constants == 2 ? make_constant<float>({n}, sb) : make_tensor<float>({n}, sb),
                   constants == 2 ? make_constant<int8_t>({n}, zb) : make_tensor<int8_t>({n}, zb),
                   constants == 2 ? make_constant<float>({n}, bias) : make_tensor<float>({n}, bias)};
    RunResult r = run_node(node, RunOptions{.threads = 2});
    ASSERT_TRUE(r.ok()) << r.error;
    ASSERT_EQ(r.outputs[0].dims, (std::vector<int64_t>{batch, m, n}));
    EXPECT_EQ(r.outputs[0].values<float>(), want);
  }
}

}  // namespace
}  // namespace onyx::test
