// pool_test.cpp: MaxPool (with Indices), AveragePool, LpPool and the Global
// pools against float64 reference loops that visit every kernel tap.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernel_harness.h"
#include "test_providers.h"
#include "nn_test_util.h"

namespace onyx::test {
namespace {

using nn::all_near;
using nn::for_each_index;

struct Pool {
  std::string op = "MaxPool";
  std::vector<int64_t> x_dims, kernel, strides, pads, dilations;
  std::string auto_pad = "NOTSET";
  bool ceil_mode = false, count_include_pad = false;
  int64_t p = 2, storage_order = 0;
  int64_t opset = 19;
};

struct RefOut {
  std::vector<int64_t> dims;
  std::vector<double> y;
  std::vector<int64_t> indices;  // MaxPool: flat input index of the max
};

// The ONNX pooling rules written out directly: output size, pads, taps.
RefOut reference(const Pool& c, const std::vector<double>& x) {
  size_t sp = c.x_dims.size() - 2;
  std::vector<int64_t> in(c.x_dims.begin() + 2, c.x_dims.end()), out(sp), pb(sp), pe(sp), s(sp),
      d(sp);
  for (size_t i = 0; i < sp; ++i) {
    s[i] = c.strides.empty() ? 1 : c.strides[i];
    d[i] = c.dilations.empty() ? 1 : c.dilations[i];
    int64_t ext = (c.kernel[i] - 1) * d[i] + 1;
    if (c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER") {
      out[i] = (in[i] + s[i] - 1) / s[i];
      int64_t total = std::max<int64_t>(0, (out[i] - 1) * s[i] + ext - in[i]);
      pb[i] = c.auto_pad == "SAME_UPPER" ? total / 2 : (total + 1) / 2;
      pe[i] = total - pb[i];
    } else {
      pb[i] = c.pads.empty() ? 0 : c.pads[i];
      pe[i] = c.pads.empty() ? 0 : c.pads[i + sp];
      double span = double(in[i] + pb[i] + pe[i] - ext) / double(s[i]);
      out[i] = int64_t(c.ceil_mode ? std::ceil(span) : std::floor(span)) + 1;
      if (c.ceil_mode && (out[i] - 1) * s[i] >= in[i] + pb[i]) --out[i];
    }
  }
  RefOut r;
  r.dims = {c.x_dims[0], c.x_dims[1]};
  r.dims.insert(r.dims.end(), out.begin(), out.end());
  int64_t plane_in = nn::count(in);
  for (int64_t nc = 0; nc < c.x_dims[0] * c.x_dims[1]; ++nc)
    for_each_index(out, [&](const std::vector<int64_t>& o) {
      double best = -std::numeric_limits<double>::infinity(), sum = 0;
      int64_t best_at = -1, inside = 0, padded = 0;
      for_each_index(c.kernel, [&](const std::vector<int64_t>& k) {
        bool in_input = true, in_padded = true;
        int64_t flat = 0, col_major = 0, col_stride = 1;
        for (size_t i = 0; i < sp; ++i) {
          int64_t pos = o[i] * s[i] - pb[i] + k[i] * d[i];
          in_input &= pos >= 0 && pos < in[i];
          in_padded &= pos >= -pb[i] && pos < in[i] + pe[i];
          flat = flat * in[i] + pos;
          col_major += pos * col_stride;
          col_stride *= in[i];
        }
        padded += in_padded;
        if (!in_input) return;
        double v = x[size_t(nc * plane_in + flat)];
        ++inside;
        sum += c.op == "LpPool" ? std::pow(std::fabs(v), double(c.p)) : v;
        if (v > best) best = v, best_at = c.storage_order ? col_major : flat;
      });
      if (c.op == "MaxPool") {
        r.y.push_back(best);
        r.indices.push_back(nc * plane_in + best_at);
      } else if (c.op == "LpPool") {
        r.y.push_back(std::pow(sum, 1.0 / double(c.p)));
      } else {
        r.y.push_back(sum / double(c.count_include_pad ? padded : inside));
      }
    });
  return r;
}

void PrintTo(const Pool& c, std::ostream* os) {
  *os << c.op << " x" << ::testing::PrintToString(c.x_dims) << " k"
      << ::testing::PrintToString(c.kernel);
}

NodeSpec make_node(const Pool& c, const HostTensor& x) {
  NodeSpec node(c.op, c.opset);
  node.inputs = {x};
  node.attr("kernel_shape", c.kernel);
  if (!c.strides.empty()) node.attr("strides", c.strides);
  if (!c.pads.empty()) node.attr("pads", c.pads);
  if (!c.dilations.empty()) node.attr("dilations", c.dilations);
  if (c.auto_pad != "NOTSET") node.attr("auto_pad", c.auto_pad);
  if (c.ceil_mode) node.attr("ceil_mode", 1);
  if (c.count_include_pad) node.attr("count_include_pad", 1);
  if (c.op == "LpPool") node.attr("p", c.p);
  if (c.storage_order) node.attr("storage_order", c.storage_order);
  return node;
}

// Tolerances: max is exact. Average sums in double and divides, so only the
// final rounding to float32 remains: 1 u relative (u = 2^-24), with a tiny
// floor for results near 0. LpPool adds pow/sqrt in double: same bound.
std::vector<double> tolerance(const Pool& c, const std::vector<double>& want) {
  if (c.op == "MaxPool") return {0.0};
  return nn::provider_tol(c.op, want, nn::rel_tol(want, nn::kU32, 1e-12));
}

std::vector<Pool> cases();

ONYX_PROVIDER_CASE_SUITE(PoolTest, Pool, cases(), case_index<Pool>);

ONYX_OP_TEST(PoolTest, MatchesReference) {
  const Pool& c = test_case(self);
  std::vector<float> x = nn::random_floats(size_t(nn::count(c.x_dims)), 11);
  RefOut want = reference(c, nn::to_double(x));
  // MaxPool's Indices on the reference provider too (a path of its own);
  // other providers may leave it out (oneDNN and the GPU kernels decline it).
  const bool indices_too = c.op == "MaxPool" && on_reference_provider();
  for (bool indices : {false, indices_too}) {
    for (size_t threads : {1, 3}) {
      NodeSpec node = make_node(c, make_tensor<float>(c.x_dims, x));
      if (indices) node.output_count = 2;
      RunResult r = run_node(node, {.threads = threads});
      ASSERT_TRUE(r.ok()) << r.error;
      ASSERT_EQ(r.outputs[0].dims, want.dims);
      EXPECT_TRUE(all_near(r.outputs[0].values<float>(), want.y, tolerance(c, want.y))) << "indices " << indices;
      if (indices) {
        EXPECT_EQ(r.outputs[1].values<int64_t>(), want.indices);
      }
    }
    if (!indices_too) break;
  }
}

Pool make(std::string op, std::vector<int64_t> x, std::vector<int64_t> k) {
  Pool c;
  c.op = std::move(op);
  c.x_dims = std::move(x);
  c.kernel = std::move(k);
  return c;
}
Pool with(Pool c, std::vector<int64_t> strides, std::vector<int64_t> pads,
          std::vector<int64_t> dilations = {}, bool ceil = false) {
  c.strides = std::move(strides);
  c.pads = std::move(pads);
  c.dilations = std::move(dilations);
  c.ceil_mode = ceil;
  return c;
}

std::vector<Pool> cases() {
  std::vector<Pool> v;
  for (std::string op : {"MaxPool", "AveragePool", "LpPool"}) {
    v.push_back(make(op, {2, 3, 11}, {3}));
    v.push_back(with(make(op, {1, 2, 13}, {4}), {3}, {1, 2}, {2}, true));
    v.push_back(make(op, {2, 3, 7, 9}, {3, 2}));
    v.push_back(with(make(op, {2, 2, 9, 10}, {3, 3}), {2, 2}, {1, 1, 1, 0}));
    // Rows wider than two vector blocks: 3 x 3 / 2 padded (ResNet's) and
    // ceil_mode (SqueezeNet's), 3 x 3 / 1 padded, 2 x 2 / 1.
    v.push_back(with(make(op, {1, 3, 14, 45}, {3, 3}), {2, 2}, {1, 1, 1, 1}));
    v.push_back(with(make(op, {1, 3, 14, 44}, {3, 3}), {2, 2}, {}, {}, true));
    v.push_back(with(make(op, {1, 3, 9, 37}, {3, 3}), {1, 1}, {1, 1, 1, 1}));
    v.push_back(with(make(op, {1, 3, 9, 37}, {2, 2}), {1, 1}, {0, 0, 1, 1}));
    v.push_back(with(make(op, {1, 3, 10, 9}, {3, 2}), {2, 3}, {1, 0, 2, 1}, {2, 1}, true));
    v.push_back(
        with(make(op, {1, 2, 6, 7, 5}, {2, 3, 2}), {2, 1, 2}, {1, 1, 0, 0, 1, 1}, {}, true));
    v.push_back(
        with(make(op, {1, 1, 7, 6, 8}, {2, 2, 3}), {1, 2, 2}, {0, 1, 1, 1, 0, 1}, {2, 1, 2}));
    for (std::string pad : {"SAME_UPPER", "SAME_LOWER", "VALID"}) {
      Pool c = with(make(op, {1, 2, 8, 7}, {3, 4}), {2, 3}, {});
      c.auto_pad = pad;
      v.push_back(c);
    }
  }
  for (bool ceil : {false, true}) {  // count_include_pad with pads and ceil_mode windows
    Pool c = with(make("AveragePool", {1, 2, 9, 8}, {3, 3}), {2, 2}, {1, 2, 1, 0}, {}, ceil);
    c.count_include_pad = true;
    v.push_back(c);
    c.dilations = {2, 1};
    v.push_back(c);
  }
  Pool lp3 = make("LpPool", {1, 2, 6, 6}, {2, 3});
  lp3.p = 3;
  v.push_back(lp3);
  Pool col = with(make("MaxPool", {2, 2, 7, 6}, {3, 2}), {2, 1}, {1, 0, 1, 1});
  col.storage_order = 1;  // Indices in column-major order
  v.push_back(col);
  return v;
}

ONYX_PROVIDER_SUITE(PoolOps);

ONYX_OP_TEST(PoolOps, GlobalPoolsOverAnyRank) {
  for (std::vector<int64_t> dims : std::vector<std::vector<int64_t>>{
           {2, 3, 5}, {2, 3, 4, 5}, {1, 2, 3, 4, 5}, {1, 2, 2, 2, 2, 3}}) {
    std::vector<float> x = nn::random_floats(size_t(nn::count(dims)), 5);
    int64_t planes = dims[0] * dims[1], plane = nn::count(dims) / planes;
    std::vector<double> avg, max, lp;
    for (int64_t p = 0; p < planes; ++p) {
      double s = 0, m = -1e300, sq = 0;
      for (int64_t k = 0; k < plane; ++k) {
        double v = x[size_t(p * plane + k)];
        s += v;
        m = std::max(m, v);
        sq += v * v;
      }
      avg.push_back(s / double(plane));
      max.push_back(m);
      lp.push_back(std::sqrt(sq));  // GlobalLpPool's default p = 2
    }
    std::vector<int64_t> out_dims(dims.size(), 1);
    out_dims[0] = dims[0];
    out_dims[1] = dims[1];
    for (std::string op : {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"}) {
      NodeSpec node(op, 1);
      node.inputs = {make_tensor<float>(dims, x)};
      RunResult r = run_node(node, {.threads = 2});
      ASSERT_TRUE(r.ok()) << r.error;
      EXPECT_EQ(r.outputs[0].dims, out_dims);
      const std::vector<double>& want = op == "GlobalMaxPool"  ? max
                                        : op == "GlobalLpPool" ? lp
                                                               : avg;
      EXPECT_TRUE(all_near(r.outputs[0].values<float>(), want,
                           nn::provider_tol(op, want, nn::rel_tol(want, nn::kU32, 1e-12))))
          << op;
    }
  }
}

ONYX_OP_TEST(PoolOps, MaxPoolInt8AndUint8AreExact) {
  NodeSpec node("MaxPool", 12);
  node.attr("kernel_shape", std::vector<int64_t>{2, 2})
      .attr("pads", std::vector<int64_t>{1, 1, 0, 0});
  node.inputs = {make_tensor<int8_t>({1, 1, 2, 3}, {-128, 7, -5, 3, -1, 127})};
  RunResult r = run_node(node);
  ASSERT_TRUE(r.ok()) << r.error;
  // The first window holds -128 and padding only: the pad never wins.
  EXPECT_EQ(r.outputs[0].values<int8_t>(), (std::vector<int8_t>{-128, 7, 7, 3, 7, 127}));
  node.inputs = {make_tensor<uint8_t>({1, 1, 2, 3}, {0, 7, 5, 3, 1, 255})};
  r = run_node(node);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].values<uint8_t>(), (std::vector<uint8_t>{0, 7, 7, 3, 7, 255}));
}

ONYX_OP_TEST(PoolOps, Float64Input) {
  Pool c = with(make("AveragePool", {1, 2, 5, 6}, {2, 3}), {1, 2}, {1, 1, 0, 1});
  std::vector<float> xf = nn::random_floats(60, 2);
  std::vector<double> x = nn::to_double(xf);
  RefOut want = reference(c, x);
  RunResult r = run_node(make_node(c, make_tensor<double>(c.x_dims, x)));
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_TRUE(all_near(r.outputs[0].values<double>(), want.y, nn::rel_tol(want.y, 1e-15, 1e-18)));
}

ONYX_OP_TEST(PoolOps, Errors) {
  NodeSpec no_kernel("MaxPool", 12);
  no_kernel.inputs = {make_tensor<float>({1, 1, 4, 4}, std::vector<float>(16, 0.f))};
  RunResult r = run_node(no_kernel);
  EXPECT_TRUE(r.declined);
  EXPECT_ERROR_MENTIONS(r, "kernel_shape");

  Pool c = make("AveragePool", {1, 1, 4}, {3});
  c.x_dims = {4, 4};  // no N x C
  r = run_node(make_node(c, make_tensor<float>({4, 4}, std::vector<float>(16, 0.f))));
  ASSERT_FALSE(r.ok());
  EXPECT_ERROR_MENTIONS(r, "AveragePool node 'test_node'");
  EXPECT_ERROR_MENTIONS(r, "input 0");

  c = make("MaxPool", {1, 1, 2, 2}, {3, 3});  // window larger than the input
  r = run_node(make_node(c, make_tensor<float>({1, 1, 2, 2}, std::vector<float>(4, 0.f))));
  ASSERT_FALSE(r.ok());
  EXPECT_ERROR_MENTIONS(r, "exceeds");

  c = make("MaxPool", {1, 1, 4, 4}, {2, 2});  // kernel rank differs from the input's
  r = run_node(make_node(c, make_tensor<float>({1, 1, 4}, std::vector<float>(4, 0.f))));
  ASSERT_FALSE(r.ok());
  EXPECT_ERROR_MENTIONS(r, "spatial dims");

  NodeSpec bad_pads("MaxPool", 12);
  bad_pads.attr("kernel_shape", std::vector<int64_t>{2}).attr("pads", std::vector<int64_t>{1, -1});
  bad_pads.inputs = {make_tensor<float>({1, 1, 4}, std::vector<float>(4, 0.f))};
  r = run_node(bad_pads);
  EXPECT_TRUE(r.declined);
  EXPECT_ERROR_MENTIONS(r, "negative");
}

// NaN in MaxPool windows: the first tap of a window (in row-major order,
// inside the input) sticks when it is NaN, later NaNs are skipped. Every
// path of the reference provider (Y alone: the 2 x 2 / 2 loop, the
// replicated-border rows, the generic rows; Y with Indices: the indexed
// scan) gives the same Y.
ONYX_OP_TEST(PoolOps, MaxPoolNaNRuleIsTheSameOnEveryPath) {
  if (!on_reference_provider()) GTEST_SKIP() << "the reference provider's paths";
  for (Pool c : {with(make("MaxPool", {1, 2, 12, 21}, {3, 3}), {2, 2}, {1, 1, 1, 1}),
                 with(make("MaxPool", {1, 2, 12, 21}, {3, 3}), {1, 1}, {1, 1, 1, 1}),
                 with(make("MaxPool", {1, 2, 12, 21}, {3, 3}), {2, 2}, {}, {}, true),
                 with(make("MaxPool", {1, 2, 12, 20}, {2, 2}), {2, 2}, {}),
                 with(make("MaxPool", {1, 2, 12, 21}, {3, 3}), {3, 3}, {1, 1, 1, 1})}) {
    std::vector<float> x = nn::random_floats(size_t(nn::count(c.x_dims)), 12);
    for (size_t i = 0; i < x.size(); i += 7) x[i] = std::numeric_limits<float>::quiet_NaN();
    NodeSpec plain = make_node(c, make_tensor<float>(c.x_dims, x));
    NodeSpec indexed = plain;
    indexed.output_count = 2;
    RunResult a = run_node(plain), b = run_node(indexed);
    ASSERT_TRUE(a.ok() && b.ok()) << a.error << b.error;
    const std::vector<float> ya = a.outputs[0].values<float>(), yb = b.outputs[0].values<float>();
    ASSERT_EQ(ya.size(), yb.size());
    size_t nans = 0;
    for (size_t i = 0; i < ya.size(); ++i) {
      nans += std::isnan(yb[i]);
      EXPECT_TRUE(ya[i] == yb[i] || (std::isnan(ya[i]) && std::isnan(yb[i])))
          << ::testing::PrintToString(c) << " at " << i << ": " << ya[i] << " vs " << yb[i];
    }
    EXPECT_GT(nans, 0u) << "some windows start with a NaN";
    EXPECT_LT(nans, ya.size()) << "and later NaNs are skipped";
  }
}

}  // namespace
}  // namespace onyx::test
