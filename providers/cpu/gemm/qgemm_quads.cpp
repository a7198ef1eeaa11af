// qgemm_quads.cpp: the quad layout of the integer GEMM (qgemm.h): bytes
// packed four K steps per int32 lane, A as int8 and B as uint8, and the
// zero points applied once per tile from row and column sums:
//
//   sum_k (a - za)(b - zb) = sum_k a b - zb * sum_k a - za * (sum_k b - K zb)
//
// An operand of the other signedness is shifted by 128 (XOR 0x80 on every
// byte) with its zero point, which leaves every difference a - za unchanged.
// Also the portable quad kernels, which the VNNI set is tested against.
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "qgemm_internal.h"

namespace onyx::cpu::qgemm_detail {
namespace {

constexpr int kQuadBytes = kNR * 4;  // one K quad of a B panel

// A is packed as int8: uint8 bytes flip to value - 128.
uint8_t a_flip(const QMatrix& a) { return a.is_signed ? 0 : 0x80; }
int32_t a_shift(const QMatrix& a) { return a.is_signed ? 0 : -128; }
// B is packed as uint8: int8 bytes flip to value + 128.
uint8_t b_flip(const QMatrix& b) { return b.is_signed ? 0x80 : 0; }
int32_t b_shift(const QMatrix& b) { return b.is_signed ? 128 : 0; }

// Rows [r0, r0 + rows) x quads [q0, q0 + kq) of op(A) into micro-panels of
// kMR rows (see QQuadKernel); rows past the end and K past k are zero.
void pack_a_block(const QMatrix& a, int64_t k, int64_t r0, int64_t rows, int64_t q0, int64_t kq, int8_t* dst) {
  const auto* src = static_cast<const uint8_t*>(a.data);
  const uint8_t flip = a_flip(a);
  for (int64_t panel = 0; panel * kMR < rows; ++panel) {
    int8_t* out = dst + panel * kq * kMR * 4;
    const int64_t height = std::min<int64_t>(kMR, rows - panel * kMR);
    for (int64_t i = 0; i < kMR; ++i) {
      const int64_t row = r0 + panel * kMR + i;
      for (int64_t q = 0; q < kq; ++q)
        for (int64_t s = 0; s < 4; ++s) {
          const int64_t col = (q0 + q) * 4 + s;
          uint8_t v = 0;
          if (i < height && col < k) v = uint8_t((a.trans ? src[col * a.ld + row] : src[row * a.ld + col]) ^ flip);
          out[(q * kMR + i) * 4 + s] = int8_t(v);
        }
    }
  }
}

// The zero point of rows [r0, r0 + rows) of A as packed, and the sums of
// their packed bytes over all of K.
void a_row_terms(const QMatrix& a, int64_t k, const int32_t* zero, int64_t zero_count, int64_t r0, int64_t rows,
                 int32_t* row_zero, int32_t* row_sum) {
  const auto* src = static_cast<const uint8_t*>(a.data);
  const uint8_t flip = a_flip(a);
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t row = r0 + i;
    row_zero[i] = zero[zero_count == 1 ? 0 : row] + a_shift(a);
    int32_t sum = 0;
    if (a.trans)
      for (int64_t col = 0; col < k; ++col) sum += int8_t(src[col * a.ld + row] ^ flip);
    else
      for (int64_t col = 0; col < k; ++col) sum += int8_t(src[row * a.ld + col] ^ flip);
    row_sum[i] = sum;
  }
}

void ukr_quads_generic(int64_t kq, const int8_t* a, const uint8_t* b, int64_t panel_stride, int panels, int32_t* c,
                       int64_t ldc, bool accumulate, int rows, int cols, const QuadFix* fix) {
  uint32_t acc[kMR][kQuadPanels * kNR] = {};  // unsigned: wraps like the vector kernels
  for (int p = 0; p < panels; ++p) {
    const uint8_t* bp = b + p * panel_stride;
    for (int64_t q = 0; q < kq; ++q)
      for (int i = 0; i < kMR; ++i)
        for (int j = 0; j < kNR; ++j) {
          int32_t dot = 0;
          for (int s = 0; s < 4; ++s) dot += int32_t(a[(q * kMR + i) * 4 + s]) * int32_t(bp[(q * kNR + j) * 4 + s]);
          acc[i][p * kNR + j] += uint32_t(dot);
        }
  }
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) {
      uint32_t v = acc[i][j];
      if (fix)
        v -= uint32_t(fix->row_zero[i]) * uint32_t(fix->col_term[j]) + uint32_t(fix->col_zero[j]) * uint32_t(fix->row_sum[i]);
      int32_t& out = c[i * ldc + j];
      out = int32_t(accumulate ? uint32_t(out) + v : v);
    }
}

void pack_quads_generic(const uint8_t* src, int64_t ld, int64_t k, int64_t width, uint8_t flip, uint8_t* dst,
                        int32_t* col_sum) {
  int32_t sums[kNR] = {};
  const int64_t kq = (k + 3) / 4;
  for (int64_t q = 0; q < kq; ++q, dst += kQuadBytes)
    for (int64_t j = 0; j < kNR; ++j)
      for (int64_t s = 0; s < 4; ++s) {
        const int64_t r = q * 4 + s;
        const uint8_t v = r < k && j < width ? uint8_t(src[r * ld + j] ^ flip) : 0;
        dst[j * 4 + s] = v;
        sums[j] += v;
      }
  std::copy(sums, sums + kNR, col_sum);
}

const QKernelSet kGenericQuads = [] {
  QKernelSet set = qkernels_generic();
  set.name = "generic-quads";
  set.layout = QLayout::quads;
  set.gemm_quads = ukr_quads_generic;
  set.pack_quads = pack_quads_generic;
  return set;
}();

}  // namespace

const QKernelSet& qkernels_generic_quads() { return kGenericQuads; }

void pack_qa_quads(const QBlocking& bl, const QMatrix& a, int64_t m, int64_t k, const int32_t* zero,
                   int64_t zero_count, PackedQA* out) {
  out->m = m, out->k = k, out->kp = (k + 3) / 4, out->quads = true, out->mc = bl.mc, out->kc = bl.kc;
  out->k_blocks = (out->kp + bl.kc - 1) / bl.kc;
  const int64_t m_blocks = (m + bl.mc - 1) / bl.mc;
  // Blocks no larger than A needs: a depthwise layer's filters are 1 x 9.
  out->block = std::min(bl.mc, (m + kMR - 1) / kMR * kMR) * std::min(bl.kc, out->kp) * 4;
  out->bytes.assign(size_t(std::max<int64_t>(m_blocks * out->k_blocks * out->block, 1)), 0);
  for (int64_t mb = 0; mb < m_blocks; ++mb)
    for (int64_t kb = 0; kb < out->k_blocks; ++kb) {
      const int64_t r0 = mb * bl.mc, q0 = kb * bl.kc;
      pack_a_block(a, k, r0, std::min(bl.mc, m - r0), q0, std::min(bl.kc, out->kp - q0),
                   out->bytes.data() + (mb * out->k_blocks + kb) * out->block);
    }
  out->row_zero.resize(size_t(m));
  out->row_sum.resize(size_t(m));
  a_row_terms(a, k, zero, zero_count, 0, m, out->row_zero.data(), out->row_sum.data());
}

void pack_qb_quads(const QKernelSet& ks, const QMatrix& b, int64_t k, int64_t n, const int32_t* zero,
                   int64_t zero_count, PackedQB* out, const ParallelFor& parallel) {
  out->k = k, out->n = n, out->quads = true, out->kp = (k + 3) / 4, out->panels = (n + kNR - 1) / kNR;
  out->data.clear();
  out->bytes.resize(size_t(std::max<int64_t>(out->panels * out->kp * kQuadBytes, 1)));
  out->col_zero.assign(size_t(out->panels * kNR), 0);
  out->col_term.assign(size_t(out->panels * kNR), 0);
  const uint8_t flip = b_flip(b);
  const auto* src = static_cast<const uint8_t*>(b.data);
  auto panels = [&](size_t first, size_t last) {
    for (auto panel = int64_t(first); panel < int64_t(last); ++panel) {
      const int64_t j0 = panel * kNR, width = std::min<int64_t>(kNR, n - j0);
      uint8_t* dst = out->bytes.data() + panel * out->kp * kQuadBytes;
      int32_t* col_sum = out->col_term.data() + j0;
      if (!b.trans) {
        ks.pack_quads(src + j0, b.ld, k, width, flip, dst, col_sum);
        continue;
      }
      // B stored n x k (weights [filters, k]): column j is a row of the source.
      std::fill(dst, dst + out->kp * kQuadBytes, uint8_t(0));
      for (int64_t jj = 0; jj < width; ++jj) {
        const uint8_t* col = src + (j0 + jj) * b.ld;
        int32_t sum = 0;
        for (int64_t r = 0; r < k; ++r) {
          const auto v = uint8_t(col[r] ^ flip);
          dst[(r / 4) * kQuadBytes + jj * 4 + r % 4] = v;
          sum += v;
        }
        col_sum[jj] = sum;
      }
    }
  };
  if (parallel.run && parallel.threads > 1 && out->panels > 1 && out->panels * out->kp * kQuadBytes >= (1 << 17))
    parallel.run(size_t(out->panels), panels);
  else
    panels(0, size_t(out->panels));
  for (int64_t j = 0; j < n; ++j) {
    const int32_t z = zero[zero_count == 1 ? 0 : j] + b_shift(b);
    out->col_zero[size_t(j)] = z;
    out->col_term[size_t(j)] -= int32_t(uint32_t(k) * uint32_t(z));
  }
}

void qgemm_quads(const QKernelSet& kernels, const QBlocking& bl, int64_t m, int64_t n, int64_t k, const QASource& a,
                 const PackedQB& b, int32_t* c, int64_t ldc, const QTileDone& tile_done, const ParallelFor& pf) {
  if (!b.quads || (a.packed && !a.packed->quads))
    throw std::logic_error("qgemm: operands packed in pairs given to a quad kernel set");
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
    thread_local std::vector<int8_t> packed_a;
    thread_local std::vector<int32_t> row_terms;
    packed_a.resize(size_t((bl.mc + kMR) * bl.kc * 4));
    row_terms.resize(size_t(2 * bl.mc));
    for (auto t = int64_t(lo); t < int64_t(hi); ++t) {
      const int64_t r0 = (t / n_groups) * bl.mc, rows = std::min(bl.mc, m - r0);
      const int64_t g = t % n_groups;
      const int64_t j0 = g * b.panels / n_groups, j1 = (g + 1) * b.panels / n_groups;
      const int32_t *row_zero = nullptr, *row_sum = nullptr;
      if (a.packed) {
        row_zero = a.packed->row_zero.data() + r0, row_sum = a.packed->row_sum.data() + r0;
      } else {
        a_row_terms(a.matrix, k, a.zero, a.zero_count, r0, rows, row_terms.data(), row_terms.data() + bl.mc);
        row_zero = row_terms.data(), row_sum = row_terms.data() + bl.mc;
      }
      auto a_block = [&](int64_t q0, int64_t kq) -> const int8_t* {
        if (a.packed)
          return a.packed->bytes.data() + ((r0 / bl.mc) * a.packed->k_blocks + q0 / bl.kc) * a.packed->block;
        pack_a_block(a.matrix, k, r0, rows, q0, kq, packed_a.data());
        return packed_a.data();
      };
      const bool one_block = b.kp <= bl.kc;
      const int8_t* ap = one_block && b.kp > 0 ? a_block(0, b.kp) : nullptr;
      // Columns in chunks of nc panels, each finished (all of K) and handed
      // to tile_done while its sums are still in cache.
      for (int64_t c0 = j0; c0 < j1; c0 += bl.nc) {
        const int64_t c1 = std::min(j1, c0 + bl.nc);
        for (int64_t q0 = 0; q0 < b.kp; q0 += bl.kc) {
          const int64_t kq = std::min(bl.kc, b.kp - q0);
          const bool last = q0 + kq == b.kp;
          if (!one_block) ap = a_block(q0, kq);
          for (int64_t j = c0; j < c1; j += kQuadPanels) {
            const int panels = int(std::min<int64_t>(kQuadPanels, c1 - j));
            const uint8_t* bp = b.bytes.data() + (j * b.kp + q0) * kQuadBytes;
            const int cols = int(std::min<int64_t>(panels * kNR, n - j * kNR));
            for (int64_t i = 0; i < rows; i += kMR) {
              const QuadFix fix{row_zero + i, row_sum + i, b.col_zero.data() + j * kNR, b.col_term.data() + j * kNR};
              kernels.gemm_quads(kq, ap + (i / kMR) * kq * kMR * 4, bp, b.kp * kQuadBytes, panels,
                                 c + (r0 + i) * ldc + j * kNR, ldc, q0 > 0, int(std::min<int64_t>(kMR, rows - i)), cols,
                                 last ? &fix : nullptr);
            }
          }
        }
        if (b.kp == 0)  // K == 0: the sums are empty
          for (int64_t i = r0; i < r0 + rows; ++i)
            std::fill(c + i * ldc + c0 * kNR, c + i * ldc + std::min(n, c1 * kNR), 0);
        if (tile_done) tile_done(r0, r0 + rows, c0 * kNR, std::min(n, c1 * kNR));
      }
    }
  };
  if (threads > 1 && tasks > 1)
    pf.run(size_t(tasks), body);
  else
    body(0, size_t(tasks));
}

}  // namespace onyx::cpu::qgemm_detail
