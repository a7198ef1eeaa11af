// image_lanes.h: 8 planes to a vector. Lane k of every vector holds plane
// k of a group of 8 (image k of one channel for Winograd, channel k of one
// image for the depthwise window): position p of an interleaved plane is
// the 8 floats [p * 8, p * 8 + 8). On small planes (7 x 7 to
// 28 x 28) and few channels, a convolution's vectors then run along the
// images, every lane used whatever the plane's width, with no partial
// vectors or rearranging of tiles (Winograd's image lanes, winograd.h; the
// direct convolution on image lanes measured no faster: 1.05x the time with
// 1 input channel on 28 x 28, up to 1.7x on 56 x 56, whose interleaved
// planes leave the cache). Private to the CPU provider; AVX2 only: call
// only on an AVX2 CPU.
#pragma once

#include <cstdint>

namespace onyx::cpu::image_lanes {

constexpr int64_t kImages = 8;

// Whether this build and CPU run the functions below (AVX2 and FMA).
bool supported();

// One channel of 8 images into padded_h x padded_w interleaved positions
// (position (r, c): input row r - top, column c - left of each image, or 0
// outside the input; columns past padded_w are left out).
struct Interleave {
  const float* planes[kImages];  // each in_h x in_w
  int64_t in_h, in_w, top, left, padded_h, padded_w;
  float* dst;
};
void interleave(const Interleave& t);

// dst[k][p] = src[p * 8 + k] for the first `count` images, `plane` positions.
void deinterleave(const float* src, int64_t plane, float* const dst[kImages], int64_t count);

// An interleaved h x w plane max-pooled over 2 x 2 windows of stride 2 into
// its first (h / 2) x (w / 2) positions, in place (taps compared as MaxPool
// does: `tap > best ? tap : best`, in row-major order).
void max_pool_2x2(float* plane, int64_t h, int64_t w);

// A depthwise convolution over 8 interleaved, padded planes (8 channels of
// an image): lane k of output position (oy, ox), for oy < out_h and
// ox < out_w, is
//   min(hi, max(lo, bias[k] + sum over ky < kernel_h, kx < kernel_w of
//       src[((oy sy + ky dy) padded_w + ox sx + kx dx) * 8 + k] * taps[(ky kernel_w + kx) * 8 + k]))
// summed in tap order, NaN kept by the clamp (lo, hi = -inf, inf: none).
// Every position a window reads must be inside src's padded plane; dst
// holds out_h * out_w positions and must not overlap src. Strided and
// narrow outputs use every lane: the planes' rows can be any width.
// At most kMaxWindowTaps taps (a 7 x 7 window).
constexpr int64_t kMaxWindowTaps = 49;
struct LaneWindow {
  const float* src;
  int64_t padded_w;
  int64_t out_h, out_w, stride_h, stride_w, dilation_h, dilation_w, kernel_h, kernel_w;
  const float* taps;  // kernel_h * kernel_w vectors of 8
  const float* bias;  // 8
  float lo, hi;
  float* dst;
};
void depthwise(const LaneWindow& w);

}  // namespace onyx::cpu::image_lanes
