// quantized_ops_test.cpp: the com.microsoft operator-form quantized ops
// (QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu,
// QLinearAveragePool, QLinearGlobalAveragePool, QLinearConcat) against a
// float64 reference: dequantize, the float64 op, quantize with round half to
// even and saturation. Then the bad-input errors of these ops and of
// QuantizeLinear / DequantizeLinear: each must name the node and the problem.
//
// Tolerance (codes_match): the table-driven ops (unary, concat) evaluate the
// reference formula itself, so they must match exactly. QLinearAdd/Mul
// compute a float64 affine form of the codes with the scale ratios folded
// (vectorized), and the pools divide once instead of twice; both round
// differently from the reference's own float64 steps, by ~1e-13 of a step,
// so they can disagree only where the real result lies that close to a
// half-way point. There either neighbouring code is a correct rounding of
// the float64 computation, so such an element may be off by one; random
// codes put far less than 1% of elements there, which the check allows and
// no more.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernel_harness.h"
#include "nn_test_util.h"
#include "test_providers.h"

namespace onyx::test {
namespace {

using nn::count;
using nn::for_each_index;

// One per-tensor quantization: real = (code - zero) * scale.
struct QP {
  float scale;
  int zero;
};

template <typename T>
double quantize(double real, const QP& q) {
  const double lo = std::is_signed_v<T> ? -128 : 0, hi = std::is_signed_v<T> ? 127 : 255;
  return std::clamp(std::nearbyint(real / double(q.scale)) + q.zero, lo, hi);
}
double dequantize(double code, const QP& q) { return (code - q.zero) * double(q.scale); }

template <typename T>
std::vector<T> random_codes(int64_t n, std::mt19937& rng) {
  std::vector<T> v(static_cast<size_t>(n));
  for (T& x : v) x = T(rng());
  return v;
}

template <typename T>
std::vector<double> as_doubles(const std::vector<T>& v) {
  return {v.begin(), v.end()};
}

// See the file comment: every code within one of the reference, and
// (unless exact) at most 1% of them off by one.
::testing::AssertionResult codes_match(const std::vector<double>& got, const std::vector<double>& want, bool exact) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " != expected " << want.size();
  size_t off = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = std::fabs(got[i] - want[i]);
    if (d == 0) continue;
    if (d > 1 || exact)
      return ::testing::AssertionFailure() << "element " << i << ": got " << got[i] << ", expected " << want[i];
    ++off;
  }
  if (double(off) > 0.01 * double(got.size()))
    return ::testing::AssertionFailure() << off << " of " << got.size() << " elements are off by one";
  return ::testing::AssertionSuccess();
}

NodeSpec microsoft(const std::string& op) {
  NodeSpec node(op, 1);
  node.domain = "com.microsoft";
  return node;
}

// ---------------------------------------------------------------------------
// QLinearAdd, QLinearMul

std::vector<int64_t> broadcast_dims(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t k = 0; k < rank; ++k) {
    const int64_t da = k < rank - a.size() ? 1 : a[k - (rank - a.size())];
    const int64_t db = k < rank - b.size() ? 1 : b[k - (rank - b.size())];
    out[k] = da == 1 ? db : da;
  }
  return out;
}

// The flat index into `dims` (right-aligned, size-1 dims broadcast) of output position `pos`.
int64_t source_index(const std::vector<int64_t>& dims, const std::vector<int64_t>& pos) {
  int64_t index = 0;
  const size_t skip = pos.size() - dims.size();
  for (size_t k = 0; k < dims.size(); ++k) index = index * dims[k] + (dims[k] == 1 ? 0 : pos[skip + k]);
  return index;
}

template <typename T>
void check_binary(bool mul, const std::vector<int64_t>& a_dims, const std::vector<int64_t>& b_dims, size_t threads,
                  bool omit_zero_points) {
  SCOPED_TRACE(std::string(mul ? "QLinearMul" : "QLinearAdd") + (std::is_signed_v<T> ? " int8" : " uint8") + " a" +
               ::testing::PrintToString(a_dims) + " b" + ::testing::PrintToString(b_dims) + " threads " +
               std::to_string(threads) + (omit_zero_points ? " no zero points" : ""));
  std::mt19937 rng(uint32_t(a_dims.size() * 31 + b_dims.size() * 7 + (mul ? 1 : 0)));
  const bool s = std::is_signed_v<T>;
  const int za = omit_zero_points ? 0 : (s ? -3 : 128), zb = omit_zero_points ? 0 : (s ? 5 : 101);
  const int zc = omit_zero_points ? 0 : (s ? 2 : 131);
  // Non-dyadic scales: exact ties are rare. Mul's output step is coarser so
  // that products mostly stay in range (some still saturate).
  const QP qa{0.05f, za}, qb{0.031f, zb}, qc{mul ? 0.9f : 0.07f, zc};
  const std::vector<T> a = random_codes<T>(count(a_dims), rng), b = random_codes<T>(count(b_dims), rng);

  NodeSpec node = microsoft(mul ? "QLinearMul" : "QLinearAdd");
  auto zero = [&](int z) { return omit_zero_points ? omitted() : make_scalar<T>(T(z)); };
  node.inputs = {make_tensor<T>(a_dims, a),   make_scalar<float>(qa.scale), zero(za),
                 make_tensor<T>(b_dims, b),   make_scalar<float>(qb.scale), zero(zb),
                 make_scalar<float>(qc.scale), zero(zc)};
  if (omit_zero_points) node.inputs.pop_back();  // a trailing optional input may also be left off
  RunResult r = run_node(node, RunOptions{.threads = threads});
  ASSERT_TRUE(r.ok()) << r.error;

  const std::vector<int64_t> out_dims = broadcast_dims(a_dims, b_dims);
  std::vector<double> want;
  for_each_index(out_dims, [&](const std::vector<int64_t>& pos) {
    const double x = dequantize(a[size_t(source_index(a_dims, pos))], qa);
    const double y = dequantize(b[size_t(source_index(b_dims, pos))], qb);
    want.push_back(quantize<T>(mul ? x * y : x + y, qc));
  });
  ASSERT_EQ(r.outputs[0].dims, out_dims);
  EXPECT_EQ(r.outputs[0].dtype, node.inputs[0].dtype);
  EXPECT_TRUE(codes_match(r.outputs[0].as_doubles(), want, false));
}

const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> kBinaryShapes = {
    {{2, 3, 17, 5}, {2, 3, 17, 5}},   // same shape: one long run
    {{2, 8, 5, 5}, {1, 8, 1, 1}},     // per-channel B
    {{3, 1, 6}, {4, 1}},              // both broadcast
    {{7, 33}, {}},                    // scalar B
    {{1}, {4, 1, 6}},                 // one-element A
    {{4097}, {4097}},                 // long enough to split between threads
};

ONYX_PROVIDER_SUITE(QLinearOps);

ONYX_OP_TEST(QLinearOps, AddAndMulMatchFloat64Reference) {
  for (bool mul : {false, true})
    for (const auto& [a, b] : kBinaryShapes) {
      check_binary<uint8_t>(mul, a, b, 1, false);
      check_binary<int8_t>(mul, a, b, 3, false);
    }
}

ONYX_OP_TEST(QLinearOps, AddAndMulWithoutZeroPoints) {
  for (bool mul : {false, true}) {
    check_binary<uint8_t>(mul, {3, 5, 7}, {5, 1}, 1, true);
    check_binary<int8_t>(mul, {3, 5, 7}, {7}, 2, true);
  }
}

// A scale ratio so large that the vectorized rounding's range (2^30) could
// be exceeded takes the kernel's clamping path: codes saturate, no garbage.
ONYX_OP_TEST(QLinearOps, HugeScaleRatiosSaturate) {
  for (const char* op : {"QLinearAdd", "QLinearMul"}) {
    NodeSpec node = microsoft(op);
    node.inputs = {make_tensor<int8_t>({4}, {0, 1, -1, 127}), make_scalar<float>(1e6f), make_scalar<int8_t>(0),
                   make_tensor<int8_t>({4}, {1, 1, 1, 1}),    make_scalar<float>(1e3f), make_scalar<int8_t>(0),
                   make_scalar<float>(1e-3f),                 make_scalar<int8_t>(10)};
    RunResult r = run_node(node);
    ASSERT_TRUE(r.ok()) << r.error;
    std::vector<double> want;
    for (int a : {0, 1, -1, 127}) {
      const double real = std::string(op) == "QLinearAdd" ? a * 1e6 + 1e3 : a * 1e6 * 1e3;
      want.push_back(quantize<int8_t>(real, {1e-3f, 10}));
    }
    EXPECT_TRUE(codes_match(r.outputs[0].as_doubles(), want, true)) << op;
  }
}

// ---------------------------------------------------------------------------
// QLinearSigmoid, QLinearLeakyRelu

template <typename T>
void check_unary(const std::string& op) {
  SCOPED_TRACE(op + (std::is_signed_v<T> ? " int8" : " uint8"));
  const bool s = std::is_signed_v<T>;
  const QP qx{0.043f, s ? 7 : 120}, qy = op == "QLinearSigmoid" ? QP{1.0f / 256, s ? -128 : 0} : QP{0.037f, s ? 30 : 160};
  const double alpha = as_onnx_float(0.13);
  // Every code, then random ones in a tensor long enough to be split.
  std::vector<T> x;
  for (int v = s ? -128 : 0; v <= (s ? 127 : 255); ++v) x.push_back(T(v));
  std::mt19937 rng(11);
  for (T v : random_codes<T>(40000, rng)) x.push_back(v);
  NodeSpec node = microsoft(op);
  if (op == "QLinearLeakyRelu") node.attr("alpha", 0.13);
  node.inputs = {make_tensor<T>({int64_t(x.size())}, x), make_scalar<float>(qx.scale), make_scalar<T>(T(qx.zero)),
                 make_scalar<float>(qy.scale), make_scalar<T>(T(qy.zero))};
  RunResult r = run_node(node, RunOptions{.threads = 3});
  ASSERT_TRUE(r.ok()) << r.error;
  std::vector<double> want;
  for (T v : x) {
    const double real = dequantize(v, qx);
    want.push_back(quantize<T>(op == "QLinearSigmoid" ? 1 / (1 + std::exp(-real)) : real >= 0 ? real : alpha * real, qy));
  }
  EXPECT_TRUE(codes_match(r.outputs[0].as_doubles(), want, true));
}

ONYX_OP_TEST(QLinearOps, SigmoidAndLeakyReluAreExact) {
  for (const char* op : {"QLinearSigmoid", "QLinearLeakyRelu"}) {
    check_unary<uint8_t>(op);
    check_unary<int8_t>(op);
  }
}

ONYX_OP_TEST(QLinearOps, UnaryDeclaresInPlace) {
  NodeSpec node = microsoft("QLinearSigmoid");
  node.inputs = {make_tensor<uint8_t>({4}, {0, 50, 128, 255}), make_scalar<float>(0.1f), make_scalar<uint8_t>(128),
                 make_scalar<float>(1.0f / 256), omitted()};
  RunResult r = run_node(node, RunOptions{.in_place = true});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_ON_REFERENCE(EXPECT_TRUE(r.shared_with_input[0]));
}

// ---------------------------------------------------------------------------
// QLinearAveragePool, QLinearGlobalAveragePool

struct PoolCase {
  std::vector<int64_t> x_dims;  // N x C x D1 x ... (the test transposes for channels_last)
  std::vector<int64_t> kernel, strides, pads;
  std::string auto_pad = "NOTSET";
  bool ceil_mode = false, count_include_pad = false;
};

// Moves C (dim 1) last: N x C x S -> N x S x C, for data or dims.
template <typename V>
std::vector<V> to_channels_last(const std::vector<V>& v, const std::vector<int64_t>& dims) {
  const int64_t n = dims[0], c = dims[1], s = count(dims) / std::max<int64_t>(1, n * c);
  std::vector<V> out(v.size());
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < s; ++i) out[size_t((b * s + i) * c + ch)] = v[size_t((b * c + ch) * s + i)];
  return out;
}
std::vector<int64_t> channels_last_dims(const std::vector<int64_t>& d) {
  std::vector<int64_t> out = {d[0]};
  out.insert(out.end(), d.begin() + 2, d.end());
  out.push_back(d[1]);
  return out;
}

// The ONNX pooling rules written out: output sizes, pads, the taps inside
// the input and inside the padded input; the average in float64.
template <typename T>
std::vector<double> pool_reference(const PoolCase& c, const std::vector<T>& x, const QP& qx, const QP& qy,
                                   std::vector<int64_t>* y_dims) {
  const size_t sp = c.x_dims.size() - 2;
  std::vector<int64_t> in(c.x_dims.begin() + 2, c.x_dims.end()), out(sp), pb(sp), pe(sp), st(sp);
  for (size_t i = 0; i < sp; ++i) {
    st[i] = c.strides.empty() ? 1 : c.strides[i];
    const int64_t k = c.kernel[i];
    if (c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER") {
      out[i] = (in[i] + st[i] - 1) / st[i];
      const int64_t total = std::max<int64_t>(0, (out[i] - 1) * st[i] + k - in[i]);
      pb[i] = c.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pe[i] = total - pb[i];
      continue;
    }
    pb[i] = c.pads.empty() ? 0 : c.pads[i];
    pe[i] = c.pads.empty() ? 0 : c.pads[sp + i];
    const int64_t span = in[i] + pb[i] + pe[i] - k;
    out[i] = (c.ceil_mode ? (span + st[i] - 1) / st[i] : span / st[i]) + 1;
    if (c.ceil_mode && (out[i] - 1) * st[i] >= in[i] + pb[i]) --out[i];  // starts in the end padding
  }
  *y_dims = {c.x_dims[0], c.x_dims[1]};
  y_dims->insert(y_dims->end(), out.begin(), out.end());
  const int64_t planes = c.x_dims[0] * c.x_dims[1], in_plane = count(in);
  std::vector<double> y;
  for (int64_t p = 0; p < planes; ++p)
    for_each_index(out, [&](const std::vector<int64_t>& o) {
      double sum = 0;
      int64_t inside = 0, padded = 0;
      for_each_index(std::vector<int64_t>(c.kernel.begin(), c.kernel.end()), [&](const std::vector<int64_t>& k) {
        int64_t flat = 0;
        bool in_input = true, in_padded = true;
        for (size_t i = 0; i < sp; ++i) {
          const int64_t at = o[i] * st[i] - pb[i] + k[i];
          in_input = in_input && at >= 0 && at < in[i];
          in_padded = in_padded && at >= -pb[i] && at < in[i] + pe[i];
          flat = flat * in[i] + at;
        }
        padded += in_padded;
        if (!in_input) return;
        ++inside;
        sum += dequantize(x[size_t(p * in_plane + flat)], qx);
      });
      y.push_back(quantize<T>(sum / double(c.count_include_pad ? padded : inside), qy));
    });
  return y;
}

template <typename T>
void check_pool(const PoolCase& c, bool channels_last, size_t threads) {
  SCOPED_TRACE("x" + ::testing::PrintToString(c.x_dims) + " kernel" + ::testing::PrintToString(c.kernel) +
               " strides" + ::testing::PrintToString(c.strides) + " pads" + ::testing::PrintToString(c.pads) + " " +
               c.auto_pad + (c.ceil_mode ? " ceil_mode" : "") + (c.count_include_pad ? " count_include_pad" : "") +
               (channels_last ? " channels_last" : "") + (std::is_signed_v<T> ? " int8" : " uint8"));
  std::mt19937 rng(uint32_t(count(c.x_dims)));
  const bool s = std::is_signed_v<T>;
  const QP qx{0.021f, s ? -5 : 119}, qy{0.017f, s ? 3 : 124};
  const std::vector<T> x = random_codes<T>(count(c.x_dims), rng);
  NodeSpec node = microsoft("QLinearAveragePool");
  node.attr("kernel_shape", c.kernel);
  if (!c.strides.empty()) node.attr("strides", c.strides);
  if (!c.pads.empty()) node.attr("pads", c.pads);
  if (c.auto_pad != "NOTSET") node.attr("auto_pad", c.auto_pad);
  if (c.ceil_mode) node.attr("ceil_mode", int64_t{1});
  if (c.count_include_pad) node.attr("count_include_pad", int64_t{1});
  if (channels_last) node.attr("channels_last", int64_t{1});
  node.inputs = {channels_last ? make_tensor<T>(channels_last_dims(c.x_dims), to_channels_last(x, c.x_dims))
                               : make_tensor<T>(c.x_dims, x),
                 make_scalar<float>(qx.scale), make_scalar<T>(T(qx.zero)), make_scalar<float>(qy.scale),
                 make_scalar<T>(T(qy.zero))};
  RunResult r = run_node(node, RunOptions{.threads = threads});
  ASSERT_TRUE(r.ok()) << r.error;
  std::vector<int64_t> y_dims;
  std::vector<double> want = pool_reference(c, x, qx, qy, &y_dims);
  if (channels_last) {
    want = to_channels_last(want, y_dims);
    y_dims = channels_last_dims(y_dims);
  }
  ASSERT_EQ(r.outputs[0].dims, y_dims);
  EXPECT_TRUE(codes_match(r.outputs[0].as_doubles(), want, false));
}

std::vector<PoolCase> pool_cases() {
  std::vector<PoolCase> cases = {
      {{2, 3, 9, 10}, {3, 3}, {1, 1}, {1, 1, 1, 1}},                          // 3x3, pads excluded
      {{2, 3, 9, 10}, {3, 3}, {1, 1}, {1, 1, 1, 1}, "NOTSET", false, true},   // pads counted
      {{1, 4, 11, 8}, {3, 2}, {2, 2}, {1, 0, 1, 1}, "NOTSET", true, false},   // ceil_mode, asymmetric pads
      {{1, 4, 11, 8}, {3, 3}, {2, 3}, {1, 1, 1, 1}, "NOTSET", true, true},    // ceil_mode with counted pads
      {{1, 2, 7, 7}, {2, 2}, {2, 2}, {}, "SAME_UPPER"},
      {{1, 2, 7, 6}, {3, 2}, {2, 1}, {}, "SAME_LOWER", false, true},
      {{2, 5, 17}, {4}, {3}, {2, 1}},                                         // 1-D
      {{1, 3, 5, 6, 4}, {2, 3, 2}, {1, 2, 1}, {1, 0, 1, 0, 1, 1}},            // 3-D
      {{1, 16, 14, 14}, {7, 7}, {7, 7}, {}},                                  // big windows, no padding
  };
  return cases;
}

ONYX_OP_TEST(QLinearOps, AveragePoolMatchesFloat64Reference) {
  for (const PoolCase& c : pool_cases())
    for (bool channels_last : {false, true}) {
      check_pool<uint8_t>(c, channels_last, 1);
      check_pool<int8_t>(c, channels_last, 2);
    }
}

template <typename T>
// constant_params: the scales and zero points are constants (as quantizers
// write them, and all that the oneDNN provider claims).
void check_global_pool(const std::vector<int64_t>& x_dims, bool channels_last, bool constant_params = false) {
  SCOPED_TRACE("x" + ::testing::PrintToString(x_dims) + (channels_last ? " channels_last" : "") +
               (std::is_signed_v<T> ? " int8" : " uint8"));
  std::mt19937 rng(uint32_t(count(x_dims)));
  const bool s = std::is_signed_v<T>;
  const QP qx{0.11f, s ? 1 : 127}, qy{0.0093f, s ? -7 : 128};
  const std::vector<T> x = random_codes<T>(count(x_dims), rng);
  NodeSpec node = microsoft("QLinearGlobalAveragePool");
  if (channels_last) node.attr("channels_last", int64_t{1});
  node.inputs = {channels_last ? make_tensor<T>(channels_last_dims(x_dims), to_channels_last(x, x_dims))
                               : make_tensor<T>(x_dims, x),
                 make_scalar<float>(qx.scale), make_scalar<T>(T(qx.zero)), make_scalar<float>(qy.scale),
                 make_scalar<T>(T(qy.zero))};
  if (constant_params)
    for (size_t k = 1; k < node.inputs.size(); ++k) node.inputs[k].constant = true;
  RunResult r = run_node(node, RunOptions{.threads = 2});
  ASSERT_TRUE(r.ok()) << r.error;
  const int64_t planes = x_dims[0] * x_dims[1], plane = count(x_dims) / planes;
  std::vector<double> want;
  for (int64_t p = 0; p < planes; ++p) {
    double sum = 0;
    for (int64_t i = 0; i < plane; ++i) sum += dequantize(x[size_t(p * plane + i)], qx);
    want.push_back(quantize<T>(sum / double(plane), qy));
  }
  std::vector<int64_t> y_dims(x_dims.size(), 1);
  y_dims[0] = x_dims[0], y_dims[1] = x_dims[1];
  if (channels_last) want = to_channels_last(want, y_dims), y_dims = channels_last_dims(y_dims);
  ASSERT_EQ(r.outputs[0].dims, y_dims);
  EXPECT_TRUE(codes_match(r.outputs[0].as_doubles(), want, false));
}

ONYX_OP_TEST(QLinearOps, GlobalAveragePoolMatchesFloat64Reference) {
  for (const std::vector<int64_t>& dims :
       {std::vector<int64_t>{2, 24, 7, 7}, std::vector<int64_t>{3, 5, 31}, std::vector<int64_t>{1, 6, 3, 4, 5}})
    for (bool channels_last : {false, true}) {
      check_global_pool<uint8_t>(dims, channels_last);
      check_global_pool<int8_t>(dims, channels_last);
    }
}

ONYX_OP_TEST(QLinearOps, GlobalAveragePoolWithConstantParametersMatchesFloat64Reference) {
  for (const std::vector<int64_t>& dims :
       {std::vector<int64_t>{2, 24, 7, 7}, std::vector<int64_t>{3, 5, 31}, std::vector<int64_t>{1, 6, 3, 4, 5}})
    for (bool channels_last : {false, true}) {
      check_global_pool<uint8_t>(dims, channels_last, true);
      check_global_pool<int8_t>(dims, channels_last, true);
    }
}

// ---------------------------------------------------------------------------
// QLinearConcat

template <typename T>
void check_concat(const std::vector<std::vector<int64_t>>& dims, int64_t axis) {
  SCOPED_TRACE("axis " + std::to_string(axis) + " inputs " + ::testing::PrintToString(dims) +
               (std::is_signed_v<T> ? " int8" : " uint8"));
  std::mt19937 rng(uint32_t(dims.size() * 100 + size_t(axis + 10)));
  const bool s = std::is_signed_v<T>;
  const QP qy{0.05f, s ? 0 : 128};
  NodeSpec node = microsoft("QLinearConcat");
  node.attr("axis", axis);
  node.inputs = {make_scalar<float>(qy.scale), make_scalar<T>(T(qy.zero))};
  std::vector<std::vector<T>> xs;
  std::vector<QP> qs;
  for (size_t k = 0; k < dims.size(); ++k) {
    // Input 0 is quantized like Y (copied as is); the others are not.
    qs.push_back(k == 0 ? qy : QP{0.05f * float(k + 1) / 3, s ? int(k) * 9 - 20 : 100 + int(k) * 11});
    xs.push_back(random_codes<T>(count(dims[k]), rng));
    node.inputs.push_back(make_tensor<T>(dims[k], xs.back()));
    node.inputs.push_back(make_scalar<float>(qs.back().scale));
    node.inputs.push_back(make_scalar<T>(T(qs.back().zero)));
  }
  RunResult r = run_node(node, RunOptions{.threads = 2});
  ASSERT_TRUE(r.ok()) << r.error;
  const int64_t rank = int64_t(dims[0].size()), ax = axis < 0 ? axis + rank : axis;
  std::vector<int64_t> y_dims = dims[0];
  y_dims[size_t(ax)] = 0;
  for (const auto& d : dims) y_dims[size_t(ax)] += d[size_t(ax)];
  std::vector<double> want;
  for_each_index(y_dims, [&](std::vector<int64_t> pos) {
    size_t k = 0;
    while (pos[size_t(ax)] >= dims[k][size_t(ax)]) pos[size_t(ax)] -= dims[k++][size_t(ax)];
    int64_t flat = 0;
    for (int64_t d = 0; d < rank; ++d) flat = flat * dims[k][size_t(d)] + pos[size_t(d)];
    want.push_back(quantize<T>(dequantize(xs[k][size_t(flat)], qs[k]), qy));
  });
  ASSERT_EQ(r.outputs[0].dims, y_dims);
  EXPECT_TRUE(codes_match(r.outputs[0].as_doubles(), want, true));
}

ONYX_OP_TEST(QLinearOps, ConcatIsExact) {
  check_concat<uint8_t>({{2, 3, 4}, {2, 5, 4}, {2, 1, 4}}, 1);
  check_concat<int8_t>({{2, 3, 4}, {2, 3, 7}}, -1);
  check_concat<uint8_t>({{3, 6}, {1, 6}, {4, 6}, {2, 6}}, 0);
  check_concat<int8_t>({{2, 0, 3}, {2, 4, 3}}, 1);  // an empty input
}

// ---------------------------------------------------------------------------
// Bad inputs: an error naming the node and the problem, never a crash.

NodeSpec add_node(float a_scale, HostTensor a_zero = make_scalar<uint8_t>(128)) {
  NodeSpec node = microsoft("QLinearAdd");
  node.inputs = {make_tensor<uint8_t>({3}, {1, 2, 3}), make_scalar<float>(a_scale), std::move(a_zero),
                 make_tensor<uint8_t>({3}, {4, 5, 6}), make_scalar<float>(0.1f), make_scalar<uint8_t>(128),
                 make_scalar<float>(0.2f), make_scalar<uint8_t>(128)};
  return node;
}

ONYX_OP_TEST(QLinearOps, BadScalesAndZeroPointsAreErrors) {
  const char* kNode = "com.microsoft::QLinearAdd node 'test_node'";
  for (float bad : {0.0f, -0.5f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    RunResult r = run_node(add_node(bad));
    EXPECT_ERROR_MENTIONS(r, kNode);
    EXPECT_ERROR_MENTIONS(r, "A_scale is");
    EXPECT_ERROR_MENTIONS(r, "positive and finite");
  }
  RunResult r = run_node(add_node(0.1f, make_scalar<int8_t>(0)));
  EXPECT_ERROR_MENTIONS(r, kNode);
  EXPECT_ERROR_MENTIONS(r, "A_zero_point has type int8 but A has type uint8");

  NodeSpec two_scales = add_node(0.1f);
  two_scales.inputs[6] = make_tensor<float>({2}, {0.1f, 0.2f});
  r = run_node(two_scales);
  EXPECT_ERROR_MENTIONS(r, "C_scale has shape [2]; this op takes one scale per tensor");

  NodeSpec two_zeros = add_node(0.1f, make_tensor<uint8_t>({2}, {1, 2}));
  r = run_node(two_zeros);
  EXPECT_ERROR_MENTIONS(r, "A_zero_point has shape [2]");

  NodeSpec no_broadcast = add_node(0.1f);
  no_broadcast.inputs[3] = make_tensor<uint8_t>({2}, {1, 2});
  r = run_node(no_broadcast);
  EXPECT_ERROR_MENTIONS(r, kNode);
  EXPECT_ERROR_MENTIONS(r, "cannot be broadcast");

  NodeSpec leaky = microsoft("QLinearLeakyRelu");
  leaky.inputs = {make_tensor<int8_t>({2}, {1, 2}), make_scalar<float>(0.1f), make_scalar<int8_t>(0),
                  make_scalar<float>(0.0f), make_scalar<uint8_t>(0)};
  r = run_node(leaky);
  EXPECT_ERROR_MENTIONS(r, "com.microsoft::QLinearLeakyRelu node 'test_node': Y_scale is 0");

  NodeSpec pool = microsoft("QLinearGlobalAveragePool");
  pool.inputs = {make_tensor<uint8_t>({1, 1, 2}, {1, 2}), make_scalar<float>(0.1f), make_scalar<uint8_t>(0),
                 make_scalar<float>(0.1f), make_scalar<int8_t>(0)};
  r = run_node(pool);
  EXPECT_ERROR_MENTIONS(r, "y_zero_point has type int8 but X has type uint8");
}

ONYX_OP_TEST(QLinearOps, ConcatBadInputsAreErrors) {
  NodeSpec node = microsoft("QLinearConcat");
  node.attr("axis", int64_t{1});
  node.inputs = {make_scalar<float>(0.1f), make_scalar<uint8_t>(0),
                 make_tensor<uint8_t>({1, 2}, {1, 2}), make_scalar<float>(0.1f), make_scalar<uint8_t>(0),
                 make_tensor<uint8_t>({2, 2}, {1, 2, 3, 4}), make_scalar<float>(0.1f), make_scalar<uint8_t>(0)};
  RunResult r = run_node(node);
  EXPECT_ERROR_MENTIONS(r, "com.microsoft::QLinearConcat node 'test_node'");
  EXPECT_ERROR_MENTIONS(r, "does not match input 2");

  node.inputs[5] = make_tensor<int8_t>({1, 2}, {1, 2});
  node.inputs[7] = make_scalar<int8_t>(0);
  r = run_node(node);
  EXPECT_ERROR_MENTIONS(r, "input 5 has type int8 but Y_zero_point has type uint8");

  node.inputs[5] = make_tensor<uint8_t>({1, 2}, {1, 2});
  node.inputs[6] = make_scalar<float>(std::numeric_limits<float>::quiet_NaN());
  node.inputs[7] = make_scalar<uint8_t>(0);
  r = run_node(node);
  EXPECT_ERROR_MENTIONS(r, "input 5's scale (input 6) is nan");

  node.attributes.clear();
  node.attr("axis", int64_t{2});
  node.inputs[6] = make_scalar<float>(0.1f);
  r = run_node(node);
  EXPECT_ERROR_MENTIONS(r, "axis 2 is out of range");

  node.inputs.pop_back();  // not whole triples
  r = run_node(node);
  EXPECT_TRUE(r.declined);
  EXPECT_ERROR_MENTIONS(r, "triples");
}

// QuantizeLinear / DequantizeLinear: the same problems in the ai.onnx ops.
NodeSpec qdq_node(bool quantize, HostTensor scale, HostTensor zero, std::vector<int64_t> x_dims = {2, 3}) {
  NodeSpec node(quantize ? "QuantizeLinear" : "DequantizeLinear", 21);
  const int64_t n = count(x_dims);
  node.inputs = {quantize ? make_tensor<float>(x_dims, std::vector<float>(size_t(n), 0.5f))
                          : make_tensor<uint8_t>(x_dims, std::vector<uint8_t>(size_t(n), 7)),
                 std::move(scale), std::move(zero)};
  return node;
}

ONYX_OP_TEST(QLinearOps, QuantizeAndDequantizeBadInputsAreErrors) {
  for (bool q : {true, false}) {
    SCOPED_TRACE(q ? "QuantizeLinear" : "DequantizeLinear");
    const std::string label = std::string(q ? "QuantizeLinear" : "DequantizeLinear") + " node 'test_node'";
    const std::string scale = q ? "y_scale" : "x_scale", zero = q ? "y_zero_point" : "x_zero_point";
    for (float bad : {0.0f, -1.0f, std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity()}) {
      RunResult r = run_node(qdq_node(q, make_scalar<float>(bad), make_scalar<uint8_t>(3)));
      EXPECT_ERROR_MENTIONS(r, label);
      EXPECT_ERROR_MENTIONS(r, scale + " is");
      EXPECT_ERROR_MENTIONS(r, "positive and finite");
    }
    // One bad element of a per-axis scale.
    RunResult r = run_node(qdq_node(q, make_tensor<float>({3}, {0.1f, 0.0f, 0.2f}), make_tensor<uint8_t>({3}, {1, 2, 3})));
    EXPECT_ERROR_MENTIONS(r, scale + " element 1 is 0");
    // Scale and zero point disagree.
    r = run_node(qdq_node(q, make_tensor<float>({3}, {0.1f, 0.1f, 0.2f}), make_tensor<uint8_t>({2}, {1, 2})));
    EXPECT_ERROR_MENTIONS(r, label);
    EXPECT_ERROR_MENTIONS(r, zero + " has shape [2] but " + scale + " has shape [3]");
    // A per-axis scale whose length is not the axis dim.
    NodeSpec wrong_len = qdq_node(q, make_tensor<float>({2}, {0.1f, 0.2f}), make_tensor<uint8_t>({2}, {1, 2}));
    r = run_node(wrong_len);
    EXPECT_ERROR_MENTIONS(r, label);
    EXPECT_ERROR_MENTIONS(r, "one value per element of the axis");
    // A per-axis axis out of range.
    NodeSpec bad_axis = qdq_node(q, make_tensor<float>({3}, {0.1f, 0.1f, 0.2f}), make_tensor<uint8_t>({3}, {1, 2, 3}));
    bad_axis.attr("axis", int64_t{4});
    r = run_node(bad_axis);
    EXPECT_ERROR_MENTIONS(r, label);
    EXPECT_ERROR_MENTIONS(r, "axis 4 is out of range for an input of rank 2");
  }
  // DequantizeLinear: a zero point of another type than x.
  RunResult r = run_node(qdq_node(false, make_scalar<float>(0.5f), make_scalar<int8_t>(3)));
  EXPECT_ERROR_MENTIONS(r, "DequantizeLinear node 'test_node'");
  EXPECT_ERROR_MENTIONS(r, "x_zero_point has type int8 but x has type uint8");
  // QuantizeLinear: a zero point of another type than output_dtype.
  NodeSpec typed = qdq_node(true, make_scalar<float>(0.5f), make_scalar<int8_t>(3));
  typed.attr("output_dtype", int64_t{ONYX_DTYPE_UINT8});
  r = run_node(typed);
  EXPECT_ERROR_MENTIONS(r, "QuantizeLinear node 'test_node'");
  EXPECT_ERROR_MENTIONS(r, "y_zero_point has type int8 but output_dtype is uint8");
  // Scalar and one-element shapes ([] and [1]) agree, as ONNX's own tests use them.
  r = run_node(qdq_node(false, make_scalar<float>(0.5f), make_tensor<uint8_t>({1}, {3})));
  EXPECT_TRUE(r.ok()) << r.error;
}

}  // namespace
}  // namespace onyx::test
