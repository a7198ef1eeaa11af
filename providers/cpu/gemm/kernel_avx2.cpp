// kernel_avx2.cpp: AVX2 + FMA microkernel and packing. Built with -mavx2 -mfma
// for this file only; the dispatcher calls into it only after checking the CPU.
#include <immintrin.h>

#include "avx2_registers.h"
#include "kernel_set.h"
#include "pack_impl.h"  // the plain loops, and min64

namespace onyx::cpu::gemm_detail {
namespace {

// 6 x 16 tile: 12 ymm accumulators + 2 for the B row + 1 broadcast = 15 of
// the 16 registers; 12 FMAs per k step cover the FMA latency x throughput.
constexpr int kMR = 6;
constexpr int kNV = 2;  // ymm vectors per tile row
constexpr int kNR = 8 * kNV;

// An M x (8 * NV) tile; NV = 2 is the main kernel, NV = 1 the narrow one
// for a last panel of at most 8 columns (a 14 x 14 plane's 196 columns end
// in a panel of 4: through the full width it cost 7% of a pointwise Conv).
// kDirect: A read in place (row i at a + i * lda, DirectKernel), else
// packed (MicroKernel). Small tiles keep S sets of accumulators over
// interleaved k (summed at the end): with 2 or 4 chains of dependent FMAs
// the loop would wait on their latency (one row of a batch-1 layer ran at a
// quarter of the FMA rate).
// The epilogue of vector v of row i of a full tile, in registers.
inline __attribute__((always_inline)) __m256 epilogue(const TileEpilogue& e, __m256 r, int i, int v) {
  if (e.bias) r = _mm256_add_ps(r, _mm256_loadu_ps(e.bias + 8 * v));
  if (e.relu) r = _mm256_max_ps(_mm256_setzero_ps(), r);  // max_ps returns its second operand for NaN
  if (e.row_bias) r = _mm256_add_ps(r, _mm256_broadcast_ss(e.row_bias + i));
  if (e.clamp) r = _mm256_min_ps(_mm256_set1_ps(e.hi), _mm256_max_ps(_mm256_set1_ps(e.lo), r));
  if (e.residual) r = _mm256_add_ps(r, _mm256_loadu_ps(e.residual + i * e.ldr + 8 * v));
  return r;
}

template <int M, int NV, bool kDirect>
inline __attribute__((always_inline)) void tile(int64_t kc, const float* a, int64_t lda, const float* b, int64_t bs,
                                                float* c, int64_t ldc, float alpha, float beta, int64_t cols,
                                                const TileEpilogue* ep) {
  constexpr int S = NV == 2 ? (M == 1 ? 4 : M <= 3 ? 2 : 1) : (M <= 3 ? 4 : 2);
  static_assert(S * M * NV <= 12, "accumulators, the B row and a broadcast fit the 16 registers");
  constexpr int W = 8 * NV;  // the tile's width
  __m256 acc[S][M][NV];
#pragma GCC unroll 4
  for (int s = 0; s < S; ++s)
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[s][i][v] = _mm256_setzero_ps();

#pragma GCC unroll 8
  for (int i = 0; i < M; ++i)
    _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc), _MM_HINT_T0);

  // Step k of the product into accumulator set s.
  auto step = [&](int s, int64_t k) __attribute__((always_inline)) {
    __m256 bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = _mm256_loadu_ps(b + 8 * v);
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) {
      const __m256 ai = _mm256_broadcast_ss(kDirect ? a + i * lda + k : a + i);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[s][i][v] = _mm256_fmadd_ps(ai, bv[v], acc[s][i][v]);
    }
    if (!kDirect) a += kMR;
    b += bs;
  };
  int64_t k = 0;
  if constexpr (S > 1) {
#pragma GCC unroll 1
    for (; k + S <= kc; k += S)
#pragma GCC unroll 4
      for (int s = 0; s < S; ++s) step(s, k + s);
  }
#pragma GCC unroll 4
  for (; k < kc; ++k) step(0, k);
#pragma GCC unroll 4
  for (int s = 1; s < S; ++s)
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[0][i][v] = _mm256_add_ps(acc[0][i][v], acc[s][i][v]);

  // AVX2 has no cheap masked store: a partial tile goes through a scratch
  // tile, which also keeps the loads of C (and of the epilogue's bias and
  // residual) inside the matrix.
  const bool full = cols == W;
  alignas(32) float tmp[M][W];
  float* dst = full ? c : &tmp[0][0];
  const int64_t ld = full ? ldc : W;
  if (!full && beta != 0.0f)
    for (int i = 0; i < M; ++i)
      for (int64_t j = 0; j < W; ++j) tmp[i][j] = j < cols ? c[i * ldc + j] : 0.0f;

  // The whole tile is finished in registers before its first store: C's
  // stores could change `*ep` (its lo and hi are floats), so interleaved
  // they made every vector reload and re-test it (a Conv's bias took a
  // quarter of a 24 -> 144 pointwise layer's time).
  const __m256 va = _mm256_set1_ps(alpha);
  const __m256 vb = _mm256_set1_ps(beta);
#pragma GCC unroll 8
  for (int i = 0; i < M; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      __m256 r = _mm256_mul_ps(acc[0][i][v], va);
      if (beta != 0.0f) r = _mm256_fmadd_ps(vb, _mm256_loadu_ps(dst + i * ld + 8 * v), r);
      acc[0][i][v] = r;
    }
  if (ep && full) {
    const TileEpilogue e = *ep;
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[0][i][v] = epilogue(e, acc[0][i][v], i, v);
  }
#pragma GCC unroll 8
  for (int i = 0; i < M; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) _mm256_storeu_ps(dst + i * ld + 8 * v, acc[0][i][v]);

  if (!full)
    for (int i = 0; i < M; ++i)
      for (int64_t j = 0; j < cols; ++j) c[i * ldc + j] = ep ? tile_epilogue_at(*ep, tmp[i][j], i, j) : tmp[i][j];
}

template <int M, int NV>
void ukr(int64_t kc, const float* a, const float* b, int64_t bs, float* c, int64_t ldc, float alpha, float beta,
         int64_t cols, const TileEpilogue* ep) {
  tile<M, NV, false>(kc, a, 0, b, bs, c, ldc, alpha, beta, cols, ep);
}

template <int M, int NV>
void ukr_direct(int64_t kc, const float* a, int64_t lda, const float* b, int64_t bs, float* c, int64_t ldc,
                float alpha, float beta, int64_t cols, const TileEpilogue* ep) {
  tile<M, NV, true>(kc, a, lda, b, bs, c, ldc, alpha, beta, cols, ep);
}

template <int M>
void ukr_direct_panels(int64_t kc, const float* a, int64_t lda, const float* b, int64_t bs, int64_t ps, float* c,
                       int64_t ldc, float alpha, float beta, int64_t panels, const TileEpilogue* ep) {
  TileEpilogue e = ep ? *ep : TileEpilogue{};
  for (int64_t q = 0; q < panels; ++q) {
    tile<M, kNV, true>(kc, a, lda, b + q * ps, bs, c + q * kNR, ldc, alpha, beta, kNR, ep ? &e : nullptr);
    if (e.bias) e.bias += kNR;
    if (e.residual) e.residual += kNR;
  }
}

template <int M, int NV = kNV>
constexpr MicroKernel pick() {
  if constexpr (M >= 1 && M <= kMR)
    return &ukr<M, NV>;
  else
    return nullptr;
}

template <int M, int NV = kNV>
constexpr DirectKernel pick_direct() {
  if constexpr (M >= 1 && M <= kMR)
    return &ukr_direct<M, NV>;
  else
    return nullptr;
}

template <int M>
constexpr DirectPanelsKernel pick_direct_panels() {
  if constexpr (M >= 1 && M <= kMR)
    return &ukr_direct_panels<M>;
  else
    return nullptr;
}

// k steps [0, k8) (k8 a multiple of 8) of `rows` stored rows of src, ld
// apart (zeros for rows up to 8), 8 steps at a time through an 8 x 8
// transpose: store(k, v) takes step k, v holding its 8 values. The row
// count is a template argument for full panels (B's 8, A's 6), so that the
// loop keeps everything in registers; a matrix's last, partial panel goes
// through a zeroed 8 x 8 tile.
template <int kRows, class Store>
[[gnu::always_inline]] inline void transposed_steps(const float* src, int64_t ld, int64_t k8, const Store& store) {
  for (int64_t k0 = 0; k0 < k8; k0 += 8) {
    __m256 r[8];
    avx2::load_transposed8<kRows>(src + k0, ld, r);
#pragma GCC unroll 8  // r in registers, not on the stack
    for (int kk = 0; kk < 8; ++kk) store(k0 + kk, r[kk]);
  }
}

template <class Store>
[[gnu::always_inline]] inline void transposed_steps(const float* src, int64_t ld, int64_t rows, int64_t k8,
                                                    const Store& store) {
  if (rows == 8) return transposed_steps<8>(src, ld, k8, store);
  if (rows == 6) return transposed_steps<6>(src, ld, k8, store);
  for (int64_t k0 = 0; k0 < k8; k0 += 8) {
    alignas(32) float tile[64];
    for (int i = 0; i < 8; ++i)
      _mm256_store_ps(tile + 8 * i, i < rows ? _mm256_loadu_ps(src + i * ld + k0) : _mm256_setzero_ps());
    transposed_steps<8>(tile, 8, 8, [&](int64_t k, __m256 v) { store(k0 + k, v); });
  }
}

void pack_a(bool trans, const float* a, int64_t lda, int64_t rows, int64_t kc, float* dst) {
  if (trans) return pack_a_impl<kMR>(trans, a, lda, rows, kc, dst);  // contiguous copies already
  // op(A)(i, k) = a[i*lda + k]: 8 k steps of a panel's rows at a time go
  // through an 8 x 8 transpose; each k step then stores 4 + 2 floats.
  static_assert(kMR == 6);
  const int64_t k8 = kc / 8 * 8;
  for (int64_t p = 0; p < rows; p += kMR) {
    const int64_t mr = min64(kMR, rows - p);
    float* d = dst + p * kc;
    transposed_steps(a + p * lda, lda, mr, k8, [d](int64_t k, __m256 v) {
      float* out = d + k * kMR;
      _mm_storeu_ps(out, _mm256_castps256_ps128(v));
      _mm_storel_pi(reinterpret_cast<__m64*>(out + 4), _mm256_extractf128_ps(v, 1));
    });
    for (int64_t k = k8; k < kc; ++k)
      for (int64_t i = 0; i < kMR; ++i) d[k * kMR + i] = i < mr ? a[(p + i) * lda + k] : 0.0f;
  }
}

void pack_b(bool trans, const float* b, int64_t ldb, int64_t kc, int64_t cols, float* dst) {
  if (!trans) {
    // op(B)(k, j) = b[k*ldb + j]: four panels at a time, so that each row of
    // B is read 64 floats at a stretch (a panel alone reads one cache line per
    // row, rows ldb apart: at ldb 1024 the packing was 8% of a 1024^3 product).
    const int64_t full = cols / (4 * kNR) * (4 * kNR);
    for (int64_t q = 0; q < full; q += 4 * kNR, dst += 4 * kc * kNR)
      for (int64_t k = 0; k < kc; ++k) {
        const float* src = b + k * ldb + q;
        for (int p = 0; p < 4; ++p)
          for (int v = 0; v < kNV; ++v)
            _mm256_storeu_ps(dst + p * kc * kNR + k * kNR + 8 * v, _mm256_loadu_ps(src + p * kNR + 8 * v));
      }
    if (full < cols) pack_b_impl<kNR>(trans, b + full, ldb, kc, cols - full, dst);
    return;
  }
  // op(B)(k, j) = b[j*ldb + k]: 8 x 8 transposes of 8 stored rows x 8 k steps.
  const int64_t k8 = kc / 8 * 8;
  for (int64_t q = 0; q < cols; q += kNR, dst += kc * kNR) {
    for (int v = 0; v < kNV; ++v) {
      const int64_t j0 = q + 8 * v;
      const int64_t jn = min64(8, cols - j0);  // may be <= 0: zero padding
      float* d = dst + 8 * v;
      transposed_steps(b + j0 * ldb, ldb, jn, k8, [d](int64_t k, __m256 x) { _mm256_storeu_ps(d + k * kNR, x); });
      for (int64_t k = k8; k < kc; ++k)
        for (int64_t j = 0; j < 8; ++j) dst[k * kNR + 8 * v + j] = j < jn ? b[(j0 + j) * ldb + k] : 0.0f;
    }
  }
}

static_assert(kMR <= kMaxMR);
constexpr KernelSet kSet = {
    Isa::avx2, "avx2", kMR, kNR,
    /*mc=*/144, /*kc=*/256, /*nc=*/2048,
    {pick<0>(), pick<1>(), pick<2>(), pick<3>(), pick<4>(), pick<5>(), pick<6>(), pick<7>(), pick<8>(),
     pick<9>(), pick<10>(), pick<11>(), pick<12>(), pick<13>(), pick<14>(), pick<15>(), pick<16>()},
    pack_a, pack_b, /*narrow_cols=*/8,
    {pick<0, 1>(), pick<1, 1>(), pick<2, 1>(), pick<3, 1>(), pick<4, 1>(), pick<5, 1>(), pick<6, 1>(), pick<7, 1>(),
     pick<8, 1>(), pick<9, 1>(), pick<10, 1>(), pick<11, 1>(), pick<12, 1>(), pick<13, 1>(), pick<14, 1>(),
     pick<15, 1>(), pick<16, 1>()},
    {pick_direct<0>(), pick_direct<1>(), pick_direct<2>(), pick_direct<3>(), pick_direct<4>(), pick_direct<5>(),
     pick_direct<6>(), pick_direct<7>(), pick_direct<8>(), pick_direct<9>(), pick_direct<10>(), pick_direct<11>(),
     pick_direct<12>(), pick_direct<13>(), pick_direct<14>(), pick_direct<15>(), pick_direct<16>()},
    {pick_direct<0, 1>(), pick_direct<1, 1>(), pick_direct<2, 1>(), pick_direct<3, 1>(), pick_direct<4, 1>(),
     pick_direct<5, 1>(), pick_direct<6, 1>(), pick_direct<7, 1>(), pick_direct<8, 1>(), pick_direct<9, 1>(),
     pick_direct<10, 1>(), pick_direct<11, 1>(), pick_direct<12, 1>(), pick_direct<13, 1>(), pick_direct<14, 1>(),
     pick_direct<15, 1>(), pick_direct<16, 1>()},
    {pick_direct_panels<0>(), pick_direct_panels<1>(), pick_direct_panels<2>(), pick_direct_panels<3>(),
     pick_direct_panels<4>(), pick_direct_panels<5>(), pick_direct_panels<6>(), pick_direct_panels<7>(),
     pick_direct_panels<8>(), pick_direct_panels<9>(), pick_direct_panels<10>(), pick_direct_panels<11>(),
     pick_direct_panels<12>(), pick_direct_panels<13>(), pick_direct_panels<14>(), pick_direct_panels<15>(),
     pick_direct_panels<16>()}};
static_assert(kSet.nc % kNR == 0 && kSet.mc % kMR == 0);

}  // namespace

const KernelSet& kernels_avx2() { return kSet; }

}  // namespace onyx::cpu::gemm_detail
