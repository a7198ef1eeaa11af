// gemm.h: the CPU provider's matrix multiply (single precision; dgemm for double).
//
// GotoBLAS/BLIS structure: B is packed into KC x NR micro-panels, A into
// MR x KC micro-panels (or, not transposed, read in place by the AVX2 and
// AVX-512 kernels, which broadcast from its rows: no packing pass), and a
// register-blocked microkernel computes MR x NR tiles of C. The microkernel is chosen at run time from the CPU's features
// (AVX-512, AVX2+FMA, or portable C++), so the library runs on any x86-64.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>

namespace onyx::cpu {

// Splits [0, n) into chunks and runs body(begin, end) on them, possibly in
// parallel; returns when all are done. threads is how many workers may run at
// once (>= 1).
struct ParallelFor {
  size_t threads = 1;
  std::function<void(size_t n, const std::function<void(size_t, size_t)>& body)> run;  // empty => inline, serial
};

// Work on each block of C once its sum is complete, while the block is in
// cache: C[i, j] = act(C[i, j] + bias[j]) + residual[i, j]. A Gemm's bias
// row, a fused activation and a residual Add then cost no pass of their own.
struct GemmEpilogue {
  const float* bias = nullptr;  // n values (one per column of C), or none
  bool relu = false;            // max(0, x), NaN kept
  // Then (a Conv's output channels are C's rows): + row_bias[i] (m values,
  // one per row of C), clamped to [lo, hi] (a fused Clip; NaN kept).
  const float* row_bias = nullptr;
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
  // Any other activation, run in place (x == y) on each finished row segment
  // after the bias, given activation_param (e.g. vec::swish with its alpha).
  // Must be callable from any thread.
  void (*activation)(const float* x, float* y, size_t n, float param) = nullptr;
  float activation_param = 0;
  // Added last: an m x n matrix, row i at residual + i * ldr; it must not
  // overlap C.
  const float* residual = nullptr;
  int64_t ldr = 0;
  bool clamps() const { return lo != -std::numeric_limits<float>::infinity() || hi != std::numeric_limits<float>::infinity(); }
  bool empty() const { return !bias && !relu && !row_bias && !clamps() && !activation && !residual; }
};

// Row-major: C[m x n] = alpha * op(A)[m x k] * op(B)[k x n] + beta * C, where
// op(X) = X or X^T, then the epilogue. lda/ldb/ldc are the row strides, in
// elements, of the matrices as stored. beta == 0 means C is not read (it may
// hold NaN).
void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
           const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
           float* c, int64_t ldc, const ParallelFor& parallel = {}, const GemmEpilogue& epilogue = {});

// Constant-weight fast path (e.g. MatMul/Gemm whose B is an initializer): op(B)
// packed once into the microkernel's layout, reusable by any number of
// sgemm_packed calls, from any threads. It is tied to the ISA picked when it
// was packed and holds its own copy of the data.
struct PackedB;
std::shared_ptr<PackedB> pack_b(bool trans_b, int64_t k, int64_t n, const float* b, int64_t ldb);
int64_t packed_b_k(const PackedB& b);
int64_t packed_b_n(const PackedB& b);

// As sgemm with op(B) = the packed matrix; k and n must be those it was packed with.
void sgemm_packed(bool trans_a, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                  int64_t lda, const PackedB& b, float beta, float* c, int64_t ldc,
                  const ParallelFor& parallel = {}, const GemmEpilogue& epilogue = {});

// Double precision, same contract as sgemm. Simple loops (dgemm.cpp): for
// float64 references and gradient checks, not tuned for speed.
void dgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
           const double* a, int64_t lda, const double* b, int64_t ldb, double beta,
           double* c, int64_t ldc, const ParallelFor& parallel = {});

// The ISA the dispatcher picked on this CPU, for logs and benchmarks:
// "avx512", "avx2" or "generic".
const char* sgemm_isa();

}  // namespace onyx::cpu
