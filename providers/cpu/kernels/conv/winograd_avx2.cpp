// winograd_avx2.cpp: the input and output transforms of the F(4x4, 3x3)
// convolution (winograd.h) on AVX2 + FMA, 8 tiles of a tile row per vector.
//
// Neighbouring tiles start 4 columns apart, so the 8 lanes of a vector read
// a row with stride 4: each input row is first split into its 4 column
// phases (phase q holds columns q, q + 4, q + 8, ...), where column q + 4 s
// of tiles j .. j + 7 is contiguous from phase q at j + s; those columns are
// laid out tile after tile across the tile rows, so that narrow rows (14 or
// 7 wide: 4 or 2 tiles) still fill the vectors. The output goes the other
// way: the 4 columns of 8 tiles are interleaved into 32 contiguous floats.
//
// Like the other ISA files, nothing here calls a standard-library inline
// function: its AVX2 code must not be merged into code every CPU runs.
#include "kernels/conv/winograd.h"

#if defined(ONYX_CPU_AVX2_LOOPS)
#include <immintrin.h>

#include "gemm/avx2_registers.h"
#include "kernels/conv/direct_conv_impl.h"

namespace onyx::cpu::winograd {
namespace {

using reg = __m256;

// Tiles rounded up to whole vectors, and the length of a phase row: one
// vector more, for the columns 4 and 5 of a tile (read at j + 1).
int64_t whole_vectors(int64_t tiles) { return (tiles + 7) / 8 * 8; }
int64_t phase_length(int64_t tiles) { return whole_vectors(tiles) + 8; }

// 32 floats p[0..31] into 4 phases: q[k][i] = p[4 i + k].
[[gnu::always_inline]] inline void split_phases(const float* p, float* q0, float* q1, float* q2, float* q3) {
  const reg v0 = _mm256_loadu_ps(p), v1 = _mm256_loadu_ps(p + 8), v2 = _mm256_loadu_ps(p + 16),
            v3 = _mm256_loadu_ps(p + 24);
  // 128-bit lanes: a = p[0..3 | 16..19], b = p[4..7 | 20..23], c = p[8..11 | 24..27], d = p[12..15 | 28..31]
  const reg a = _mm256_permute2f128_ps(v0, v2, 0x20), b = _mm256_permute2f128_ps(v0, v2, 0x31);
  const reg c = _mm256_permute2f128_ps(v1, v3, 0x20), d = _mm256_permute2f128_ps(v1, v3, 0x31);
  // then a 4 x 4 transpose within each 128-bit lane
  const reg t0 = _mm256_unpacklo_ps(a, b), t1 = _mm256_unpackhi_ps(a, b);
  const reg t2 = _mm256_unpacklo_ps(c, d), t3 = _mm256_unpackhi_ps(c, d);
  _mm256_storeu_ps(q0, _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0)));
  _mm256_storeu_ps(q1, _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2)));
  _mm256_storeu_ps(q2, _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0)));
  _mm256_storeu_ps(q3, _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2)));
}

// The inverse: p[4 i + k] = q[k][i], 32 floats.
[[gnu::always_inline]] inline void join_phases(const reg q[4], float* p) {
  const reg t0 = _mm256_unpacklo_ps(q[0], q[1]), t1 = _mm256_unpackhi_ps(q[0], q[1]);
  const reg t2 = _mm256_unpacklo_ps(q[2], q[3]), t3 = _mm256_unpackhi_ps(q[2], q[3]);
  // 128-bit lanes: a = element 0 | 4 of each phase, b = 1 | 5, c = 2 | 6, d = 3 | 7
  const reg a = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  const reg b = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  const reg c = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  const reg d = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  _mm256_storeu_ps(p, _mm256_permute2f128_ps(a, b, 0x20));
  _mm256_storeu_ps(p + 8, _mm256_permute2f128_ps(c, d, 0x20));
  _mm256_storeu_ps(p + 16, _mm256_permute2f128_ps(a, b, 0x31));
  _mm256_storeu_ps(p + 24, _mm256_permute2f128_ps(c, d, 0x31));
}

// o = B^T z for F(4, 3):
//   [4  0 -5  0  1  0]
//   [0 -4 -4  1  1  0]
//   [0  4 -4 -1  1  0]
//   [0 -2 -1  2  1  0]
//   [0  2 -1 -2  1  0]
//   [0  4  0 -5  0  1]
[[gnu::always_inline]] inline void input_points(const reg z[6], reg o[6]) {
  const reg four = _mm256_set1_ps(4.0f), five = _mm256_set1_ps(5.0f), two = _mm256_set1_ps(2.0f);
  const reg a = _mm256_fnmadd_ps(four, z[2], z[4]), b = _mm256_fnmadd_ps(four, z[1], z[3]);
  const reg c = _mm256_sub_ps(z[4], z[2]), d = _mm256_mul_ps(two, _mm256_sub_ps(z[3], z[1]));
  o[0] = _mm256_fmadd_ps(four, z[0], _mm256_fnmadd_ps(five, z[2], z[4]));
  o[1] = _mm256_add_ps(a, b);
  o[2] = _mm256_sub_ps(a, b);
  o[3] = _mm256_add_ps(c, d);
  o[4] = _mm256_sub_ps(c, d);
  o[5] = _mm256_fmadd_ps(four, z[1], _mm256_fnmadd_ps(five, z[3], z[5]));
}

// o = A^T z for F(4, 3):
//   [1  1  1  1  1  0]
//   [0  1 -1  2 -2  0]
//   [0  1  1  4  4  0]
//   [0  1 -1  8 -8  1]
[[gnu::always_inline]] inline void output_points(const reg z[6], reg o[4]) {
  const reg p = _mm256_add_ps(z[1], z[2]), q = _mm256_sub_ps(z[1], z[2]);
  const reg s = _mm256_add_ps(z[3], z[4]), d = _mm256_sub_ps(z[3], z[4]);
  o[0] = _mm256_add_ps(_mm256_add_ps(z[0], p), s);
  o[1] = _mm256_fmadd_ps(_mm256_set1_ps(2.0f), d, q);
  o[2] = _mm256_fmadd_ps(_mm256_set1_ps(4.0f), s, p);
  o[3] = _mm256_add_ps(_mm256_fmadd_ps(_mm256_set1_ps(8.0f), d, q), z[5]);
}

}  // namespace

int64_t detail::scratch_floats(int64_t tiles_w, int64_t tile_rows) {
  const int64_t span = whole_vectors(tiles_w * tile_rows);
  const int64_t input = 8 * phase_length(tiles_w) + 36 * span, output = 16 * span;
  return input > output ? input : output;
}

void detail::input_tiles_avx2(const InputTiles& t) {
  const int64_t P = phase_length(t.tiles_w), width = 4 * P;
  const int64_t n = t.tiles_w * t.tile_rows, span = whole_vectors(n);
  float* const row = t.scratch;          // one input row with its zero padding, `width` floats
  float* const phases = row + width;     // its 4 phases, P floats each
  // Column c of every tile's 6 input rows, tile after tile (so that 8
  // tiles are one load even when they span tile rows): columns 0..3 in
  // near[row][c], columns 4 and 5 in far[row][c - 4]; `span` floats each.
  float* const near = phases + width;
  float* const far = near + 24 * span;
  for (int64_t i = 0; i < t.tile_rows; ++i)
    for (int64_t k = 0; k < 6; ++k) {
      const int64_t iy = t.top + 4 * i + k;
      if (iy < 0 || iy >= t.in_h) {
        for (int64_t j = 0; j < width; ++j) phases[j] = 0.0f;
      } else {  // row[j] = input column left + j, or 0 outside the input
        const float* src = t.plane + iy * t.in_w;
        int64_t lo = -t.left < 0 ? 0 : -t.left, hi = t.in_w - t.left;
        if (lo > width) lo = width;
        if (hi > width) hi = width;
        if (hi < lo) hi = lo;
        for (int64_t j = 0; j < lo; ++j) row[j] = 0.0f;
        for (int64_t j = lo; j < hi; ++j) row[j] = src[t.left + j];
        for (int64_t j = hi; j < width; ++j) row[j] = 0.0f;
        for (int64_t j = 0; j < P; j += 8)
          split_phases(row + 4 * j, phases + j, phases + P + j, phases + 2 * P + j, phases + 3 * P + j);
      }
      for (int64_t q = 0; q < 4; ++q) {
        float* dst = near + (k * 4 + q) * span + i * t.tiles_w;
        for (int64_t j = 0; j < t.tiles_w; ++j) dst[j] = phases[q * P + j];
      }
      for (int64_t q = 0; q < 2; ++q) {
        float* dst = far + (k * 2 + q) * span + i * t.tiles_w;
        for (int64_t j = 0; j < t.tiles_w; ++j) dst[j] = phases[q * P + j + 1];
      }
    }
  // The lanes past the last tile: computed, never stored; zeros, not
  // whatever the scratch held (a denormal there would slow every lane).
  for (int64_t r = 0; r < 36; ++r)
    for (int64_t j = n; j < span; ++j) near[r * span + j] = 0.0f;
  for (int64_t j0 = 0; j0 < n; j0 += 8) {
    reg d[6][6];  // B^T x: d[k][c], row k, column c of 8 tiles' 6 x 6 inputs
    for (int c = 0; c < 6; ++c) {
      reg z[6], o[6];
      for (int k = 0; k < 6; ++k)
        z[k] = _mm256_loadu_ps(c < 4 ? near + (k * 4 + c) * span + j0 : far + (k * 2 + c - 4) * span + j0);
      input_points(z, o);
      for (int k = 0; k < 6; ++k) d[k][c] = o[k];
    }
    const int64_t lanes = n - j0 < 8 ? n - j0 : 8;
    for (int k = 0; k < 6; ++k) {
      reg o[6];
      input_points(d[k], o);  // (B^T x) B, row k
      for (int l = 0; l < 6; ++l) {
        float* dst = t.v + (k * 6 + l) * t.point_stride + j0;
        if (lanes == 8) _mm256_storeu_ps(dst, o[l]);
        else avx2::store_first(dst, o[l], lanes);
      }
    }
  }
}

namespace {

// output_tiles_avx2 with the activation known at compile time (as
// output_tiles_lanes below).
template <direct_conv::Epilogue::Kind A>
void output_tiles(const detail::OutputTiles& t, const direct_conv::Epilogue e) {
  const int64_t n = t.tiles_w * t.tile_rows, stage_width = 4 * whole_vectors(n);
  float* const stage = t.scratch;  // [4 output rows of each tile][tile][4 columns]
  const reg bias = _mm256_set1_ps(t.bias);
  for (int64_t j0 = 0; j0 < n; j0 += 8) {
    reg s[4][6];  // A^T M: s[a][l], row a, column l
    for (int l = 0; l < 6; ++l) {
      reg z[6], o[4];
      for (int k = 0; k < 6; ++k) z[k] = _mm256_loadu_ps(t.m + (k * 6 + l) * t.point_stride + j0);
      output_points(z, o);
      for (int a = 0; a < 4; ++a) s[a][l] = o[a];
    }
    for (int a = 0; a < 4; ++a) {
      reg o[4];
      output_points(s[a], o);  // (A^T M) A, row a: columns 0..3 of the 8 tiles
      for (int b = 0; b < 4; ++b)
        o[b] = direct_conv::impl::activate_as<avx2::Vec, A>(e, _mm256_add_ps(o[b], bias));
      join_phases(o, stage + a * stage_width + 4 * j0);
    }
  }
  for (int64_t i = 0; i < t.tile_rows; ++i)
    for (int64_t a = 0; a < 4 && 4 * i + a < t.out_rows; ++a) {
      const float* src = stage + a * stage_width + 4 * i * t.tiles_w;
      float* dst = t.y + (4 * i + a) * t.out_w;
      for (int64_t j = 0; j < t.out_w; ++j) dst[j] = src[j];
    }
}

}  // namespace

void detail::output_tiles_avx2(const OutputTiles& t) {
  using K = direct_conv::Epilogue;
  switch (t.epilogue->kind) {
    case K::kNone: return output_tiles<K::kNone>(t, *t.epilogue);
    case K::kRelu: return output_tiles<K::kRelu>(t, *t.epilogue);
    case K::kClip: return output_tiles<K::kClip>(t, *t.epilogue);
    case K::kLeakyRelu: return output_tiles<K::kLeakyRelu>(t, *t.epilogue);
  }
}

void detail::input_tiles_lanes_avx2(const LaneTiles& t) {
  const int64_t row = t.padded_w * 8;
  for (int64_t tile = t.first; tile < t.last; ++tile) {
    const float* base = t.x + (4 * (tile / t.tiles_w) * t.padded_w + 4 * (tile % t.tiles_w)) * 8;
    reg d[6][6];  // B^T x: d[k][c], row k, column c of the tile's 6 x 6 inputs
    for (int c = 0; c < 6; ++c) {
      reg z[6], o[6];
      for (int k = 0; k < 6; ++k) z[k] = _mm256_loadu_ps(base + k * row + c * 8);
      input_points(z, o);
      for (int k = 0; k < 6; ++k) d[k][c] = o[k];
    }
    float* const v = t.points + (tile - t.first) * 8;
    for (int k = 0; k < 6; ++k) {
      reg o[6];
      input_points(d[k], o);  // (B^T x) B, row k
      for (int l = 0; l < 6; ++l) _mm256_storeu_ps(v + (k * 6 + l) * t.point_stride, o[l]);
    }
  }
}

namespace {

// output_tiles_lanes_avx2 with the activation known at compile time and the
// epilogue copied: through a reference, every store could have changed it,
// and each vector re-read and re-tested its kind (the test CNN's second
// layer, 8 -> 16 channels on 14 x 14: the whole layer 3-6% faster).
template <direct_conv::Epilogue::Kind A>
void output_tiles_lanes(const detail::LaneTiles& t, float bias, const direct_conv::Epilogue e, int64_t out_h,
                        int64_t out_w) {
  const reg b = _mm256_set1_ps(bias);
  auto finish = [&](reg o) { return direct_conv::impl::activate_as<avx2::Vec, A>(e, _mm256_add_ps(o, b)); };
  for (int64_t tile = t.first; tile < t.last; ++tile) {
    const int64_t y0 = 4 * (tile / t.tiles_w), x0 = 4 * (tile % t.tiles_w);
    const float* const m = t.points + (tile - t.first) * 8;
    reg s[4][6];  // A^T M: s[a][l], row a, column l
    for (int l = 0; l < 6; ++l) {
      reg z[6], o[4];
      for (int k = 0; k < 6; ++k) z[k] = _mm256_loadu_ps(m + (k * 6 + l) * t.point_stride);
      output_points(z, o);
      for (int a = 0; a < 4; ++a) s[a][l] = o[a];
    }
    float* const dst = t.x + (y0 * out_w + x0) * 8;
    if (out_h - y0 >= 4 && out_w - x0 >= 4) {
      for (int a = 0; a < 4; ++a) {
        reg o[4];
        output_points(s[a], o);  // (A^T M) A, row a: its 4 columns
        for (int c = 0; c < 4; ++c) _mm256_storeu_ps(dst + (a * out_w + c) * 8, finish(o[c]));
      }
      continue;
    }
    const int64_t rows = out_h - y0 < 4 ? out_h - y0 : 4, cols = out_w - x0 < 4 ? out_w - x0 : 4;
    for (int a = 0; a < rows; ++a) {
      reg o[4];
      output_points(s[a], o);
      for (int c = 0; c < cols; ++c) _mm256_storeu_ps(dst + (a * out_w + c) * 8, finish(o[c]));
    }
  }
}

}  // namespace

void detail::output_tiles_lanes_avx2(const LaneTiles& t, float bias, const direct_conv::Epilogue& e, int64_t out_h,
                                     int64_t out_w) {
  using K = direct_conv::Epilogue;
  switch (e.kind) {
    case K::kNone: return output_tiles_lanes<K::kNone>(t, bias, e, out_h, out_w);
    case K::kRelu: return output_tiles_lanes<K::kRelu>(t, bias, e, out_h, out_w);
    case K::kClip: return output_tiles_lanes<K::kClip>(t, bias, e, out_h, out_w);
    case K::kLeakyRelu: return output_tiles_lanes<K::kLeakyRelu>(t, bias, e, out_h, out_w);
  }
}

}  // namespace onyx::cpu::winograd

#endif  // ONYX_CPU_AVX2_LOOPS
