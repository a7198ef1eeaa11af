// kernel_avx512.cpp: AVX-512 microkernel and packing. Built with
// -mavx512f -mavx512bw -mavx512vl -mfma for this file only; the dispatcher
// calls into it only after checking the CPU has those features.
//
// GCC 12's AVX-512 headers pass _mm512_undefined_ps() (a self-initialised
// variable) to the shuffle builtins, which -W(maybe-)uninitialized flags once
// inlined (GCC bug 105593); the warning points into the header, so silencing
// it around the include suffices.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include "kernel_set.h"
#include "pack_impl.h"  // min64

namespace onyx::cpu::gemm_detail {
namespace {

// 6 x 64 tile: 24 zmm accumulators + 4 for the B row + 1 broadcast of A.
// Each k step issues 24 FMAs against 4 vector loads and 6 broadcasts. On the
// Zen 4 development machine 6x64, 8x48, 12x32 and 14x32 all ran at ~97% of
// FMA peak on L2-resident panels; 6x64 wins on shapes: widths that are
// multiples of 64 (768, 3072, powers of two) leave no partial column panels,
// and 6-row panels waste little on short M edges.
constexpr int kMR = 6;
constexpr int kNV = 4;  // zmm vectors per tile row
constexpr int kNR = 16 * kNV;

inline __mmask16 tail_mask(int64_t left) {
  return left >= 16 ? __mmask16(0xFFFF) : left <= 0 ? __mmask16(0) : __mmask16((1u << left) - 1);
}

// An M x (16 * NV) tile; NV = 4 is the main kernel, NV = 1 the narrow one
// for a last panel of at most 16 columns (a 10-class output layer: the full
// width would spend 54 of every 64 lanes on padding). kDirect: A read in
// place (row i at a + i * lda, DirectKernel), else packed (MicroKernel).
// The epilogue of vector v (lanes `mask`) of row i, in registers.
inline __attribute__((always_inline)) __m512 epilogue(const TileEpilogue& e, __m512 r, int i, int v, __mmask16 mask) {
  if (e.bias) r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(mask, e.bias + 16 * v));
  if (e.relu) r = _mm512_max_ps(_mm512_setzero_ps(), r);  // max_ps returns its second operand for NaN
  if (e.row_bias) r = _mm512_add_ps(r, _mm512_set1_ps(e.row_bias[i]));
  if (e.clamp) r = _mm512_min_ps(_mm512_set1_ps(e.hi), _mm512_max_ps(_mm512_set1_ps(e.lo), r));
  if (e.residual) r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(mask, e.residual + i * e.ldr + 16 * v));
  return r;
}

template <int M, int NV, bool kDirect>
inline __attribute__((always_inline)) void tile(int64_t kc, const float* a, int64_t lda, const float* b, int64_t bs,
                                                float* c, int64_t ldc, float alpha, float beta, int64_t cols,
                                                const TileEpilogue* ep) {
  __m512 acc[M][NV];
#pragma GCC unroll 16
  for (int i = 0; i < M; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_setzero_ps();

  // The tile of C is read and written only at the end: start fetching it now.
#pragma GCC unroll 16
  for (int i = 0; i < M; ++i) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc + 16 * v), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc + 16 * NV - 1), _MM_HINT_T0);  // C may be unaligned
  }

#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; ++k) {
    __m512 bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = _mm512_loadu_ps(b + 16 * v);
#pragma GCC unroll 16
    for (int i = 0; i < M; ++i) {
      const __m512 ai = _mm512_set1_ps(kDirect ? a[i * lda + k] : a[i]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_fmadd_ps(ai, bv[v], acc[i][v]);
    }
    if (!kDirect) a += kMR;
    b += bs;
  }

  // A copy of the epilogue: C's float stores could change `*ep` (lo, hi),
  // so through the pointer each vector would reload and re-test it.
  TileEpilogue e;
  if (ep) e = *ep;
  const __m512 va = _mm512_set1_ps(alpha);
  const __m512 vb = _mm512_set1_ps(beta);
  __mmask16 mask[NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) mask[v] = tail_mask(cols - 16 * v);
#pragma GCC unroll 16
  for (int i = 0; i < M; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      float* ci = c + i * ldc + 16 * v;
      __m512 r = _mm512_mul_ps(acc[i][v], va);
      if (beta != 0.0f) r = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(mask[v], ci), r);
      if (ep) r = epilogue(e, r, i, v, mask[v]);
      _mm512_mask_storeu_ps(ci, mask[v], r);
    }
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

template <int M, int NV = kNV>
constexpr DirectKernel pick_direct() {
  if constexpr (M >= 1 && M <= kMR)
    return &ukr_direct<M, NV>;
  else
    return nullptr;
}

template <int M, int NV = kNV>
constexpr MicroKernel pick() {
  if constexpr (M >= 1 && M <= kMR)
    return &ukr<M, NV>;
  else
    return nullptr;
}

// In-register 16 x 16 transpose: afterwards r[c] holds what was column c.
// Two rounds of in-lane shuffles gather 4x4 blocks, two rounds of 128-bit
// lane shuffles put the blocks in place (64 shuffles for 256 floats, far
// cheaper than moving the floats one by one).
inline void transpose16(__m512 r[16]) {
  __m512 u[16];
#pragma GCC unroll 4
  for (int g = 0; g < 4; ++g) {  // rows 4g .. 4g+3
    const __m512 t0 = _mm512_unpacklo_ps(r[4 * g], r[4 * g + 1]);
    const __m512 t1 = _mm512_unpackhi_ps(r[4 * g], r[4 * g + 1]);
    const __m512 t2 = _mm512_unpacklo_ps(r[4 * g + 2], r[4 * g + 3]);
    const __m512 t3 = _mm512_unpackhi_ps(r[4 * g + 2], r[4 * g + 3]);
    // u[4g + e], lane l: column 4l + e of rows 4g .. 4g+3
    u[4 * g + 0] = _mm512_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * g + 1] = _mm512_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
    u[4 * g + 2] = _mm512_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * g + 3] = _mm512_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  }
#pragma GCC unroll 4
  for (int e = 0; e < 4; ++e) {
    const __m512 p0 = _mm512_shuffle_f32x4(u[e], u[4 + e], 0x88);   // lanes 0, 2 of rows 0-3, 4-7
    const __m512 p1 = _mm512_shuffle_f32x4(u[e], u[4 + e], 0xDD);   // lanes 1, 3
    const __m512 q0 = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], 0x88);
    const __m512 q1 = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], 0xDD);
    r[0 + e] = _mm512_shuffle_f32x4(p0, q0, 0x88);
    r[8 + e] = _mm512_shuffle_f32x4(p0, q0, 0xDD);
    r[4 + e] = _mm512_shuffle_f32x4(p1, q1, 0x88);
    r[12 + e] = _mm512_shuffle_f32x4(p1, q1, 0xDD);
  }
}

// Loads up to 16 rows x kn (<= 16) floats starting at src (row stride ld),
// zeros elsewhere, and transposes them: r[c] = column c.
inline void load_transposed(const float* src, int64_t ld, int64_t rows, int64_t kn, __m512 r[16]) {
  const __mmask16 km = tail_mask(kn);
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) r[i] = i < rows ? _mm512_maskz_loadu_ps(km, src + i * ld) : _mm512_setzero_ps();
  transpose16(r);
}

void pack_a(bool trans, const float* a, int64_t lda, int64_t rows, int64_t kc, float* dst) {
  const __mmask16 row_mask = tail_mask(kMR);
  for (int64_t p = 0; p < rows; p += kMR, dst += kc * kMR) {
    const int64_t mr = min64(kMR, rows - p);
    if (!trans) {
      // op(A)(i, k) = a[i*lda + k]: 16 k steps of the panel's rows at a time.
      for (int64_t k0 = 0; k0 < kc; k0 += 16) {
        const int64_t kn = min64(16, kc - k0);
        __m512 r[16];
        load_transposed(a + p * lda + k0, lda, mr, kn, r);
        if (kn == 16) {
#pragma GCC unroll 16
          for (int kk = 0; kk < 16; ++kk) _mm512_mask_storeu_ps(dst + (k0 + kk) * kMR, row_mask, r[kk]);
        } else {
          for (int64_t kk = 0; kk < kn; ++kk) _mm512_mask_storeu_ps(dst + (k0 + kk) * kMR, row_mask, r[kk]);
        }
      }
    } else {
      // op(A)(i, k) = a[k*lda + i]: each k step is a contiguous run.
      const __mmask16 m = tail_mask(mr);
      for (int64_t k = 0; k < kc; ++k)
        _mm512_mask_storeu_ps(dst + k * kMR, row_mask, _mm512_maskz_loadu_ps(m, a + k * lda + p));
    }
  }
}

void pack_b(bool trans, const float* b, int64_t ldb, int64_t kc, int64_t cols, float* dst) {
  for (int64_t q = 0; q < cols; q += kNR, dst += kc * kNR) {
    const int64_t nr = min64(kNR, cols - q);
    if (!trans) {
      // op(B)(k, j) = b[k*ldb + j]: a straight copy of kNR-wide rows.
      __mmask16 mask[kNV];
#pragma GCC unroll 4
      for (int v = 0; v < kNV; ++v) mask[v] = tail_mask(nr - 16 * v);
      const float* src = b + q;
      for (int64_t k = 0; k < kc; ++k, src += ldb)
#pragma GCC unroll 4
        for (int v = 0; v < kNV; ++v)
          _mm512_storeu_ps(dst + k * kNR + 16 * v, _mm512_maskz_loadu_ps(mask[v], src + 16 * v));
    } else {
      // op(B)(k, j) = b[j*ldb + k]: transpose 16 x 16 blocks.
      for (int v = 0; v < kNV; ++v) {
        const int64_t j0 = q + 16 * v;
        const int64_t jn = min64(16, cols - j0);  // may be <= 0: zero padding
        if (jn <= 0) {  // padding only: no transposes of zeros (3 of 4 for a 16-key attention head)
          for (int64_t k = 0; k < kc; ++k) _mm512_storeu_ps(dst + k * kNR + 16 * v, _mm512_setzero_ps());
          continue;
        }
        for (int64_t k0 = 0; k0 < kc; k0 += 16) {
          const int64_t kn = min64(16, kc - k0);
          __m512 r[16];
          load_transposed(b + j0 * ldb + k0, ldb, jn, kn, r);
          if (kn == 16) {
#pragma GCC unroll 16
            for (int kk = 0; kk < 16; ++kk) _mm512_storeu_ps(dst + (k0 + kk) * kNR + 16 * v, r[kk]);
          } else {
            for (int64_t kk = 0; kk < kn; ++kk) _mm512_storeu_ps(dst + (k0 + kk) * kNR + 16 * v, r[kk]);
          }
        }
      }
    }
  }
}

static_assert(kMR <= kMaxMR);
constexpr KernelSet kSet = {
    Isa::avx512, "avx512", kMR, kNR,
    // KC 384-512 measured ~3% faster than 256 (fewer passes over C); the
    // 240 x 384 A block (360 KiB) sits in the 1 MiB L2 with room for B.
    /*mc=*/240, /*kc=*/384, /*nc=*/2048,
    {pick<0>(), pick<1>(), pick<2>(), pick<3>(), pick<4>(), pick<5>(), pick<6>(), pick<7>(), pick<8>(),
     pick<9>(), pick<10>(), pick<11>(), pick<12>(), pick<13>(), pick<14>(), pick<15>(), pick<16>()},
    pack_a, pack_b, /*narrow_cols=*/16,
    {pick<0, 1>(), pick<1, 1>(), pick<2, 1>(), pick<3, 1>(), pick<4, 1>(), pick<5, 1>(), pick<6, 1>(),
     pick<7, 1>(), pick<8, 1>(), pick<9, 1>(), pick<10, 1>(), pick<11, 1>(), pick<12, 1>(), pick<13, 1>(),
     pick<14, 1>(), pick<15, 1>(), pick<16, 1>()},
    {pick_direct<0>(), pick_direct<1>(), pick_direct<2>(), pick_direct<3>(), pick_direct<4>(), pick_direct<5>(),
     pick_direct<6>(), pick_direct<7>(), pick_direct<8>(), pick_direct<9>(), pick_direct<10>(), pick_direct<11>(),
     pick_direct<12>(), pick_direct<13>(), pick_direct<14>(), pick_direct<15>(), pick_direct<16>()},
    {pick_direct<0, 1>(), pick_direct<1, 1>(), pick_direct<2, 1>(), pick_direct<3, 1>(), pick_direct<4, 1>(),
     pick_direct<5, 1>(), pick_direct<6, 1>(), pick_direct<7, 1>(), pick_direct<8, 1>(), pick_direct<9, 1>(),
     pick_direct<10, 1>(), pick_direct<11, 1>(), pick_direct<12, 1>(), pick_direct<13, 1>(), pick_direct<14, 1>(),
     pick_direct<15, 1>(), pick_direct<16, 1>()}};
static_assert(kSet.nc % kNR == 0 && kSet.mc % kMR == 0);

}  // namespace

const KernelSet& kernels_avx512() { return kSet; }

}  // namespace onyx::cpu::gemm_detail
