// kernel_set.h: what each ISA's kernel file provides to the GEMM driver.
//
// Deliberately free of standard-library templates: the kernel files are
// compiled with ISA flags (-mavx512f, -mavx2, ...), and any inline function
// they instantiated could be merged by the linker with the copy other files
// use, smuggling AVX-512 instructions into code that runs on every CPU.
#pragma once

#include <cstdint>

namespace onyx::cpu::gemm_detail {

enum class Isa { generic, avx2, avx512 };

constexpr int kMaxMR = 16;

// What a microkernel applies to its tile as it stores it (the tile of the
// last K block only), in this order, with pointers at the tile's row 0 and
// column 0: + bias[j]; relu (max(0, x)); + row_bias[i]; clamp to [lo, hi];
// + residual[i * ldr + j]. NaN stays NaN through relu and the clamp. The
// driver's GemmEpilogue less its `activation` (a function run over finished
// rows), so that the common forms (a Conv's bias and Clip, a MatMul's bias
// and residual) cost no second pass over C.
struct TileEpilogue {
  const float* bias = nullptr;
  bool relu = false;
  const float* row_bias = nullptr;
  bool clamp = false;
  float lo = 0.0f, hi = 0.0f;
  const float* residual = nullptr;
  int64_t ldr = 0;
};

// The epilogue of element (i, j) of a tile, for the scalar edges.
[[gnu::always_inline]] static inline float tile_epilogue_at(const TileEpilogue& e, float v, int64_t i, int64_t j) {
  if (e.bias) v += e.bias[j];
  if (e.relu) v = v < 0.0f ? 0.0f : v;  // NaN compares false: kept
  if (e.row_bias) v += e.row_bias[i];
  if (e.clamp) {
    v = v < e.lo ? e.lo : v;
    v = v > e.hi ? e.hi : v;
  }
  if (e.residual) v += e.residual[i * e.ldr + j];
  return v;
}

// One MR x NR tile of C (only its first `rows` x `cols` elements are touched):
//   C = alpha * sum_k A(:, k) B(k, :) + beta * C;  beta == 0: C is not read;
// then the epilogue `ep`, unless it is null.
// a: packed A micro-panel, kc steps of MR floats (row i of step k at a[k*MR + i]).
// b: kc rows of NR floats, row r at b[r*b_stride]; columns >= cols must be
//    readable (packing pads them with zeros).
// The kernel at index `rows` of KernelSet::ukr handles tiles of that height.
using MicroKernel = void (*)(int64_t kc, const float* a, const float* b, int64_t b_stride,
                             float* c, int64_t ldc, float alpha, float beta, int64_t cols,
                             const TileEpilogue* ep);

// As MicroKernel, but A is read in place: row i of the tile at a + i * lda,
// kc contiguous floats from `a` (A not transposed). No packing pass: with
// few column panels to reuse it, packing A costs a good part of the product
// (a 16 x 16 transpose per 6 x 16 block).
using DirectKernel = void (*)(int64_t kc, const float* a, int64_t lda, const float* b, int64_t b_stride,
                              float* c, int64_t ldc, float alpha, float beta, int64_t cols,
                              const TileEpilogue* ep);

// As DirectKernel over `panels` full tiles side by side: tile q reads B at
// b + q * panel_stride and writes C at c + q * NR, its epilogue's bias and
// residual moved along with it. One call per row block instead of one per
// tile: with a short K (a Winograd point's 8 channels, kc 8) the call and
// the tile's set-up cost as much as its FMAs.
using DirectPanelsKernel = void (*)(int64_t kc, const float* a, int64_t lda, const float* b, int64_t b_stride,
                                    int64_t panel_stride, float* c, int64_t ldc, float alpha, float beta,
                                    int64_t panels, const TileEpilogue* ep);

// Packs op(A) rows [0, rows) x [0, kc) into ceil(rows/MR) micro-panels of kc*MR
// floats (short panels zero-padded). `a` points at op(A)(0, 0) of the block.
using PackA = void (*)(bool trans, const float* a, int64_t lda, int64_t rows, int64_t kc, float* dst);
// Packs op(B) [0, kc) x [0, cols) into ceil(cols/NR) micro-panels of kc*NR
// floats (short panels zero-padded). `b` points at op(B)(0, 0) of the block.
using PackB = void (*)(bool trans, const float* b, int64_t ldb, int64_t kc, int64_t cols, float* dst);

struct KernelSet {
  Isa isa;
  const char* name;
  int mr, nr;              // register tile
  int64_t mc, kc, nc;      // cache blocking: A block mc x kc (L2), B panel kc x nc (L3)
  MicroKernel ukr[kMaxMR + 1];
  PackA pack_a;
  PackB pack_b;
  // Optional (narrow_cols 0: none): tiles of the same height but only
  // narrow_cols wide, same signature and B layout, for a last column panel
  // that narrow (an output layer of 10 classes).
  int narrow_cols = 0;
  MicroKernel narrow[kMaxMR + 1] = {};
  // Optional (null: pack A): the DirectKernel forms of ukr and narrow.
  DirectKernel direct[kMaxMR + 1] = {};
  DirectKernel narrow_direct[kMaxMR + 1] = {};
  // Optional (null: one DirectKernel call per tile): the panels form of direct.
  DirectPanelsKernel direct_panels[kMaxMR + 1] = {};
};

// The kernel for a tile of `rows` x `cols` (rows <= mr, cols <= nr).
inline MicroKernel tile_kernel(const KernelSet& ks, int64_t rows, int64_t cols) {
  return cols <= ks.narrow_cols && ks.narrow[rows] ? ks.narrow[rows] : ks.ukr[rows];
}

// Its DirectKernel form, or null when the set has none.
inline DirectKernel direct_tile_kernel(const KernelSet& ks, int64_t rows, int64_t cols) {
  return cols <= ks.narrow_cols && ks.narrow_direct[rows] ? ks.narrow_direct[rows] : ks.direct[rows];
}

// Defined in kernel_<isa>.cpp; only call one whose ISA the CPU supports.
const KernelSet& kernels_generic();
const KernelSet& kernels_avx2();
const KernelSet& kernels_avx512();

}  // namespace onyx::cpu::gemm_detail
