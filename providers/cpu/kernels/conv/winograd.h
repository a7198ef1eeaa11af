// winograd.h: float32 3x3, stride-1 convolution by Winograd's minimal
// filtering F(4x4, 3x3) (Lavin and Gray, "Fast Algorithms for Convolutional
// Neural Networks", 2016). Each 6x6 input tile and each 3x3 filter are
// transformed to 36 points where the convolution is a product; summed over
// the input channels, that is 36 independent GEMMs
//   M[point] [out_channels x tiles] = U[point] [out_channels x channels] x V[point] [channels x tiles]
// and the output transform turns the 36 points of a tile back into its 4x4
// outputs: 36 multiply-adds per channel pair and tile instead of 144. The
// transforms cost O(channels + out_channels) per tile against the GEMMs'
// O(channels x out_channels), so it pays from a few dozen channels on
// (fits()). Private to the CPU provider; Conv (conv.cpp) takes it when
// fits() says so.
//
// Accuracy: the transforms' constants (up to 8, and 1/24 in the filter's)
// round in more places than a direct sum: the error is a few units in the
// last place of the sum of |w x| terms of an output (measured: up to 1e-6
// of that sum, the direct convolution up to 1e-7).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/conv/direct_conv.h"
#include "kernels/nn_util.h"

namespace onyx::cpu::winograd {

constexpr int64_t kTile = 4;     // output tile side
constexpr int64_t kPoints = 36;  // transform points of a tile (6 x 6)

// Whether convolve() takes windows `win` (lifted to 3-D) for a batch of `n`
// images with `channels` and `out_channels` per group: 2-D, 3x3, stride and
// dilation 1, AVX2+FMA on this CPU, channels enough for the transforms to
// pay, and tiles enough for the GEMMs to run at speed.
bool fits(const std::vector<nn::WindowDim>& win, int64_t n, int64_t channels, int64_t out_channels);

// Whether every one of `count` floats is finite. The transforms mix every
// input of a tile into all 16 of its outputs (and a filter into all 36
// points), so a NaN or infinity would reach outputs whose windows do not
// hold it: convolve() is for finite inputs and weights only.
bool finite(const float* p, int64_t count);

// The weights W [out_channels, channels, 3, 3] (all groups; `channels` is
// per group) transformed: per group, U [kPoints][out_channels / group]
// [channels], computed in float64 and rounded once.
std::vector<float> transform_weights(const float* w, int64_t out_channels, int64_t channels, int64_t group);

// Whether convolve() puts 8 images in the lanes of its vectors (a batch of
// small planes with 8 to 64 channels), for windows fits() takes.
bool image_lanes(const std::vector<nn::WindowDim>& win, int64_t n, int64_t channels, int64_t out_channels);

// y [n, out_channels, H, W] = act(conv(x [n, channels, H', W'], w) + bias)
// with `u` = transform_weights(w). `bias` may be null. Requires fits().
// Runs on ctx's pool; scratch memory from ctx. pool_2x2 (only where
// image_lanes()): y is instead the output max-pooled over 2 x 2 windows of
// stride 2 ([n, out_channels, H / 2, W / 2]), pooled while in cache.
OnyxStatus* convolve(sdk::ComputeContext& ctx, const float* x, int64_t n, int64_t group, int64_t channels,
                     int64_t out_channels, const std::vector<nn::WindowDim>& win, const float* u,
                     const float* bias, const direct_conv::Epilogue& e, float* y, bool pool_2x2 = false);

namespace detail {  // the AVX2 loops (winograd_avx2.cpp); call only on an AVX2+FMA CPU

// The input transform of `tile_rows` consecutive tile rows of one channel,
// `tiles_w` tiles each: the 6x6 input of tile j of tile row i starts at row
// `top` + 4 i, column `left` + 4 j of `plane` (in_h x in_w; outside it,
// zeros). Point p of that tile goes to v[p * point_stride + i * tiles_w + j].
struct InputTiles {
  const float* plane;
  int64_t in_h, in_w, top, left, tiles_w, tile_rows;
  float* v;
  int64_t point_stride;
  float* scratch;  // scratch_floats(tiles_w, tile_rows)
};
void input_tiles_avx2(const InputTiles& t);

// The output transform of `tile_rows` consecutive tile rows of one output
// channel: point p of tile j of tile row i at m[p * point_stride + i *
// tiles_w + j] (readable 8 floats further), plus `bias`, through the
// activation, into y (out_w wide, tile row i at row 4 i; the first
// `out_rows` rows exist).
struct OutputTiles {
  const float* m;
  int64_t point_stride, tiles_w, tile_rows;
  float bias;
  const direct_conv::Epilogue* epilogue;
  float* y;
  int64_t out_w, out_rows;
  float* scratch;  // scratch_floats(tiles_w, tile_rows)
};
void output_tiles_avx2(const OutputTiles& t);

// Floats of scratch either function needs.
int64_t scratch_floats(int64_t tiles_w, int64_t tile_rows);

// Image lanes (convolve() on a batch of small planes; image_lanes.h): lane k
// of every vector belongs to image k of a group of 8, so that tiles need no
// rearranging and planes of any width fill the vectors.
// The tiles [first, last) of a plane tiles_w tiles wide (tile t: row t /
// tiles_w, column t % tiles_w). Input transform: x is an interleaved padded
// plane (padded_w positions wide) and point p of tile t goes to points[p *
// point_stride + (t - first) * 8]. Output transform: the reverse, from
// points into x, an interleaved out_h x out_w plane, plus `bias`, through
// the activation (positions past the plane are not written).
struct LaneTiles {
  float* x;
  int64_t padded_w, tiles_w, first, last;
  float* points;
  int64_t point_stride;
};
void input_tiles_lanes_avx2(const LaneTiles& t);
void output_tiles_lanes_avx2(const LaneTiles& t, float bias, const direct_conv::Epilogue& e, int64_t out_h,
                             int64_t out_w);

}  // namespace detail

}  // namespace onyx::cpu::winograd
