// qgemm.h: the CPU provider's 8-bit integer matrix multiply.
//
//   C[m x n] (int32) = sum_k (op(A)[i, k] - a_zero[i]) * (B[k, j] - b_zero[j])
//
// A and B hold uint8 or int8, in any mix; results are exact (sums wrap
// modulo 2^32 like an int32 accumulator, never at realistic K). Two packed
// layouts, chosen by the CPU (qkernel_set.h):
// - pairs (AVX2, portable): both operands widened to int16 with their zero
//   points already subtracted (every value in [-255, 255]); the microkernel
//   multiplies pairs of adjacent K steps with one vpmaddwd into int32. Unlike
//   vpmaddubsw (u8 x s8 -> int16 pair sums) it never saturates.
// - quads (AVX-512 VNNI): bytes, A as int8 and B as uint8 (the other
//   signedness shifted by 128, its zero point with it), four K steps per
//   vpdpbusd, which sums into int32 without saturating; the zero points are
//   applied once per tile from A's row sums and B's column sums. Four times
//   the multiply-adds per instruction of the AVX2 pairs. On AVX2 the same
//   layout serves an operand packed once (pack_qa: a convolution's filters;
//   pack_qb: a MatMul's weights) with vpmaddubsw, whose int16 pair sums
//   saturate: that operand goes in as int8, its pairs bounded while packing
//   and the excess kept as corrections (PackedQA/PackedQB::corrections).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "gemm.h"
#include "qkernel_set.h"  // QCorrection

namespace onyx::cpu {

// An 8-bit matrix as stored: op(X) = X (row stride ld) or X^T (trans: X is
// stored k x m, row stride ld).
struct QMatrix {
  const void* data = nullptr;
  bool is_signed = false;  // int8, else uint8
  int64_t ld = 0;
  bool trans = false;
  // B only (packing, not trans): row r at rows[r] instead of data + r * ld,
  // so that a convolution's taps are read straight from a padded image.
  const uint8_t* const* rows = nullptr;
};

// B (k x n) in the microkernel's layout: panels of 16 columns, each kp steps
// of 16 columns x (2 int16 minus zero points | 4 bytes). Holds its own copy;
// read-only once packed, so any number of qgemm calls may share it.
struct PackedQB {
  int64_t k = 0, n = 0;
  bool quads = false;  // the layout (qgemm.h's top)
  int64_t kp = 0;      // K steps: ceil(k / 2) pairs or ceil(k / 4) quads
  int64_t panels = 0;  // ceil(n / 16)
  std::vector<int16_t> data;      // pairs
  std::vector<uint8_t> bytes;     // quads
  std::vector<int32_t> col_zero;  // quads: zero point of each column as packed (panels * 16)
  std::vector<int32_t> col_term;  // quads: column byte sum - k * col_zero
  bool uniform_zero = false;      // quads: one zero point for every column
  bool bounded_pairs = false;     // quads: packed for a bounded-pairs kernel (int8 B)
  // Bounded pairs: the corrections of panel p, sorted by k, are
  // corrections[correction_start[p] .. correction_start[p + 1]).
  std::vector<QCorrection> corrections;
  std::vector<int64_t> correction_start;
};

// Packs B once (e.g. weights); zero holds 1 or n values (per column).
std::shared_ptr<PackedQB> pack_qb(const QMatrix& b, int64_t k, int64_t n, const int32_t* zero,
                                  int64_t zero_count);
// The same into *out, reusing its storage: for a B that changes every run
// (a convolution's im2col), packed into a scratch PackedQB per thread. for_a:
// the packed A that B will be multiplied with (its layout), or null for a
// product with an A given unpacked.
struct PackedQA;
void pack_qb_into(const QMatrix& b, int64_t k, int64_t n, const int32_t* zero, int64_t zero_count,
                  PackedQB* out, const ParallelFor& parallel = {}, const PackedQA* for_a = nullptr);

// Called once for each finished block of C (rows [r0, r1) x columns [c0, c1),
// at most 96 x 256),
// by the worker that computed it, while it is still in cache: the place to
// requantize or transpose. May run concurrently for disjoint blocks.
using QTileDone = std::function<void(int64_t r0, int64_t r1, int64_t c0, int64_t c1)>;

// C = op(A) x B as above. a_zero holds 1 or m values (per row). k and n must
// be those B was packed with. tile_done may be empty.
void qgemm(int64_t m, int64_t n, int64_t k, const QMatrix& a, const int32_t* a_zero,
           int64_t a_zero_count, const PackedQB& b, int32_t* c, int64_t ldc,
           const QTileDone& tile_done = {}, const ParallelFor& parallel = {});

// A (m x k, e.g. a convolution's filters) with its zero points (1 or m, per
// row), packed once in the blocks qgemm walks. Read-only once packed.
struct PackedQA {
  int64_t m = 0, k = 0, kp = 0;
  bool quads = false;
  int64_t mc = 0, kc = 0, k_blocks = 0;  // the blocking it was packed for
  int64_t block = 0;                      // values per (row block, K block)
  std::vector<int16_t> data;              // pairs
  std::vector<uint8_t> bytes;             // quads
  std::vector<int32_t> row_zero, row_sum; // quads: per row (see QuadFix)
  bool uniform_zero = false;              // quads: one zero point for every row
  bool bounded_pairs = false;             // quads: packed for a bounded-pairs kernel
  // Bounded pairs: the corrections of block b (row block * k_blocks + K
  // block) are corrections[correction_start[b] .. correction_start[b + 1]).
  std::vector<QCorrection> corrections;
  std::vector<int64_t> correction_start;
};
std::shared_ptr<PackedQA> pack_qa(const QMatrix& a, int64_t m, int64_t k, const int32_t* zero, int64_t zero_count);

// C = A x B with both operands packed; A's m and k are the product's.
void qgemm(int64_t n, const PackedQA& a, const PackedQB& b, int32_t* c, int64_t ldc,
           const QTileDone& tile_done = {}, const ParallelFor& parallel = {});

// DynamicQuantizeLinear's two passes, vectorized for this CPU: the range of
// x widened to include 0 (NaN skipped), and float32 to uint8 as
// QuantizeLinear computes it (x / scale, ties to even, + zero, saturated).
void float_range(const float* x, int64_t count, float* lo, float* hi);
void quantize_to_u8(const float* x, int64_t count, float scale, float zero, uint8_t* y);

// The output stage of an 8-bit GEMM or convolution, vectorized for this CPU:
//   y[i] = saturate(round_half_even((acc[i] + bias) * multiplier) + zero)
// into int8 (is_signed) or uint8 y, in float64.
void requantize_row(const int32_t* acc, int64_t count, double bias, double multiplier, double zero, bool is_signed,
                    void* y);

// y[j] = float(acc[j]) * scale[j] + bias[j] for j < count, multiplied and
// then added in float32 (two roundings, as Cast, Mul and Add compute it),
// vectorized for this CPU.
void dequantize_row(const int32_t* acc, int64_t count, const float* scale, const float* bias, float* y);

// The kernel set the dispatcher picked on this CPU: "amx", "avx512vnni",
// "avx2" or "generic" (ONYX_QGEMM_ISA names a supported one to pick it
// instead); where it is "avx2", an operand packed once (pack_qa, pack_qb)
// takes "avx2-bytes-a" or "avx2-bytes-b" unless ONYX_QGEMM_ISA=avx2.
const char* qgemm_isa();

}  // namespace onyx::cpu
