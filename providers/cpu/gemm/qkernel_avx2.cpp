// qkernel_avx2.cpp: the 8-bit kernel set for AVX2. The microkernel is 6 x 16
// int16 pairs: per K pair, two loads of B (16 columns x 2 int16), six
// broadcasts of an A pair, twelve vpmaddwd into twelve int32 accumulators.
// The other loops are qkernel_impl.h's, vectorized for AVX2 here.
#include <immintrin.h>

#include "qkernel_impl.h"

namespace onyx::cpu::qgemm_detail {
namespace {

void ukr(int64_t kp, const int16_t* a, const int16_t* b, int32_t* c, int64_t ldc, bool accumulate,
         int rows, int cols) {
  __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00,
          c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  const int32_t* ap = reinterpret_cast<const int32_t*>(a);
  for (int64_t p = 0; p < kp; ++p) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 16));
    __m256i av = _mm256_set1_epi32(ap[0]);
    c00 = _mm256_add_epi32(c00, _mm256_madd_epi16(av, b0));
    c01 = _mm256_add_epi32(c01, _mm256_madd_epi16(av, b1));
    av = _mm256_set1_epi32(ap[1]);
    c10 = _mm256_add_epi32(c10, _mm256_madd_epi16(av, b0));
    c11 = _mm256_add_epi32(c11, _mm256_madd_epi16(av, b1));
    av = _mm256_set1_epi32(ap[2]);
    c20 = _mm256_add_epi32(c20, _mm256_madd_epi16(av, b0));
    c21 = _mm256_add_epi32(c21, _mm256_madd_epi16(av, b1));
    av = _mm256_set1_epi32(ap[3]);
    c30 = _mm256_add_epi32(c30, _mm256_madd_epi16(av, b0));
    c31 = _mm256_add_epi32(c31, _mm256_madd_epi16(av, b1));
    av = _mm256_set1_epi32(ap[4]);
    c40 = _mm256_add_epi32(c40, _mm256_madd_epi16(av, b0));
    c41 = _mm256_add_epi32(c41, _mm256_madd_epi16(av, b1));
    av = _mm256_set1_epi32(ap[5]);
    c50 = _mm256_add_epi32(c50, _mm256_madd_epi16(av, b0));
    c51 = _mm256_add_epi32(c51, _mm256_madd_epi16(av, b1));
    ap += kMR;
    b += kNR * 2;
  }
  const __m256i acc[kMR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
  if (cols == kNR) {
    for (int i = 0; i < rows; ++i) {
      __m256i* ci = reinterpret_cast<__m256i*>(c + i * ldc);
      __m256i v0 = acc[i][0], v1 = acc[i][1];
      if (accumulate) {
        v0 = _mm256_add_epi32(v0, _mm256_loadu_si256(ci));
        v1 = _mm256_add_epi32(v1, _mm256_loadu_si256(ci + 1));
      }
      _mm256_storeu_si256(ci, v0);
      _mm256_storeu_si256(ci + 1, v1);
    }
    return;
  }
  alignas(32) int32_t tile[kNR];
  for (int i = 0; i < rows; ++i) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(tile), acc[i][0]);
    _mm256_store_si256(reinterpret_cast<__m256i*>(tile + 8), acc[i][1]);
    int32_t* ci = c + i * ldc;
    for (int j = 0; j < cols; ++j)  // wraps like the vector adds, without signed overflow
      ci[j] = accumulate ? int32_t(uint32_t(ci[j]) + uint32_t(tile[j])) : tile[j];
  }
}

// 16 bytes widened to int16 (zero- or sign-extended) minus their zero points.
template <bool kSigned>
__m256i widen(const void* src, __m256i zero) {
  const __m128i bytes = _mm_loadu_si128(static_cast<const __m128i*>(src));
  return _mm256_sub_epi16(kSigned ? _mm256_cvtepi8_epi16(bytes) : _mm256_cvtepu8_epi16(bytes), zero);
}

template <bool kSigned, typename T>
void pack_pair_avx2(const T* r0, const T* r1, int64_t count, const int16_t* zero, int16_t* dst) {
  if (count < kNR) return pack_pair_impl(r0, r1, count, zero, dst);
  const __m256i z = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(zero));
  const __m256i a = widen<kSigned>(r0, z);
  const __m256i b = r1 ? widen<kSigned>(r1, z) : _mm256_setzero_si256();
  // unpack interleaves within 128-bit lanes: lo = columns 0-3 | 8-11, hi = 4-7 | 12-15.
  const __m256i lo = _mm256_unpacklo_epi16(a, b), hi = _mm256_unpackhi_epi16(a, b);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), _mm256_permute2x128_si256(lo, hi, 0x20));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 16), _mm256_permute2x128_si256(lo, hi, 0x31));
}

// Four sums through the output stage, as int32 in [lo, hi].
__m128i requant4(__m128i acc, const QuantOut& q) {
  __m256d v = _mm256_mul_pd(_mm256_add_pd(_mm256_cvtepi32_pd(acc), _mm256_set1_pd(q.bias)), _mm256_set1_pd(q.multiplier));
  v = _mm256_round_pd(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);  // ties to even
  v = _mm256_add_pd(v, _mm256_set1_pd(q.zero));
  v = _mm256_min_pd(_mm256_max_pd(v, _mm256_set1_pd(q.lo)), _mm256_set1_pd(q.hi));
  return _mm256_cvtpd_epi32(v);
}

template <bool kSigned, typename T>
void requant_avx2(const int32_t* acc, int64_t count, const QuantOut& q, T* y) {
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m128i a = requant4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(acc + i)), q);
    const __m128i b = requant4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(acc + i + 4)), q);
    const __m128i words = _mm_packs_epi32(a, b);  // exact: already in [lo, hi]
    const __m128i bytes = kSigned ? _mm_packs_epi16(words, words) : _mm_packus_epi16(words, words);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), bytes);
  }
  requant_impl(acc + i, count - i, q, y + i);
}

void pack_u8(const uint8_t* r0, const uint8_t* r1, int64_t count, const int16_t* zero, int16_t* dst) {
  pack_pair_avx2<false>(r0, r1, count, zero, dst);
}
void pack_s8(const int8_t* r0, const int8_t* r1, int64_t count, const int16_t* zero, int16_t* dst) {
  pack_pair_avx2<true>(r0, r1, count, zero, dst);
}
void requant_u8_avx2(const int32_t* acc, int64_t count, const QuantOut& q, uint8_t* y) {
  requant_avx2<false>(acc, count, q, y);
}
void requant_s8_avx2(const int32_t* acc, int64_t count, const QuantOut& q, int8_t* y) {
  requant_avx2<true>(acc, count, q, y);
}

// min/max_ps(x, m) return m when x is NaN: NaN elements are skipped, as in
// range_impl. Four accumulators hide the latency.
void range_avx2(const float* x, int64_t count, float* lo, float* hi) {
  __m256 l[4], h[4];
  for (int r = 0; r < 4; ++r) l[r] = _mm256_set1_ps(*lo), h[r] = _mm256_set1_ps(*hi);
  int64_t i = 0;
  for (; i + 32 <= count; i += 32)
    for (int r = 0; r < 4; ++r) {
      const __m256 v = _mm256_loadu_ps(x + i + 8 * r);
      l[r] = _mm256_min_ps(v, l[r]);
      h[r] = _mm256_max_ps(v, h[r]);
    }
  const __m256 lv = _mm256_min_ps(_mm256_min_ps(l[0], l[1]), _mm256_min_ps(l[2], l[3]));
  const __m256 hv = _mm256_max_ps(_mm256_max_ps(h[0], h[1]), _mm256_max_ps(h[2], h[3]));
  alignas(32) float ls[8], hs[8];
  _mm256_store_ps(ls, lv);
  _mm256_store_ps(hs, hv);
  range_impl(ls, 8, lo, hi);
  range_impl(hs, 8, lo, hi);
  range_impl(x + i, count - i, lo, hi);
}

// quantize_u8_impl's steps on eight floats at a time (max_ps(v, -1e6) maps
// NaN to -1e6 as its first clamp does); cvtps is exact on the whole values.
void quantize_u8_avx2(const float* x, int64_t count, float s, float z, uint8_t* y) {
  const __m256 vs = _mm256_set1_ps(s), vz = _mm256_set1_ps(z), magic = _mm256_set1_ps(12582912.0f);
  const __m256 big = _mm256_set1_ps(1.0e6f), neg_big = _mm256_set1_ps(-1.0e6f);
  const __m256 zero = _mm256_setzero_ps(), top = _mm256_set1_ps(255.0f);
  auto step = [&](const float* p) {
    __m256 v = _mm256_div_ps(_mm256_loadu_ps(p), vs);
    v = _mm256_min_ps(_mm256_max_ps(v, neg_big), big);
    v = _mm256_add_ps(_mm256_sub_ps(_mm256_add_ps(v, magic), magic), vz);
    return _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(v, zero), top));
  };
  int64_t i = 0;
  for (; i + 16 <= count; i += 16) {
    const __m256i words = _mm256_packs_epi32(step(x + i), step(x + i + 8));  // lanes: 0-3 8-11 4-7 12-15
    const __m128i lo = _mm256_castsi256_si128(words), hi = _mm256_extracti128_si256(words, 1);
    const __m128i bytes = _mm_packus_epi16(lo, hi);                      // 0-3 8-11 4-7 12-15
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm_shuffle_epi32(bytes, _MM_SHUFFLE(3, 1, 2, 0)));
  }
  quantize_u8_impl(x + i, count - i, s, z, y + i);
}

// Explicit multiply then add: this file is built with FMA, which the
// compiler would otherwise contract a loop's a * b + c into.
void dequant_row_avx2(const int32_t* acc, int64_t count, const float* scale, const float* bias, float* y) {
  int64_t j = 0;
  for (; j + 8 <= count; j += 8) {
    const __m256 v = _mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + j)));
    _mm256_storeu_ps(y + j, _mm256_add_ps(_mm256_mul_ps(v, _mm256_loadu_ps(scale + j)), _mm256_loadu_ps(bias + j)));
  }
  for (; j < count; ++j) {
    const __m128 v = _mm_mul_ss(_mm_set_ss(float(acc[j])), _mm_set_ss(scale[j]));
    y[j] = _mm_cvtss_f32(_mm_add_ss(v, _mm_set_ss(bias[j])));
  }
}

constexpr QKernelSet kSet = {"avx2", QLayout::pairs, ukr, nullptr, nullptr, pack_u8, pack_s8, requant_u8_avx2, requant_s8_avx2,
                             range_avx2, quantize_u8_avx2, dequant_row_avx2, {}, nullptr, nullptr};

}  // namespace

const QKernelSet& qkernels_avx2() { return kSet; }

}  // namespace onyx::cpu::qgemm_detail
