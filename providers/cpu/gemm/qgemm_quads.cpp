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

int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

// The bytes' shift from the stored type to the packed one: XOR 0x80 on each
// byte, and the zero point moved with it (int8 -> uint8: +128).
struct Shift {
  uint8_t flip;
  int32_t zero;
};
Shift shift(bool stored_signed, bool packed_signed) {
  if (stored_signed == packed_signed) return {0, 0};
  return {0x80, stored_signed ? 128 : -128};
}

// The blocking as the form needs it: row blocks of whole micro-panels, K
// blocks of whole groups.
QBlocking form_blocking(const QBlocking& bl, const QuadForm& f) {
  QBlocking out = bl;
  out.mc = round_up(bl.mc, f.rows);
  out.kc = round_up(bl.kc, f.group);
  return out;
}

// Rows [r0, r0 + rows) x quads [q0, q0 + kq) of op(A) into micro-panels of
// f.rows rows (see QuadForm); rows past the end and K past k are zero.
void pack_a_block(const QuadForm& f, const QMatrix& a, int64_t k, int64_t r0, int64_t rows, int64_t q0, int64_t kq,
                  uint8_t* dst) {
  const auto* src = static_cast<const uint8_t*>(a.data);
  const uint8_t flip = shift(a.is_signed, f.a_signed).flip;
  const int64_t run = 4 * f.group;  // bytes of a row per group of quads
  for (int64_t panel = 0; panel * f.rows < rows; ++panel) {
    uint8_t* out = dst + panel * kq * f.rows * 4;
    const int64_t height = std::min<int64_t>(f.rows, rows - panel * f.rows);
    for (int64_t i = 0; i < f.rows; ++i) {
      const int64_t row = r0 + panel * f.rows + i;
      // A stored row, quad by quad (VNNI's and AVX2's forms), four bytes at a
      // time: A packed per call is on the product's path.
      int64_t g = 0;
      if (f.group == 1 && i < height && !a.trans) {
        const uint8_t* x = src + row * a.ld + q0 * 4;
        const uint32_t flip4 = uint32_t(flip) * 0x01010101u;
        for (const int64_t whole = std::min(kq, k / 4 - q0); g < whole; ++g) {
          uint32_t quad;
          std::memcpy(&quad, x + g * 4, 4);
          quad ^= flip4;
          std::memcpy(out + (g * f.rows + i) * 4, &quad, 4);
        }
      }
      for (; g * f.group < kq; ++g) {
        uint8_t* o = out + (g * f.rows + i) * run;
        const int64_t col0 = (q0 + g * f.group) * 4;
        if (i < height && !a.trans && col0 + run <= k) {  // a whole run of a stored row
          const uint8_t* x = src + row * a.ld + col0;
          for (int64_t t = 0; t < run; ++t) o[t] = uint8_t(x[t] ^ flip);
          continue;
        }
        for (int64_t t = 0; t < run; ++t) {
          const int64_t col = col0 + t;
          uint8_t v = 0;
          if (i < height && col < k) v = uint8_t((a.trans ? src[col * a.ld + row] : src[row * a.ld + col]) ^ flip);
          o[t] = v;
        }
      }
    }
  }
}

// A pair of int8 bytes of a bounded-pairs form: where |x0| + |x1| exceeds
// 128, x1 keeps the part that fits (128 - |x0| in magnitude) and the rest is
// returned (a correction); else 0.
int32_t cut_pair(uint8_t* pair) {
  const int32_t x0 = int8_t(pair[0]), x1 = int8_t(pair[1]);
  const int32_t room = 128 - (x0 < 0 ? -x0 : x0);
  if ((x1 < 0 ? -x1 : x1) <= room) return 0;
  const int32_t kept = x1 < 0 ? -room : room;
  pair[1] = uint8_t(int8_t(kept));
  return x1 - kept;
}

// A block packed by pack_a_block for a bounded-pairs form with A int8: each
// pair of a quad (bytes 0-1, 2-3) cut, its correction appended to *out.
// Sorted by row within the block.
void bound_a_pairs(const QuadForm& f, uint8_t* block, int64_t r0, int64_t rows, int64_t q0, int64_t kq,
                   std::vector<QCorrection>* out) {
  const int64_t run = 4 * f.group;
  for (int64_t panel = 0; panel * f.rows < rows; ++panel) {
    uint8_t* base = block + panel * kq * f.rows * 4;
    const int64_t height = std::min<int64_t>(f.rows, rows - panel * f.rows);
    for (int64_t i = 0; i < height; ++i)
      for (int64_t q = 0; q < kq; ++q) {
        uint8_t* quad = base + ((q / f.group) * f.rows + i) * run + (q % f.group) * 4;
        for (int s = 0; s < 4; s += 2)
          if (const int32_t rest = cut_pair(quad + s)) out->push_back({r0 + panel * f.rows + i, (q0 + q) * 4 + s + 1, rest});
      }
  }
}

// B packed for a bounded-pairs form with B int8 (panels of kp quads): each
// pair cut, the corrections (at = the column) appended per panel, sorted by
// quad, with out->correction_start.
void bound_b_pairs(PackedQB* out) {
  out->corrections.clear();
  out->correction_start.assign(1, 0);
  for (int64_t p = 0; p < out->panels; ++p) {
    for (int64_t q = 0; q < out->kp; ++q) {
      uint8_t* quads = out->bytes.data() + (p * out->kp + q) * kQuadBytes;
      for (int64_t j = 0; j < kNR; ++j)
        for (int s = 0; s < 4; s += 2)
          if (const int32_t rest = cut_pair(quads + j * 4 + s)) out->corrections.push_back({p * kNR + j, q * 4 + s + 1, rest});
    }
    out->correction_start.push_back(int64_t(out->corrections.size()));
  }
}

// B's corrections (bound_b_pairs) for panels [j0, j1) and the K block of
// quads [q0, q0 + kq), whose A block (rows from r0) is ap as packed:
// C[r0 + i][at] += value * A[i][k], wrapping like the sums.
void apply_b_corrections(const QuadForm& f, const PackedQB& b, const uint8_t* ap, int64_t r0, int64_t rows, int64_t q0,
                         int64_t kq, int64_t j0, int64_t j1, int32_t* c, int64_t ldc) {
  for (int64_t j = j0; j < j1; ++j) {
    const QCorrection* x = b.corrections.data() + b.correction_start[size_t(j)];
    const QCorrection* last = b.corrections.data() + b.correction_start[size_t(j) + 1];
    x = std::lower_bound(x, last, q0, [](const QCorrection& e, int64_t q) { return e.k / 4 < q; });
    for (; x != last && x->k / 4 < q0 + kq; ++x) {
      const int64_t q = x->k / 4 - q0, s = x->k % 4;
      const auto v = uint32_t(x->value);
      for (int64_t i = 0; i < rows; ++i) {
        const uint8_t a = ap[(i / f.rows) * kq * f.rows * 4 + ((q / f.group) * f.rows + i % f.rows) * 4 * f.group +
                             (q % f.group) * 4 + s];
        auto& out = reinterpret_cast<uint32_t&>(c[(r0 + i) * ldc + x->at]);
        out += v * a;
      }
    }
  }
}

// The zero point of rows [r0, r0 + rows) of A as packed, and the sums of
// their packed values over all of K.
void a_row_terms(const QuadForm& f, const QMatrix& a, int64_t k, const int32_t* zero, int64_t zero_count, int64_t r0,
                 int64_t rows, int32_t* row_zero, int32_t* row_sum) {
  const auto* src = static_cast<const uint8_t*>(a.data);
  const Shift sh = shift(a.is_signed, f.a_signed);
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t row = r0 + i;
    row_zero[i] = zero[zero_count == 1 ? 0 : row] + sh.zero;
    int32_t sum = 0;
    if (a.trans) {
      for (int64_t col = 0; col < k; ++col) {
        const auto v = uint8_t(src[col * a.ld + row] ^ sh.flip);
        sum += f.a_signed ? int32_t(int8_t(v)) : int32_t(v);
      }
    } else {  // a row: vectorizes
      const uint8_t* x = src + row * a.ld;
      if (f.a_signed)
        for (int64_t col = 0; col < k; ++col) sum += int8_t(x[col] ^ sh.flip);
      else
        for (int64_t col = 0; col < k; ++col) sum += uint8_t(x[col] ^ sh.flip);
    }
    row_sum[i] = sum;
  }
}

// The portable kernel of any form (the sets below fix the form).
template <bool kASigned, int kRows, int kGroup>
void ukr_quads_generic(int64_t kq, const uint8_t* a, const uint8_t* b, int64_t panel_stride, int panels, int32_t* c,
                       int64_t ldc, bool accumulate, int rows, int cols, const QuadFix* fix) {
  uint32_t acc[kRows][kQuadMaxPanels * kNR] = {};  // unsigned: wraps like the vector kernels
  auto a_at = [&](int64_t i, int64_t q, int s) {
    const uint8_t v = a[((q / kGroup) * kRows + i) * 4 * kGroup + (q % kGroup) * 4 + s];
    return kASigned ? int32_t(int8_t(v)) : int32_t(v);
  };
  for (int p = 0; p < panels; ++p) {
    const uint8_t* bp = b + p * panel_stride;
    for (int64_t q = 0; q < kq; ++q)
      for (int i = 0; i < kRows; ++i)
        for (int j = 0; j < kNR; ++j) {
          int32_t dot = 0;
          for (int s = 0; s < 4; ++s) {
            const uint8_t v = bp[(q * kNR + j) * 4 + s];
            dot += a_at(i, q, s) * (kASigned ? int32_t(v) : int32_t(int8_t(v)));
          }
          acc[i][p * kNR + j] += uint32_t(dot);
        }
  }
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) {
      uint32_t v = acc[i][j];
      if (fix && fix->row_add)
        v += uint32_t(fix->row_add[i]) + uint32_t(fix->col_add[j]);
      else if (fix)
        v -= uint32_t(fix->row_zero[i]) * uint32_t(fix->col_term[j]) + uint32_t(fix->col_zero[j]) * uint32_t(fix->row_sum[i]);
      int32_t& out = c[i * ldc + j];
      out = int32_t(accumulate ? uint32_t(out) + v : v);
    }
}

void pack_quads_generic(const uint8_t* const* rows, int64_t offset, int64_t k, int64_t kq, int64_t width, uint8_t flip,
                        bool as_signed, uint8_t* dst, int64_t panel_stride, int32_t* col_sum) {
  for (int64_t p = 0; p * kNR < width; ++p) {
    int32_t sums[kNR] = {};
    uint8_t* out = dst + p * panel_stride;
    for (int64_t q = 0; q < kq; ++q, out += kQuadBytes)
      for (int64_t j = 0; j < kNR; ++j)
        for (int64_t s = 0; s < 4; ++s) {
          const int64_t r = q * 4 + s, col = p * kNR + j;
          const uint8_t v = r < k && col < width ? uint8_t(rows[r][offset + col] ^ flip) : 0;
          out[j * 4 + s] = v;
          sums[j] += as_signed ? int32_t(int8_t(v)) : int32_t(v);
        }
    std::copy(sums, sums + kNR, col_sum + p * kNR);
  }
}

template <bool kASigned, int kRows, int kGroup, int kPanels>
QKernelSet generic_form(const char* name) {
  QKernelSet set = qkernels_generic();
  set.name = name;
  set.layout = QLayout::quads;
  set.gemm_quads = ukr_quads_generic<kASigned, kRows, kGroup>;
  set.pack_quads = pack_quads_generic;
  set.quad_form = {kASigned, kRows, kGroup, kPanels};
  return set;
}

const QKernelSet kGenericQuads = generic_form<true, 6, 1, 4>("generic-quads");   // VNNI's form
const QKernelSet kGenericTiles = generic_form<false, 32, 16, 2>("generic-tiles");  // AMX's form

}  // namespace

const QKernelSet& qkernels_generic_quads() { return kGenericQuads; }
const QKernelSet& qkernels_generic_tiles() { return kGenericTiles; }

void pack_qa_quads(const QuadForm& f, const QBlocking& blocking, const QMatrix& a, int64_t m, int64_t k,
                   const int32_t* zero, int64_t zero_count, PackedQA* out) {
  const QBlocking bl = form_blocking(blocking, f);
  out->m = m, out->k = k, out->kp = round_up((k + 3) / 4, f.group), out->quads = true, out->mc = bl.mc,
  out->kc = bl.kc;
  out->k_blocks = (out->kp + bl.kc - 1) / bl.kc;
  const int64_t m_blocks = (m + bl.mc - 1) / bl.mc;
  // Blocks no larger than A needs: a depthwise layer's filters are 1 x 9.
  out->block = std::min(bl.mc, round_up(m, f.rows)) * std::min(bl.kc, out->kp) * 4;
  out->bytes.assign(size_t(std::max<int64_t>(m_blocks * out->k_blocks * out->block, 1)), 0);
  out->bounded_pairs = f.bounded_pairs && f.a_signed;
  out->corrections.clear();
  out->correction_start.assign(1, 0);
  for (int64_t mb = 0; mb < m_blocks; ++mb)
    for (int64_t kb = 0; kb < out->k_blocks; ++kb) {
      const int64_t r0 = mb * bl.mc, q0 = kb * bl.kc, rows = std::min(bl.mc, m - r0), kq = std::min(bl.kc, out->kp - q0);
      uint8_t* block = out->bytes.data() + (mb * out->k_blocks + kb) * out->block;
      pack_a_block(f, a, k, r0, rows, q0, kq, block);
      if (out->bounded_pairs) bound_a_pairs(f, block, r0, rows, q0, kq, &out->corrections);
      out->correction_start.push_back(int64_t(out->corrections.size()));
    }
  out->uniform_zero = zero_count == 1;
  out->row_zero.resize(size_t(m));
  out->row_sum.resize(size_t(m));
  a_row_terms(f, a, k, zero, zero_count, 0, m, out->row_zero.data(), out->row_sum.data());
}

void pack_qb_quads(const QKernelSet& ks, const QMatrix& b, int64_t k, int64_t n, const int32_t* zero,
                   int64_t zero_count, PackedQB* out, const ParallelFor& parallel) {
  const QuadForm& f = ks.quad_form;
  out->k = k, out->n = n, out->quads = true, out->kp = round_up((k + 3) / 4, f.group);
  out->panels = (n + kNR - 1) / kNR;
  out->data.clear();
  out->bytes.resize(size_t(std::max<int64_t>(out->panels * out->kp * kQuadBytes, 1)));
  out->uniform_zero = zero_count == 1;
  out->col_zero.assign(size_t(out->panels * kNR), 0);
  out->col_term.assign(size_t(out->panels * kNR), 0);
  const Shift sh = shift(b.is_signed, !f.a_signed);
  const auto* src = static_cast<const uint8_t*>(b.data);
  // Row pointers: given (taps of a padded image), or every ld bytes.
  thread_local std::vector<const uint8_t*> row_scratch;
  const uint8_t* const* rows = b.rows;
  if (!rows && !b.trans) {
    row_scratch.resize(size_t(k));
    for (int64_t r = 0; r < k; ++r) row_scratch[size_t(r)] = src + r * b.ld;
    rows = row_scratch.data();
  }
  const int64_t groups = (out->panels + kQuadMaxPanels - 1) / kQuadMaxPanels;  // of four panels
  auto panels = [&](size_t first, size_t last) {
    for (auto group = int64_t(first); group < int64_t(last); ++group) {
      const int64_t j0 = group * kQuadMaxPanels * kNR, width = std::min<int64_t>(kQuadMaxPanels * kNR, n - j0);
      uint8_t* dst = out->bytes.data() + group * kQuadMaxPanels * out->kp * kQuadBytes;
      int32_t* col_sum = out->col_term.data() + j0;
      if (!b.trans) {
        ks.pack_quads(rows, j0, k, out->kp, width, sh.flip, !f.a_signed, dst, out->kp * kQuadBytes, col_sum);
        continue;
      }
      // B stored n x k (weights [filters, k]): column j is a row of the source.
      std::fill(dst, dst + (width + kNR - 1) / kNR * out->kp * kQuadBytes, uint8_t(0));
      for (int64_t jj = 0; jj < width; ++jj) {
        const uint8_t* col = src + (j0 + jj) * b.ld;
        uint8_t* panel = dst + (jj / kNR) * out->kp * kQuadBytes + (jj % kNR) * 4;
        int32_t sum = 0;
        for (int64_t r = 0; r < k; ++r) {
          const auto v = uint8_t(col[r] ^ sh.flip);
          panel[(r / 4) * kQuadBytes + r % 4] = v;
          sum += f.a_signed ? int32_t(v) : int32_t(int8_t(v));
        }
        col_sum[jj] = sum;
      }
    }
  };
  if (parallel.run && parallel.threads > 1 && groups > 1 && out->panels * out->kp * kQuadBytes >= (1 << 17))
    parallel.run(size_t(groups), panels);
  else
    panels(0, size_t(groups));
  for (int64_t j = 0; j < n; ++j) {
    const int32_t z = zero[zero_count == 1 ? 0 : j] + sh.zero;
    out->col_zero[size_t(j)] = z;
    out->col_term[size_t(j)] -= int32_t(uint32_t(k) * uint32_t(z));
  }
  // After the column sums, which stay those of B's own values.
  out->bounded_pairs = f.bounded_pairs && !f.a_signed;
  if (out->bounded_pairs)
    bound_b_pairs(out);
  else
    out->corrections.clear(), out->correction_start.clear();
}

void qgemm_quads(const QKernelSet& kernels, const QBlocking& blocking, int64_t m, int64_t n, int64_t k,
                 const QASource& a, const PackedQB& b, int32_t* c, int64_t ldc, const QTileDone& tile_done,
                 const ParallelFor& pf) {
  const QuadForm& f = kernels.quad_form;
  const QBlocking bl = form_blocking(blocking, f);
  if (!b.quads || (a.packed && !a.packed->quads))
    throw std::logic_error("qgemm: operands packed in pairs given to a quad kernel set");
  const bool a_bounded = f.bounded_pairs && f.a_signed, b_bounded = f.bounded_pairs && !f.a_signed;
  if (b.kp % f.group || b.bounded_pairs != b_bounded ||
      (a.packed && (a.packed->kc != bl.kc || a.packed->mc != bl.mc || a.packed->bounded_pairs != a_bounded)))
    throw std::logic_error("qgemm: operands packed for another quad form or blocking");
  if (m <= 0 || n <= 0) return;
  const QTasks tasks = split_tasks(bl, m, n, k, b.panels, pf);
  // One zero point each for A and B: the terms as a row part and a column part.
  const bool a_uniform = a.packed ? a.packed->uniform_zero : a.zero_count == 1;
  const bool uniform = a_uniform && b.uniform_zero;
  thread_local std::vector<int32_t> col_add_scratch;
  std::vector<int32_t>& col_add = col_add_scratch;
  if (uniform) {
    const int32_t za = a.packed ? (m > 0 ? a.packed->row_zero[0] : 0) : a.zero[0] + shift(a.matrix.is_signed, f.a_signed).zero;
    col_add.resize(b.col_term.size());
    for (size_t j = 0; j < col_add.size(); ++j) col_add[j] = int32_t(-uint32_t(za) * uint32_t(b.col_term[j]));
  }

  auto body = [&](size_t lo, size_t hi) {
    thread_local std::vector<uint8_t> packed_a;
    thread_local std::vector<int32_t> row_terms;
    thread_local std::vector<QCorrection> block_corrections;
    if (kernels.begin) kernels.begin();
    packed_a.resize(size_t(bl.mc * bl.kc * 4));
    row_terms.resize(size_t(3 * bl.mc));
    for (auto t = int64_t(lo); t < int64_t(hi); ++t) {
      const int64_t r0 = tasks.row_block(t) * bl.mc, rows = std::min(bl.mc, m - r0);
      const int64_t j0 = tasks.panel_begin(t), j1 = tasks.panel_end(t);
      const int32_t *row_zero = nullptr, *row_sum = nullptr;
      if (a.packed) {
        row_zero = a.packed->row_zero.data() + r0, row_sum = a.packed->row_sum.data() + r0;
      } else {
        a_row_terms(f, a.matrix, k, a.zero, a.zero_count, r0, rows, row_terms.data(), row_terms.data() + bl.mc);
        row_zero = row_terms.data(), row_sum = row_terms.data() + bl.mc;
      }
      int32_t* row_add = row_terms.data() + 2 * bl.mc;
      if (uniform) {
        const int32_t zb = b.n > 0 ? b.col_zero[0] : 0;
        for (int64_t i = 0; i < rows; ++i) row_add[i] = int32_t(-uint32_t(zb) * uint32_t(row_sum[i]));
      }
      // A's block (rows from r0, K quads from q0): prepacked, or packed now;
      // its corrections in [fix_first, fix_last).
      const QCorrection *fix_first = nullptr, *fix_last = nullptr;
      auto a_block = [&](int64_t q0, int64_t kq) -> const uint8_t* {
        if (a.packed) {
          const int64_t at = (r0 / bl.mc) * a.packed->k_blocks + q0 / bl.kc;
          if (a_bounded) {
            fix_first = a.packed->corrections.data() + a.packed->correction_start[size_t(at)];
            fix_last = a.packed->corrections.data() + a.packed->correction_start[size_t(at) + 1];
          }
          return a.packed->bytes.data() + at * a.packed->block;
        }
        pack_a_block(f, a.matrix, k, r0, rows, q0, kq, packed_a.data());
        if (a_bounded) {
          block_corrections.clear();
          bound_a_pairs(f, packed_a.data(), r0, rows, q0, kq, &block_corrections);
          fix_first = block_corrections.data(), fix_last = fix_first + block_corrections.size();
        }
        return packed_a.data();
      };
      const bool one_block = b.kp <= bl.kc;
      const uint8_t* ap = one_block && b.kp > 0 ? a_block(0, b.kp) : nullptr;
      // Columns in chunks of nc panels, each finished (all of K) and handed
      // to tile_done while its sums are still in cache.
      for (int64_t c0 = j0; c0 < j1; c0 += bl.nc) {
        const int64_t c1 = std::min(j1, c0 + bl.nc);
        for (int64_t q0 = 0; q0 < b.kp; q0 += bl.kc) {
          const int64_t kq = std::min(bl.kc, b.kp - q0);
          const bool last = q0 + kq == b.kp;
          if (!one_block) ap = a_block(q0, kq);
          for (int64_t j = c0; j < c1; j += f.panels) {
            const int panels = int(std::min<int64_t>(f.panels, c1 - j));
            const uint8_t* bp = b.bytes.data() + (j * b.kp + q0) * kQuadBytes;
            const int cols = int(std::min<int64_t>(panels * kNR, n - j * kNR));
            for (int64_t i = 0; i < rows; i += f.rows) {
              QuadFix fix{row_zero + i, row_sum + i, b.col_zero.data() + j * kNR, b.col_term.data() + j * kNR};
              if (uniform) fix.row_add = row_add + i, fix.col_add = col_add.data() + j * kNR;
              kernels.gemm_quads(kq, ap + (i / f.rows) * kq * f.rows * 4, bp, b.kp * kQuadBytes, panels,
                                 c + (r0 + i) * ldc + j * kNR, ldc, q0 > 0, int(std::min<int64_t>(f.rows, rows - i)),
                                 cols, last ? &fix : nullptr);
            }
          }
          if (fix_first != fix_last)
            kernels.correct(fix_first, fix_last, b.bytes.data(), b.kp, c, ldc, c0 * kNR, std::min(n, c1 * kNR));
          if (b_bounded) apply_b_corrections(f, b, ap, r0, rows, q0, kq, c0, c1, c, ldc);
        }
        finish_chunk(c, ldc, r0, rows, c0 * kNR, std::min(n, c1 * kNR), b.kp == 0, tile_done);
      }
    }
    if (kernels.end) kernels.end();
  };
  tasks.run(pf, body);
}

}  // namespace onyx::cpu::qgemm_detail
