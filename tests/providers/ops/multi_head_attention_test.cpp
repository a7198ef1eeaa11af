// multi_head_attention_test.cpp: com.microsoft MultiHeadAttention (query,
// key, value, attention_bias), the node the core's attention fusion writes,
// against a float64 reference on every provider that runs it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "kernel_harness.h"
#include "nn_test_util.h"
#include "test_providers.h"

namespace onyx::test {
namespace {

struct Case {
  int64_t batch, q_len, kv_len, heads, size, v_size;
  std::vector<int64_t> bias;  // attention_bias dims; empty: none
  bool scale = false;         // a scale attribute (else 1 / sqrt(size))
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << "B" << c.batch << " S" << c.q_len << " L" << c.kv_len << " H" << c.heads << " d" << c.size << " dv"
      << c.v_size << " bias " << ::testing::PrintToString(c.bias) << (c.scale ? " scale" : "");
}

std::vector<Case> cases() {
  return {Case{2, 3, 4, 2, 3, 2, {}, false},
          Case{2, 3, 4, 2, 3, 2, {3, 4}, false},          // one row per query (a causal-style mask)
          Case{2, 5, 7, 3, 4, 4, {2, 1, 1, 7}, true},     // BERT's padding mask
          Case{1, 4, 4, 2, 8, 8, {1, 2, 4, 4}, false},    // per head
          Case{3, 1, 6, 4, 16, 8, {}, true},              // one query (decoding)
          Case{1, 5, 13, 2, 12, 70, {1, 2, 5, 13}, false},   // head sizes past a vector and a GEMM panel
          Case{1, 70, 80, 2, 8, 4, {1, 1, 70, 80}, false}};  // longer sequences, a per-query mask
}

ONYX_PROVIDER_CASE_SUITE(MultiHeadAttentionTest, Case, cases(), case_index<Case>);

// softmax(scale * q k^T + bias) v per batch and head, in double.
std::vector<double> reference(const Case& c, const std::vector<float>& q, const std::vector<float>& k,
                              const std::vector<float>& v, const std::vector<float>& bias, double scale) {
  const int64_t B = c.batch, S = c.q_len, L = c.kv_len, H = c.heads, d = c.size, dv = c.v_size;
  std::vector<int64_t> bd(4 - c.bias.size(), 1);
  bd.insert(bd.end(), c.bias.begin(), c.bias.end());
  std::vector<double> y(size_t(B * S * H * dv));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < S; ++i) {
        std::vector<double> w(static_cast<size_t>(L));
        double max = -1e300, sum = 0;
        for (int64_t j = 0; j < L; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < d; ++e)
            dot += double(q[size_t((b * S + i) * H * d + h * d + e)]) * k[size_t((b * L + j) * H * d + h * d + e)];
          w[size_t(j)] = scale * dot;
          if (!bias.empty()) {
            const int64_t at[4] = {b, h, i, j};
            int64_t index = 0;
            for (size_t a = 0; a < 4; ++a) index = index * bd[a] + (bd[a] == 1 ? 0 : at[a]);
            w[size_t(j)] += bias[size_t(index)];
          }
          max = std::max(max, w[size_t(j)]);
        }
        for (double& x : w) sum += (x = std::exp(x - max));
        for (int64_t e = 0; e < dv; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < L; ++j) acc += w[size_t(j)] / sum * v[size_t((b * L + j) * H * dv + h * dv + e)];
          y[size_t((b * S + i) * H * dv + h * dv + e)] = acc;
        }
      }
  return y;
}

NodeSpec attention_node(const Case& c) {
  NodeSpec node("MultiHeadAttention", 1);
  node.domain = "com.microsoft";
  node.attr("num_heads", c.heads);
  if (c.scale) node.attr("scale", 0.3f);
  return node;
}

// Tolerance: float32 dot products of <= 16 terms of values <= 2 (sums to ~64,
// a few ulp of that after scaling), a softmax over <= 7 terms (~24 u
// relative, softmax_test.cpp) and sums of <= 7 products of weights and values
// <= 1: 2e-5 absolute on outputs of magnitude <= 1 covers every order of
// summation. A wrong scale, bias axis or head offset moves outputs by > 1e-2.
ONYX_OP_TEST(MultiHeadAttentionTest, MatchesFloat64Reference) {
  const Case& c = test_case(self);
  const int64_t B = c.batch, S = c.q_len, L = c.kv_len, H = c.heads;
  const std::vector<float> q = nn::random_floats(size_t(B * S * H * c.size), 30, -2, 2);
  const std::vector<float> k = nn::random_floats(size_t(B * L * H * c.size), 31, -2, 2);
  const std::vector<float> v = nn::random_floats(size_t(B * L * H * c.v_size), 32, -1, 1);
  const std::vector<float> bias = c.bias.empty() ? std::vector<float>{} : nn::random_floats(size_t(nn::count(c.bias)), 33, -3, 0);
  const double scale = c.scale ? as_onnx_float(0.3) : 1.0 / std::sqrt(double(c.size));
  const std::vector<double> want = reference(c, q, k, v, bias, scale);
  for (size_t threads : {1, 3}) {
    NodeSpec node = attention_node(c);
    node.inputs = {make_tensor<float>({B, S, H * c.size}, q), make_tensor<float>({B, L, H * c.size}, k),
                   make_tensor<float>({B, L, H * c.v_size}, v)};
    if (!c.bias.empty()) {
      node.inputs.push_back(omitted());
      node.inputs.push_back(omitted());
      node.inputs.push_back(make_tensor<float>(c.bias, bias));
    }
    RunResult r = run_node(node, {.threads = threads});
    ASSERT_TRUE(r.ok()) << r.error;
    EXPECT_EQ(r.outputs[0].dims, (std::vector<int64_t>{B, S, H * c.v_size}));
    EXPECT_TRUE(nn::all_near(r.outputs[0].values<float>(), want, {2e-5})) << "threads " << threads;
  }
}

// Packed QKV (ORT's form, the core's qkv_packing writes it): query
// [B, S, H, 3, d] alone, the same q, k and v interleaved per token and head;
// the same reference and tolerance (self-attention: S = L, d = dv).
ONYX_OP_TEST(MultiHeadAttentionTest, PackedQkvMatchesFloat64Reference) {
  Case c = test_case(self);
  c.kv_len = c.q_len;
  c.v_size = c.size;
  if (!c.bias.empty()) c.bias.back() = c.kv_len;  // keys are the queries now
  const int64_t B = c.batch, S = c.q_len, H = c.heads, d = c.size;
  const std::vector<float> q = nn::random_floats(size_t(B * S * H * d), 40, -2, 2);
  const std::vector<float> k = nn::random_floats(size_t(B * S * H * d), 41, -2, 2);
  const std::vector<float> v = nn::random_floats(size_t(B * S * H * d), 42, -1, 1);
  const std::vector<float> bias = c.bias.empty() ? std::vector<float>{} : nn::random_floats(size_t(nn::count(c.bias)), 43, -3, 0);
  const double scale = c.scale ? as_onnx_float(0.3) : 1.0 / std::sqrt(double(d));
  const std::vector<double> want = reference(c, q, k, v, bias, scale);
  std::vector<float> packed(size_t(B * S * H * 3 * d));
  for (int64_t t = 0; t < B * S; ++t)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t e = 0; e < d; ++e) {
        const size_t from = size_t((t * H + h) * d + e), to = size_t(((t * H + h) * 3) * d + e);
        packed[to] = q[from];
        packed[to + size_t(d)] = k[from];
        packed[to + 2 * size_t(d)] = v[from];
      }
  for (size_t threads : {1, 3}) {
    NodeSpec node = attention_node(c);
    node.inputs = {make_tensor<float>({B, S, H, 3, d}, packed), omitted(), omitted()};
    if (!c.bias.empty()) node.inputs.insert(node.inputs.end(), {omitted(), omitted(), make_tensor<float>(c.bias, bias)});
    RunResult r = run_node(node, {.threads = threads});
    ASSERT_TRUE(r.ok()) << r.error;
    EXPECT_EQ(r.outputs[0].dims, (std::vector<int64_t>{B, S, H * d}));
    EXPECT_TRUE(nn::all_near(r.outputs[0].values<float>(), want, {2e-5})) << "threads " << threads;
  }
}

ONYX_PROVIDER_SUITE(MultiHeadAttention);

// Shapes that only turn out wrong when the node runs are errors naming them.
ONYX_OP_TEST(MultiHeadAttention, MismatchedShapesAreErrors) {
  const Case c{1, 3, 4, 2, 3, 2, {}, false};
  auto run = [&](std::vector<int64_t> q, std::vector<int64_t> k, std::vector<int64_t> v, std::vector<int64_t> bias) {
    NodeSpec node = attention_node(c);
    node.inputs = {make_tensor<float>(q, std::vector<float>(size_t(nn::count(q)), 0.5f)),
                   make_tensor<float>(k, std::vector<float>(size_t(nn::count(k)), 0.5f)),
                   make_tensor<float>(v, std::vector<float>(size_t(nn::count(v)), 0.5f))};
    if (!bias.empty())
      node.inputs.insert(node.inputs.end(),
                         {omitted(), omitted(), make_tensor<float>(bias, std::vector<float>(size_t(nn::count(bias)), 0.f))});
    return run_node(node);
  };
  EXPECT_ERROR_MENTIONS(run({1, 3, 6}, {1, 4, 6}, {1, 5, 4}, {}), "must be [B, S, D]");  // 4 keys, 5 values
  EXPECT_ERROR_MENTIONS(run({1, 3, 5}, {1, 4, 5}, {1, 4, 4}, {}), "multiples of num_heads");  // 5 over 2 heads
  EXPECT_ERROR_MENTIONS(run({1, 3, 6}, {1, 4, 6}, {1, 4, 4}, {2, 4}), "does not broadcast");  // 2 rows, 3 queries
  // Packed QKV whose heads or q/k/v axis do not match num_heads 2 and 3.
  for (const std::vector<int64_t>& q : {std::vector<int64_t>{1, 3, 3, 3, 2}, std::vector<int64_t>{1, 3, 2, 2, 2}}) {
    NodeSpec node = attention_node(c);
    node.inputs = {make_tensor<float>(q, std::vector<float>(size_t(nn::count(q)), 0.5f)), omitted(), omitted()};
    EXPECT_ERROR_MENTIONS(run_node(node), "packed QKV");
  }
}

}  // namespace
}  // namespace onyx::test
