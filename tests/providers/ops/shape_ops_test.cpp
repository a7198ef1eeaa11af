// shape_ops_test.cpp: the shape-relabelling ops (aliases), Transpose,
// Concat, Split, Slice, Expand, Tile, Pad against references written here.
// Gather/Scatter/Cast/creation ops: shape_data_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "kernel_harness.h"
#include "test_providers.h"

namespace onyx::test {
namespace {

using Dims = std::vector<int64_t>;

std::vector<float> iota_floats(size_t n) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), 0.f);
  return v;
}
int64_t count(const Dims& d) {
  int64_t n = 1;
  for (int64_t x : d) n *= x;
  return n;
}
// Multi-index of flat position i.
Dims unravel(int64_t i, const Dims& dims) {
  Dims idx(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    idx[d] = i % dims[d];
    i /= dims[d];
  }
  return idx;
}
int64_t ravel(const Dims& idx, const Dims& dims) {
  int64_t i = 0;
  for (size_t d = 0; d < dims.size(); ++d) i = i * dims[d] + idx[d];
  return i;
}

ONYX_PROVIDER_SUITE(ShapeOps);

ONYX_OP_TEST(ShapeOps, ReshapeAliasesInputAndResolvesZeroAndMinusOne) {
  NodeSpec node("Reshape", 14);
  node.inputs = {make_tensor<float>({2, 3, 4}, iota_floats(24)), make_constant<int64_t>({3}, {0, -1, 2})};
  RunResult r = run_node(node);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_ON_REFERENCE(EXPECT_EQ(r.output_memory[0].kind, ONYX_OUTPUT_ALIASES_INPUT));
  EXPECT_ON_REFERENCE(EXPECT_TRUE(r.shared_with_input[0]));
  EXPECT_EQ(r.outputs[0].dims, (Dims{2, 6, 2}));
  EXPECT_EQ(r.outputs[0].values<float>(), iota_floats(24));

  NodeSpec allowzero("Reshape", 14);  // a literal 0 dim: the input must be empty
  allowzero.inputs = {make_tensor<float>({0, 3}, {}), make_tensor<int64_t>({2}, {3, 0})};
  allowzero.attr("allowzero", int64_t{1});
  r = run_node(allowzero);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].dims, (Dims{3, 0}));

  NodeSpec old("Reshape", 4);
  old.inputs = {make_tensor<float>({6}, iota_floats(6))};
  old.attr("shape", Dims{3, 2});
  r = run_node(old);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].dims, (Dims{3, 2}));

  NodeSpec bad("Reshape", 14);
  bad.name = "rs";
  bad.inputs = {make_tensor<float>({2, 3}, iota_floats(6)), make_tensor<int64_t>({2}, {4, 2})};
  r = run_node(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_ERROR_MENTIONS(r, "Reshape node 'rs': cannot reshape input 0 of shape [2,3]");
  bad.inputs[1] = make_tensor<int64_t>({2}, {-1, -1});
  EXPECT_ERROR_MENTIONS(run_node(bad), "more than one -1");
  bad.inputs[1] = make_tensor<float>({2}, {3, 2});
  r = run_node(bad);
  EXPECT_TRUE(r.declined);
  EXPECT_ERROR_MENTIONS(r, "Reshape: input 1 has type float32; expected int64");
}

ONYX_OP_TEST(ShapeOps, FlattenSqueezeUnsqueezeIdentity) {
  HostTensor x = make_tensor<float>({2, 1, 3, 1}, iota_floats(6));
  struct Case {
    NodeSpec node;
    Dims want;
  };
  std::vector<Case> cases;
  for (auto [axis, want] : {std::pair{int64_t{0}, Dims{1, 6}}, std::pair{int64_t{2}, Dims{2, 3}},
                            std::pair{int64_t{-1}, Dims{6, 1}}, std::pair{int64_t{4}, Dims{6, 1}}}) {
    NodeSpec n("Flatten", 13);
    n.inputs = {x};
    n.attr("axis", axis);
    cases.push_back({n, want});
  }
  NodeSpec squeeze_all("Squeeze", 13);
  squeeze_all.inputs = {x};
  cases.push_back({squeeze_all, {2, 3}});
  NodeSpec squeeze_one("Squeeze", 13);
  squeeze_one.inputs = {x, make_tensor<int64_t>({1}, {-1})};
  cases.push_back({squeeze_one, {2, 1, 3}});
  NodeSpec squeeze_attr("Squeeze", 11);
  squeeze_attr.inputs = {x};
  squeeze_attr.attr("axes", Dims{1});
  cases.push_back({squeeze_attr, {2, 3, 1}});
  NodeSpec unsqueeze("Unsqueeze", 13);
  unsqueeze.inputs = {x, make_tensor<int64_t>({2}, {0, -1})};
  cases.push_back({unsqueeze, {1, 2, 1, 3, 1, 1}});
  NodeSpec unsqueeze_attr("Unsqueeze", 11);
  unsqueeze_attr.inputs = {x};
  unsqueeze_attr.attr("axes", Dims{2});
  cases.push_back({unsqueeze_attr, {2, 1, 1, 3, 1}});
  NodeSpec identity("Identity", 16);
  identity.inputs = {x};
  cases.push_back({identity, {2, 1, 3, 1}});
  for (const Case& c : cases) {
    RunResult r = run_node(c.node);
    ASSERT_TRUE(r.ok()) << c.node.op_type << ": " << r.error;
    EXPECT_ON_REFERENCE(EXPECT_TRUE(r.shared_with_input[0]) << c.node.op_type);
    EXPECT_EQ(r.outputs[0].dims, c.want) << c.node.op_type;
    EXPECT_EQ(r.outputs[0].values<float>(), iota_floats(6)) << c.node.op_type;
  }
  NodeSpec bad("Squeeze", 13);
  bad.inputs = {x, make_tensor<int64_t>({1}, {2})};
  RunResult r = run_node(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_ERROR_MENTIONS(r, "cannot squeeze axis 2 of size 3");
  NodeSpec repeated("Unsqueeze", 13);
  repeated.inputs = {x, make_tensor<int64_t>({2}, {0, -6})};
  EXPECT_ERROR_MENTIONS(run_node(repeated), "repeated");
}

// Transpose against y[idx] = x[idx permuted back], for every permutation of
// a 4-D tensor and element sizes 1, 4 and 8.
ONYX_OP_TEST(ShapeOps, TransposeAllPermutations) {
  const Dims dims = {2, 3, 4, 5};
  std::vector<float> xf = iota_floats(120);
  std::vector<int64_t> xi(xf.begin(), xf.end());
  std::vector<int8_t> xb(xf.begin(), xf.end());
  Dims perm = {0, 1, 2, 3};
  do {
    Dims out(4);
    for (size_t d = 0; d < 4; ++d) out[d] = dims[size_t(perm[d])];
    for (int which = 0; which < 3; ++which) {
      NodeSpec node("Transpose", 13);
      node.inputs = {which == 0 ? make_tensor<float>(dims, xf) : which == 1 ? make_tensor<int64_t>(dims, xi)
                                                                            : make_tensor<int8_t>(dims, xb)};
      node.attr("perm", perm);
      RunResult r = run_node(node, {.threads = 2});
      ASSERT_TRUE(r.ok()) << r.error;
      ASSERT_EQ(r.outputs[0].dims, out);
      std::vector<double> y = r.outputs[0].as_doubles();
      for (int64_t i = 0; i < 120; ++i) {
        Dims oi = unravel(i, out), ii(4);
        for (size_t d = 0; d < 4; ++d) ii[size_t(perm[d])] = oi[d];
        ASSERT_EQ(y[size_t(i)], xf[size_t(ravel(ii, dims))]) << ::testing::PrintToString(perm) << " at " << i;
      }
    }
  } while (std::next_permutation(perm.begin(), perm.end()));

  NodeSpec reversed("Transpose", 13);  // no perm: dims reversed
  reversed.inputs = {make_tensor<float>({2, 3}, iota_floats(6))};
  RunResult r = run_node(reversed);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].values<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  reversed.attr("perm", Dims{0, 0});
  r = run_node(reversed);
  ASSERT_FALSE(r.ok());
  EXPECT_ERROR_MENTIONS(r, "not a permutation");
}

ONYX_OP_TEST(ShapeOps, TransposeLargeThreaded) {
  const Dims dims = {64, 300, 40};
  std::vector<float> x = iota_floats(size_t(count(dims)));
  NodeSpec node("Transpose", 13);
  node.inputs = {make_tensor<float>(dims, x)};
  node.attr("perm", Dims{2, 0, 1});
  RunResult r = run_node(node, {.threads = 4});
  ASSERT_TRUE(r.ok()) << r.error;
  std::vector<float> y = r.outputs[0].values<float>();
  for (int64_t i = 0; i < count(dims); i += 13) {
    Dims o = unravel(i, {40, 64, 300});
    ASSERT_EQ(y[size_t(i)], x[size_t(ravel({o[1], o[2], o[0]}, dims))]) << i;
  }
}

// A 2-D transpose per leading index whose sides are not multiples of the
// 8 x 8 register tiles: every element, float and int32 (bits moved, never
// converted), against the index formula.
ONYX_OP_TEST(ShapeOps, TransposeTilesAndTheirEdges) {
  const Dims dims = {3, 21, 37};
  std::vector<float> xf = iota_floats(size_t(count(dims)));
  std::vector<int32_t> xi(xf.size());
  for (size_t i = 0; i < xi.size(); ++i) xi[i] = int32_t(0x7fc00001 + i);  // NaN bit patterns as floats
  for (int which = 0; which < 2; ++which) {
    NodeSpec node("Transpose", 13);
    node.inputs = {which == 0 ? make_tensor<float>(dims, xf) : make_tensor<int32_t>(dims, xi)};
    node.attr("perm", Dims{0, 2, 1});
    RunResult r = run_node(node, {.threads = 2});
    ASSERT_TRUE(r.ok()) << r.error;
    ASSERT_EQ(r.outputs[0].dims, (Dims{3, 37, 21}));
    for (int64_t i = 0; i < count(dims); ++i) {
      Dims o = unravel(i, {3, 37, 21});
      const size_t from = size_t(ravel({o[0], o[2], o[1]}, dims));
      if (which == 0)
        ASSERT_EQ(r.outputs[0].values<float>()[size_t(i)], xf[from]) << i;
      else
        ASSERT_EQ(r.outputs[0].values<int32_t>()[size_t(i)], xi[from]) << i;
    }
  }
}

// The last axis stays last (whole rows copied, as in attention's head
// split): threads start their chunks at rows inside every dim.
ONYX_OP_TEST(ShapeOps, TransposeOfRowsThreaded) {
  const Dims dims = {4, 49, 3, 12, 32};
  std::vector<float> x = iota_floats(size_t(count(dims)));
  NodeSpec node("Transpose", 13);
  node.inputs = {make_tensor<float>(dims, x)};
  node.attr("perm", Dims{2, 0, 3, 1, 4});
  RunResult r = run_node(node, {.threads = 4});
  ASSERT_TRUE(r.ok()) << r.error;
  std::vector<float> y = r.outputs[0].values<float>();
  ASSERT_EQ(y.size(), x.size());
  for (int64_t i = 0; i < count(dims); ++i) {
    Dims o = unravel(i, {3, 4, 12, 49, 32});
    ASSERT_EQ(y[size_t(i)], x[size_t(ravel({o[1], o[3], o[0], o[2], o[4]}, dims))]) << i;
  }
  // Only a size-1 axis moves: the order of the elements stays, one copy
  // that the threads split.
  NodeSpec same("Transpose", 13);
  same.inputs = {make_tensor<float>({1, 70001}, iota_floats(70001))};
  same.attr("perm", Dims{1, 0});
  r = run_node(same, {.threads = 3});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].values<float>(), iota_floats(70001));
}

ONYX_OP_TEST(ShapeOps, ConcatAndSplit) {
  NodeSpec concat("Concat", 13);
  concat.inputs = {make_tensor<int32_t>({2, 1}, {1, 2}), make_tensor<int32_t>({2, 0}, {}),
                   make_tensor<int32_t>({2, 2}, {3, 4, 5, 6})};
  concat.attr("axis", int64_t{-1});
  RunResult r = run_node(concat);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].dims, (Dims{2, 3}));
  EXPECT_EQ(r.outputs[0].values<int32_t>(), (std::vector<int32_t>{1, 3, 4, 2, 5, 6}));
  concat.inputs[1] = make_tensor<int32_t>({3, 1}, {0, 0, 0});
  r = run_node(concat);
  ASSERT_FALSE(r.ok());
  EXPECT_ERROR_MENTIONS(r, "input 1");

  HostTensor x = make_tensor<float>({2, 5}, iota_floats(10));
  auto split = [&](NodeSpec node) {
    node.inputs.insert(node.inputs.begin(), x);
    RunResult res = run_node(node);
    EXPECT_TRUE(res.ok()) << res.error;
    std::vector<std::vector<float>> out;
    for (const HostTensor& t : res.outputs) out.push_back(t.values<float>());
    return out;
  };
  NodeSpec by_input("Split", 13);
  by_input.inputs = {make_tensor<int64_t>({2}, {2, 3})};
  by_input.attr("axis", int64_t{1});
  by_input.output_count = 2;
  EXPECT_EQ(split(by_input), (std::vector<std::vector<float>>{{0, 1, 5, 6}, {2, 3, 4, 7, 8, 9}}));
  NodeSpec by_attr("Split", 11);
  by_attr.attr("axis", int64_t{1}).attr("split", Dims{4, 1});
  by_attr.output_count = 2;
  EXPECT_EQ(split(by_attr), (std::vector<std::vector<float>>{{0, 1, 2, 3, 5, 6, 7, 8}, {4, 9}}));
  NodeSpec uneven("Split", 18);  // ceil(5 / 3) = 2: parts 2, 2, 1
  uneven.attr("axis", int64_t{1}).attr("num_outputs", int64_t{3});
  uneven.output_count = 3;
  EXPECT_EQ(split(uneven), (std::vector<std::vector<float>>{{0, 1, 5, 6}, {2, 3, 7, 8}, {4, 9}}));
  NodeSpec indivisible("Split", 13);
  indivisible.inputs = {x};
  indivisible.attr("axis", int64_t{1});
  indivisible.output_count = 2;
  RunResult bad = run_node(indivisible);
  ASSERT_FALSE(bad.ok());
  EXPECT_ERROR_MENTIONS(bad, "equal parts");
}

// Slice reference: per axis the list of source indices, numpy style.
std::vector<int64_t> slice_indices(int64_t dim, int64_t start, int64_t end, int64_t step) {
  auto fix = [&](int64_t v, int64_t lo, int64_t hi) {
    if (v < 0) v += dim;
    return std::clamp(v, lo, hi);
  };
  std::vector<int64_t> out;
  if (step > 0)
    for (int64_t i = fix(start, 0, dim), e = fix(end, 0, dim); i < e; i += step) out.push_back(i);
  else if (dim > 0)
    for (int64_t i = fix(start, 0, dim - 1), e = fix(end, -1, dim - 1); i > e; i += step) out.push_back(i);
  return out;
}

ONYX_OP_TEST(ShapeOps, SliceMatchesNumpyRules) {
  const Dims dims = {4, 5, 6};
  std::vector<float> x = iota_floats(120);
  std::mt19937 gen(17);
  std::uniform_int_distribution<int64_t> pos(-8, 8), steps(-3, 3);
  for (int trial = 0; trial < 300; ++trial) {
    Dims starts, ends, axes, step;
    for (int64_t a = 0; a < 3; ++a) {
      if (gen() % 3 == 0) continue;  // leave some axes whole
      int64_t s = steps(gen);
      axes.push_back(gen() % 2 ? a : a - 3);
      starts.push_back(gen() % 10 == 0 ? INT64_MIN : pos(gen));
      ends.push_back(gen() % 10 == 0 ? INT64_MAX : pos(gen));
      step.push_back(s == 0 ? 1 : s);
    }
    std::vector<std::vector<int64_t>> src(3);
    for (int64_t d = 0; d < 3; ++d) src[size_t(d)] = slice_indices(dims[size_t(d)], 0, INT64_MAX, 1);
    for (size_t k = 0; k < axes.size(); ++k) {
      int64_t d = axes[k] < 0 ? axes[k] + 3 : axes[k];
      src[size_t(d)] = slice_indices(dims[size_t(d)], starts[k], ends[k], step[k]);
    }
    NodeSpec node("Slice", 13);
    int64_t n = int64_t(axes.size());
    node.inputs = {make_tensor<float>(dims, x), make_tensor<int64_t>({n}, starts), make_tensor<int64_t>({n}, ends),
                   make_tensor<int64_t>({n}, axes), make_tensor<int64_t>({n}, step)};
    RunResult r = run_node(node);
    ASSERT_TRUE(r.ok()) << r.error;
    Dims want_dims = {int64_t(src[0].size()), int64_t(src[1].size()), int64_t(src[2].size())};
    ASSERT_EQ(r.outputs[0].dims, want_dims) << "trial " << trial;
    std::vector<float> y = r.outputs[0].values<float>();
    for (int64_t i = 0; i < count(want_dims); ++i) {
      Dims o = unravel(i, want_dims);
      ASSERT_EQ(y[size_t(i)], x[size_t(ravel({src[0][size_t(o[0])], src[1][size_t(o[1])], src[2][size_t(o[2])]}, dims))])
          << "trial " << trial;
    }
  }
  NodeSpec old("Slice", 9);  // attribute form
  old.inputs = {make_tensor<float>({2, 3}, iota_floats(6))};
  old.attr("starts", Dims{1}).attr("ends", Dims{3}).attr("axes", Dims{1});
  RunResult r = run_node(old);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].values<float>(), (std::vector<float>{1, 2, 4, 5}));
  NodeSpec zero_step("Slice", 13);
  zero_step.inputs = {make_tensor<float>({3}, {1, 2, 3}), make_tensor<int64_t>({1}, {0}), make_tensor<int64_t>({1}, {3}),
                      make_tensor<int64_t>({1}, {0}), make_tensor<int64_t>({1}, {0})};
  EXPECT_ERROR_MENTIONS(run_node(zero_step), "step of axis 0 is 0");
}

ONYX_OP_TEST(ShapeOps, ExpandAndTile) {
  NodeSpec expand("Expand", 13);
  expand.inputs = {make_tensor<int16_t>({3, 1}, {1, 2, 3}), make_tensor<int64_t>({3}, {2, 1, 2})};
  RunResult r = run_node(expand);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].dims, (Dims{2, 3, 2}));
  EXPECT_EQ(r.outputs[0].values<int16_t>(), (std::vector<int16_t>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
  expand.inputs[1] = make_tensor<int64_t>({2}, {2, 1});
  r = run_node(expand);
  ASSERT_FALSE(r.ok());
  EXPECT_ERROR_MENTIONS(r, "cannot be broadcast");

  NodeSpec tile("Tile", 13);
  tile.inputs = {make_tensor<float>({2, 2}, {1, 2, 3, 4}), make_tensor<int64_t>({2}, {2, 3})};
  r = run_node(tile);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].dims, (Dims{4, 6}));
  EXPECT_EQ(r.outputs[0].values<float>(),
            (std::vector<float>{1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4, 1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4}));
  tile.inputs[1] = make_tensor<int64_t>({1}, {2});
  EXPECT_FALSE(run_node(tile).ok());
}

ONYX_OP_TEST(ShapeOps, PadModesAndNegativePads) {
  HostTensor x = make_tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  struct Case {
    const char* mode;
    Dims pads;
    Dims dims;
    std::vector<float> want;
  };
  const std::vector<Case> cases = {
      {"constant", {0, 1, 1, 0}, {3, 4}, {9, 1, 2, 3, 9, 4, 5, 6, 9, 9, 9, 9}},
      {"edge", {0, 2, 0, 1}, {2, 6}, {1, 1, 1, 2, 3, 3, 4, 4, 4, 5, 6, 6}},
      {"reflect", {0, 2, 0, 2}, {2, 7}, {3, 2, 1, 2, 3, 2, 1, 6, 5, 4, 5, 6, 5, 4}},
      {"wrap", {1, 1, 0, 0}, {3, 4}, {6, 4, 5, 6, 3, 1, 2, 3, 6, 4, 5, 6}},
      {"constant", {0, -1, 0, 1}, {2, 3}, {2, 3, 9, 5, 6, 9}},
      // Rows copy one run of the input between element-wise edges: crops and
      // pads on both sides of it, and pads on both axes at once.
      {"constant", {0, -1, 0, -1}, {2, 1}, {2, 5}},
      {"constant", {1, 4, 0, 0}, {3, 7}, {9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 1, 2, 3, 9, 9, 9, 9, 4, 5, 6}},
      {"edge", {0, -1, 0, 2}, {2, 4}, {2, 3, 3, 3, 5, 6, 6, 6}},
      {"reflect", {1, 1, 1, 1}, {4, 5}, {5, 4, 5, 6, 5, 2, 1, 2, 3, 2, 5, 4, 5, 6, 5, 2, 1, 2, 3, 2}},
  };
  for (const Case& c : cases) {
    NodeSpec node("Pad", 19);
    node.inputs = {x, make_tensor<int64_t>({4}, c.pads), make_scalar<float>(9)};
    node.attr("mode", c.mode);
    RunResult r = run_node(node, {.threads = 2});
    ASSERT_TRUE(r.ok()) << c.mode << ": " << r.error;
    EXPECT_EQ(r.outputs[0].dims, c.dims) << c.mode;
    EXPECT_EQ(r.outputs[0].values<float>(), c.want) << c.mode << " " << ::testing::PrintToString(c.pads);
  }
  NodeSpec old("Pad", 2);
  old.inputs = {make_tensor<int32_t>({2}, {1, 2})};
  old.attr("pads", Dims{1, 2}).attr("value", 7.0);
  RunResult r = run_node(old);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].values<int32_t>(), (std::vector<int32_t>{7, 1, 2, 7, 7}));
  NodeSpec axes("Pad", 18);  // pads for axis 1 only
  axes.inputs = {x, make_tensor<int64_t>({2}, {1, 0}), omitted(), make_tensor<int64_t>({1}, {-1})};
  r = run_node(axes);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].values<float>(), (std::vector<float>{0, 1, 2, 3, 0, 4, 5, 6}));
  NodeSpec bad_mode("Pad", 19);
  bad_mode.inputs = {x, make_tensor<int64_t>({4}, {0, 0, 0, 0})};
  bad_mode.attr("mode", "mirror");
  EXPECT_TRUE(run_node(bad_mode).declined);
}

}  // namespace
}  // namespace onyx::test
