// gemm_tiled.h: the project's own tiled shared-memory SGEMM, as the three
// steps one thread performs: load its share of the A and B tiles, accumulate
// a 4x4 block of C from the tiles, store that block.
//
// The ROCm provider runs it (bookworm has no rocBLAS); the host-side tests run
// the same steps block by block and thread by thread (emulating shared memory
// and the barriers between steps) against a float64 reference.
//
// Row-major: C[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C, batched by
// strides (blockIdx.z on the device).
#pragma once

#include "kernel_math.h"

namespace onyx::gpu {

constexpr int kGemmTileM = 64, kGemmTileN = 64, kGemmTileK = 16;
constexpr int kGemmThreadsX = 16, kGemmThreadsY = 16;  // 256 threads, 4x4 outputs each
constexpr int kGemmThreads = kGemmThreadsX * kGemmThreadsY;
constexpr int kGemmPerThread = kGemmTileM / kGemmThreadsY;  // 4

struct GemmParams {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  const float* a = nullptr;
  int64_t lda = 0, stride_a = 0;
  const float* b = nullptr;
  int64_t ldb = 0, stride_b = 0;
  float* c = nullptr;
  int64_t ldc = 0, stride_c = 0;
  int64_t batch = 1;
  float alpha = 1.f, beta = 0.f;
};

// Shared-memory tiles; the +1 column avoids bank conflicts on column reads.
struct GemmTiles {
  float a[kGemmTileM][kGemmTileK + 1];
  float b[kGemmTileK][kGemmTileN + 1];
};

ONYX_HD float gemm_a(const GemmParams& p, const float* a, int64_t i, int64_t k) {
  return p.trans_a ? a[k * p.lda + i] : a[i * p.lda + k];
}
ONYX_HD float gemm_b(const GemmParams& p, const float* b, int64_t k, int64_t j) {
  return p.trans_b ? b[j * p.ldb + k] : b[k * p.ldb + j];
}

// Step 1: thread `tid` loads 4 elements of each tile (zeros past the edges).
ONYX_HD void gemm_load_tiles(const GemmParams& p, const float* a, const float* b, GemmTiles& t,
                             int64_t row0, int64_t col0, int64_t k0, int tid) {
  for (int e = 0; e < (kGemmTileM * kGemmTileK) / kGemmThreads; ++e) {
    int q = tid + e * kGemmThreads;
    int r = q / kGemmTileK, c = q % kGemmTileK;
    int64_t i = row0 + r, k = k0 + c;
    t.a[r][c] = (i < p.m && k < p.k) ? gemm_a(p, a, i, k) : 0.f;
  }
  for (int e = 0; e < (kGemmTileK * kGemmTileN) / kGemmThreads; ++e) {
    int q = tid + e * kGemmThreads;
    int r = q / kGemmTileN, c = q % kGemmTileN;
    int64_t k = k0 + r, j = col0 + c;
    t.b[r][c] = (k < p.k && j < p.n) ? gemm_b(p, b, k, j) : 0.f;
  }
}

// Step 2: thread (tx, ty) owns rows ty + 16*i and columns tx + 16*j of the tile.
ONYX_HD void gemm_accumulate(const GemmTiles& t, float acc[kGemmPerThread][kGemmPerThread], int tx,
                             int ty) {
  for (int kk = 0; kk < kGemmTileK; ++kk) {
    float bv[kGemmPerThread];
    for (int j = 0; j < kGemmPerThread; ++j) bv[j] = t.b[kk][tx + kGemmThreadsX * j];
    for (int i = 0; i < kGemmPerThread; ++i) {
      float av = t.a[ty + kGemmThreadsY * i][kk];
      for (int j = 0; j < kGemmPerThread; ++j) acc[i][j] += av * bv[j];
    }
  }
}

// Step 3: writes the thread's block of C (beta == 0 never reads C).
ONYX_HD void gemm_store(const GemmParams& p, float* c, const float acc[kGemmPerThread][kGemmPerThread],
                        int64_t row0, int64_t col0, int tx, int ty) {
  for (int i = 0; i < kGemmPerThread; ++i) {
    int64_t row = row0 + ty + kGemmThreadsY * i;
    if (row >= p.m) continue;
    for (int j = 0; j < kGemmPerThread; ++j) {
      int64_t col = col0 + tx + kGemmThreadsX * j;
      if (col >= p.n) continue;
      float v = p.alpha * acc[i][j];
      if (p.beta != 0.f) v += p.beta * c[row * p.ldc + col];
      c[row * p.ldc + col] = v;
    }
  }
}

}  // namespace onyx::gpu
