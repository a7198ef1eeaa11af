// qkernel_avx512vnni.cpp: the quad layout's kernels for AVX-512 VNNI (the
// rest of the set is AVX2's). The microkernel keeps 6 rows x up to 4 panels
// of 16 int32 sums in 24 zmm registers: per K quad, one load of each panel
// (16 columns x 4 uint8), and per row one broadcast of 4 int8 of A folded
// into vpdpbusd, which adds the four products of each lane into its int32
// sum without saturating.
// GCC 12 at -O3 reports the deliberately undefined pass-through operand of
// its own AVX-512 intrinsics (avx512fintrin.h's __Y) as maybe uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#include "quad_store_avx512.h"

namespace onyx::cpu::qgemm_detail {
namespace {

template <int P>
void ukr_panels(int64_t kq, const uint8_t* a, const uint8_t* b, int64_t stride, int32_t* c, int64_t ldc,
                bool accumulate, int rows, int cols, const QuadFix* fix) {
  __m512i acc[kMR][P];
#pragma GCC unroll 8
  for (int i = 0; i < kMR; ++i)
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) acc[i][p] = _mm512_setzero_si512();
  for (int64_t q = 0; q < kq; ++q, a += kMR * 4, b += kNR * 4) {
    __m512i bv[P];
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) bv[p] = _mm512_loadu_si512(b + p * stride);
#pragma GCC unroll 8
    for (int i = 0; i < kMR; ++i) {
      int32_t quad;
      std::memcpy(&quad, a + i * 4, 4);
      const __m512i av = _mm512_set1_epi32(quad);
#pragma GCC unroll 4
      for (int p = 0; p < P; ++p) acc[i][p] = _mm512_dpbusd_epi32(acc[i][p], bv[p], av);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < kMR; ++i) {
    if (i >= rows) break;
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p)
      if (!store_quad_sums(acc[i][p], i, p, cols, c, ldc, accumulate, fix)) break;
  }
}

void ukr(int64_t kq, const uint8_t* a, const uint8_t* b, int64_t stride, int panels, int32_t* c, int64_t ldc,
         bool accumulate, int rows, int cols, const QuadFix* fix) {
  switch (panels) {
    case 4:
      return ukr_panels<4>(kq, a, b, stride, c, ldc, accumulate, rows, cols, fix);
    case 3:
      return ukr_panels<3>(kq, a, b, stride, c, ldc, accumulate, rows, cols, fix);
    case 2:
      return ukr_panels<2>(kq, a, b, stride, c, ldc, accumulate, rows, cols, fix);
    default:
      return ukr_panels<1>(kq, a, b, stride, c, ldc, accumulate, rows, cols, fix);
  }
}

// Four rows of 64 bytes (four panels' columns) interleaved into quads with
// two rounds of unpacks within 128-bit lanes, which leaves lane L of the
// four results holding panel L's columns 0-3, 4-7, 8-11 and 12-15; a 4 x 4
// transpose of lanes then gives each panel its 64 bytes. The column sums by
// vpdpbusd against ones (ones as the unsigned operand when the bytes are int8).
void pack_quads(const uint8_t* const* rows, int64_t offset, int64_t k, int64_t kq, int64_t width, uint8_t flip,
                bool as_signed, uint8_t* dst, int64_t panel_stride, int32_t* col_sum) {
  const __mmask64 cols = width >= 64 ? ~__mmask64(0) : (__mmask64(1) << width) - 1;
  const __m512i flip_v = _mm512_maskz_mov_epi8(cols, _mm512_set1_epi8(char(flip)));
  const __m512i ones = _mm512_set1_epi8(1);
  const int panels = int((width + kNR - 1) / kNR);
  __m512i sums[kQuadMaxPanels] = {};
  auto row = [&](int64_t r) {
    if (r >= k) return _mm512_setzero_si512();
    return _mm512_xor_si512(_mm512_maskz_loadu_epi8(cols, rows[r] + offset), flip_v);
  };
  for (int64_t q = 0; q < kq; ++q) {
    const int64_t r = q * 4;
    const __m512i r0 = row(r), r1 = row(r + 1), r2 = row(r + 2), r3 = row(r + 3);
    const __m512i t0 = _mm512_unpacklo_epi8(r0, r1), t1 = _mm512_unpackhi_epi8(r0, r1);
    const __m512i t2 = _mm512_unpacklo_epi8(r2, r3), t3 = _mm512_unpackhi_epi8(r2, r3);
    const __m512i q0 = _mm512_unpacklo_epi16(t0, t2), q1 = _mm512_unpackhi_epi16(t0, t2);  // columns 0-3, 4-7 of each lane
    const __m512i q2 = _mm512_unpacklo_epi16(t1, t3), q3 = _mm512_unpackhi_epi16(t1, t3);  // 8-11, 12-15
    const __m512i a = _mm512_shuffle_i64x2(q0, q1, 0x44), b = _mm512_shuffle_i64x2(q2, q3, 0x44);  // lanes 0, 1
    const __m512i c = _mm512_shuffle_i64x2(q0, q1, 0xEE), d = _mm512_shuffle_i64x2(q2, q3, 0xEE);  // lanes 2, 3
    const __m512i panel[kQuadMaxPanels] = {_mm512_shuffle_i64x2(a, b, 0x88), _mm512_shuffle_i64x2(a, b, 0xDD),
                                           _mm512_shuffle_i64x2(c, d, 0x88), _mm512_shuffle_i64x2(c, d, 0xDD)};
    for (int p = 0; p < panels; ++p) {
      _mm512_storeu_si512(dst + p * panel_stride + q * kNR * 4, panel[p]);
      sums[p] = as_signed ? _mm512_dpbusd_epi32(sums[p], ones, panel[p]) : _mm512_dpbusd_epi32(sums[p], panel[p], ones);
    }
  }
  for (int p = 0; p < panels; ++p) _mm512_storeu_si512(col_sum + p * kNR, sums[p]);
}

// The output stage, exactly requant_impl's float64 result, mostly in
// float32: 16 sums per step as v = (acc + bias) * multiplier in float32
// (when |bias| <= 2^22 the error is below 4.5 * 2^-24 * |v|, so under 2^-10
// wherever |v| <= 2048, and lanes beyond that saturate either way), rounded
// to the nearest integer. A lane within 2^-10 of a half-way point (or past
// int32's range) could round otherwise in float64: then the 16 are computed
// again in float64, eight at a time (requant_impl's steps), which is rare.
// The narrowing to bytes saturates; the tail uses masks.
template <typename T>
void requant_avx512(const int32_t* acc, int64_t count, const QuantOut& q, T* y) {
  const __m512d bias_d = _mm512_set1_pd(q.bias), mul_d = _mm512_set1_pd(q.multiplier), zero_d = _mm512_set1_pd(q.zero);
  const __m512d lo_d = _mm512_set1_pd(q.lo), hi_d = _mm512_set1_pd(q.hi);
  auto eight = [&](__m256i a) {
    __m512d v = _mm512_mul_pd(_mm512_add_pd(_mm512_cvtepi32_pd(a), bias_d), mul_d);
    v = _mm512_add_pd(_mm512_roundscale_pd(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), zero_d);
    return _mm512_cvtpd_epi32(_mm512_min_pd(_mm512_max_pd(v, lo_d), hi_d));
  };
  auto sixteen_exact = [&](__m512i a) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(eight(_mm512_castsi512_si256(a))),
                              eight(_mm512_extracti64x4_epi64(a, 1)), 1);
  };
  // Multipliers far outside float32's range (absurd scale ratios) stay in float64.
  const bool fast = q.bias >= -4194304.0 && q.bias <= 4194304.0 && q.multiplier <= 1.0e30 && q.multiplier >= -1.0e30;
  const __m512 bias = _mm512_set1_ps(float(q.bias)), mul = _mm512_set1_ps(float(q.multiplier));
  const __m512 near_half = _mm512_set1_ps(0.5f - 0.0009765625f);
  const __m512i zero = _mm512_set1_epi32(int32_t(q.zero)), lo = _mm512_set1_epi32(int32_t(q.lo)),
                hi = _mm512_set1_epi32(int32_t(q.hi)), bound = _mm512_set1_epi32(4096);
  for (int64_t i = 0; i < count; i += 16) {
    const int64_t left = count - i;
    const __mmask16 mask = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
    const __m512i a = _mm512_maskz_loadu_epi32(mask, acc + i);
    __m512i words;
    if (fast) {
      const __m512 v = _mm512_mul_ps(_mm512_add_ps(_mm512_cvtepi32_ps(a), bias), mul);
      const __m512i r = _mm512_cvt_roundps_epi32(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      const __m512 d = _mm512_abs_ps(_mm512_sub_ps(v, _mm512_cvtepi32_ps(r)));
      if (_mm512_cmp_ps_mask(d, near_half, _CMP_NLE_UQ) == 0) {  // NaN would count as near, too
        // |r| <= 4096 first, so that adding the zero point cannot overflow.
        const __m512i rc = _mm512_max_epi32(_mm512_min_epi32(r, bound), _mm512_sub_epi32(_mm512_setzero_si512(), bound));
        words = _mm512_max_epi32(_mm512_min_epi32(_mm512_add_epi32(rc, zero), hi), lo);
      } else {
        words = sixteen_exact(a);
      }
    } else {
      words = sixteen_exact(a);
    }
    _mm_mask_storeu_epi8(y + i, mask, _mm512_cvtepi32_epi8(words));
  }
}

void requant_u8_avx512(const int32_t* acc, int64_t count, const QuantOut& q, uint8_t* y) { requant_avx512(acc, count, q, y); }
void requant_s8_avx512(const int32_t* acc, int64_t count, const QuantOut& q, int8_t* y) { requant_avx512(acc, count, q, y); }

// 16 at a time, the tail masked; multiply then add, never fused.
void dequant_row_avx512(const int32_t* acc, int64_t count, const float* scale, const float* bias, float* y) {
  for (int64_t j = 0; j < count; j += 16) {
    const int64_t left = count - j;
    const __mmask16 mask = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
    const __m512 v = _mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(mask, acc + j));
    const __m512 prod = _mm512_mul_ps(v, _mm512_maskz_loadu_ps(mask, scale + j));
    _mm512_mask_storeu_ps(y + j, mask, _mm512_add_ps(prod, _mm512_maskz_loadu_ps(mask, bias + j)));
  }
}

}  // namespace

const QKernelSet& qkernels_avx512vnni() {
  static const QKernelSet set = [] {
    QKernelSet s = qkernels_avx2();
    s.name = "avx512vnni";
    s.layout = QLayout::quads;
    s.gemm_quads = ukr;
    s.pack_quads = pack_quads;
    s.quad_form = {true, kMR, 1, 4};
    s.requant_u8 = requant_u8_avx512;
    s.requant_s8 = requant_s8_avx512;
    s.dequant_row = dequant_row_avx512;
    return s;
  }();
  return set;
}

}  // namespace onyx::cpu::qgemm_detail
