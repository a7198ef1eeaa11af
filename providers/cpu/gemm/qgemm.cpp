// qgemm.cpp: the integer GEMM driver (qgemm.h): packing with zero points
// subtracted, cache blocking, the split across threads and the portable
// microkernel.
#include <algorithm>
#include <cstring>
#include <vector>

#include "gemm_internal.h"
#include "qgemm_internal.h"

namespace onyx::cpu {
namespace qgemm_detail {
namespace {

int16_t element(const QMatrix& x, int64_t row, int64_t col) {
  const int64_t at = x.trans ? col * x.ld + row : row * x.ld + col;
  return x.is_signed ? int16_t(static_cast<const int8_t*>(x.data)[at])
                     : int16_t(static_cast<const uint8_t*>(x.data)[at]);
}

// Rows [r0, r0 + rows) x K pairs [p0, p0 + kp) of op(A) into micro-panels of
// kMR rows (see QMicroKernel); rows past the end and the odd K tail are zero.
template <typename T, bool kTrans>
void pack_a_typed(const QMatrix& a, int64_t k, const int32_t* zero, int64_t zero_count, int64_t r0,
                  int64_t rows, int64_t p0, int64_t kp, int16_t* dst) {
  const T* src = static_cast<const T*>(a.data);
  for (int64_t panel = 0; panel * kMR < rows; ++panel) {
    int16_t* out = dst + panel * kp * kMR * 2;
    const int64_t height = std::min<int64_t>(kMR, rows - panel * kMR);
    for (int i = 0; i < kMR; ++i) {
      int16_t* o = out + i * 2;
      if (i >= height) {
        for (int64_t p = 0; p < kp; ++p) o[p * kMR * 2] = o[p * kMR * 2 + 1] = 0;
        continue;
      }
      const int64_t row = r0 + panel * kMR + i;
      const auto z = int16_t(zero[zero_count == 1 ? 0 : row]);
      // op(A)(row, col) is src[row * ld + col], or src[col * ld + row] transposed.
      const T* x = kTrans ? src + row : src + row * a.ld;
      const int64_t step = kTrans ? a.ld : 1;
      const int64_t full = std::min(kp, k / 2 - p0);  // pairs with both halves inside K
      int64_t p = 0;
      for (; p < full; ++p) {
        const int64_t col = (p0 + p) * 2;
        o[p * kMR * 2] = int16_t(x[col * step] - z);
        o[p * kMR * 2 + 1] = int16_t(x[(col + 1) * step] - z);
      }
      for (; p < kp; ++p) {  // the odd K tail
        o[p * kMR * 2] = int16_t(x[(p0 + p) * 2 * step] - z);
        o[p * kMR * 2 + 1] = 0;
      }
    }
  }
}

void pack_a(const QMatrix& a, int64_t k, const int32_t* zero, int64_t zero_count, int64_t r0,
            int64_t rows, int64_t p0, int64_t kp, int16_t* dst) {
  if (a.is_signed)
    (a.trans ? pack_a_typed<int8_t, true> : pack_a_typed<int8_t, false>)(a, k, zero, zero_count, r0, rows, p0, kp, dst);
  else
    (a.trans ? pack_a_typed<uint8_t, true> : pack_a_typed<uint8_t, false>)(a, k, zero, zero_count, r0, rows, p0, kp, dst);
}

void ukr_generic(int64_t kp, const int16_t* a, const int16_t* b, int32_t* c, int64_t ldc,
                 bool accumulate, int rows, int cols) {
  uint32_t acc[kMR][kNR] = {};  // unsigned: wraps like the vector kernels
  for (int64_t p = 0; p < kp; ++p, a += kMR * 2, b += kNR * 2)
    for (int i = 0; i < kMR; ++i)
      for (int j = 0; j < kNR; ++j)
        acc[i][j] += uint32_t(int32_t(a[i * 2]) * b[j * 2] + int32_t(a[i * 2 + 1]) * b[j * 2 + 1]);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) {
      int32_t& out = c[i * ldc + j];
      out = int32_t(accumulate ? uint32_t(out) + acc[i][j] : acc[i][j]);
    }
}

}  // namespace

QMicroKernel qkernel_generic() { return &ukr_generic; }

QMicroKernel qkernel_best() {
#ifdef ONYX_GEMM_X86_KERNELS
  if (gemm_detail::best_isa() != gemm_detail::Isa::generic) return qkernel_avx2();
#endif
  return qkernel_generic();
}

void qgemm_with(QMicroKernel kernel, const QBlocking& bl, int64_t m, int64_t n, int64_t k,
                const QMatrix& a, const int32_t* a_zero, int64_t a_zero_count, const PackedQB& b,
                int32_t* c, int64_t ldc, const QTileDone& tile_done, const ParallelFor& pf) {
  if (m <= 0 || n <= 0) return;
  const int64_t m_blocks = (m + bl.mc - 1) / bl.mc;
  // Threads only where each gets enough work to pay for waking it.
  const double ops = 2.0 * double(m) * double(n) * double(std::max<int64_t>(k, 1));
  const auto threads = pf.run ? std::clamp<int64_t>(int64_t(ops / bl.min_ops_per_thread), 1, int64_t(pf.threads)) : 1;
  // Few row blocks (a small batch, a late conv layer): split columns too.
  int64_t n_groups = 1;
  if (threads > 1 && m_blocks < 2 * threads)
    n_groups = std::min<int64_t>(b.panels, (2 * threads + m_blocks - 1) / m_blocks);
  const int64_t tasks = m_blocks * n_groups;

  auto body = [&](size_t lo, size_t hi) {
    thread_local std::vector<int16_t> packed_a;
    packed_a.resize(size_t((bl.mc + kMR) * bl.kc * 2));
    for (auto t = int64_t(lo); t < int64_t(hi); ++t) {
      const int64_t r0 = (t / n_groups) * bl.mc, rows = std::min(bl.mc, m - r0);
      const int64_t g = t % n_groups;
      const int64_t j0 = g * b.panels / n_groups, j1 = (g + 1) * b.panels / n_groups;
      for (int64_t p0 = 0; p0 < b.kp; p0 += bl.kc) {
        const int64_t kp = std::min(bl.kc, b.kp - p0);
        pack_a(a, k, a_zero, a_zero_count, r0, rows, p0, kp, packed_a.data());
        for (int64_t j = j0; j < j1; ++j) {
          const int16_t* bp = b.data.get() + (j * b.kp + p0) * kNR * 2;
          const int cols = int(std::min<int64_t>(kNR, n - j * kNR));
          for (int64_t i = 0; i < rows; i += kMR)
            kernel(kp, packed_a.data() + (i / kMR) * kp * kMR * 2, bp, c + (r0 + i) * ldc + j * kNR, ldc,
                   p0 > 0, int(std::min<int64_t>(kMR, rows - i)), cols);
        }
      }
      if (b.kp == 0)  // K == 0: the sums are empty
        for (int64_t i = r0; i < r0 + rows; ++i)
          std::fill(c + i * ldc + j0 * kNR, c + i * ldc + std::min(n, j1 * kNR), 0);
      if (tile_done) tile_done(r0, r0 + rows, j0 * kNR, std::min(n, j1 * kNR));
    }
  };
  if (threads > 1 && tasks > 1)
    pf.run(size_t(tasks), body);
  else
    body(0, size_t(tasks));
}

}  // namespace qgemm_detail

std::shared_ptr<PackedQB> pack_qb(const QMatrix& b, int64_t k, int64_t n, const int32_t* zero,
                                  int64_t zero_count) {
  using qgemm_detail::kNR;
  auto packed = std::make_shared<PackedQB>();
  packed->k = k, packed->n = n, packed->kp = (k + 1) / 2, packed->panels = (n + kNR - 1) / kNR;
  const int64_t size = packed->panels * packed->kp * kNR * 2;
  packed->data.reset(new int16_t[size_t(std::max<int64_t>(size, 1))]());
  for (int64_t j = 0; j < n; ++j) {
    const auto z = int16_t(zero[zero_count == 1 ? 0 : j]);
    int16_t* panel = packed->data.get() + (j / kNR) * packed->kp * kNR * 2 + (j % kNR) * 2;
    for (int64_t r = 0; r < k; ++r)
      panel[(r / 2) * kNR * 2 + (r % 2)] = int16_t(qgemm_detail::element(b, r, j) - z);
  }
  return packed;
}

void qgemm(int64_t m, int64_t n, int64_t k, const QMatrix& a, const int32_t* a_zero,
           int64_t a_zero_count, const PackedQB& b, int32_t* c, int64_t ldc,
           const QTileDone& tile_done, const ParallelFor& parallel) {
  static const qgemm_detail::QMicroKernel kernel = qgemm_detail::qkernel_best();
  qgemm_detail::qgemm_with(kernel, {}, m, n, k, a, a_zero, a_zero_count, b, c, ldc, tile_done, parallel);
}

const char* qgemm_isa() {
  return qgemm_detail::qkernel_best() == qgemm_detail::qkernel_generic() ? "generic" : "avx2";
}

}  // namespace onyx::cpu
