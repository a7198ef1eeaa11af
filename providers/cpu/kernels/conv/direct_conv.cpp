// direct_conv.cpp: the direct convolution's ISA dispatch and weight packing
// (the loops: direct_conv_impl.h, built per ISA).
#include "kernels/conv/direct_conv.h"

#include <algorithm>

#include "kernels/conv/conv_lowering.h"
#include "kernels/elementwise/vec_math.h"

namespace onyx::cpu::direct_conv {
namespace {

// When the direct convolution beats im2col + GEMM. Measured on single Conv
// nodes (3x3, pad 1, one thread, Sapphire Rapids with AVX-512): 1.2-2.6x
// faster up to 64 channels at 7x7 to 56x56; from 128 channels even with
// 28-wide rows (0.97x at 128 x 28 x 28), and slower (0.83x) with 7-wide
// rows, where 16-lane vectors are less than half used. So: always for small
// reductions, else only when most lanes of the output rows are used.
constexpr int64_t kAlwaysReduction = 576;

// One input plane into its padded_h x padded_w window of the padded input:
// row r, column j hold x[r - pad_top, j - pad_left], or 0 outside x.
void pad_plane(const float* x, const nn::WindowDim& H, const nn::WindowDim& W, const Shape& s, bool padding_written,
               float* dst) {
  const int64_t left = W.pad_begin;
  const int64_t copy_end = std::min(s.padded_w, left + W.in);  // columns [left, copy_end) come from x
  for (int64_t r = 0; r < s.padded_h; ++r, dst += s.padded_w) {
    const int64_t ih = r - H.pad_begin;
    if (ih < 0 || ih >= H.in || copy_end <= left) {
      if (!padding_written) std::fill(dst, dst + s.padded_w, 0.0f);
      continue;
    }
    if (!padding_written) std::fill(dst, dst + std::min(left, s.padded_w), 0.0f);
    std::copy(x + ih * W.in, x + ih * W.in + (copy_end - left), dst + left);
    if (!padding_written) std::fill(dst + copy_end, dst + s.padded_w, 0.0f);
  }
}

enum class Isa { none, avx2, avx512 };

Isa best_isa() {
  static const Isa isa = [] {
#if defined(ONYX_CPU_AVX512_LOOPS)
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma")) return Isa::avx512;
#endif
#if defined(ONYX_CPU_AVX2_LOOPS)
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::avx2;
#endif
    return Isa::none;
  }();
  return isa;
}

}  // namespace

std::vector<float> pack_weights(const float* w, int64_t out_channels, int64_t channels, int64_t taps) {
  std::vector<float> packed(size_t(out_channels * channels * taps));
  float* dst = packed.data();
  for (int64_t m0 = 0; m0 < out_channels; m0 += kChannelBlock) {
    const int64_t mb = std::min(kChannelBlock, out_channels - m0);
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t t = 0; t < taps; ++t)
        for (int64_t m = 0; m < mb; ++m) *dst++ = w[((m0 + m) * channels + c) * taps + t];
  }
  return packed;
}

int64_t lanes() { return best_isa() == Isa::avx512 ? 16 : 8; }

Plan make_plan(const Shape& s, int64_t width) {
  Plan p;
  p.shape = s;
  for (int64_t i = 0; i < s.kernel_h; ++i)
    for (int64_t j = 0; j < s.kernel_w; ++j)
      p.tap_offsets.push_back(i * s.dilation_h * s.padded_w + j * s.dilation_w);
  for (int64_t r = 0; r < s.out_h; ++r)
    for (int64_t c = 0; c < s.out_w; c += width)
      p.fragments.push_back({r * s.stride_h * s.padded_w + c, r * s.out_w + c, std::min(width, s.out_w - c)});
  p.blocks = (s.out_channels + kChannelBlock - 1) / kChannelBlock;
  for (int64_t r = 0; r < s.out_h; ++r)
    for (int64_t q = 0; q < s.out_w; ++q) p.positions.push_back(r * s.stride_h * s.padded_w + q * s.stride_w);
  return p;
}

// Measured on AVX2 (Zen 4, one thread, 3x3): the row form reaches 93-97% of
// the FMA peak where its vectors are full (16 or 32 wide) and the lane form
// 75-85%; on 7, 14 and 28-wide rows, an eighth of the row form's lanes
// idle and the lane form is 4-11% faster, from 8 input channels (below, its
// staging and transposes cost more: 3 channels ran 1.9x slower). Strided
// along W, where the row form cannot run, against im2col + GEMM: 0.59x the
// time for 256 -> 512 channels, 3x3 / 2 on 14 x 14 (the GEMM's 49 columns
// fill its 16-wide panels badly), 0.78x for ResNet's first layer (3 -> 64,
// 7x7 / 2 on 224 x 224), 0.98x for 64 -> 128, 3x3 / 2 on 56 x 56; and
// with reductions under 64 too: 0.57-0.98x for 3 or 8 -> 16 to 64
// channels, 3x3 or 5x5 / 2 (MobileNetV2's first layer: 0.84x).
bool lane_form(const Shape& s) {
  const int64_t width = 8, vectors = (s.out_w + width - 1) / width;
  return best_isa() == Isa::avx2 && s.out_channels % kLaneChannels == 0 &&
         (s.stride_w > 1 || (s.channels * s.kernel_h * s.kernel_w >= 64 && 10 * s.out_w < 9 * vectors * width));
}

void lane_weights(const float* packed_w, int64_t out_channels, int64_t channels, int64_t taps,
                  int64_t lane_channels, float* dst) {
  const int64_t per_block = kChannelBlock * channels * taps;  // every block is full
  for (int64_t m0 = 0; m0 < out_channels; m0 += lane_channels)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t t = 0; t < taps; ++t)
        for (int64_t m = m0; m < m0 + lane_channels; ++m)
          *dst++ = packed_w[(m / kChannelBlock) * per_block + (c * taps + t) * kChannelBlock + m % kChannelBlock];
}

std::vector<float> lane_weights(const float* packed_w, int64_t group, int64_t out_channels, int64_t channels,
                                int64_t taps, int64_t lane_channels) {
  const int64_t per_group = out_channels * channels * taps;
  std::vector<float> dst(size_t(group * per_group));
  for (int64_t g = 0; g < group; ++g)
    lane_weights(packed_w + g * per_group, out_channels, channels, taps, lane_channels, dst.data() + g * per_group);
  return dst;
}

// Measured on AVX2 (Zen 4, one thread, 3x3, pad 1, batch 1 to 64) against
// the row form: pooled, 0.56-0.72x the time (with the pool) for 1 or 2
// input channels and 0.80-0.87x for 3 or 4 (8 to 32 output channels, 14 x
// 14 to 56 x 56); unpooled, 0.86x for 1 input channel and 0.94x for 2, but
// from 3 (27 taps, long enough for the row form's blocks) 1.0x on 28-wide
// rows and 1.1-1.3x on 32 and 56-wide ones, whose vectors the row form fills.
bool flat_form(const Shape& s, bool pool_2x2) {
  // Every run reads up to kFlatPositions - 1 floats past its last position:
  // within kSlack of the last padded plane.
  const bool reach = kFlatPositions - 1 + (s.kernel_w - 1) * s.dilation_w <= kSlack;
  const int64_t reduction = s.channels * s.kernel_h * s.kernel_w;
  return best_isa() == Isa::avx2 && s.out_channels % kFlatChannels == 0 && s.stride_h == 1 && s.stride_w == 1 &&
         reach && !lane_form(s) && (pool_2x2 || reduction < 27);
}

int64_t lane_channels(const Shape& s, bool pool_2x2) {
  return lane_form(s) ? kLaneChannels : flat_form(s, pool_2x2) ? kFlatChannels : 0;
}

void run_flat(const Plan& p, const float* x, const float* flat_w, const float* bias, const Epilogue& e,
              bool pool_2x2, float* staged, float* y, int64_t row_lo, int64_t row_hi) {
  const int64_t row_floats = (pool_2x2 ? p.shape.out_w / 2 : p.shape.padded_w) * kFlatChannels;
  const detail::LaneWork work{&p.shape, p.tap_offsets.data(), int64_t(p.tap_offsets.size()), p.positions.data(),
                              x, flat_w, bias, &e, staged + row_lo * row_floats, y, pool_2x2};
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (best_isa() == Isa::avx2) detail::run_flat_avx2(work, row_lo, row_hi);
#else
  (void)work;
#endif
}

void run_lanes(const Plan& p, const float* x, const float* lane_w, const float* bias, const Epilogue& e,
               float* staged, float* y, int64_t p_lo, int64_t p_hi) {
  const detail::LaneWork work{&p.shape, p.tap_offsets.data(), int64_t(p.tap_offsets.size()), p.positions.data(),
                              x, lane_w, bias, &e, staged, y, false};
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (best_isa() == Isa::avx2) detail::run_lanes_avx2(work, p_lo, p_hi);
#else
  (void)work, (void)p_lo, (void)p_hi;
#endif
}

namespace {

// The plan for `s`, made once per thread and shape: a network convolves the
// same few shapes run after run, and making a plan allocates (the test CNN
// at batch 1 spent a tenth of its run in malloc and free). The reference
// holds until this thread's next call.
const Plan& plan_for(const Shape& s) {
  thread_local std::vector<Plan> plans;  // most recent last
  for (const Plan& p : plans)
    if (p.shape == s) return p;
  if (plans.size() >= 16) plans.erase(plans.begin());
  plans.push_back(make_plan(s, lanes()));
  return plans.back();
}

}  // namespace

detail::Work detail::work_for(const Plan& p, const float* x, const float* packed_w, const float* bias,
                      const Epilogue& e, float* y) {
  return {&p.shape, p.tap_offsets.data(), int64_t(p.tap_offsets.size()), p.fragments.data(),
          int64_t(p.fragments.size()), x, packed_w, bias, &e, y, nullptr, nullptr, p.positions.data()};
}

void run(const Plan& p, const float* x, const float* packed_w, const float* bias, const Epilogue& e,
         float* y, int64_t block_lo, int64_t block_hi) {
  const detail::Work work = detail::work_for(p, x, packed_w, bias, e, y);
  switch (best_isa()) {
#if defined(ONYX_CPU_AVX512_LOOPS)
    case Isa::avx512: return detail::run_avx512(work, block_lo, block_hi);
#endif
#if defined(ONYX_CPU_AVX2_LOOPS)
    case Isa::avx2: return detail::run_avx2(work, block_lo, block_hi);
#endif
    default: break;
  }
}

void accumulate_weight_gradient(const Plan& p, const float* x, const float* dy, float* dw, int64_t block_lo,
                                int64_t block_hi) {
  static const Epilogue none;
  detail::Work work = detail::work_for(p, x, nullptr, nullptr, none, nullptr);
  work.dy = dy, work.dw = dw;
  switch (best_isa()) {
#if defined(ONYX_CPU_AVX512_LOOPS)
    case Isa::avx512: return detail::weight_gradient_avx512(work, block_lo, block_hi);
#endif
#if defined(ONYX_CPU_AVX2_LOOPS)
    case Isa::avx2: return detail::weight_gradient_avx2(work, block_lo, block_hi);
#endif
    default: break;
  }
}

// Measured on AVX2 (Zen 4, one thread, 3x3, against the per-lane form):
// 8 -> 16 channels on 14 x 14 at batch 64 (rows of a vector and six lanes, a
// masked load in every one) 0.72 -> 0.39 ms, 1 -> 16 on 28 x 28 (9 pairs)
// 0.36 -> 0.32 ms, 16 -> 32 on 32 x 32 at batch 16 (whole vectors) 3.04 ->
// 1.89 ms. Fewer pairs than 9 were not measured.
bool weight_lanes_fit(const Shape& s) {
  return available() && s.out_channels % (2 * lanes()) == 0 && s.channels * s.kernel_h * s.kernel_w >= 9;
}

void transpose_planes(const float* src, int64_t planes, int64_t size, float* dst) {
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (best_isa() != Isa::none && planes % 8 == 0) return detail::transpose_planes_avx2(src, planes, size, dst);
#endif
  for (int64_t p = 0; p < size; ++p)
    for (int64_t c = 0; c < planes; ++c) dst[p * planes + c] = src[c * size + p];
}

void accumulate_weight_gradient_lanes(const Plan& p, const float* x, const float* dy_t, float* dw, int64_t pair_lo,
                                      int64_t pair_hi) {
  static const Epilogue none;
  detail::Work work = detail::work_for(p, x, nullptr, nullptr, none, nullptr);
  work.dy = dy_t, work.dw = dw;
  switch (best_isa()) {
#if defined(ONYX_CPU_AVX512_LOOPS)
    case Isa::avx512: return detail::weight_gradient_lanes_avx512(work, pair_lo, pair_hi);
#endif
#if defined(ONYX_CPU_AVX2_LOOPS)
    case Isa::avx2: return detail::weight_gradient_lanes_avx2(work, pair_lo, pair_hi);
#endif
    default: break;
  }
}

Shape shape_for(const std::vector<nn::WindowDim>& win, int64_t channels, int64_t out_channels) {
  const nn::WindowDim &H = win[1], &W = win[2];
  Shape s;
  s.channels = channels;
  s.out_channels = out_channels;
  s.kernel_h = H.kernel, s.kernel_w = W.kernel;
  s.stride_h = H.stride, s.stride_w = W.stride, s.dilation_h = H.dilation, s.dilation_w = W.dilation;
  s.out_h = H.out, s.out_w = W.out;
  s.padded_h = (H.out - 1) * H.stride + H.extent();
  s.padded_w = (W.out - 1) * W.stride + W.extent();
  return s;
}

void pad_planes(const float* x, const std::vector<nn::WindowDim>& win, const Shape& s, float* dst,
                bool padding_written) {
  const int64_t in_plane = win[1].in * win[2].in, padded_plane = s.padded_h * s.padded_w;
  for (int64_t c = 0; c < s.channels; ++c)
    pad_plane(x + c * in_plane, win[1], win[2], s, padding_written, dst + c * padded_plane);
  if (!padding_written) std::fill(dst + s.channels * padded_plane, dst + s.channels * padded_plane + kSlack, 0.0f);
}

bool fits(const std::vector<nn::WindowDim>& win, int64_t reduction) {
  const nn::WindowDim &D = win[0], &W = win[2];
  if (!available() || D.kernel != 1 || D.in != 1 || D.out != 1 || W.stride != 1 || W.pad_begin < 0 ||
      win[1].pad_begin < 0)
    return false;
  const int64_t width = lanes(), vectors = (W.out + width - 1) / width;
  return reduction <= kAlwaysReduction || 4 * W.out >= 3 * vectors * width;
}

bool fits_strided(const std::vector<nn::WindowDim>& win, int64_t channels, int64_t out_channels) {
  const nn::WindowDim &D = win[0], &W = win[2];
  return available() && D.kernel == 1 && D.in == 1 && D.out == 1 && W.stride > 1 && W.pad_begin >= 0 &&
         win[1].pad_begin >= 0 && win[1].kernel * W.kernel > 1 && lane_form(shape_for(win, channels, out_channels));
}

OnyxStatus* convolve(sdk::ComputeContext& ctx, const float* x, int64_t n, int64_t group, int64_t channels,
                     int64_t out_channels, const std::vector<nn::WindowDim>& win, const float* packed_w,
                     const float* lane_w, const float* bias, const Epilogue& e, float* y, bool pool_2x2) {
  using conv_lowering::Worker;
  const Shape s = shape_for(win, channels / group, out_channels / group);
  const Plan& plan = plan_for(s);
  const int64_t in_plane = win[1].in * win[2].in, out_plane = s.out_h * s.out_w;
  const int64_t per_filter = s.channels * s.kernel_h * s.kernel_w;
  const int64_t padded = s.channels * s.padded_h * s.padded_w + kSlack;
  const bool lanes = lane_form(s), flat = !lanes && flat_form(s, pool_2x2);
  // The channel-lane or flat form's weights, reordered here unless given.
  std::vector<float> reordered;
  if ((lanes || flat) && !lane_w) {
    reordered = lane_weights(packed_w, group, s.out_channels, s.channels, s.kernel_h * s.kernel_w,
                             lane_channels(s, pool_2x2));
    lane_w = reordered.data();
  }
  const int64_t staged = lanes ? out_plane * s.out_channels : flat ? s.out_h * s.padded_w * kFlatChannels : 0;
  const int64_t pooled_h = s.out_h / 2, pooled_w = s.out_w / 2, pooled_plane = pooled_h * pooled_w;
  const int64_t scratch = padded + staged + (pool_2x2 && !flat ? s.out_channels * out_plane : 0);
  // A block of output channels (or of positions) per task only from about
  // 0.5 M multiply-adds: below that, waking a second thread costs more than
  // it saves (the test CNN at batch 1 ran 1.3x slower on 2 threads than on 1).
  const size_t grain = nn::grain_for(double(kChannelBlock * per_filter * out_plane), 524288);
  const size_t lane_grain = nn::grain_for(double(kLanePositions * per_filter * s.out_channels), 524288);
  const size_t flat_grain = nn::grain_for(double(per_filter * s.padded_w * s.out_channels * (pool_2x2 ? 2 : 1)), 524288);
  auto run_item = [&](int64_t item, Worker<float>& worker) {
    const int64_t image = item / group, g = item % group;
    float* padded_x = worker.scratch;
    pad_planes(x + (image * channels + g * s.channels) * in_plane, win, s, padded_x, /*padding_written=*/true);
    const float* bg = bias ? bias + g * s.out_channels : nullptr;
    // Pooled: the convolution into scratch, pooled from there below.
    float* yg = pool_2x2 ? padded_x + padded + staged : y + (image * out_channels + g * s.out_channels) * out_plane;
    auto pool = [&] {
      if (!pool_2x2) return;
      float* pooled = y + (image * out_channels + g * s.out_channels) * pooled_plane;
      for (int64_t m = 0; m < s.out_channels; ++m)
        vec::max_pool_2x2(yg + m * out_plane, pooled + m * pooled_plane, s.out_h, s.out_w, pooled_h, pooled_w);
    };
    if (flat) {  // pools in registers
      const float* wg = lane_w + g * s.out_channels * per_filter;
      float* out = y + (image * out_channels + g * s.out_channels) * (pool_2x2 ? pooled_plane : out_plane);
      const int64_t rows = pool_2x2 ? pooled_h : s.out_h;
      worker.for_range(size_t(rows), flat_grain, [&](size_t lo, size_t hi) {
        run_flat(plan, padded_x, wg, bg, e, pool_2x2, padded_x + padded, out, int64_t(lo), int64_t(hi));
      });
      return;
    }
    if (lanes) {
      const float* wg = lane_w + g * s.out_channels * per_filter;
      const size_t tiles = size_t((out_plane + kLanePositions - 1) / kLanePositions);
      worker.for_range(tiles, lane_grain, [&](size_t lo, size_t hi) {
        run_lanes(plan, padded_x, wg, bg, e, padded_x + padded, yg, int64_t(lo) * kLanePositions,
                  std::min(out_plane, int64_t(hi) * kLanePositions));
      });
      pool();
      return;
    }
    const float* wg = packed_w + g * s.out_channels * per_filter;
    worker.for_range(size_t(plan.blocks), grain, [&](size_t lo, size_t hi) {
      run(plan, padded_x, wg, bg, e, yg, int64_t(lo), int64_t(hi));
    });
    pool();
  };
  // The padded planes zeroed once: every item then writes only the interior,
  // and the padding (copied row by row with three calls each, a tenth of the
  // test CNN's time) stays zero. The staged results need no zeros.
  return conv_lowering::for_each_item<float>(ctx, n * group, scratch, run_item, /*zeroed=*/padded);
}

bool available() { return best_isa() != Isa::none; }

}  // namespace onyx::cpu::direct_conv
