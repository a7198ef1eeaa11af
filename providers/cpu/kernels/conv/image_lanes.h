// image_lanes.h: a batch's planes with 8 images to a vector. Lane k of
// every vector holds image k of a group of 8: position p of an interleaved
// plane is the 8 floats [p * 8, p * 8 + 8). On small planes (7 x 7 to
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

}  // namespace onyx::cpu::image_lanes
