// Host-side checks of the GPU kernels' math (providers/gpu_common), compiled
// by g++: the same __host__ __device__ functions the CUDA and ROCm kernels
// run, driven here the way the kernels drive them (thread partials, tree
// combines, tile steps), against float64 references.
//
// Tolerances: float32 results of O(1) values after O(n) accumulations; the
// bounds below are a few float32 ulps times sqrt(n) or the op's known error
// (expf/erff/tanhf are within 2 ulps in glibc and in CUDA's libdevice).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "gemm_tiled.h"
#include "kernel_math.h"
#include "op_util.h"

namespace onyx::gpu {
namespace {

std::vector<float> random_values(size_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

double reference_unary(UnaryOp op, double x, double alpha) {
  switch (op) {
    case UnaryOp::kRelu: return x > 0 ? x : 0;
    case UnaryOp::kSigmoid: return 1 / (1 + std::exp(-x));
    case UnaryOp::kTanh: return std::tanh(x);
    case UnaryOp::kExp: return std::exp(x);
    case UnaryOp::kLog: return std::log(x);
    case UnaryOp::kSqrt: return std::sqrt(x);
    case UnaryOp::kNeg: return -x;
    case UnaryOp::kAbs: return std::fabs(x);
    case UnaryOp::kErf: return std::erf(x);
    case UnaryOp::kReciprocal: return 1 / x;
    case UnaryOp::kLeakyRelu: return x >= 0 ? x : alpha * x;
    case UnaryOp::kGelu: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case UnaryOp::kGeluTanh:
      return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    case UnaryOp::kIdentity: return x;
  }
  return 0;
}

TEST(GpuMath, UnaryOpsMatchFloat64) {
  const UnaryOp ops[] = {UnaryOp::kRelu, UnaryOp::kSigmoid, UnaryOp::kTanh,  UnaryOp::kExp,
                         UnaryOp::kLog,  UnaryOp::kSqrt,    UnaryOp::kNeg,   UnaryOp::kAbs,
                         UnaryOp::kErf,  UnaryOp::kReciprocal, UnaryOp::kLeakyRelu,
                         UnaryOp::kGelu, UnaryOp::kGeluTanh};
  std::vector<float> xs = random_values(2000, -8.f, 8.f, 1);
  xs.insert(xs.end(), {0.f, -0.f, 1e-6f, -1e-6f, 30.f, -30.f, 88.f, -100.f});
  for (UnaryOp op : ops) {
    for (float x : xs) {
      bool positive_only = op == UnaryOp::kLog || op == UnaryOp::kSqrt;
      float in = positive_only ? std::fabs(x) + 1e-3f : x;
      if (op == UnaryOp::kReciprocal && in == 0.f) continue;
      double want = reference_unary(op, in, 0.1);
      float got = apply_unary(op, in, 0.1f);
      // 4 ulps relative, plus an absolute floor for results near zero. Gelu
      // computes 1 + erf (or 1 + tanh), which cancels for negative x: the
      // 1-ulp error of erff/tanhf near -1 (6e-8) is multiplied by |x| / 2.
      bool cancels = op == UnaryOp::kGelu || op == UnaryOp::kGeluTanh;
      double tolerance = 4 * 1.2e-7 * std::fabs(want) + 1e-7 + (cancels ? 1.2e-7 * std::fabs(in) : 0);
      EXPECT_NEAR(got, want, tolerance)
          << "op " << int(op) << " x=" << in;
    }
  }
  // Sigmoid stays finite and exact at the extremes (no exp overflow).
  EXPECT_EQ(apply_unary(UnaryOp::kSigmoid, -1000.f, 0), 0.f);
  EXPECT_EQ(apply_unary(UnaryOp::kSigmoid, 1000.f, 0), 1.f);
}

TEST(GpuMath, BinaryOpsPropagateNaNLikeTheOnnxReference) {
  float nan = std::nanf("");
  EXPECT_TRUE(std::isnan(apply_binary(BinaryOp::kMax, nan, 1.f)));
  EXPECT_TRUE(std::isnan(apply_binary(BinaryOp::kMin, 1.f, nan)));
  EXPECT_EQ(apply_binary(BinaryOp::kMax, -2.f, 3.f), 3.f);
  EXPECT_EQ(apply_binary(BinaryOp::kPow, 2.f, 10.f), 1024.f);
  EXPECT_EQ(apply_binary(BinaryOp::kDiv, 1.f, 4.f), 0.25f);
}

// The binary kernel over a broadcast: every output element reads the input
// elements numpy would.
TEST(GpuMath, BroadcastOffsetsFollowNumpy) {
  std::vector<int64_t> a_dims = {2, 1, 4}, b_dims = {3, 1};
  BroadcastIndex index;
  std::vector<int64_t> out_dims;
  ASSERT_EQ(make_broadcast(a_dims, b_dims, &index, &out_dims), "");
  ASSERT_EQ(out_dims, (std::vector<int64_t>{2, 3, 4}));
  std::vector<float> a = random_values(8, -1, 1, 2), b = random_values(3, -1, 1, 3);
  for (int64_t i = 0; i < 24; ++i) {
    int64_t n = i / 12, r = (i / 4) % 3, c = i % 4;
    int64_t ia, ib;
    broadcast_offsets(index, i, &ia, &ib);
    EXPECT_EQ(ia, n * 4 + c);
    EXPECT_EQ(ib, r);
    EXPECT_EQ(apply_binary(BinaryOp::kSub, a[size_t(ia)], b[size_t(ib)]), a[size_t(n * 4 + c)] - b[size_t(r)]);
  }
  EXPECT_NE(make_broadcast(std::vector<int64_t>{2, 3}, std::vector<int64_t>{4}, &index, &out_dims), "");
}

// reduce_kernel: 256 thread partials strided over the reduced set, then a tree.
float emulate_reduce(ReduceOp op, const ReduceIndex& ri, const std::vector<float>& x, int64_t out) {
  constexpr int kThreads = 256;
  float shift = 0.f;
  if (op == ReduceOp::kLogSumExp) {
    float m = -INFINITY;
    for (int64_t r = 0; r < ri.reduce_count; ++r)
      m = reduce_fold(ReduceOp::kMax, m, x[size_t(reduce_input_offset(ri, out, r))], 0.f);
    shift = std::isinf(m) ? 0.f : m;
  }
  std::vector<float> partial(kThreads, reduce_identity(op));
  for (int t = 0; t < kThreads; ++t)
    for (int64_t r = t; r < ri.reduce_count; r += kThreads)
      partial[size_t(t)] = reduce_fold(op, partial[size_t(t)], x[size_t(reduce_input_offset(ri, out, r))], shift);
  for (int half = kThreads / 2; half > 0; half /= 2)
    for (int t = 0; t < half; ++t)
      partial[size_t(t)] = reduce_combine(op, partial[size_t(t)], partial[size_t(t + half)]);
  return reduce_finish(op, partial[0], ri.reduce_count, shift);
}

TEST(GpuMath, ReductionsOverAnyAxesMatchFloat64) {
  std::vector<int64_t> dims = {3, 300, 5};  // 300 > 256 threads: every thread folds more than once
  std::vector<float> x = random_values(3 * 300 * 5, 0.1f, 2.f, 4);
  const ReduceOp ops[] = {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMax, ReduceOp::kMin,
                          ReduceOp::kSumSquare, ReduceOp::kL1, ReduceOp::kL2, ReduceOp::kLogSumExp};
  for (std::vector<bool> reduced : {std::vector<bool>{false, true, false}, {true, false, true},
                                    {true, true, true}}) {
    std::vector<int64_t> out_dims;
    ReduceIndex ri = make_reduce_index(dims, reduced, /*keepdims=*/false, &out_dims);
    int64_t out_count = 1;
    for (int64_t d : out_dims) out_count *= d;
    for (ReduceOp op : ops) {
      for (int64_t o = 0; o < out_count; ++o) {
        // Reference: walk the tensor directly by coordinates, in float64.
        double sum = 0, sq = 0, mx = -1e300, mn = 1e300, lse = 0;
        int64_t count = 0;
        for (int64_t i = 0; i < 3; ++i)
          for (int64_t j = 0; j < 300; ++j)
            for (int64_t k = 0; k < 5; ++k) {
              int64_t coords[3] = {i, j, k}, kept = 0;
              for (int d = 0; d < 3; ++d)
                if (!reduced[size_t(d)]) kept = kept * dims[size_t(d)] + coords[d];
              if (kept != o) continue;
              double v = x[size_t((i * 300 + j) * 5 + k)];
              sum += v, sq += v * v, mx = std::max(mx, v), mn = std::min(mn, v), lse += std::exp(v);
              ++count;
            }
        double want = 0;
        switch (op) {
          case ReduceOp::kSum: case ReduceOp::kL1: want = sum; break;
          case ReduceOp::kMean: want = sum / double(count); break;
          case ReduceOp::kMax: want = mx; break;
          case ReduceOp::kMin: want = mn; break;
          case ReduceOp::kSumSquare: want = sq; break;
          case ReduceOp::kL2: want = std::sqrt(sq); break;
          case ReduceOp::kLogSumExp: want = std::log(lse); break;
          default: break;
        }
        EXPECT_NEAR(emulate_reduce(op, ri, x, o), want, 1e-5 * std::fabs(want) + 1e-6)
            << "op " << int(op) << " output " << o;
      }
    }
  }
}

TEST(GpuMath, SoftmaxRowsMatchFloat64ForEveryAxisLayout) {
  std::vector<int64_t> dims = {2, 7, 3};
  std::vector<float> x = random_values(42, -20.f, 20.f, 5);
  for (int64_t axis = 0; axis < 3; ++axis) {
    RowLayout rows = make_softmax_rows(dims, axis, /*single_axis=*/true);
    ASSERT_EQ(rows.rows * rows.length, 42);
    for (bool log : {false, true}) {
      for (int64_t row = 0; row < rows.rows; ++row) {
        int64_t base = row_base(rows, row);
        float m = -INFINITY;
        double md = -1e300;
        for (int64_t k = 0; k < rows.length; ++k) {
          m = std::max(m, x[size_t(base + k * rows.inner)]);
          md = std::max(md, double(x[size_t(base + k * rows.inner)]));
        }
        float s = 0;
        double sd = 0;
        for (int64_t k = 0; k < rows.length; ++k) {
          s += std::exp(x[size_t(base + k * rows.inner)] - m);
          sd += std::exp(double(x[size_t(base + k * rows.inner)]) - md);
        }
        for (int64_t k = 0; k < rows.length; ++k) {
          double v = x[size_t(base + k * rows.inner)];
          double want = log ? (v - md) - std::log(sd) : std::exp(v - md) / sd;
          EXPECT_NEAR(softmax_output(float(v), m, s, log), want, 1e-6 * std::fabs(want) + 1e-7);
        }
      }
    }
  }
  // Opsets < 13 flatten at the axis: one row per leading index.
  RowLayout flat = make_softmax_rows(dims, 1, /*single_axis=*/false);
  EXPECT_EQ(flat.rows, 2);
  EXPECT_EQ(flat.length, 21);
  EXPECT_EQ(flat.inner, 1);
}

TEST(GpuMath, LayerNormMatchesFloat64) {
  const int64_t n = 768;
  // A large mean makes a one-pass variance lose digits; the kernel uses two passes.
  std::vector<float> x = random_values(n, 999.f, 1001.f, 6), scale = random_values(n, 0.5f, 1.5f, 7),
                     bias = random_values(n, -1.f, 1.f, 8);
  double mean = 0, var = 0;
  for (float v : x) mean += v;
  mean /= n;
  for (float v : x) var += (v - mean) * (v - mean);
  var /= n;
  float mf = 0;
  for (float v : x) mf += v;
  mf /= float(n);
  float vf = 0;
  for (float v : x) vf += (v - mf) * (v - mf);
  float inv_std = layer_norm_inv_std(vf / float(n), 1e-5f);
  for (int64_t k = 0; k < n; ++k) {
    double want = (x[size_t(k)] - mean) / std::sqrt(var + 1e-5) * scale[size_t(k)] + bias[size_t(k)];
    EXPECT_NEAR(layer_norm_output(x[size_t(k)], mf, inv_std, scale[size_t(k)], bias[size_t(k)]), want, 2e-3)
        << k;  // float32 mean of values near 1000 carries ~1e-4 absolute error, scaled by 1/std ~ 1.7
  }
}

TEST(GpuMath, GatherOffsetsAndNegativeAndOutOfRangeIndices) {
  // data [2, 5, 3], axis 1, indices [-1, 0, 4, 2] -> out [2, 4, 3]
  const int64_t inner = 3, count = 4, axis_dim = 5;
  const int64_t indices[] = {-1, 0, 4, 2};
  for (int64_t i = 0; i < 2 * count * inner; ++i) {
    int64_t pos = gather_index_position(i, inner, count);
    int64_t idx = indices[pos] < 0 ? indices[pos] + axis_dim : indices[pos];
    int64_t outer = i / (count * inner), in = i % inner;
    EXPECT_EQ(gather_source_offset(i, inner, count, axis_dim, indices[pos]), (outer * axis_dim + idx) * inner + in);
  }
  EXPECT_EQ(gather_source_offset(0, inner, count, axis_dim, 5), -1);
  EXPECT_EQ(gather_source_offset(0, inner, count, axis_dim, -6), -1);
}

// gemm_tiled_kernel, block by block and step by step; each step runs for all
// 256 threads before the next (the __syncthreads between them).
void emulate_gemm(const GemmParams& p) {
  GemmTiles tiles;
  for (int64_t z = 0; z < p.batch; ++z) {
    const float* a = p.a + z * p.stride_a;
    const float* b = p.b + z * p.stride_b;
    float* c = p.c + z * p.stride_c;
    for (int64_t row0 = 0; row0 < p.m; row0 += kGemmTileM)
      for (int64_t col0 = 0; col0 < p.n; col0 += kGemmTileN) {
        std::vector<float> acc(size_t(kGemmThreads) * kGemmPerThread * kGemmPerThread, 0.f);
        auto acc_of = [&](int tid) {
          return reinterpret_cast<float(*)[kGemmPerThread]>(&acc[size_t(tid) * kGemmPerThread * kGemmPerThread]);
        };
        for (int64_t k0 = 0; k0 < p.k; k0 += kGemmTileK) {
          for (int tid = 0; tid < kGemmThreads; ++tid) gemm_load_tiles(p, a, b, tiles, row0, col0, k0, tid);
          for (int tid = 0; tid < kGemmThreads; ++tid)
            gemm_accumulate(tiles, acc_of(tid), tid % kGemmThreadsX, tid / kGemmThreadsX);
        }
        for (int tid = 0; tid < kGemmThreads; ++tid)
          gemm_store(p, c, acc_of(tid), row0, col0, tid % kGemmThreadsX, tid / kGemmThreadsX);
      }
  }
}

TEST(GpuMath, TiledGemmMatchesFloat64WithEdgesTransposesAndBatches) {
  struct Case { int64_t m, n, k; bool ta, tb; int64_t batch; float alpha, beta; };
  for (Case t : {Case{1, 1, 1, false, false, 1, 1.f, 0.f}, Case{70, 65, 33, false, false, 1, 1.f, 0.f},
                 Case{64, 64, 16, true, false, 1, 0.5f, 0.f}, Case{17, 130, 50, false, true, 2, 1.f, 1.f},
                 Case{100, 3, 129, true, true, 3, 2.f, -0.5f}}) {
    std::vector<float> a = random_values(size_t(t.batch * t.m * t.k), -1, 1, 9);
    std::vector<float> b = random_values(size_t(t.batch * t.k * t.n), -1, 1, 10);
    std::vector<float> c = random_values(size_t(t.batch * t.m * t.n), -1, 1, 11);
    std::vector<float> c0 = c;
    GemmParams p;
    p.m = t.m, p.n = t.n, p.k = t.k, p.trans_a = t.ta, p.trans_b = t.tb, p.batch = t.batch;
    p.a = a.data(), p.lda = t.ta ? t.m : t.k, p.stride_a = t.m * t.k;
    p.b = b.data(), p.ldb = t.tb ? t.k : t.n, p.stride_b = t.k * t.n;
    p.c = c.data(), p.ldc = t.n, p.stride_c = t.m * t.n;
    p.alpha = t.alpha, p.beta = t.beta;
    emulate_gemm(p);
    for (int64_t z = 0; z < t.batch; ++z)
      for (int64_t i = 0; i < t.m; ++i)
        for (int64_t j = 0; j < t.n; ++j) {
          double sum = 0;
          for (int64_t q = 0; q < t.k; ++q) {
            double av = t.ta ? a[size_t(z * t.m * t.k + q * t.m + i)] : a[size_t(z * t.m * t.k + i * t.k + q)];
            double bv = t.tb ? b[size_t(z * t.k * t.n + j * t.k + q)] : b[size_t(z * t.k * t.n + q * t.n + j)];
            sum += av * bv;
          }
          size_t at = size_t(z * t.m * t.n + i * t.n + j);
          double want = t.alpha * sum + t.beta * c0[at];
          // |terms| <= 1: float32 accumulation error grows like k * 2^-24.
          EXPECT_NEAR(c[at], want, 1e-6 * double(t.k) + 1e-6) << i << "," << j;
        }
  }
}

// im2col + the tiled GEMM, as the ROCm provider convolves, against a direct
// float64 convolution with padding, stride, dilation and groups.
TEST(GpuMath, Im2colConvolutionMatchesDirectFloat64) {
  Conv2dShape s;
  s.batch = 2, s.channels = 4, s.height = 9, s.width = 7, s.out_channels = 6, s.groups = 2;
  s.kernel_h = 3, s.kernel_w = 2, s.stride_h = 2, s.stride_w = 1, s.pad_h = 1, s.pad_w = 1;
  s.dilation_h = 1, s.dilation_w = 2;
  s.out_height = (s.height + 2 * s.pad_h - s.dilation_h * (s.kernel_h - 1) - 1) / s.stride_h + 1;
  s.out_width = (s.width + 2 * s.pad_w - s.dilation_w * (s.kernel_w - 1) - 1) / s.stride_w + 1;
  int64_t gc = s.channels / s.groups, go = s.out_channels / s.groups;
  std::vector<float> x = random_values(size_t(s.batch * s.channels * s.height * s.width), -1, 1, 12);
  std::vector<float> w = random_values(size_t(s.out_channels * gc * s.kernel_h * s.kernel_w), -1, 1, 13);
  int64_t rows = gc * s.kernel_h * s.kernel_w, cols = s.out_height * s.out_width;
  std::vector<float> y(size_t(s.batch * s.out_channels * cols)), columns(size_t(rows * cols));
  for (int64_t n = 0; n < s.batch; ++n)
    for (int64_t g = 0; g < s.groups; ++g) {
      const float* image = x.data() + n * s.channels * s.height * s.width;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) columns[size_t(r * cols + c)] = im2col_value(s, image, g, r, c);
      GemmParams p;
      p.m = go, p.n = cols, p.k = rows;
      p.a = w.data() + g * go * rows, p.lda = rows;
      p.b = columns.data(), p.ldb = cols;
      p.c = y.data() + (n * s.out_channels + g * go) * cols, p.ldc = cols;
      emulate_gemm(p);
    }
  for (int64_t n = 0; n < s.batch; ++n)
    for (int64_t o = 0; o < s.out_channels; ++o)
      for (int64_t oy = 0; oy < s.out_height; ++oy)
        for (int64_t ox = 0; ox < s.out_width; ++ox) {
          double sum = 0;
          int64_t g = o / go;
          for (int64_t c = 0; c < gc; ++c)
            for (int64_t kh = 0; kh < s.kernel_h; ++kh)
              for (int64_t kw = 0; kw < s.kernel_w; ++kw) {
                int64_t iy = oy * s.stride_h - s.pad_h + kh * s.dilation_h;
                int64_t ix = ox * s.stride_w - s.pad_w + kw * s.dilation_w;
                if (iy < 0 || iy >= s.height || ix < 0 || ix >= s.width) continue;
                sum += double(x[size_t(((n * s.channels + g * gc + c) * s.height + iy) * s.width + ix)]) *
                       w[size_t(((o * gc + c) * s.kernel_h + kh) * s.kernel_w + kw)];
              }
          EXPECT_NEAR(y[size_t(((n * s.out_channels + o) * s.out_height + oy) * s.out_width + ox)], sum, 1e-5);
        }
}

TEST(GpuMath, PoolingMatchesDirectFloat64WithPadsStridesAndDilations) {
  Pool2dShape s;
  s.height = 7, s.width = 6, s.kernel_h = 3, s.kernel_w = 2, s.stride_h = 2, s.stride_w = 1;
  s.pad_top = 1, s.pad_left = 0, s.dilation_h = 1, s.dilation_w = 2;
  const int64_t pad_bottom = 1, pad_right = 1;
  s.out_height = (s.height + s.pad_top + pad_bottom - s.dilation_h * (s.kernel_h - 1) - 1) / s.stride_h + 1;
  s.out_width = (s.width + s.pad_left + pad_right - s.dilation_w * (s.kernel_w - 1) - 1) / s.stride_w + 1;
  std::vector<float> plane = random_values(size_t(s.height * s.width), -3, 3, 14);
  for (bool include_pad : {false, true}) {
    s.count_include_pad = include_pad;
    for (int64_t oy = 0; oy < s.out_height; ++oy)
      for (int64_t ox = 0; ox < s.out_width; ++ox) {
        double mx = -1e300, sum = 0;
        int64_t inside = 0;
        for (int64_t kh = 0; kh < s.kernel_h; ++kh)
          for (int64_t kw = 0; kw < s.kernel_w; ++kw) {
            int64_t y = oy * s.stride_h - s.pad_top + kh * s.dilation_h;
            int64_t x = ox * s.stride_w - s.pad_left + kw * s.dilation_w;
            if (y < 0 || y >= s.height || x < 0 || x >= s.width) continue;
            mx = std::max(mx, double(plane[size_t(y * s.width + x)]));
            sum += plane[size_t(y * s.width + x)];
            ++inside;
          }
        EXPECT_EQ(pool2d_value(s, plane.data(), oy, ox, true), float(mx));
        double avg = sum / double(include_pad ? s.kernel_h * s.kernel_w : inside);
        EXPECT_NEAR(pool2d_value(s, plane.data(), oy, ox, false), avg, 1e-6);
      }
  }
}

TEST(GpuMath, BatchNormMatchesFloat64) {
  for (float x : random_values(100, -5, 5, 15)) {
    double want = (double(x) - 0.3) / std::sqrt(2.5 + 1e-5) * 1.7 - 0.2;
    EXPECT_NEAR(batch_norm_output(x, 0.3f, 2.5f, 1.7f, -0.2f, 1e-5f), want, 4e-7 * std::fabs(want) + 1e-6);
  }
}

TEST(GpuMath, ReshapeDimsFollowTheOnnxRules) {
  std::vector<int64_t> in = {2, 3, 4}, out;
  EXPECT_EQ(reshape_dims(in, {0, -1}, false, &out), "");
  EXPECT_EQ(out, (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(reshape_dims(in, {4, 0, 2}, false, &out), "");
  EXPECT_EQ(out, (std::vector<int64_t>{4, 3, 2}));
  EXPECT_NE(reshape_dims(in, {5, -1}, false, &out), "");
  EXPECT_NE(reshape_dims(in, {-1, -1}, false, &out), "");
  EXPECT_NE(reshape_dims(in, {0, 4}, true, &out), "");  // allowzero: 0 is a real zero
}

}  // namespace
}  // namespace onyx::gpu
