// conv_test.cpp: Conv and ConvTranspose against float64 reference loops
// (direct sums over every tap, the ONNX size and padding rules written out).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "kernel_harness.h"
#include "test_providers.h"
#include "nn_test_util.h"

namespace onyx::test {
namespace {

using nn::all_near;
using nn::for_each_index;

struct ConvCase {
  std::string op = "Conv";
  std::vector<int64_t> x_dims, w_dims, strides, pads, dilations, output_padding, output_shape;
  int64_t group = 1;
  bool bias = true;
  std::string auto_pad = "NOTSET";
  std::string name;
};

struct Ref {
  std::vector<int64_t> dims;
  std::vector<double> y, tol;
};

// Output sizes and begin pads per the ONNX rules.
void geometry(const ConvCase& c, std::vector<int64_t>* out, std::vector<int64_t>* pb) {
  size_t sp = c.x_dims.size() - 2;
  out->assign(sp, 0);
  pb->assign(sp, 0);
  bool same = c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER";
  for (size_t i = 0; i < sp; ++i) {
    int64_t in = c.x_dims[i + 2], k = c.w_dims[i + 2];
    int64_t s = c.strides.empty() ? 1 : c.strides[i], d = c.dilations.empty() ? 1 : c.dilations[i];
    int64_t ext = (k - 1) * d + 1;
    int64_t p0 = c.pads.empty() || c.auto_pad != "NOTSET" ? 0 : c.pads[i];
    int64_t p1 = c.pads.empty() || c.auto_pad != "NOTSET" ? 0 : c.pads[i + sp];
    if (c.op == "Conv") {
      if (same) {
        (*out)[i] = (in + s - 1) / s;
        int64_t total = std::max<int64_t>(0, ((*out)[i] - 1) * s + ext - in);
        p0 = c.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      } else {
        (*out)[i] = (in + p0 + p1 - ext) / s + 1;
      }
    } else {
      int64_t full = s * (in - 1) + (c.output_padding.empty() ? 0 : c.output_padding[i]) + ext;
      if (!c.output_shape.empty() || same) {
        (*out)[i] = c.output_shape.empty() ? in * s : c.output_shape[i];
        int64_t total = full - (*out)[i];
        int64_t half = int64_t(std::floor(double(total) / 2));
        p0 = c.auto_pad == "SAME_UPPER" ? half : total - half;
      } else {
        (*out)[i] = full - p0 - p1;
      }
    }
    (*pb)[i] = p0;
  }
}

// Accumulates y and the sum of |terms| of every output element; the
// tolerance is nn::sum_tol over the Cg x taps (+ bias) terms.
Ref reference(const ConvCase& c, const std::vector<double>& x, const std::vector<double>& w,
              const std::vector<double>& b) {
  bool tr = c.op == "ConvTranspose";
  size_t sp = c.x_dims.size() - 2;
  int64_t n = c.x_dims[0], ch = c.x_dims[1];
  int64_t m = tr ? c.w_dims[1] * c.group : c.w_dims[0];
  int64_t cg = ch / c.group, mg = m / c.group;
  std::vector<int64_t> out, pb, in(c.x_dims.begin() + 2, c.x_dims.end()),
      k(c.w_dims.begin() + 2, c.w_dims.end());
  geometry(c, &out, &pb);
  Ref r;
  r.dims = {n, m};
  r.dims.insert(r.dims.end(), out.begin(), out.end());
  int64_t out_plane = nn::count(out), in_plane = nn::count(in), taps = nn::count(k);
  std::vector<double> y(size_t(n * m * out_plane)), mag(y.size());
  for (int64_t i = 0; i < n * m; ++i)
    for (int64_t p = 0; p < out_plane; ++p) {
      y[size_t(i * out_plane + p)] = b.empty() ? 0 : b[size_t(i % m)];
      mag[size_t(i * out_plane + p)] = b.empty() ? 0 : std::fabs(b[size_t(i % m)]);
    }
  auto spatial = [&](const std::vector<int64_t>& pos, const std::vector<int64_t>& dims,
                     int64_t* flat) {
    *flat = 0;
    for (size_t d = 0; d < sp; ++d) {
      if (pos[d] < 0 || pos[d] >= dims[d]) return false;
      *flat = *flat * dims[d] + pos[d];
    }
    return true;
  };
  // Visit every (input position, tap) pair: Conv gathers, ConvTranspose scatters.
  std::vector<int64_t> other(sp);
  for (int64_t bn = 0; bn < n; ++bn)
    for (int64_t g = 0; g < c.group; ++g)
      for (int64_t mo = 0; mo < mg; ++mo)
        for (int64_t ci = 0; ci < cg; ++ci)
          for_each_index(tr ? in : out, [&](const std::vector<int64_t>& pos) {
            for_each_index(k, [&](const std::vector<int64_t>& tap) {
              for (size_t d = 0; d < sp; ++d) {
                int64_t s = c.strides.empty() ? 1 : c.strides[d],
                        dl = c.dilations.empty() ? 1 : c.dilations[d];
                other[d] = pos[d] * s - pb[d] + tap[d] * dl;
              }
              int64_t xi, yi, ti = 0;
              if (!spatial(pos, tr ? in : out, tr ? &xi : &yi) ||
                  !spatial(other, tr ? out : in, tr ? &yi : &xi))
                return;
              for (size_t d = 0; d < sp; ++d) ti = ti * k[d] + tap[d];
              int64_t mm = g * mg + mo, cc = g * cg + ci;
              double xv = x[size_t((bn * ch + cc) * in_plane + xi)];
              double wv = tr ? w[size_t((cc * mg + mo) * taps + ti)]
                             : w[size_t((mm * cg + ci) * taps + ti)];
              size_t at = size_t((bn * m + mm) * out_plane + yi);
              y[at] += xv * wv;
              mag[at] += std::fabs(xv * wv);
            });
          });
  r.y = y;
  double terms = double(cg * taps + 1);
  for (double v : mag) r.tol.push_back(nn::sum_tol(terms, v));
  return r;
}

void PrintTo(const ConvCase& c, std::ostream* os) { *os << c.op << " " << c.name; }

template <typename T>
NodeSpec make_node(const ConvCase& c, const std::vector<T>& x, const std::vector<T>& w,
                   const std::vector<T>& b) {
  NodeSpec node(c.op, 17);
  node.name = c.name;
  node.inputs = {make_tensor<T>(c.x_dims, x), make_tensor<T>(c.w_dims, w)};
  if (c.bias) node.inputs.push_back(make_tensor<T>({int64_t(b.size())}, b));
  if (c.group != 1) node.attr("group", c.group);
  if (!c.strides.empty()) node.attr("strides", c.strides);
  if (!c.pads.empty()) node.attr("pads", c.pads);
  if (!c.dilations.empty()) node.attr("dilations", c.dilations);
  if (!c.output_padding.empty()) node.attr("output_padding", c.output_padding);
  if (!c.output_shape.empty()) node.attr("output_shape", c.output_shape);
  if (c.auto_pad != "NOTSET") node.attr("auto_pad", c.auto_pad);
  return node;
}

std::string conv_case_name(const ConvCase& c, size_t) { return c.name; }

std::vector<ConvCase> cases();

ONYX_PROVIDER_CASE_SUITE(ConvTest, ConvCase, cases(), conv_case_name);

ONYX_OP_TEST(ConvTest, MatchesReference) {
  const ConvCase& c = test_case(self);
  bool tr = c.op == "ConvTranspose";
  int64_t m = tr ? c.w_dims[1] * c.group : c.w_dims[0];
  std::vector<float> x = nn::random_floats(size_t(nn::count(c.x_dims)), 31, -2, 2);
  std::vector<float> w = nn::random_floats(size_t(nn::count(c.w_dims)), 32);
  std::vector<float> b = c.bias ? nn::random_floats(size_t(m), 33) : std::vector<float>{};
  Ref want = reference(c, nn::to_double(x), nn::to_double(w), nn::to_double(b));
  // threads 1: items in sequence; 4: the batch x group items in parallel (or
  // the GEMM and im2col in parallel when there are fewer items than threads).
  // A constant W lets a kernel reorder it once, at creation (the CPU
  // provider's direct convolution does).
  for (bool constant_w : {false, true})
    for (size_t threads : {1, 4}) {
      NodeSpec node = make_node(c, x, w, b);
      node.inputs[1].constant = constant_w;
      RunResult r = run_node(node, {.threads = threads});
      ASSERT_TRUE(r.ok()) << r.error;
      ASSERT_EQ(r.outputs[0].dims, want.dims);
      EXPECT_TRUE(all_near(r.outputs[0].values<float>(), want.y, want.tol))
          << "threads " << threads << (constant_w ? ", constant W" : "");
    }
}

// float64: the same cases with inputs that float32 cannot hold exactly (an
// offset of ~1e-9), so a kernel that rounded through float32 would be off by
// ~1e-8 relative. The bound is sum_tol's with float64's unit roundoff 2^-53
// (~1e-15 relative to the sum of |terms|).
ONYX_OP_TEST(ConvTest, Float64MatchesReference) {
  const ConvCase& c = test_case(self);
  int64_t m = c.op == "ConvTranspose" ? c.w_dims[1] * c.group : c.w_dims[0];
  auto random = [](size_t count, uint32_t seed, float lo, float hi) {
    std::vector<double> v = nn::to_double(nn::random_floats(count, seed, lo, hi));
    for (size_t i = 0; i < v.size(); ++i) v[i] += 1e-9 * double(i % 13 + 1);
    return v;
  };
  std::vector<double> x = random(size_t(nn::count(c.x_dims)), 41, -2, 2);
  std::vector<double> w = random(size_t(nn::count(c.w_dims)), 42, -1, 1);
  std::vector<double> b = c.bias ? random(size_t(m), 43, -1, 1) : std::vector<double>{};
  Ref want = reference(c, x, w, b);
  const double u64 = std::ldexp(1.0, -53), u32 = std::ldexp(1.0, -24);
  for (double& t : want.tol) t *= u64 / u32;  // sum_tol scales with the unit roundoff
  for (size_t threads : {1, 4}) {
    RunResult r = run_node(make_node(c, x, w, b), {.threads = threads});
    ASSERT_TRUE(r.ok()) << r.error;
    ASSERT_EQ(r.outputs[0].dtype, ONYX_DTYPE_FLOAT64);
    ASSERT_EQ(r.outputs[0].dims, want.dims);
    EXPECT_TRUE(all_near(r.outputs[0].values<double>(), want.y, want.tol)) << "threads " << threads;
  }
}

ConvCase conv(std::string name, std::vector<int64_t> x, std::vector<int64_t> w, int64_t group = 1) {
  ConvCase c;
  c.name = std::move(name);
  c.x_dims = std::move(x);
  c.w_dims = std::move(w);
  c.group = group;
  return c;
}
ConvCase with(ConvCase c, std::vector<int64_t> strides, std::vector<int64_t> pads,
              std::vector<int64_t> dilations = {}) {
  c.strides = std::move(strides);
  c.pads = std::move(pads);
  c.dilations = std::move(dilations);
  return c;
}
ConvCase transposed(ConvCase c) {
  c.op = "ConvTranspose";
  return c;
}

std::vector<ConvCase> cases() {
  std::vector<ConvCase> v = {
      with(conv("conv1d", {2, 3, 11}, {4, 3, 3}), {2}, {1, 2}, {2}),
      with(conv("conv2d_groups", {2, 4, 9, 8}, {6, 2, 3, 3}, 2), {2, 1}, {1, 0, 2, 1}, {1, 2}),
      with(conv("conv2d_dilated", {1, 3, 10, 11}, {4, 3, 3, 2}), {1, 2}, {2, 1, 0, 2}, {2, 3}),
      with(conv("depthwise", {2, 4, 7, 7}, {4, 1, 3, 3}, 4), {2, 2}, {1, 1, 1, 1}),
      with(conv("depthwise_multiplier", {1, 3, 6, 5}, {6, 1, 3, 2}, 3), {1, 1}, {0, 1, 1, 0},
           {2, 1}),
      // Planes big enough for the vector loops' every width (a grid of 20 x 25
      // and 1-D at stride 2, odd width).
      with(conv("depthwise_wide", {1, 3, 20, 23}, {3, 1, 3, 3}, 3), {1, 1}, {1, 1, 1, 1}),
      with(conv("depthwise_1d_strided", {2, 4, 71}, {4, 1, 5}, 4), {2}, {2, 1}),
      // 8 or more channels, strided or with rows narrower than 8: the CPU
      // provider's depthwise with 8 channels to a vector on AVX2. 13 and 9
      // channels end in partial blocks; a multiplier of 2 puts an input
      // channel in two lanes; 7 x 7 is its largest window; 1-D too.
      with(conv("depthwise_lanes_strided", {2, 13, 11, 9}, {13, 1, 3, 3}, 13), {2, 2}, {1, 0, 1, 1}),
      with(conv("depthwise_lanes_narrow_rows", {1, 16, 7, 6}, {16, 1, 3, 3}, 16), {1, 1}, {1, 1, 1, 1}),
      with(conv("depthwise_lanes_multiplier_dilated", {1, 6, 9, 10}, {12, 1, 3, 2}, 6), {2, 3}, {2, 1, 0, 2},
           {2, 1}),
      with(conv("depthwise_lanes_7x7", {1, 8, 10, 12}, {8, 1, 7, 7}, 8), {2, 2}, {3, 3, 3, 3}),
      with(conv("depthwise_lanes_1d", {2, 9, 20}, {9, 1, 3}, 9), {2}, {1, 1}),
      conv("pointwise", {2, 8, 5, 6}, {5, 8, 1, 1}),
      conv("pointwise_groups", {3, 8, 4, 3}, {6, 4, 1, 1}, 2),
      with(conv("pointwise_strided", {1, 4, 5, 6}, {3, 4, 1, 1}), {2, 2}, {}),
      // Strided 1x1: the subsample gathered, then the pointwise GEMM (a
      // 12 x 9 plane, groups, a batch) or its transposed form (7 x 7 and
      // under 100 outputs, constant W); padded, im2col.
      with(conv("pointwise_strided_groups", {3, 16, 23, 25}, {32, 8, 1, 1}, 2), {2, 3}, {}),
      with(conv("pointwise_strided_small_plane", {2, 32, 13, 14}, {48, 32, 1, 1}), {2, 2}, {}),
      with(conv("pointwise_strided_3d", {1, 8, 5, 6, 7}, {16, 8, 1, 1, 1}), {2, 1, 3}, {}),
      with(conv("one_by_one_padded_strided", {1, 16, 9, 9}, {16, 16, 1, 1}), {2, 2}, {1, 0, 1, 1}),
      conv("single_input_channel", {2, 1, 6, 6}, {7, 1, 3, 3}),
      with(conv("conv3d", {1, 2, 5, 6, 4}, {3, 2, 2, 3, 2}), {2, 1, 2}, {1, 0, 1, 0, 1, 1},
           {1, 2, 1}),
      // Few input channels, stride 1 along W: the CPU provider's direct
      // convolution. Output rows of 37 end in a partial vector of 8 and of 16
      // lanes; 6 and 9 output channels end in partial blocks of 4.
      with(conv("direct_wide_rows", {2, 3, 5, 37}, {6, 3, 3, 3}), {1, 1}, {1, 1, 1, 1}),
      with(conv("direct_strided_rows_dilated", {1, 4, 11, 13}, {9, 4, 3, 2}), {2, 1}, {0, 2, 1, 1},
           {2, 3}),
      with(conv("direct_one_by_seven", {1, 5, 4, 20}, {3, 5, 1, 7}), {1, 1}, {0, 3, 0, 3}),
      with(conv("direct_pads_past_the_kernel", {1, 2, 3, 4}, {5, 2, 2, 2}), {1, 1}, {3, 2, 1, 4}),
      with(conv("direct_conv1d", {2, 3, 19}, {5, 3, 4}), {1}, {2, 1}, {2}),
      // Output channels in multiples of 16, 7 to 14-wide rows, from 8 input
      // channels: its channel-lane form on AVX2; 5 images (and 3 x 2
      // groups) so that 4 threads take items in parallel.
      with(conv("direct_channel_lanes", {5, 8, 14, 14}, {16, 8, 3, 3}), {1, 1}, {1, 1, 1, 1}),
      with(conv("direct_channel_lanes_groups", {3, 16, 9, 7}, {64, 8, 3, 3}, 2), {1, 1}, {1, 0, 1, 2}),
      // Strided along W: the channel-lane form on AVX2 (else im2col).
      with(conv("direct_strided_lanes", {2, 8, 15, 17}, {32, 8, 3, 3}), {2, 2}, {1, 1, 1, 1}),
      with(conv("direct_strided_lanes_7x7", {1, 3, 23, 19}, {16, 3, 7, 7}), {2, 2}, {3, 3, 3, 3}),
      with(conv("direct_strided_lanes_w_only", {1, 16, 6, 20}, {16, 16, 3, 3}), {1, 3}, {0, 1, 2, 0}),
      with(conv("direct_strided_lanes_small_reduction", {2, 3, 17, 16}, {32, 3, 3, 3}), {2, 2}, {1, 1, 1, 1}),
      // 32 channels x 3 x 3 = 288 multiply-adds per output: the direct limit.
      with(conv("direct_at_its_limit", {1, 32, 6, 9}, {5, 32, 3, 3}), {1, 1}, {1, 1, 1, 1}),
      with(conv("im2col_past_the_direct_limit", {1, 33, 6, 9}, {5, 33, 3, 3}), {1, 1}, {1, 1, 1, 1}),
      // 3x3, stride 1, from 32 channels and 16 tiles of 4 x 4 outputs: the
      // CPU provider's Winograd F(4x4, 3x3) (kernels/conv/winograd.h).
      // Its transforms add a few hundred units of roundoff at worst (their
      // constants reach 8, and 1/24): within sum_tol's 2 gamma(k + 2) for
      // its k >= 289 terms (measured: 1e-6 of the sum of |terms|). Ragged
      // last tiles (out 9 x 30), narrow rows whose vectors span tile rows
      // (7 x 14), asymmetric pads, groups, and batches whose tiles span
      // images.
      with(conv("winograd", {2, 32, 16, 20}, {40, 32, 3, 3}), {1, 1}, {0, 1, 2, 1}),
      with(conv("winograd_ragged_tiles", {1, 64, 9, 30}, {64, 64, 3, 3}), {1, 1}, {1, 1, 1, 1}),
      with(conv("winograd_narrow_rows", {3, 64, 7, 14}, {64, 64, 3, 3}), {1, 1}, {1, 1, 1, 1}),
      with(conv("winograd_groups", {2, 64, 12, 12}, {64, 32, 3, 3}, 2), {1, 1}, {1, 1, 1, 1}),
      // 30 tile rows of 10 tiles in chunks of 13 (winograd.cpp's 1 MB of
      // transformed tiles): chunks that start and end inside an image.
      with(conv("winograd_chunks", {3, 32, 40, 40}, {32, 32, 3, 3}), {1, 1}, {1, 1, 1, 1}),
      // Batches of small planes with 8 to 64 channels: 8 images to a vector
      // (winograd.cpp's image lanes). A batch of 8; 15 images, the last
      // lane repeating one, with ragged tiles; groups; unpadded; and
      // 64 -> 64 channels on 13 x 13, whose 16 tiles take 3 passes of 7.
      with(conv("winograd_image_lanes", {8, 8, 14, 14}, {16, 8, 3, 3}), {1, 1}, {1, 1, 1, 1}),
      with(conv("winograd_image_lanes_partial", {15, 16, 9, 13}, {16, 16, 3, 3}), {1, 1}, {0, 1, 2, 1}),
      with(conv("winograd_image_lanes_groups", {8, 32, 6, 7}, {64, 16, 3, 3}, 2), {1, 1}, {1, 1, 1, 1}),
      with(conv("winograd_image_lanes_unpadded", {8, 8, 10, 11}, {16, 8, 3, 3}), {1, 1}, {}),
      with(conv("winograd_image_lanes_passes", {8, 64, 13, 13}, {64, 64, 3, 3}), {1, 1}, {1, 1, 1, 1}),
      // Pointwise on planes of at most 100: with a constant W, the CPU
      // provider's transposed GEMM (x^T W^T, then transposed into y).
      with(conv("pointwise_small_plane", {2, 24, 7, 7}, {40, 24, 1, 1}), {}, {}),
      with(conv("pointwise_small_plane_groups", {1, 32, 5, 6}, {48, 16, 1, 1}, 2), {}, {}),
      // Big enough that im2col runs in several chunks of output lines.
      with(conv("chunked_im2col", {4, 64, 48, 48}, {8, 64, 3, 3}), {1, 1}, {1, 1, 1, 1}),
      transposed(with(conv("convT1d", {1, 2, 5}, {2, 3, 3}), {2}, {})),
      transposed(with(conv("convT2d_groups", {2, 4, 4, 3}, {4, 2, 3, 3}, 2), {2, 3}, {1, 0, 0, 1},
                      {1, 2})),
      transposed(
          with(conv("convT3d", {1, 2, 3, 4, 3}, {2, 2, 2, 2, 3}), {2, 2, 1}, {0, 1, 0, 0, 0, 1})),
      transposed(with(conv("convT_no_stride", {2, 3, 5, 4}, {3, 2, 2, 3}), {}, {1, 1, 0, 1})),
  };
  ConvCase no_bias = conv("no_bias", {1, 3, 6, 7}, {2, 3, 2, 3});
  no_bias.bias = false;
  v.push_back(no_bias);
  ConvCase tr_no_bias = transposed(no_bias);
  tr_no_bias.name = "convT_no_bias";
  tr_no_bias.w_dims = {3, 2, 2, 3};
  v.push_back(tr_no_bias);
  for (std::string pad : {"SAME_UPPER", "SAME_LOWER", "VALID"}) {
    ConvCase c = with(conv("auto_pad_" + pad, {1, 2, 9, 8}, {3, 2, 4, 3}), {2, 3}, {}, {1, 2});
    c.auto_pad = pad;
    v.push_back(c);
    if (pad == "VALID") continue;
    ConvCase t =
        transposed(with(conv("convT_auto_pad_" + pad, {1, 2, 4, 3}, {2, 3, 3, 4}), {2, 3}, {}));
    t.auto_pad = pad;
    v.push_back(t);
  }
  ConvCase shaped =
      transposed(with(conv("convT_output_shape", {1, 1, 3, 3}, {1, 2, 3, 3}), {3, 2}, {}));
  shaped.output_shape = {10, 8};  // one more than the natural 9 x 7: a negative end pad
  v.push_back(shaped);
  ConvCase opad = transposed(
      with(conv("convT_output_padding", {1, 2, 3, 4}, {2, 2, 3, 2}), {3, 2}, {1, 0, 1, 1}));
  opad.output_padding = {2, 1};
  v.push_back(opad);
  return v;
}

ONYX_PROVIDER_SUITE(Conv);

ONYX_PROVIDER_SUITE(FusedConv);
ONYX_PROVIDER_SUITE(FusedConvMaxPool);

// com.microsoft FusedConv = the activation of Conv's output, with NaN kept
// as the activation ops keep it. The shapes take the CPU provider's direct
// convolution, im2col and the pointwise GEMM (the activation in the GEMM's
// epilogue), its depthwise loops (Relu and Clip as a clamp of the
// window sums) and Winograd; x holds values on both sides of every
// activation's corners, and a NaN, which must reach only the outputs whose
// windows hold it (Winograd's transforms would spread it over a tile: the
// CPU provider then convolves directly), except in the last case.
ONYX_OP_TEST(FusedConv, MatchesConvThenTheActivation) {
  struct Act {
    std::string name;
    std::vector<float> params;
    double (*fn)(double, const std::vector<float>&);
  };
  const std::vector<Act> acts = {
      {"Relu", {}, [](double v, const std::vector<float>&) { return v < 0 ? 0.0 : v; }},
      {"Clip", {-0.5f, 0.75f},
       [](double v, const std::vector<float>& p) { return std::min(std::max(v, double(p[0])), double(p[1])); }},
      {"LeakyRelu", {0.125f}, [](double v, const std::vector<float>& p) { return v < 0 ? double(p[0]) * v : v; }},
  };
  for (ConvCase c : {with(conv("direct", {2, 3, 6, 21}, {6, 3, 3, 3}), {1, 1}, {1, 1, 1, 1}),
                     with(conv("im2col", {1, 40, 5, 6}, {5, 40, 3, 3}), {1, 1}, {1, 1, 1, 1}),
                     conv("pointwise", {2, 8, 5, 6}, {6, 8, 1, 1}),
                     conv("pointwise_small_plane", {1, 12, 7, 9}, {20, 12, 1, 1}),
                     with(conv("depthwise", {2, 8, 9, 10}, {8, 1, 3, 3}, 8), {1, 1}, {1, 1, 1, 1}),
                     with(conv("depthwise_strided", {1, 6, 11, 9}, {6, 1, 3, 3}, 6), {2, 2}, {1, 0, 1, 1}),
                     with(conv("depthwise_lanes", {1, 10, 11, 9}, {10, 1, 3, 3}, 10), {2, 2}, {1, 0, 1, 1}),
                     with(conv("winograd", {2, 32, 16, 16}, {32, 32, 3, 3}), {1, 1}, {1, 1, 1, 1}),
                     with(conv("winograd_finite", {2, 32, 16, 16}, {32, 32, 3, 3}), {1, 1}, {1, 1, 1, 1}),
                     // The NaN last, in the scan's scalar tail (12,540 floats).
                     with(conv("winograd_nan_last", {1, 33, 20, 19}, {32, 33, 3, 3}), {1, 1}, {1, 1, 1, 1}),
                     with(conv("winograd_image_lanes", {8, 8, 7, 9}, {16, 8, 3, 3}), {1, 1}, {1, 1, 1, 1}),
                     with(conv("winograd_image_lanes_finite", {8, 8, 7, 9}, {16, 8, 3, 3}), {1, 1}, {1, 1, 1, 1})}) {
    const bool nan = !c.name.ends_with("_finite");
    std::vector<float> x = nn::random_floats(size_t(nn::count(c.x_dims)), 51, -2, 2);
    if (nan) x[c.name.ends_with("_nan_last") ? x.size() - 1 : 7] = std::nanf("");
    std::vector<float> w = nn::random_floats(size_t(nn::count(c.w_dims)), 52);
    std::vector<float> b = nn::random_floats(size_t(c.w_dims[0]), 53);
    const Ref want = reference(c, nn::to_double(x), nn::to_double(w), nn::to_double(b));
    for (const Act& act : acts) {
      std::vector<double> y = want.y;
      for (double& v : y) v = std::isnan(v) ? v : act.fn(v, act.params);
      NodeSpec node = make_node(c, x, w, b);
      node.op_type = "FusedConv";
      node.domain = "com.microsoft";
      node.opset = 1;
      node.inputs[1].constant = true;
      node.attr("activation", act.name);
      if (!act.params.empty()) node.attr("activation_params", act.params);
      RunResult r = run_node(node);
      ASSERT_TRUE(r.ok()) << c.name << " " << act.name << ": " << r.error;
      const std::vector<float> got = r.outputs[0].values<float>();
      size_t nans = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        if (std::isnan(y[i])) {
          EXPECT_TRUE(std::isnan(got[i])) << c.name << " " << act.name << " element " << i;
          ++nans;
        }
      }
      if (nan) {
        EXPECT_GT(nans, 0u) << "the NaN in x reaches some outputs";
      }
      std::vector<double> y_no_nan = y, tol = want.tol;
      std::vector<float> got_no_nan = got;
      for (size_t i = 0; i < y.size(); ++i)
        if (std::isnan(y[i])) y_no_nan[i] = 0, got_no_nan[i] = 0, tol[i] = 0;
      EXPECT_TRUE(all_near(got_no_nan, y_no_nan, tol)) << c.name << " " << act.name;
    }
  }
}

// ai.onyx FusedConvMaxPool (the graph optimizer's Conv | FusedConv ->
// MaxPool 2 x 2, stride 2) against the float64 convolution, its activation
// and the pool, on each CPU path: the direct convolution's row, flat and
// channel-lane forms and Winograd's image lanes pool per item (the flat
// form in registers), im2col and the depthwise loops convolve the whole
// batch first. Odd planes (the last row or column no window covers), no
// activation, groups.
ONYX_OP_TEST(FusedConvMaxPool, MatchesTheConvolutionThenTheMaxPool) {
  struct Case {
    ConvCase conv;
    std::string activation;
    std::vector<float> params;
  };
  const std::vector<Case> cases = {
      {with(conv("direct_flat", {3, 1, 28, 28}, {8, 1, 3, 3}), {1, 1}, {1, 1, 1, 1}), "Relu", {}},
      {with(conv("direct_flat_odd", {2, 2, 9, 7}, {16, 2, 3, 3}), {1, 1}, {1, 1, 1, 1}), "LeakyRelu", {0.125f}},
      {with(conv("direct_rows_odd", {2, 3, 11, 13}, {6, 3, 3, 3}), {1, 1}, {1, 0, 1, 2}), "", {}},
      {with(conv("direct_channel_lanes", {3, 8, 14, 14}, {16, 8, 3, 3}), {1, 1}, {1, 1, 1, 1}), "Clip", {-0.5f, 0.75f}},
      {with(conv("winograd_image_lanes", {8, 8, 14, 14}, {16, 8, 3, 3}), {1, 1}, {1, 1, 1, 1}), "Relu", {}},
      {with(conv("winograd_image_lanes_odd", {15, 16, 13, 11}, {16, 16, 3, 3}), {1, 1}, {1, 1, 1, 1}), "LeakyRelu", {0.125f}},
      {with(conv("winograd_image_lanes_groups", {8, 32, 6, 7}, {64, 16, 3, 3}, 2), {1, 1}, {1, 1, 1, 1}), "", {}},
      {with(conv("im2col", {2, 40, 6, 9}, {5, 40, 3, 3}), {1, 1}, {1, 1, 1, 1}), "Relu", {}},
      {with(conv("depthwise", {2, 8, 9, 10}, {8, 1, 3, 3}, 8), {1, 1}, {1, 1, 1, 1}), "Relu", {}},
  };
  for (const Case& k : cases) {
    const ConvCase& c = k.conv;
    std::vector<float> x = nn::random_floats(size_t(nn::count(c.x_dims)), 61, -2, 2);
    std::vector<float> w = nn::random_floats(size_t(nn::count(c.w_dims)), 62);
    std::vector<float> b = nn::random_floats(size_t(c.w_dims[0]), 63);
    const Ref conv_ref = reference(c, nn::to_double(x), nn::to_double(w), nn::to_double(b));
    auto act = [&](double v) {
      if (k.activation == "Relu") return v < 0 ? 0.0 : v;
      if (k.activation == "Clip") return std::min(std::max(v, double(k.params[0])), double(k.params[1]));
      if (k.activation == "LeakyRelu") return v < 0 ? double(k.params[0]) * v : v;
      return v;
    };
    // Pooled: the window's largest activated value, with that value's
    // tolerance (the activations and max are monotone, 1-Lipschitz here).
    const int64_t n = conv_ref.dims[0], m = conv_ref.dims[1], h = conv_ref.dims[2], wd = conv_ref.dims[3];
    const int64_t ph = h / 2, pw = wd / 2;
    std::vector<double> want, tol;
    for (int64_t p = 0; p < n * m; ++p)
      for (int64_t i = 0; i < ph; ++i)
        for (int64_t j = 0; j < pw; ++j) {
          double best = -INFINITY, best_tol = 0;
          for (int64_t a = 0; a < 2; ++a)
            for (int64_t e = 0; e < 2; ++e) {
              const size_t at = size_t((p * h + 2 * i + a) * wd + 2 * j + e);
              best = std::max(best, act(conv_ref.y[at]));
              best_tol = std::max(best_tol, conv_ref.tol[at]);
            }
          want.push_back(best);
          tol.push_back(best_tol);
        }
    NodeSpec node = make_node(c, x, w, b);
    node.op_type = "FusedConvMaxPool";
    node.domain = "ai.onyx";
    node.opset = 1;
    node.inputs[1].constant = true;
    node.attr("pool_size", int64_t(2));
    if (!k.activation.empty()) node.attr("activation", k.activation);
    if (!k.params.empty()) node.attr("activation_params", k.params);
    for (size_t threads : {1u, 2u}) {
      RunResult r = run_node(node, {.threads = threads});
      ASSERT_TRUE(r.ok()) << c.name << ": " << r.error;
      EXPECT_EQ(r.outputs[0].dims, (std::vector<int64_t>{n, m, ph, pw})) << c.name;
      EXPECT_TRUE(all_near(r.outputs[0].values<float>(), want, tol)) << c.name << " on " << threads << " threads";
    }
  }
}

// Bad FusedConvMaxPool nodes: a pool other than 2 x 2 is declined, and a
// convolution output smaller than the pool is an error naming the shapes.
ONYX_OP_TEST(FusedConvMaxPool, RefusesWhatItCannotPool) {
  ConvCase c = with(conv("tiny", {1, 2, 3, 3}, {4, 2, 3, 3}), {1, 1}, {});  // a 1 x 1 output
  std::vector<float> x(18, 1.0f), w(72, 0.5f), b(4, 0.0f);
  NodeSpec node = make_node(c, x, w, b);
  node.op_type = "FusedConvMaxPool";
  node.domain = "ai.onyx";
  node.opset = 1;
  node.attr("pool_size", int64_t(2));
  RunResult r = run_node(node);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error.find("smaller than the 2 x 2 pool"), std::string::npos) << r.error;
  node.attributes.clear();
  node.attr("pool_size", int64_t(3));
  r = run_node(node);
  EXPECT_TRUE(r.declined) << r.error;
  EXPECT_NE(r.error.find("pool_size 3"), std::string::npos) << r.error;
}

// Depthwise layers of one padded size but other pads, one after the other on
// one thread: the CPU provider keeps each thread's zero padding between
// channels and layers, and must not keep it across geometries (the first
// layer's interior lies in the second's padding).
ONYX_OP_TEST(Conv, DepthwiseGeometriesOneAfterAnother) {
  std::vector<float> x = nn::random_floats(256, 71, -2, 2), w = nn::random_floats(36, 72), b = {1, -1, 2, 0};
  const ConvCase a = with(conv("pads_1111", {1, 4, 8, 8}, {4, 1, 3, 3}, 4), {1, 1}, {1, 1, 1, 1});
  const ConvCase c = with(conv("pads_0220", {1, 4, 8, 8}, {4, 1, 3, 3}, 4), {1, 1}, {0, 2, 2, 0});
  for (const ConvCase* k : {&a, &c, &a}) {
    Ref want = reference(*k, nn::to_double(x), nn::to_double(w), nn::to_double(b));
    RunResult r = run_node(make_node(*k, x, w, b), {.threads = 1});
    ASSERT_TRUE(r.ok()) << k->name << ": " << r.error;
    EXPECT_TRUE(all_near(r.outputs[0].values<float>(), want.y, want.tol)) << k->name;
  }
}

ONYX_OP_TEST(Conv, UnknownShapesAtCreation) {
  // Value infos without shapes: the kernel learns everything at compute.
  ConvCase c = with(conv("dyn", {1, 2, 6, 5}, {3, 2, 3, 2}), {2, 1}, {1, 0, 1, 1});
  std::vector<float> x = nn::random_floats(60, 61), w = nn::random_floats(36, 62), b = {1, 2, 3};
  Ref want = reference(c, nn::to_double(x), nn::to_double(w), nn::to_double(b));
  RunResult r = run_node(make_node(c, x, w, b), {.hide_input_shapes = true});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_TRUE(all_near(r.outputs[0].values<float>(), want.y, want.tol));
}

ONYX_OP_TEST(Conv, KernelShapeAttributeMustMatchWeights) {
  ConvCase c = conv("k", {1, 2, 5, 5}, {3, 2, 3, 3});
  NodeSpec node = make_node(c, std::vector<float>(50, 1.f), std::vector<float>(54, 1.f), {0, 0, 0});
  node.attr("kernel_shape", std::vector<int64_t>{3, 2});
  RunResult r = run_node(node);
  ASSERT_FALSE(r.ok());
  EXPECT_ERROR_MENTIONS(r, "kernel_shape [3,2]");
}

ONYX_OP_TEST(Conv, ShapeErrorsNameTheProblem) {
  // W says 3 input channels per group; X has 2.
  ConvCase c = conv("bad_conv", {1, 2, 5, 5}, {4, 3, 3, 3});
  RunResult r = run_node(
      make_node(c, std::vector<float>(50), std::vector<float>(108), std::vector<float>(4)));
  ASSERT_FALSE(r.ok());
  EXPECT_ERROR_MENTIONS(r, "Conv node 'bad_conv'");
  EXPECT_ERROR_MENTIONS(r, "group 1");

  c = conv("bad_bias", {1, 2, 5, 5}, {4, 2, 3, 3});
  r = run_node(make_node(c, std::vector<float>(50), std::vector<float>(72), std::vector<float>(3)));
  ASSERT_FALSE(r.ok());
  EXPECT_ERROR_MENTIONS(r, "input 2 (B)");

  c = conv("too_small", {1, 2, 2, 2}, {4, 2, 3, 3});
  r = run_node(make_node(c, std::vector<float>(8), std::vector<float>(72), std::vector<float>(4)));
  ASSERT_FALSE(r.ok());
  EXPECT_ERROR_MENTIONS(r, "exceeds");

  c = transposed(conv("bad_convT", {1, 3, 4, 4}, {2, 2, 3, 3}));
  r = run_node(make_node(c, std::vector<float>(48), std::vector<float>(36), std::vector<float>(2)));
  ASSERT_FALSE(r.ok());
  EXPECT_ERROR_MENTIONS(r, "ConvTranspose node 'bad_convT'");
}

ONYX_OP_TEST(Conv, DeclinesOtherAndMixedTypes) {
  for (std::string op : {"Conv", "ConvTranspose"}) {
    NodeSpec ints(op, 11);
    ints.inputs = {make_tensor<int32_t>({1, 1, 3, 3}, std::vector<int32_t>(9)),
                   make_tensor<int32_t>({1, 1, 2, 2}, std::vector<int32_t>(4))};
    RunResult r = run_node(ints);
    EXPECT_TRUE(r.declined) << op;
    EXPECT_ERROR_MENTIONS(r, "int32");
    NodeSpec mixed(op, 11);
    mixed.inputs = {make_tensor<double>({1, 1, 3, 3}, std::vector<double>(9)),
                    make_tensor<float>({1, 1, 2, 2}, std::vector<float>(4))};
    r = run_node(mixed);
    EXPECT_TRUE(r.declined) << op;
    EXPECT_ERROR_MENTIONS(r, "float");
  }
}

// float16 Conv runs through float32: inputs exactly representable in
// float16, so the only error is the final rounding to float16 (relative
// 2^-11) over a float32 sum of 18 terms: rtol 1e-3 of the largest output.
ONYX_OP_TEST(Conv, Float16MatchesFloat64Reference) {
  const int64_t c = 2, m = 3, h = 4, w = 4, k = 3;
  std::vector<double> xv(size_t(c * h * w)), wv(size_t(m * c * k * k));
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = double(int(i % 7) - 3) * 0.5;
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = double(int(i % 5) - 2) * 0.25;
  auto halves = [](const std::vector<double>& v) {
    std::vector<unsigned char> bytes;
    for (double d : v) {
      uint16_t bits = float_to_half(float(d));
      bytes.push_back(uint8_t(bits & 0xFF));
      bytes.push_back(uint8_t(bits >> 8));
    }
    return bytes;
  };
  NodeSpec node("Conv", 11);
  node.inputs = {make_raw(ONYX_DTYPE_FLOAT16, {1, c, h, w}, halves(xv)),
                 make_raw(ONYX_DTYPE_FLOAT16, {m, c, k, k}, halves(wv))};
  node.attr("pads", std::vector<int64_t>{1, 1, 1, 1});
  RunResult r = run_node(node);
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_EQ(r.outputs[0].dtype, ONYX_DTYPE_FLOAT16);
  ASSERT_EQ(r.outputs[0].dims, (std::vector<int64_t>{1, m, h, w}));
  std::vector<double> got = r.outputs[0].as_doubles(), want;
  double top = 0;
  for (int64_t f = 0; f < m; ++f)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) {
        double acc = 0;
        for (int64_t ch = 0; ch < c; ++ch)
          for (int64_t ky = 0; ky < k; ++ky)
            for (int64_t kx = 0; kx < k; ++kx) {
              int64_t iy = y + ky - 1, ix = x + kx - 1;
              if (iy >= 0 && iy < h && ix >= 0 && ix < w)
                acc += xv[size_t((ch * h + iy) * w + ix)] * wv[size_t(((f * c + ch) * k + ky) * k + kx)];
            }
        want.push_back(acc);
        top = std::max(top, std::fabs(acc));
      }
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-3 * top) << i;
}

}  // namespace
}  // namespace onyx::test
