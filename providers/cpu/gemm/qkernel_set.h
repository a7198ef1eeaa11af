// qkernel_set.h: what each ISA provides to the 8-bit integer kernels: the
// GEMM microkernel in one of two layouts (qgemm.cpp and qgemm_quads.cpp
// drive them), B packing, the requantizing output stage, DynamicQuantize-
// Linear's range and codes, and DynamicQuantizeMatMul's float output stage.
// The generic set and the AVX2 set share their plain loops (qkernel_impl.h),
// vectorized by the compiler for each file's ISA; the AVX-512 VNNI and AMX
// sets start from AVX2's. Free of standard-library templates for the reason
// kernel_set.h gives.
#pragma once

#include <cstdint>

namespace onyx::cpu {
// What a bounded-pairs kernel (AVX2 bytes, QuadForm) leaves out of its
// signed operand, at step k of A's row `at` (C[at][j] += value * B[k][j] for
// every column, B as packed) or of B's column `at` (C[i][at] += value *
// A[i][k] for every row, A as packed).
struct QCorrection {
  int64_t at, k;
  int32_t value;
};
}  // namespace onyx::cpu

namespace onyx::cpu::qgemm_detail {

// Register tile of every microkernel: kMR rows x kNR columns of int32 (the
// quad kernels take up to kQuadPanels panels of kNR columns at once).
constexpr int kMR = 6;
constexpr int kNR = 16;
constexpr int kQuadPanels = 4;

// How a kernel set wants its operands packed (qgemm.h):
//   pairs: int16 with zero points subtracted, two K steps per int32 lane
//          (vpmaddwd: exact, no corrections);
//   quads: bytes, four K steps per int32 lane of B's panels, one operand as
//          int8 and the other as uint8 (vpdpbusd, AMX tdpbusd: exact in
//          int32), zero points applied to the sums afterwards from A's row
//          sums and B's column sums.
enum class QLayout { pairs, quads };

// The shape of a quad set's operands:
// - a_signed: A (the row operand) packed as int8 and B as uint8 (VNNI), or
//   A as uint8 and B as int8 (AMX);
// - rows: rows of A per micro-panel;
// - group: K quads per run of a row in A's micro-panels: 1 interleaves the
//   rows quad by quad (row i of quad q at ((q * rows) + i) * 4), 16 gives
//   each row 64 contiguous bytes per 16 quads (an AMX tile row). K, and the
//   quads of B's panels, are padded to a multiple of group quads;
// - panels: most B panels one call takes;
// - bounded_pairs: the kernel adds each pair of neighbouring products in
//   int16 (AVX2's vpmaddubsw, which saturates), so the int8 operand (A where
//   a_signed, else B) is packed with |x0| + |x1| <= 128 in every pair of a
//   quad (255 * 128 < 2^15), and what a pair loses is added back by the
//   driver (qgemm_quads.cpp: QCorrection).
struct QuadForm {
  bool a_signed;
  int rows, group, panels;
  bool bounded_pairs = false;
};
constexpr int kQuadMaxRows = 32, kQuadMaxPanels = 4;

// The zero-point terms of a quad tile, for its rows and columns:
//   C[i][j] += -row_zero[i] * col_term[j] - col_zero[j] * row_sum[i]
// (row_zero, col_zero: the zero points of the bytes as packed; row_sum: the
// sum of row i's packed values; col_term: column j's value sum - K * col_zero[j]).
// Where both zero points are one per tensor (the usual case), the driver
// gives the two products precomputed instead, C[i][j] += row_add[i] +
// col_add[j], and the other pointers are unused: two adds instead of two
// multiplies per vector, which matter where K is small.
struct QuadFix {
  const int32_t* row_zero;
  const int32_t* row_sum;
  const int32_t* col_zero;
  const int32_t* col_term;
  const int32_t* row_add = nullptr;  // -col_zero * row_sum[i]
  const int32_t* col_add = nullptr;  // -row_zero * col_term[j]
};

// One rows x (panels * kNR) tile of C from quads (QuadForm says how a is
// laid out); only its first rows x cols elements are written. Panel p of B
// at b + p * panel_stride: kq steps of kNR columns x 4 bytes (column j of
// step q at [(q * kNR + j) * 4]). kq is a multiple of the form's group.
// fix: null, or the zero-point terms, added after the sums (the last K block).
using QQuadKernel = void (*)(int64_t kq, const uint8_t* a, const uint8_t* b, int64_t panel_stride, int panels,
                             int32_t* c, int64_t ldc, bool accumulate, int rows, int cols, const QuadFix* fix);

// Up to kQuadMaxPanels panels of B as quads (width <= 64 columns, in
// ceil(width / 16) panels, panel p at dst + p * panel_stride): kq steps of
// kNR columns x 4 bytes from rows of B (row r at rows[r] + offset; rows past
// k, and columns from width, are 0), each byte XOR flip (0x80 shifts by 128
// between int8 and uint8); col_sum[j] receives the sum of column j's packed
// values, read as int8 when as_signed, else as uint8. Reading four panels'
// 64 bytes of a row at once touches each cache line of B once.
using QPackQuads = void (*)(const uint8_t* const* rows, int64_t offset, int64_t k, int64_t kq, int64_t width,
                            uint8_t flip, bool as_signed, uint8_t* dst, int64_t panel_stride, int32_t* col_sum);

// Called by each thread before it runs quad kernels and after (AMX loads its
// tile configuration, then releases the tiles so that a context switch need
// not save 8 KiB of tile data); may be null.
using QBegin = void (*)();
using QEnd = void (*)();

// One kMR x kNR tile of C; only its first rows x cols elements are written.
//   C (=|+=) sum_p A(:, p) . B(p, :)   over kp steps of one K pair each.
// a: kp steps of kMR int16 pairs (row i of step p at a[(p * kMR + i) * 2]).
// b: kp steps of kNR int16 pairs (column j of step p at b[(p * kNR + j) * 2]).
// accumulate: add to C instead of overwriting it.
using QMicroKernel = void (*)(int64_t kp, const int16_t* a, const int16_t* b, int32_t* c,
                              int64_t ldc, bool accumulate, int rows, int cols);

// One K pair of a B panel from two rows of B (r1 null: past K's end):
// dst[2j] = r0[j] - zero[j], dst[2j + 1] = r1[j] - zero[j] for j < count,
// zeros up to kNR.
using QPackPairU8 = void (*)(const uint8_t* r0, const uint8_t* r1, int64_t count, const int16_t* zero, int16_t* dst);
using QPackPairS8 = void (*)(const int8_t* r0, const int8_t* r1, int64_t count, const int16_t* zero, int16_t* dst);

// The output stage: y[i] = clamp(round_half_even((acc[i] + bias) * multiplier) + zero, lo, hi).
struct QuantOut {
  double bias, multiplier, zero, lo, hi;
};
using QRequantU8 = void (*)(const int32_t* acc, int64_t count, const QuantOut& q, uint8_t* y);
using QRequantS8 = void (*)(const int32_t* acc, int64_t count, const QuantOut& q, int8_t* y);

// y[j] = float(acc[j]) * scale[j] + bias[j], a float32 multiply and then an
// add (never fused: the op-by-op chain Cast, Mul, Add rounds twice).
using QDequantRow = void (*)(const int32_t* acc, int64_t count, const float* scale, const float* bias, float* y);

// lo = min(0, x...), hi = max(0, x...), NaN elements skipped: the range
// DynamicQuantizeLinear widens to include 0.
using QRange = void (*)(const float* x, int64_t count, float* lo, float* hi);

// y[i] = clamp(round_half_even(clamp(x[i] / s, -1e6, 1e6)) + z, 0, 255), NaN
// to -1e6 first: float32 to uint8 as QuantizeLinear computes it.
using QQuantizeU8 = void (*)(const float* x, int64_t count, float s, float z, uint8_t* y);

// A bounded-pairs set's corrections of A (QuadForm): for each x in [first,
// last) (sorted by row), C[x.at][j] += x.value * B[x.k][j] for j in [j0, j1),
// B as packed (b: its quad bytes, kp quads per panel); j0 is a multiple of kNR.
using QCorrect = void (*)(const QCorrection* first, const QCorrection* last, const uint8_t* b, int64_t kp, int32_t* c,
                          int64_t ldc, int64_t j0, int64_t j1);

struct QKernelSet {
  const char* name;
  QLayout layout;
  QMicroKernel gemm;        // pairs
  QQuadKernel gemm_quads;   // quads
  QPackQuads pack_quads;    // quads
  QPackPairU8 pack_pair_u8;
  QPackPairS8 pack_pair_s8;
  QRequantU8 requant_u8;
  QRequantS8 requant_s8;
  QRange range;
  QQuantizeU8 quantize_u8;
  QDequantRow dequant_row;
  QuadForm quad_form;  // quads
  QBegin begin;        // quads
  QEnd end;            // quads
  QCorrect correct = nullptr;  // quads with bounded pairs
};

const QKernelSet& qkernels_generic();
// The quad layout with portable loops: what the VNNI set computes, on any CPU
// (tests; a reference for the quad packing and zero-point terms).
const QKernelSet& qkernels_generic_quads();
// Defined in qkernel_avx2.cpp; use only where the CPU has AVX2. Pairs, and
// bytes: quads with bounded pairs, for an operand packed once (whose
// corrections are then found once): A (int8, VNNI's form) or B (int8, A as
// uint8).
const QKernelSet& qkernels_avx2();
const QKernelSet& qkernels_avx2_bytes_a();
const QKernelSet& qkernels_avx2_bytes_b();
// The same loops over AMX's form (uint8 rows of 64-byte runs, int8 B).
const QKernelSet& qkernels_generic_tiles();
// Defined in qkernel_avx512vnni.cpp: quads with vpdpbusd, the rest AVX2's;
// use only where the CPU has AVX-512 F/BW/VL/VNNI and AVX2.
const QKernelSet& qkernels_avx512vnni();
bool avx512vnni_supported();
// Defined in qkernel_amx.cpp: quads with AMX tdpbusd on 32 x 32 tiles, the
// rest AVX-512 VNNI's; use only where amx_supported() (which asks Linux for
// the tile state once per process).
const QKernelSet& qkernels_amx();
bool amx_supported();

}  // namespace onyx::cpu::qgemm_detail
