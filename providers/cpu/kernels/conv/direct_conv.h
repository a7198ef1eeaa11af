// direct_conv.h: float32 2-D convolution computed straight from a padded
// copy of the input, without im2col, for the convolutions whose lowered GEMM
// is too small to pay for its column matrix (few input channels: the first
// layers of image networks, small CNNs). Private to the CPU provider.
//
// Stride 1 along W only: each output row segment is one contiguous vector
// load per tap. The kernel holds a block of 4 output channels x 3 (AVX2) or
// 4 (AVX-512) vectors of output positions in registers across every input
// channel and tap, then adds the bias and applies the activation once.
// fits() says when it beats im2col + GEMM; Conv (conv.cpp) and ConvGrad
// (grad/conv_grad.cpp, for dX and dW) use it then.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/nn_util.h"

namespace onyx::cpu::direct_conv {

// The activation applied with the bias, as its op defines it (NaN stays NaN).
struct Epilogue {
  enum Kind { kNone, kRelu, kClip, kLeakyRelu } kind = kNone;
  float a = 0, b = 0;  // Clip: min, max; LeakyRelu: alpha
};

// One (image, group) convolution. The input is given already padded: `x`
// holds `channels` planes of padded_h x padded_w floats (the zero padding
// written in), followed by at least kSlack readable floats.
struct Shape {
  int64_t channels = 0, out_channels = 0;  // of the group
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t out_h = 0, out_w = 0;
  int64_t padded_h = 0, padded_w = 0;
  bool operator==(const Shape&) const = default;
};

// Output channels per register block, and the floats a vector load may read
// past the last padded plane.
constexpr int64_t kChannelBlock = 4;
constexpr int64_t kSlack = 16;

// The weights [out_channels, channels, kernel_h, kernel_w] reordered for the
// kernel: per block of kChannelBlock output channels, [channel][tap][m].
std::vector<float> pack_weights(const float* w, int64_t out_channels, int64_t channels, int64_t taps);

// One vector of output positions: where it reads in a padded input plane,
// where it writes in the output plane, and how many of its lanes are real.
struct Fragment {
  int64_t in = 0, out = 0, lanes = 0;
};

// What run() needs besides the data, made once per shape: the offset of
// each tap in a padded plane and the output split into vectors.
struct Plan {
  Shape shape;
  std::vector<int64_t> tap_offsets;
  std::vector<Fragment> fragments;
  int64_t blocks = 0;  // of kChannelBlock output channels
  // Per output position (row-major), where its first tap reads in a padded
  // plane: for the channel-lane form (convolve() on AVX2 with output
  // channels a multiple of kLaneChannels).
  std::vector<int64_t> positions;
};

// The channel-lane form: registers hold kLaneChannels output channels (two
// AVX2 vectors) of kLanePositions output positions, each input value
// broadcast, so that no lane idles on rows narrower than a vector multiple
// (14-wide rows left 2 of 16 lanes idle). Its results are staged position
// by position, then transposed into the output planes.
constexpr int64_t kLaneChannels = 16, kLanePositions = 6;
// `lanes`: the vector width of the ISA that will run the plan (lanes()).
Plan make_plan(const Shape& s, int64_t lanes);

// y [out_channels, out_h, out_w] = act(conv(x, w) + bias) for output channel
// blocks [block_lo, block_hi) of the plan. `bias` may be null. Safe to call
// concurrently on disjoint blocks or outputs.
void run(const Plan& p, const float* x, const float* packed_w, const float* bias, const Epilogue& e,
         float* y, int64_t block_lo, int64_t block_hi);

// The channel-lane form: whether convolve() takes it for `s` (the only form
// for a stride along W: it reads one input value per position); the packed
// weights (pack_weights(), out_channels a multiple of kLaneChannels)
// reordered for it into dst [out_channels / kLaneChannels][channels][taps]
// [kLaneChannels] (a block's weights stay in L1); and run() in that
// form over output positions [p_lo, p_hi), every channel, with `staged`
// (out_h * out_w * out_channels floats) for its results before they are
// written to y. Safe to call concurrently on disjoint positions.
bool lane_form(const Shape& s);
// (lane_channels: kLaneChannels, or kFlatChannels for the flat form below.)
void lane_weights(const float* packed_w, int64_t out_channels, int64_t channels, int64_t taps,
                  int64_t lane_channels, float* dst);
// lane_weights() of every group of convolve()'s packed_w (per group:
// `out_channels` and `channels`), for convolve()'s lane_w.
std::vector<float> lane_weights(const float* packed_w, int64_t group, int64_t out_channels, int64_t channels,
                                int64_t taps, int64_t lane_channels);
void run_lanes(const Plan& p, const float* x, const float* lane_w, const float* bias, const Epilogue& e,
               float* staged, float* y, int64_t p_lo, int64_t p_hi);

// The flat form, for small reductions and for convolutions pooled 2 x 2 (a
// grayscale network's first layer, 1 -> 8 channels, ran at under half the
// FMA peak in the row form, whose 12 accumulators saw only 9 taps between
// their loads and stores): registers hold one vector of kFlatChannels output
// channels at kFlatPositions output positions, the weights of a kernel row
// in registers and each input value broadcast once for the positions it
// reaches. Positions run flat along the padded rows (out_h x padded_w, so a
// run may cross a row; the padded_w - out_w columns past each row are
// computed and dropped): no table of positions, no tail per row. Pooled,
// a run is 2 rows x kFlatPositions / 2 columns, pooled in registers.
// Results are staged position by position (staged: out_h * padded_w *
// kFlatChannels floats, at least), then transposed into the output planes.
constexpr int64_t kFlatChannels = 8, kFlatPositions = 8;
// Whether convolve() takes the flat form for `s` (stride 1, out_channels a
// multiple of kFlatChannels, where it beats the row form: pooled, or with
// a reduction under 27).
bool flat_form(const Shape& s, bool pool_2x2);
// The output channels per weight block of the form convolve() takes for
// `s`: kLaneChannels (channel-lane form), kFlatChannels (flat form), or 0
// (the row form, which reads pack_weights()'s order itself).
int64_t lane_channels(const Shape& s, bool pool_2x2);
// The flat form over output rows [row_lo, row_hi) (pooled rows when
// pool_2x2), every output channel, with flat_w as lane_weights() writes it
// for kFlatChannels. Safe to call concurrently on disjoint rows.
void run_flat(const Plan& p, const float* x, const float* flat_w, const float* bias, const Epilogue& e,
              bool pool_2x2, float* staged, float* y, int64_t row_lo, int64_t row_hi);

// The weight gradient of one (image, group), added into per-lane partial
// sums: for every tap, the sum over output positions of dy [out_channels,
// out_h, out_w] times x (padded, as for run()) under the tap, spread over
// lanes() floats; dw is [out_channels, channels * taps, lanes()] and the
// gradient of a weight is the sum of its lanes. For output channel blocks
// [block_lo, block_hi); safe to call concurrently on disjoint blocks.
void accumulate_weight_gradient(const Plan& p, const float* x, const float* dy, float* dw, int64_t block_lo,
                                int64_t block_hi);

// The weight gradient with output channels in the vector lanes, for shapes
// where weight_lanes_fit() (out_channels a multiple of 2 * lanes(), 9 or
// more (channel, tap) pairs): dy_t is dY
// of one (image, group) transposed, [out_h * out_w][out_channels], x padded
// as for run(), and dw [channels * taps][out_channels] is added into, for
// (channel, tap) pairs [pair_lo, pair_hi). Any stride: positions come from
// the plan. Safe to call concurrently on disjoint pairs. (Faster than
// accumulate_weight_gradient wherever it fits: that one idles lanes and
// masks every load on rows that are not whole vectors, and loads dY for
// every 2 pairs; direct_conv.cpp has the measurements.)
bool weight_lanes_fit(const Shape& s);
// dst [size][planes] = src [planes][size] transposed (dY^T for the above),
// 8 x 8 blocks at a time where AVX2 runs.
void transpose_planes(const float* src, int64_t planes, int64_t size, float* dst);
void accumulate_weight_gradient_lanes(const Plan& p, const float* x, const float* dy_t, float* dw, int64_t pair_lo,
                                      int64_t pair_hi);

// The shape run() sees for windows `win` (lifted to 3-D) of one group, and
// the input planes of one (image, group) copied into `dst` with their zero
// padding, followed by kSlack zeros. padding_written: `dst` already holds
// them (it was zeroed, or written by pad_planes for this shape), so only
// the input is copied.
Shape shape_for(const std::vector<nn::WindowDim>& win, int64_t channels, int64_t out_channels);
void pad_planes(const float* x, const std::vector<nn::WindowDim>& win, const Shape& s, float* dst,
                bool padding_written = false);

// Whether convolve() takes windows `win` (lifted to 3-D) with `reduction`
// multiply-adds per output (channels per group x taps): 1-D or 2-D, stride 1
// along W, vector code for this CPU, and a reduction that im2col + GEMM
// would not do faster. (The row form: run() and the weight gradient.)
bool fits(const std::vector<nn::WindowDim>& win, int64_t reduction);
// Whether convolve() takes windows `win` strided along W, with `channels`
// and `out_channels` per group: in the channel-lane form. Not 1x1 windows:
// their gathered subsample and a pointwise GEMM ran 1.3-1.7x faster
// (ResNet-50's downsampling layers, conv.cpp).
bool fits_strided(const std::vector<nn::WindowDim>& win, int64_t channels, int64_t out_channels);

// y [n, out_channels, ...] = act(conv(x [n, channels, ...], w) + bias) for a
// whole batch: per (image, group), the input planes copied with their zero
// padding into scratch, then run() over the blocks of output channels (split
// over the pool when the items are fewer than threads). packed_w: each
// group's pack_weights(), one after the other; lane_w: lane_weights() of
// them for lane_channels(), or null (then reordered here when the
// channel-lane or flat form runs: for 512 x 512 x 3x3 weights, a quarter
// of the convolution's time). Requires
// fits(). pool_2x2: y is instead the output max-pooled over 2 x 2 windows
// of stride 2 ([n, out_channels, H / 2, W / 2]), each item's convolution
// pooled from the worker's scratch while it is in cache.
OnyxStatus* convolve(sdk::ComputeContext& ctx, const float* x, int64_t n, int64_t group, int64_t channels,
                     int64_t out_channels, const std::vector<nn::WindowDim>& win, const float* packed_w,
                     const float* lane_w, const float* bias, const Epilogue& e, float* y, bool pool_2x2 = false);

// True when run() has vector code for this CPU (AVX2+FMA or AVX-512); when
// false, conv.cpp keeps im2col.
bool available();

// Vector lanes of the ISA run() uses (16 for AVX-512, else 8).
int64_t lanes();

namespace detail {  // the per-ISA kernels, defined only where built; call only on such a CPU
// (Plain pointers, not the Plan: the ISA files call no standard-library
// inline function, which the linker could merge into code every CPU runs.)
struct Work {
  const Shape* shape;
  const int64_t* tap_offsets;
  int64_t taps;
  const Fragment* fragments;
  int64_t fragment_count;
  const float *x, *packed_w, *bias;
  const Epilogue* epilogue;
  float* y;
  const float* dy;  // weight gradients: the output gradient, read like y (or transposed)
  float* dw;        // [out_channels, channels, taps] (or transposed), added into
  const int64_t* positions;  // Plan::positions
};
Work work_for(const Plan& p, const float* x, const float* packed_w, const float* bias,
              const Epilogue& e, float* y);
void run_avx2(const Work& w, int64_t block_lo, int64_t block_hi);
// The channel-lane form over output positions [p_lo, p_hi), every output
// channel: act(conv + bias) staged at staged[p * out_channels + m], then
// written to y [out_channels, positions]. lane_w: as lane_weights() writes it.
struct LaneWork {
  const Shape* shape;
  const int64_t* tap_offsets;
  int64_t taps;
  const int64_t* positions;
  const float *x, *lane_w, *bias;
  const Epilogue* epilogue;
  float *staged, *y;
  bool pool_2x2;  // the flat form only
};
void run_lanes_avx2(const LaneWork& w, int64_t p_lo, int64_t p_hi);
// The flat form over output rows (or pooled rows) [row_lo, row_hi), every
// output channel: lane_w as lane_weights() writes it for kFlatChannels, y
// the whole output, staged for these rows' results.
void run_flat_avx2(const LaneWork& w, int64_t row_lo, int64_t row_hi);
void run_avx512(const Work& w, int64_t block_lo, int64_t block_hi);
void weight_gradient_avx2(const Work& w, int64_t block_lo, int64_t block_hi);
void weight_gradient_avx512(const Work& w, int64_t block_lo, int64_t block_hi);
void weight_gradient_lanes_avx2(const Work& w, int64_t pair_lo, int64_t pair_hi);
void transpose_planes_avx2(const float* src, int64_t planes, int64_t size, float* dst);  // planes % 8 == 0
void weight_gradient_lanes_avx512(const Work& w, int64_t pair_lo, int64_t pair_hi);
}  // namespace detail

}  // namespace onyx::cpu::direct_conv
