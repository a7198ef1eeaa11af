// qkernel_amx.cpp: the quad kernel for AMX-INT8 (the rest of the set is
// AVX-512 VNNI's). A tile multiply-add (tdpbusd) takes 16 rows x 64 uint8 of
// A and 16 quads x 16 columns of int8 of B into 16 x 16 int32 sums: 16K
// multiply-adds per instruction. The microkernel keeps a 32 x 32 tile of C
// in four accumulator tiles; A's micro-panels hold 32 rows of 64-byte runs
// (QuadForm group 16) and B's panels are already 16-quad tile rows.
#include <immintrin.h>

#include <cstdint>

#include "quad_store_avx512.h"

namespace onyx::cpu::qgemm_detail {
namespace {

constexpr int kTileRows = 16, kTileBytes = 64;

// Palette 1, eight tiles of 16 rows x 64 bytes.
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// The tile configuration is per thread and other code (oneDNN) may load its
// own: every thread loads ours before each run of quad kernels.
void begin() {
  static const TileConfig config = [] {
    TileConfig c;
    for (int t = 0; t < 8; ++t) c.colsb[t] = kTileBytes, c.rows[t] = kTileRows;
    return c;
  }();
  _tile_loadconfig(&config);
}

void end() { _tile_release(); }

void ukr(int64_t kq, const uint8_t* a, const uint8_t* b, int64_t stride, int panels, int32_t* c, int64_t ldc,
         bool accumulate, int rows, int cols, const QuadFix* fix) {
  const bool two_rows = rows > kTileRows, two_panels = panels > 1;
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  // Per 16 quads: A rows 0-15 and 16-31 (1 KiB each), one 1 KiB tile per panel.
  for (int64_t q = 0; q < kq; q += 16, a += 2 * kTileRows * kTileBytes, b += 16 * kTileBytes) {
    _tile_loadd(4, a, kTileBytes);
    _tile_loadd(6, b, kTileBytes);
    _tile_dpbusd(0, 4, 6);
    if (two_panels) {
      _tile_loadd(7, b + stride, kTileBytes);
      _tile_dpbusd(1, 4, 7);
    }
    if (two_rows) {
      _tile_loadd(5, a + kTileRows * kTileBytes, kTileBytes);
      _tile_dpbusd(2, 5, 6);
      if (two_panels) _tile_dpbusd(3, 5, 7);
    }
  }
  alignas(64) int32_t sums[2 * kTileRows][2 * kNR];
  constexpr int kStride = 2 * kNR * 4;
  _tile_stored(0, &sums[0][0], kStride);
  _tile_stored(1, &sums[0][kNR], kStride);
  _tile_stored(2, &sums[kTileRows][0], kStride);
  _tile_stored(3, &sums[kTileRows][kNR], kStride);
  for (int i = 0; i < rows; ++i)
    for (int p = 0; p < panels; ++p)
      if (!store_quad_sums(_mm512_load_si512(&sums[i][p * kNR]), i, p, cols, c, ldc, accumulate, fix)) break;
}

}  // namespace

const QKernelSet& qkernels_amx() {
  static const QKernelSet set = [] {
    QKernelSet s = qkernels_avx512vnni();
    s.name = "amx";
    s.gemm_quads = ukr;
    s.quad_form = {false, 2 * kTileRows, 16, 2};
    s.begin = begin;
    s.end = end;
    return s;
  }();
  return set;
}

}  // namespace onyx::cpu::qgemm_detail
