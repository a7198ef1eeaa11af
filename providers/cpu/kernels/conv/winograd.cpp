// winograd.cpp: F(4x4, 3x3) convolution (winograd.h): the weight transform,
// the choice, and the three phases over chunks of tile rows (the transforms:
// winograd_avx2.cpp; the GEMMs: gemm/gemm.h).
#include "kernels/conv/winograd.h"

#include <algorithm>
#include <cstring>

#include "kernels/conv/conv_lowering.h"
#include "kernels/conv/image_lanes.h"
#include "target_clones.h"

namespace onyx::cpu::winograd {
namespace {

// G of F(4, 3) with interpolation points 0, 1, -1, 2, -2 and infinity: the
// filter's 3 taps to the 6 points. U = G g G^T.
constexpr double kG[6][3] = {{1.0 / 4, 0, 0},
                             {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                             {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                             {1.0 / 24, 1.0 / 12, 1.0 / 6},
                             {1.0 / 24, -1.0 / 12, 1.0 / 6},
                             {0, 0, 1}};

// V and M of one chunk of tile rows together stay within this many bytes:
// the transforms write and read them once each, so they may live in the
// last-level cache; larger chunks only cost memory.
constexpr int64_t kChunkBytes = int64_t(1) << 20;
constexpr int64_t kMinChunkTiles = 128;

// The points of a tile are a V (or M) matrix apart, plus this many floats
// (a cache line), so that the 36 of one tile do not fall in a few cache sets
// (8 x 128 floats apart, the image lanes' transforms ran 4x slower).
constexpr int64_t kSkew = 16;

int64_t tiles_along(int64_t out) { return (out + kTile - 1) / kTile; }

}  // namespace

// Whether convolve() puts 8 images in the lanes of its vectors (for the
// windows fits() takes). Measured on single Conv nodes (3x3, pad 1, Zen 4,
// one and two threads) against the direct convolution and the tile-row
// layout: 0.4-0.7 of the better one's time with 8 to 64 channels on 7 x 7
// to 28 x 28 planes (8 -> 16 channels, 14 x 14, batch 64: 0.41 -> 0.35 ms;
// 64 -> 64 on 7 x 7, batch 8: 0.39 -> 0.16 ms), 0.9 with 32 channels on
// 56 x 56; slower with 64 channels on 56 x 56 (1.05) and from 128 channels
// (the passes of tiles that fit the cache get too short for the GEMMs),
// with under 8 input or 16 output channels (1.0-1.6), and when an eighth of
// the lanes would repeat images (9 images: 1.5).
bool image_lanes(const std::vector<nn::WindowDim>& win, int64_t n, int64_t channels, int64_t out_channels) {
  const int64_t groups = (n + 7) / 8, widest = std::max(channels, out_channels);
  if (n < 7 * groups || channels < 8 || out_channels < 16 || widest > 64) return false;
  return widest < 64 || win[2].out <= 28;
}

bool fits(const std::vector<nn::WindowDim>& win, int64_t n, int64_t channels, int64_t out_channels) {
  const nn::WindowDim &D = win[0], &H = win[1], &W = win[2];
  if (!image_lanes::supported() || D.kernel != 1 || D.in != 1 || D.out != 1) return false;
  for (const nn::WindowDim* d : {&H, &W})
    if (d->kernel != 3 || d->stride != 1 || d->dilation != 1 || d->pad_begin < 0) return false;
  // Measured on single Conv nodes (3x3, pad 1, C = M, batch 1 and 8, one
  // and two threads, Zen 4 with AVX2), against the direct convolution:
  // 0.4-0.6 of its time from 64 channels on rows 28 and 56 wide, 0.6-0.8
  // with 32 channels, 0.85-1.3 with 16; 14 x 14 and 7 x 7 outputs use only
  // 49/64 of their tiles' outputs and narrow rows cost the transforms more:
  // 0.52-0.86 at 14 x 14 from 64 channels, 0.84 at 7 x 7 from 128 channels
  // and 32 tiles (batch 8), 1.3-1.9 below. Too few tiles (7 x 7 at batch 1)
  // and the GEMMs are too narrow to run at speed.
  const int64_t tiles_h = tiles_along(H.out), tiles_w = tiles_along(W.out), tiles = n * tiles_h * tiles_w;
  const bool tiles_used = 10 * H.out * W.out >= 9 * kTile * kTile * tiles_h * tiles_w;
  const int64_t fewer = std::min(channels, out_channels);
  if (image_lanes(win, n, channels, out_channels)) return true;
  if (tiles < 16 || fewer < 32) return false;
  if (tiles_used) return true;
  return fewer >= 64 && (tiles_w >= 4 || (fewer >= 128 && tiles >= 32));
}

// A pass over the whole input before every batch's convolution: one vector
// of flags per 8 floats, compiled per ISA (the baseline's 4-wide loop took 5%
// of the test CNN's second layer at batch 64).
ONYX_CLONES bool finite(const float* p, int64_t count) {
  uint32_t special[8] = {};  // per lane: exponent all ones seen (an infinity or a NaN)
  int64_t i = 0;
  for (; i + 8 <= count; i += 8)
    for (int j = 0; j < 8; ++j) {
      uint32_t bits;
      std::memcpy(&bits, p + i + j, sizeof bits);
      special[j] |= uint32_t((bits & 0x7f800000u) == 0x7f800000u);
    }
  for (; i < count; ++i) {
    uint32_t bits;
    std::memcpy(&bits, p + i, sizeof bits);
    special[0] |= uint32_t((bits & 0x7f800000u) == 0x7f800000u);
  }
  uint32_t any = 0;
  for (uint32_t s : special) any |= s;
  return any == 0;
}

std::vector<float> transform_weights(const float* w, int64_t out_channels, int64_t channels, int64_t group) {
  const int64_t mg = out_channels / group;
  std::vector<float> u(size_t(out_channels * channels * kPoints));
  for (int64_t g = 0; g < group; ++g)
    for (int64_t m = 0; m < mg; ++m)
      for (int64_t c = 0; c < channels; ++c) {
        const float* f = w + ((g * mg + m) * channels + c) * 9;
        double gf[6][3];  // G f
        for (int i = 0; i < 6; ++i)
          for (int b = 0; b < 3; ++b)
            gf[i][b] = kG[i][0] * f[b] + kG[i][1] * f[3 + b] + kG[i][2] * f[6 + b];
        for (int i = 0; i < 6; ++i)
          for (int j = 0; j < 6; ++j) {
            const double v = gf[i][0] * kG[j][0] + gf[i][1] * kG[j][1] + gf[i][2] * kG[j][2];
            u[size_t(((g * kPoints + i * 6 + j) * mg + m) * channels + c)] = float(v);
          }
      }
  return u;
}

namespace {

#if defined(ONYX_CPU_AVX2_LOOPS)
// convolve() with 8 images per vector (winograd.h, detail's image lanes):
// per group of 8 images, each input channel interleaved into a padded
// plane, then per pass of tiles the input transform, the 36 GEMMs and the
// output transform into an interleaved output plane, which is split back
// into the images' planes at the end.
OnyxStatus* convolve_image_lanes(sdk::ComputeContext& ctx, const float* x, int64_t n, int64_t group,
                                 int64_t channels, int64_t out_channels, const std::vector<nn::WindowDim>& win,
                                 const float* u, const float* bias, const direct_conv::Epilogue& e, float* y,
                                 bool pool_2x2) {
  const nn::WindowDim &H = win[1], &W = win[2];
  const int64_t cg = channels / group, mg = out_channels / group;
  const int64_t tiles_w = tiles_along(W.out), tiles = tiles_along(H.out) * tiles_w;
  const int64_t padded_h = kTile * tiles_along(H.out) + 2, padded_w = kTile * tiles_w + 2;
  const int64_t in_plane = H.in * W.in, out_plane = H.out * W.out, padded_plane = padded_h * padded_w * 8;
  // Tiles per pass: their V and M (kPoints x (cg + mg) vectors a tile)
  // within kChunkBytes.
  const int64_t per_tile = kPoints * (cg + mg) * 8;
  const int64_t chunk = std::clamp<int64_t>(kChunkBytes / int64_t(sizeof(float)) / per_tile, 1, tiles);
  const int64_t xs = cg * padded_plane, scratch = xs + chunk * per_tile + 2 * kPoints * kSkew + mg * out_plane * 8;
  const ParallelFor serial = nn::serial_parallel_for();
  auto run_item = [&](int64_t item, conv_lowering::Worker<float>& worker) {
    const int64_t first = item / group * 8, g = item % group, count = std::min<int64_t>(8, n - first);
    float* const xi = worker.scratch;
    float* const v = xi + xs;
    float* const yi = v + chunk * per_tile + 2 * kPoints * kSkew;
    worker.for_range(size_t(cg), 1, [&](size_t lo, size_t hi) {
      for (size_t c = lo; c < hi; ++c) {
        image_lanes::Interleave t{{}, H.in, W.in, H.pad_begin, W.pad_begin, padded_h, padded_w, xi + int64_t(c) * padded_plane};
        // Lanes past the batch repeat its last image: computed, never stored.
        for (int64_t k = 0; k < 8; ++k)
          t.planes[k] = x + ((first + std::min(k, count - 1)) * channels + g * cg + int64_t(c)) * in_plane;
        image_lanes::interleave(t);
      }
    });
    const float* ug = u + g * kPoints * mg * cg;
    for (int64_t t0 = 0; t0 < tiles; t0 += chunk) {
      const int64_t t1 = std::min(tiles, t0 + chunk), cols = (t1 - t0) * 8;
      const int64_t v_stride = cg * cols + kSkew, m_stride = mg * cols + kSkew;  // between points
      float* const m = v + kPoints * v_stride;
      worker.for_range(size_t(cg), 1, [&](size_t lo, size_t hi) {
        for (size_t c = lo; c < hi; ++c)
          detail::input_tiles_lanes_avx2({xi + int64_t(c) * padded_plane, padded_w, tiles_w, t0, t1,
                                          v + int64_t(c) * cols, v_stride});
      });
      worker.for_range(size_t(kPoints), 1, [&](size_t lo, size_t hi) {
        for (size_t p = lo; p < hi; ++p)
          sgemm(false, false, mg, cols, cg, 1.0f, ug + int64_t(p) * mg * cg, cg, v + int64_t(p) * v_stride, cols,
                0.0f, m + int64_t(p) * m_stride, cols, serial);
      });
      worker.for_range(size_t(mg), 1, [&](size_t lo, size_t hi) {
        for (size_t k = lo; k < hi; ++k)
          detail::output_tiles_lanes_avx2({yi + int64_t(k) * out_plane * 8, 0, tiles_w, t0, t1, m + int64_t(k) * cols,
                                           m_stride},
                                          bias ? bias[g * mg + int64_t(k)] : 0.0f, e, H.out, W.out);
      });
    }
    // Pooled: each interleaved plane pooled in place, then split.
    const int64_t plane = pool_2x2 ? (H.out / 2) * (W.out / 2) : out_plane;
    worker.for_range(size_t(mg), 1, [&](size_t lo, size_t hi) {
      for (size_t k = lo; k < hi; ++k) {
        float* const src = yi + int64_t(k) * out_plane * 8;
        if (pool_2x2) image_lanes::max_pool_2x2(src, H.out, W.out);
        float* dst[8];
        for (int64_t j = 0; j < count; ++j) dst[j] = y + ((first + j) * out_channels + g * mg + int64_t(k)) * plane;
        image_lanes::deinterleave(src, plane, dst, count);
      }
    });
  };
  return conv_lowering::for_each_item<float>(ctx, (n + 7) / 8 * group, scratch, run_item);
}
#endif

}  // namespace

OnyxStatus* convolve(sdk::ComputeContext& ctx, const float* x, int64_t n, int64_t group, int64_t channels,
                     int64_t out_channels, const std::vector<nn::WindowDim>& win, const float* u,
                     const float* bias, const direct_conv::Epilogue& e, float* y, bool pool_2x2) {
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (image_lanes(win, n, channels / group, out_channels / group))
    return convolve_image_lanes(ctx, x, n, group, channels, out_channels, win, u, bias, e, y, pool_2x2);
  if (pool_2x2) return sdk::make_status(ONYX_STATUS_INTERNAL, "Winograd pooling asked for outside the image lanes");
  const nn::WindowDim &H = win[1], &W = win[2];
  const int64_t cg = channels / group, mg = out_channels / group;
  const int64_t tiles_h = tiles_along(H.out), tiles_w = tiles_along(W.out), rows = n * tiles_h;
  const int64_t in_plane = H.in * W.in, out_plane = H.out * W.out;
  // Tile rows (over the whole batch) per chunk, and the chunk's V [point]
  // [cg][tiles] and M [point][mg][tiles], with 8 readable floats after M.
  const int64_t per_row = kPoints * (cg + mg) * tiles_w;
  const int64_t min_rows = (kMinChunkTiles + tiles_w - 1) / tiles_w;
  const int64_t chunk = std::clamp<int64_t>(std::max(kChunkBytes / int64_t(sizeof(float)) / per_row, min_rows), 1, rows);
  void* mem = nullptr;
  ONYX_SDK_RETURN_IF_ERROR(ctx.scratch(size_t(chunk * per_row + 2 * kPoints * kSkew + 8) * sizeof(float), &mem));
  float* const v = static_cast<float*>(mem);
  const ParallelFor serial = nn::serial_parallel_for();
  // A chunk's tile rows in runs of one image each.
  struct Run {
    int64_t image, first_row, rows, first_tile;
  };
  std::vector<Run> runs;
  for (int64_t g = 0; g < group; ++g)
    for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
      const int64_t r1 = std::min(rows, r0 + chunk), tiles = (r1 - r0) * tiles_w;
      const int64_t v_stride = cg * tiles + kSkew, m_stride = mg * tiles + kSkew;  // between points
      float* const m = v + kPoints * v_stride;
      runs.clear();
      for (int64_t r = r0; r < r1;) {
        const int64_t image = r / tiles_h, end = std::min(r1, (image + 1) * tiles_h);
        runs.push_back({image, r % tiles_h, end - r, (r - r0) * tiles_w});
        r = end;
      }
      const int64_t nruns = int64_t(runs.size());
      // Transform work per (channel, run): ~ kPoints * 24 flops per tile.
      const size_t grain = nn::grain_for(double(tiles / nruns * kPoints * 24));
      ctx.parallel_for(size_t(cg * nruns), grain, [&](size_t lo, size_t hi) {
        thread_local std::vector<float> buf;
        for (size_t i = lo; i < hi; ++i) {
          const int64_t c = int64_t(i) / nruns;
          const Run& run = runs[size_t(int64_t(i) % nruns)];
          const size_t need = size_t(detail::scratch_floats(tiles_w, run.rows));
          if (buf.size() < need) buf.resize(need);
          detail::input_tiles_avx2({x + (run.image * channels + g * cg + c) * in_plane, H.in, W.in,
                                    run.first_row * kTile - H.pad_begin, -W.pad_begin, tiles_w, run.rows,
                                    v + c * tiles + run.first_tile, v_stride, buf.data()});
        }
      });
      const float* ug = u + g * kPoints * mg * cg;
      ctx.parallel_for(size_t(kPoints), nn::grain_for(double(2 * mg * cg * tiles), 1 << 20),
                       [&](size_t lo, size_t hi) {
                         for (size_t p = lo; p < hi; ++p)
                           sgemm(false, false, mg, tiles, cg, 1.0f, ug + int64_t(p) * mg * cg, cg,
                                 v + int64_t(p) * v_stride, tiles, 0.0f, m + int64_t(p) * m_stride, tiles,
                                 serial);
                       });
      ctx.parallel_for(size_t(mg * nruns), grain, [&](size_t lo, size_t hi) {
        thread_local std::vector<float> buf;
        for (size_t i = lo; i < hi; ++i) {
          const int64_t k = int64_t(i) / nruns, oc = g * mg + k;
          const Run& run = runs[size_t(int64_t(i) % nruns)];
          const size_t need = size_t(detail::scratch_floats(tiles_w, run.rows));
          if (buf.size() < need) buf.resize(need);
          detail::output_tiles_avx2({m + k * tiles + run.first_tile, m_stride, tiles_w, run.rows,
                                     bias ? bias[oc] : 0.0f, &e,
                                     y + (run.image * out_channels + oc) * out_plane + run.first_row * kTile * W.out,
                                     W.out, H.out - run.first_row * kTile, buf.data()});
        }
      });
    }
  return nullptr;
#else
  (void)ctx, (void)x, (void)n, (void)group, (void)channels, (void)out_channels, (void)win, (void)u, (void)bias,
      (void)e, (void)y, (void)pool_2x2;
  return sdk::make_status(ONYX_STATUS_INTERNAL, "Winograd convolution called on a build without AVX2 loops");
#endif
}

}  // namespace onyx::cpu::winograd
