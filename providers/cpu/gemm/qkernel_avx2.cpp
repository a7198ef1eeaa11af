// qkernel_avx2.cpp: the 8-bit kernel sets for AVX2.
// - pairs: a 6 x 16 microkernel of int16 pairs: per K pair, two loads of B
//   (16 columns x 2 int16), six broadcasts of an A pair, twelve vpmaddwd
//   into twelve int32 accumulators.
// - bytes: the quad layout, one operand int8 and the other uint8 (A int8
//   as in VNNI's form, for filters packed once; or B int8, for weights packed
//   once), 4 x 16: per K quad, two loads of B (16 columns x 4 bytes), four
//   broadcasts of an A quad; vpmaddubsw multiplies and adds neighbouring
//   products into int16, vpmaddwd by ones adds those pairs into the int32
//   sums. Twice the multiply-adds per instruction of pairs (Zen 4: 178 vs
//   88-122 GOP/s in L1), exact where no int16 pair sum saturates: the int8
//   operand's pairs are bounded (QuadForm::bounded_pairs) and the excess
//   corrected by the driver.
// The other loops are qkernel_impl.h's, vectorized for AVX2 here.
#include <immintrin.h>

#include <cstring>

#include "qkernel_impl.h"

namespace onyx::cpu::qgemm_detail {
namespace {

constexpr int kBytesRows = 4;

// The first rows x cols sums of a tile (two vectors of 8 per row) stored, or
// added to C.
inline void store_tile(const __m256i (*acc)[2], int rows, int cols, int32_t* c, int64_t ldc, bool accumulate) {
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
  store_tile(acc, rows, cols, c, ldc, accumulate);
}

// The int16 pair sums of uint8 x int8 bytes: B's uint8 against A's int8
// (kASigned), or A's uint8 against B's int8.
template <bool kASigned>
inline __m256i pair_sums(__m256i b, __m256i a) {
  return kASigned ? _mm256_maddubs_epi16(b, a) : _mm256_maddubs_epi16(a, b);
}

// One row of a bytes tile: row i's A quad against both halves of the B panel.
#define ONYX_BYTES_ROW(i, lo, hi)                                                           \
  {                                                                                         \
    int32_t quad;                                                                           \
    std::memcpy(&quad, a + (i) * 4, 4);                                                     \
    const __m256i av = _mm256_set1_epi32(quad);                                             \
    lo = _mm256_add_epi32(lo, _mm256_madd_epi16(pair_sums<kASigned>(b0, av), ones));        \
    hi = _mm256_add_epi32(hi, _mm256_madd_epi16(pair_sums<kASigned>(b1, av), ones));        \
  }

// QQuadKernel for the bytes forms: 4 rows x one panel (named accumulators:
// an array of them made GCC spill).
template <bool kASigned>
void ukr_bytes(int64_t kq, const uint8_t* a, const uint8_t* b, int64_t, int, int32_t* c, int64_t ldc,
               bool accumulate, int rows, int cols, const QuadFix* fix) {
  static_assert(kBytesRows == 4, "the tile below has four rows");
  __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t q = 0; q < kq; ++q, a += kBytesRows * 4, b += kNR * 4) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 32));
    ONYX_BYTES_ROW(0, c00, c01)
    ONYX_BYTES_ROW(1, c10, c11)
    ONYX_BYTES_ROW(2, c20, c21)
    ONYX_BYTES_ROW(3, c30, c31)
  }
  __m256i acc[kBytesRows][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}};
  for (int i = 0; i < rows; ++i) {
    __m256i v0 = acc[i][0], v1 = acc[i][1];
    if (fix && fix->row_add) {
      const __m256i r = _mm256_set1_epi32(fix->row_add[i]);
      v0 = _mm256_add_epi32(v0, _mm256_add_epi32(r, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(fix->col_add))));
      v1 = _mm256_add_epi32(v1, _mm256_add_epi32(r, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(fix->col_add + 8))));
    } else if (fix) {
      const __m256i rz = _mm256_set1_epi32(fix->row_zero[i]), rs = _mm256_set1_epi32(fix->row_sum[i]);
      auto term = [&](int at) {
        const __m256i ct = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(fix->col_term + at));
        const __m256i cz = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(fix->col_zero + at));
        return _mm256_add_epi32(_mm256_mullo_epi32(rz, ct), _mm256_mullo_epi32(cz, rs));
      };
      v0 = _mm256_sub_epi32(v0, term(0));
      v1 = _mm256_sub_epi32(v1, term(8));
    }
    acc[i][0] = v0, acc[i][1] = v1;
  }
  store_tile(acc, rows, cols, c, ldc, accumulate);
}

// QCorrect for the bytes set. Each int32 lane of B's quads is one column's
// four bytes, so B[k][j] is byte k % 4 of column j's lane: a shift and a
// mask give it as int32, and vpmaddwd against the value in each lane's low
// half multiplies exactly (|value| <= 255). A row's corrections are summed in
// registers before C is touched.
void correct_bytes(const QCorrection* first, const QCorrection* last, const uint8_t* b, int64_t kp, int32_t* c,
                   int64_t ldc, int64_t j0, int64_t j1) {
  const __m256i low = _mm256_set1_epi32(0xFF);
  while (first != last) {
    const QCorrection* end = first;
    while (end != last && end->at == first->at) ++end;
    int32_t* row = c + first->at * ldc;
    for (int64_t j = j0; j < j1; j += kNR) {
      const uint8_t* panel = b + (j / kNR) * kp * kNR * 4;
      __m256i s0 = _mm256_setzero_si256(), s1 = s0;
      for (const QCorrection* x = first; x != end; ++x) {
        const auto* quad = reinterpret_cast<const __m256i*>(panel + (x->k / 4) * kNR * 4);
        const __m128i shift = _mm_cvtsi32_si128(int(x->k % 4) * 8);
        const __m256i v = _mm256_set1_epi32(x->value & 0xFFFF);
        s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(_mm256_and_si256(_mm256_srl_epi32(_mm256_loadu_si256(quad), shift), low), v));
        s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(_mm256_and_si256(_mm256_srl_epi32(_mm256_loadu_si256(quad + 1), shift), low), v));
      }
      const __m256i sums[1][2] = {{s0, s1}};
      store_tile(sums, 1, int(j1 - j < kNR ? j1 - j : kNR), row + j, ldc, true);
    }
    first = end;
  }
}

// Four rows of B (32 columns each) into two panels' quads: unpacks within
// 128-bit lanes leave columns 0-3 | 16-19, 4-7 | 20-23, 8-11 | 24-27 and
// 12-15 | 28-31 as quads; pairing the lanes gives each panel its 64 bytes.
// Column sums by vpmaddubsw against ones (ones as the unsigned operand when
// the bytes are int8), then vpmaddwd by ones.
void pack_quads_bytes(const uint8_t* const* rows, int64_t offset, int64_t k, int64_t kq, int64_t width, uint8_t flip,
                      bool as_signed, uint8_t* dst, int64_t panel_stride, int32_t* col_sum) {
  const __m256i flip_v = _mm256_set1_epi8(char(flip)), ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
  for (int64_t half = 0; half * 32 < width; ++half) {
    const int64_t cols = width - half * 32 < 32 ? width - half * 32 : 32, panels = (cols + kNR - 1) / kNR;
    uint8_t* out = dst + half * 2 * panel_stride;
    __m256i sums[2][2] = {{_mm256_setzero_si256(), _mm256_setzero_si256()}, {_mm256_setzero_si256(), _mm256_setzero_si256()}};
    alignas(32) uint8_t part[32];
    auto row = [&](int64_t r) {
      if (r >= k) return _mm256_setzero_si256();
      const uint8_t* src = rows[r] + offset + half * 32;
      if (cols < 32) {  // a zero-padded copy: never read past the row's width
        std::memset(part, int(flip), sizeof part);
        std::memcpy(part, src, size_t(cols));
        src = part;
      }
      return _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src)), flip_v);
    };
    for (int64_t q = 0; q < kq; ++q) {
      const __m256i r0 = row(q * 4), r1 = row(q * 4 + 1), r2 = row(q * 4 + 2), r3 = row(q * 4 + 3);
      const __m256i t0 = _mm256_unpacklo_epi8(r0, r1), t1 = _mm256_unpackhi_epi8(r0, r1);
      const __m256i t2 = _mm256_unpacklo_epi8(r2, r3), t3 = _mm256_unpackhi_epi8(r2, r3);
      const __m256i q0 = _mm256_unpacklo_epi16(t0, t2), q1 = _mm256_unpackhi_epi16(t0, t2);
      const __m256i q2 = _mm256_unpacklo_epi16(t1, t3), q3 = _mm256_unpackhi_epi16(t1, t3);
      const __m256i panel[2][2] = {{_mm256_permute2x128_si256(q0, q1, 0x20), _mm256_permute2x128_si256(q2, q3, 0x20)},
                                   {_mm256_permute2x128_si256(q0, q1, 0x31), _mm256_permute2x128_si256(q2, q3, 0x31)}};
      for (int64_t p = 0; p < panels; ++p)
        for (int h = 0; h < 2; ++h) {
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + p * panel_stride + q * kNR * 4 + h * 32), panel[p][h]);
          const __m256i pairs = as_signed ? _mm256_maddubs_epi16(ones8, panel[p][h]) : _mm256_maddubs_epi16(panel[p][h], ones8);
          sums[p][h] = _mm256_add_epi32(sums[p][h], _mm256_madd_epi16(pairs, ones16));
        }
    }
    for (int64_t p = 0; p < panels; ++p)
      for (int h = 0; h < 2; ++h)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(col_sum + half * 32 + p * kNR + h * 8), sums[p][h]);
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

// Sixteen sums at a time through the output stage exactly as requant_impl's
// float64, mostly in float32, as the AVX-512 set does (qkernel_avx512vnni.cpp
// gives the error bound): v = (acc + bias) * multiplier rounded to the
// nearest integer in float32 where |bias| <= 2^22; a lane within 2^-10 of a
// half-way point, past int32's range or NaN sends the sixteen through float64
// instead. The zero point and [lo, hi] are applied in saturating int16 (a
// rounded value past int16 lies past [lo, hi] either way). A tail of under
// sixteen goes through the same steps from masked loads (a copy into a
// buffer would stall the loads on store forwarding: 7-sum rows ran 2x slower).
template <bool kSigned, typename T>
void requant_avx2(const int32_t* acc, int64_t count, const QuantOut& q, T* y) {
  const bool fast = q.bias >= -4194304.0 && q.bias <= 4194304.0 && q.multiplier <= 1.0e30 && q.multiplier >= -1.0e30;
  const __m256 bias = _mm256_set1_ps(float(q.bias)), mul = _mm256_set1_ps(float(q.multiplier));
  const __m256 near_half = _mm256_set1_ps(0.5f - 0.0009765625f), sign = _mm256_set1_ps(-0.0f);
  const __m256i zero = _mm256_set1_epi16(int16_t(q.zero)), lo = _mm256_set1_epi16(int16_t(q.lo)),
                hi = _mm256_set1_epi16(int16_t(q.hi));
  // The sixteen from src, or its first `left` (masked loads, zeros past them).
  auto sixteen = [&](const int32_t* src, int64_t left) {
    __m256i a0, a1;
    if (left >= 16) {
      a0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
      a1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 8));
    } else {
      const __m256i n = _mm256_set1_epi32(int32_t(left)), lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
      a0 = _mm256_maskload_epi32(src, _mm256_cmpgt_epi32(n, lanes));
      a1 = _mm256_maskload_epi32(src + 8, _mm256_cmpgt_epi32(n, _mm256_add_epi32(lanes, _mm256_set1_epi32(8))));
    }
    const __m256 v0 = _mm256_mul_ps(_mm256_add_ps(_mm256_cvtepi32_ps(a0), bias), mul);
    const __m256 v1 = _mm256_mul_ps(_mm256_add_ps(_mm256_cvtepi32_ps(a1), bias), mul);
    const __m256i r0 = _mm256_cvtps_epi32(v0), r1 = _mm256_cvtps_epi32(v1);  // ties to even
    const __m256 d0 = _mm256_andnot_ps(sign, _mm256_sub_ps(v0, _mm256_cvtepi32_ps(r0)));
    const __m256 d1 = _mm256_andnot_ps(sign, _mm256_sub_ps(v1, _mm256_cvtepi32_ps(r1)));
    __m256i words;
    if (fast && _mm256_movemask_ps(_mm256_or_ps(_mm256_cmp_ps(d0, near_half, _CMP_NLE_UQ),
                                                _mm256_cmp_ps(d1, near_half, _CMP_NLE_UQ))) == 0) {
      const __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(r0, r1), 0xD8);  // in order
      words = _mm256_max_epi16(_mm256_min_epi16(_mm256_adds_epi16(w, zero), hi), lo);
    } else {
      words = _mm256_set_m128i(_mm_packs_epi32(requant4(_mm256_castsi256_si128(a1), q), requant4(_mm256_extracti128_si256(a1, 1), q)),
                               _mm_packs_epi32(requant4(_mm256_castsi256_si128(a0), q), requant4(_mm256_extracti128_si256(a0, 1), q)));
    }
    const __m128i w0 = _mm256_castsi256_si128(words), w1 = _mm256_extracti128_si256(words, 1);
    return kSigned ? _mm_packs_epi16(w0, w1) : _mm_packus_epi16(w0, w1);  // exact: in [lo, hi]
  };
  int64_t i = 0;
  for (; i + 16 <= count; i += 16) _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), sixteen(acc + i, 16));
  if (i < count) {
    alignas(16) T out[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(out), sixteen(acc + i, count - i));
    for (int64_t j = 0; j < count - i; ++j) y[i + j] = out[j];
  }
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

const QKernelSet& qkernels_avx2_bytes_a() {
  static const QKernelSet set = [] {
    QKernelSet s = kSet;
    s.name = "avx2-bytes-a";
    s.layout = QLayout::quads;
    s.gemm_quads = ukr_bytes<true>;
    s.pack_quads = pack_quads_bytes;
    s.quad_form = {true, kBytesRows, 1, 1, true};
    s.correct = correct_bytes;
    return s;
  }();
  return set;
}

const QKernelSet& qkernels_avx2_bytes_b() {
  static const QKernelSet set = [] {
    QKernelSet s = qkernels_avx2_bytes_a();
    s.name = "avx2-bytes-b";
    s.gemm_quads = ukr_bytes<false>;
    s.quad_form.a_signed = false;
    s.correct = nullptr;  // B's corrections are column updates: the driver's
    return s;
  }();
  return set;
}

}  // namespace onyx::cpu::qgemm_detail
