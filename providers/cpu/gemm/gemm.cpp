// gemm.cpp: the GEMM driver (blocking, packing, threading) and ISA dispatch.
//
// Two strategies, both feeding MR x NR tiles to the ISA's microkernel:
//
// blocked() for many rows, the BLIS loop nest for C += op(A) op(B):
//   jc: N in steps of NC      B panel (KC x NC, packed once per (jc, pc))
//   pc: K in steps of KC        beta applies on the first KC block only
//     region 1 (parallel): pack the B panel (unless B was packed once)
//     region 2 (parallel): tasks = (block of <= MC rows) x (range of NR panels);
//       each packs its A rows (or, given few columns, reads them in place),
//       then walks its B micro-panels (outer) and A micro-panels (inner), so
//       a KC x NR B micro-panel is reused from L1/L2 by all the A
//       micro-panels of the block, and the MC x KC A block stays in L2.
//
// small_m() for few rows (activations x weights in inference: tokens x K):
//   each task owns a block of C's rows or columns, packs its (small) A
//   itself and reads B in place (B packed once, or a few rows), so there is
//   one parallel region and no copy of B. Measured faster than blocked() up
//   to ~512 rows on a Zen 4 VM, as fast on a Zen 3 one.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "gemm_internal.h"
#include "target_clones.h"

namespace onyx::cpu {
namespace gemm_detail {

float* AlignedBuffer::reserve(size_t n) {
  if (n > size_) {
    reset();
    data_ = static_cast<float*>(::operator new[](n * sizeof(float), std::align_val_t{64}));
    size_ = n;
  }
  return data_;
}

void AlignedBuffer::reset() {
  if (data_) ::operator delete[](data_, std::align_val_t{64});
  data_ = nullptr;
  size_ = 0;
}

namespace {

int64_t ceil_div(int64_t x, int64_t y) { return (x + y - 1) / y; }
int64_t round_up(int64_t x, int64_t y) { return ceil_div(x, y) * y; }
// Start of part i when [0, total) is cut into `parts` near-equal ranges.
int64_t split(int64_t total, int64_t parts, int64_t i) { return total * i / parts; }

// Packing workspace, cached per calling thread so that repeated calls do not
// pay for fresh pages. `busy` covers re-entry: a work-stealing pool may run
// another sgemm on this thread while one of ours waits in a parallel region.
struct Workspace {
  AlignedBuffer a, b;
  bool busy = false;
};

class WorkspaceLease {
 public:
  WorkspaceLease() {
    // Two deep: blocked() holds one for its B panel while its tasks, on
    // this thread too, lease their A blocks.
    static thread_local Workspace cached[2];
    for (Workspace& w : cached)
      if (!w.busy) {
        ws_ = &w;
        break;
      }
    if (!ws_) {
      own_ = std::make_unique<Workspace>();
      ws_ = own_.get();
    }
    ws_->busy = true;
  }
  ~WorkspaceLease() { ws_->busy = false; }
  WorkspaceLease(const WorkspaceLease&) = delete;
  WorkspaceLease& operator=(const WorkspaceLease&) = delete;
  Workspace* operator->() const { return ws_; }

 private:
  Workspace* ws_ = nullptr;
  std::unique_ptr<Workspace> own_;
};

// body(begin, end) over [0, n): inline, or through pf as a std::function
// holding one reference (a lambda with its captures would be copied to the
// heap on every call).
template <class Body>
void run_parallel(const ParallelFor& pf, size_t threads, size_t n, const Body& body) {
  if (n == 0) return;
  if (threads <= 1 || n == 1 || !pf.run) {
    body(0, n);
    return;
  }
  pf.run(n, [&body](size_t b, size_t e) { body(b, e); });
}

size_t effective_threads(const ParallelFor& pf, const DriverOptions& opt, int64_t m, int64_t n, int64_t k) {
  if (!pf.run || pf.threads <= 1) return 1;
  // Work in FLOPs, or for a few rows the reading of B, which then bounds the
  // time (one row x 784 x 256 from L2: 7 us on one thread, 4.3 per half on
  // two, on a 2-core Sapphire Rapids VM).
  const double flops = 2.0 * double(m) * double(n) * double(k);
  const double b_bytes = 4.0 * double(n) * double(k);
  const double useful = std::max(flops, opt.flops_per_b_byte * b_bytes) / opt.min_flops_per_thread;
  return useful < 1.0 ? 1 : std::min(pf.threads, size_t(useful + 0.5));
}

// C = beta * C, for the cases with no product to add (k == 0 or alpha == 0).
void scale_c(int64_t m, int64_t n, float beta, float* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    float* ci = c + i * ldc;
    if (beta == 0.0f)
      std::fill(ci, ci + n, 0.0f);
    else
      for (int64_t j = 0; j < n; ++j) ci[j] *= beta;
  }
}

// The part of e the microkernels apply at their store: all of it but the
// activation function, and the residual only when no activation precedes it.
TileEpilogue tile_part(const GemmEpilogue& e) {
  TileEpilogue t;
  t.bias = e.bias;
  t.relu = e.relu;
  t.row_bias = e.row_bias;
  t.clamp = e.clamps();
  t.lo = e.lo;
  t.hi = e.hi;
  if (!e.activation) {
    t.residual = e.residual;
    t.ldr = e.ldr;
  }
  return t;
}

bool empty(const TileEpilogue& t) { return !t.bias && !t.relu && !t.row_bias && !t.clamp && !t.residual; }

// The epilogue over a rows x cols block of C whose first element is C's
// (r0, c0): all of it, or with tile_part_done what tile_part() leaves (the
// activation, then the residual). The four bias/Relu forms are separate
// loops so that each vectorizes; a row bias and a clamp one more.
ONYX_CLONES void apply_epilogue(const GemmEpilogue& e, float* c, int64_t ldc, int64_t rows, int64_t cols,
                                int64_t r0, int64_t c0, bool tile_part_done = false) {
  if (tile_part_done) {
    if (!e.activation) return;
    for (int64_t i = 0; i < rows; ++i) {
      float* ci = c + i * ldc;
      e.activation(ci, ci, size_t(cols), e.activation_param);
      if (e.residual) {
        const float* ri = e.residual + (r0 + i) * e.ldr + c0;
        for (int64_t j = 0; j < cols; ++j) ci[j] += ri[j];
      }
    }
    return;
  }
  const float* bias = e.bias ? e.bias + c0 : nullptr;
  for (int64_t i = 0; i < rows; ++i) {
    float* ci = c + i * ldc;
    if (bias && e.relu)
      for (int64_t j = 0; j < cols; ++j) {
        const float v = ci[j] + bias[j];
        ci[j] = v < 0.0f ? 0.0f : v;
      }
    else if (bias)
      for (int64_t j = 0; j < cols; ++j) ci[j] += bias[j];
    else if (e.relu)
      for (int64_t j = 0; j < cols; ++j) ci[j] = ci[j] < 0.0f ? 0.0f : ci[j];
    if (e.row_bias || e.clamps()) {
      const float add = e.row_bias ? e.row_bias[r0 + i] : 0.0f, lo = e.lo, hi = e.hi;
      for (int64_t j = 0; j < cols; ++j) {
        const float v = ci[j] + add;
        const float l = v < lo ? lo : v;  // NaN compares false: kept
        ci[j] = l > hi ? hi : l;
      }
    }
    if (e.activation) e.activation(ci, ci, size_t(cols), e.activation_param);
    if (e.residual) {
      const float* ri = e.residual + (r0 + i) * e.ldr + c0;
      for (int64_t j = 0; j < cols; ++j) ci[j] += ri[j];
    }
  }
}

struct Gemm {
  const KernelSet& ks;
  bool trans_a;
  int64_t m, n, k;
  float alpha;
  const float* a;
  int64_t lda;
  BSource src;
  float beta;
  float* c;
  int64_t ldc;
  int64_t kc_max;  // KC, or the PackedB's
  DriverOptions opt;
  GemmEpilogue epilogue;
  TileEpilogue tile_epilogue;  // tile_part(epilogue)
  bool tile_epilogue_empty;

  const float* a_at(int64_t i0, int64_t k0) const { return trans_a ? a + k0 * lda + i0 : a + i0 * lda + k0; }
  // A can be read in place, by the set's DirectKernels (no pack_a pass);
  // small_m() still packs it for tasks with many columns.
  bool direct_a() const { return !trans_a && ks.direct[1]; }
  // The epilogue's tile part moved to the tile at (row, col), into `ep`, when
  // K block pc is the last (else none: null).
  const TileEpilogue* epilogue_at(int64_t row, int64_t col, int64_t pc, int64_t kc, TileEpilogue& ep) const {
    if (tile_epilogue_empty || pc + kc < k) return nullptr;
    ep = tile_epilogue;
    if (ep.bias) ep.bias += col;
    if (ep.row_bias) ep.row_bias += row;
    if (ep.residual) ep.residual += row * ep.ldr + col;
    return &ep;
  }
  // The tile of C at (row, col) from K block pc: A's rows from the packed
  // micro-panel `apanel` or, when it is null (direct_a()), in place; B's from
  // bp (row stride bs).
  // The last K block's tile gets the epilogue's tile part.
  void tile(int64_t row, int64_t rows, int64_t col, int64_t cols, int64_t pc, int64_t kc, const float* apanel,
            const float* bp, int64_t bs) const {
    float* ct = c + row * ldc + col;
    TileEpilogue ep;
    const TileEpilogue* e = epilogue_at(row, col, pc, kc, ep);
    if (!apanel)
      direct_tile_kernel(ks, rows, cols)(kc, a_at(row, pc), lda, bp, bs, ct, ldc, alpha, beta_for(pc), cols, e);
    else
      tile_kernel(ks, rows, cols)(kc, apanel, bp, bs, ct, ldc, alpha, beta_for(pc), cols, e);
  }
  // `panels` full tiles side by side from column panel q, A in place, B's
  // panel p at bp + p * ps: one DirectPanelsKernel call.
  void tiles(int64_t row, int64_t rows, int64_t q, int64_t panels, int64_t pc, int64_t kc, const float* bp, int64_t bs,
             int64_t ps) const {
    const int64_t col = q * ks.nr;
    TileEpilogue ep;
    ks.direct_panels[rows](kc, a_at(row, pc), lda, bp, bs, ps, c + row * ldc + col, ldc, alpha, beta_for(pc), panels,
                           epilogue_at(row, col, pc, kc, ep));
  }
  float beta_for(int64_t pc) const { return pc == 0 ? beta : 1.0f; }  // later K blocks accumulate
  // Rows [r0, r1) x columns [c0, c0 + cols) of C are final after K block pc:
  // the rest of the epilogue (an activation function) runs on them. Called
  // once for a task's whole block, not per NR panel: the activation loops
  // run several vectors at a time, and 16-float rows would leave them idle.
  void finish(int64_t pc, int64_t kc, int64_t r0, int64_t r1, int64_t c0, int64_t cols) const {
    if (epilogue.activation && pc + kc >= k)
      apply_epilogue(epilogue, c + r0 * ldc + c0, ldc, r1 - r0, cols, r0, c0, /*tile_part_done=*/true);
  }
};

// Few rows (m <= small_m). Each task owns a block of C (a range of its rows
// or of its NR panels) and does all of K by itself: one parallel region in
// all. B is read in place where it can be (row-major, full panel): with few
// rows each B micro-panel serves only a few microkernel calls, and packing it
// would cost about as much as the product. Otherwise (B transposed, or the
// last partial panel) one KC x NR panel at a time is packed, into the task's
// own buffer.
void small_m(const Gemm& g, const ParallelFor& pf, size_t threads) {
  const KernelSet& ks = g.ks;
  const int64_t MR = ks.mr, NR = ks.nr;
  const int64_t mpan = ceil_div(g.m, MR), npan = ceil_div(g.n, NR);
  // Threads split the rows when each still gets a few micro-panels (then
  // only reads of B are shared, nothing is done twice), else the columns
  // (then each task packs all of A, which is small).
  const int64_t T = int64_t(threads);
  // A transposed B is packed by each task for the panels it computes: split
  // by rows, every task would pack all of it (a training step's X * W^T,
  // W 256 x 784: twice 0.8 MB), so split the columns when each task still
  // gets a panel and B outweighs A.
  const bool b_packed_per_task = g.src.trans && !g.src.packed && npan >= T && g.n >= g.m;
  // A small A and a wider B: split the columns too, so that each core reads
  // its part of B once and writes its own ranges of C's rows, and reads (or
  // packs) all of A, which costs little (MobileNetV2's 16 -> 96 pointwise
  // layer on 112 x 112, 2 threads: 76 -> 113 GFLOP/s; ViT's 197 x 768 x 768,
  // with 600 KB of A, ran 7% slower split so). Not when B is small enough
  // for every core to read all of it from its own cache: then rows are
  // split, and each core writes whole rows of C, as the elementwise kernels
  // and optimizer updates that read C next split it (a weight gradient
  // stays in the cache of the core that updates it).
  const bool b_wide = g.n > g.m && g.m * g.k * int64_t(sizeof(float)) <= g.opt.small_m_cols_split_a_bytes &&
                      g.n * g.k * int64_t(sizeof(float)) > g.opt.small_m_shared_b_bytes;
  const bool rows_split = mpan >= 4 * T && !b_packed_per_task && !b_wide;
  const int64_t nt = rows_split ? 1 : std::min(npan, T);
  const int64_t mt = rows_split ? T : std::min(mpan, ceil_div(T, nt));
  // A row split cuts rows, not panels, in equal parts (64 rows on 2 threads:
  // 32 each, a 2-row panel last, instead of 6 panels against 5).
  auto rows_of = [&](int64_t i) { return rows_split ? split(g.m, mt, i) : std::min(g.m, split(mpan, mt, i) * MR); };
  const int64_t block_rows = std::max<int64_t>(1, ks.mc / MR) * MR;  // an A block fits L2
  run_parallel(pf, threads, size_t(mt * nt), [&](size_t t0, size_t t1) {
    WorkspaceLease ws;  // this worker's own
    for (int64_t t = int64_t(t0); t < int64_t(t1); ++t) {
      const int64_t r0 = rows_of(t / nt), r1 = rows_of(t / nt + 1);
      const int64_t q0 = split(npan, nt, t % nt), q1 = split(npan, nt, t % nt + 1);
      // A in place, unless the task has enough column panels to repay the
      // packing: then each A micro-panel is read as one stream.
      const bool pack_a = !g.direct_a() || (q1 - q0) * NR >= g.opt.pack_a_cols;
      float* abuf = pack_a ? ws->a.reserve(size_t(round_up(std::min(r1 - r0, block_rows), MR) * g.kc_max)) : nullptr;
      float* bbuf = ws->b.reserve(size_t(g.kc_max * NR));
      for (int64_t pc = 0; pc < g.k; pc += g.kc_max) {
        const int64_t kc = std::min(g.kc_max, g.k - pc);
        for (int64_t rb = r0; rb < r1; rb += block_rows) {
          const int64_t re = std::min(r1, rb + block_rows);
          if (pack_a) ks.pack_a(g.trans_a, g.a_at(rb, pc), g.lda, re - rb, kc, abuf);
          // Full panels of a B read as stored (in place or packed once),
          // with A in place: each row tile across a group of panels in one
          // kernel call, the group's B (at most panels_group_bytes) kept in
          // L1 for the block's row tiles.
          int64_t q = q0;
          if (!pack_a && ks.direct_panels[1] && (g.src.packed || !g.src.trans)) {
            const int64_t full_end = std::min(q1, g.n / NR);
            const int64_t group = std::max<int64_t>(1, g.opt.panels_group_bytes / (kc * NR * int64_t(sizeof(float))));
            while (q < full_end) {
              const int64_t panels = std::min(group, full_end - q);
              const float* bp;
              int64_t bs, ps;
              if (g.src.packed) {
                bp = g.src.packed->data.data() + pc * g.src.packed->n_padded + q * kc * NR, bs = NR, ps = kc * NR;
              } else {
                bp = g.src.at(pc, q * NR), bs = g.src.ldb, ps = NR;
              }
              for (int64_t row = rb; row < re; row += MR) g.tiles(row, std::min(MR, re - row), q, panels, pc, kc, bp, bs, ps);
              q += panels;
            }
          }
          for (; q < q1; ++q) {
            const int64_t cols = std::min(NR, g.n - q * NR);
            const float* bp = bbuf;
            int64_t bs = NR;
            if (g.src.packed) {
              bp = g.src.packed->data.data() + pc * g.src.packed->n_padded + q * kc * NR;
            } else if (!g.src.trans && cols == NR) {
              bp = g.src.at(pc, q * NR);
              bs = g.src.ldb;
            } else {
              ks.pack_b(g.src.trans, g.src.at(pc, q * NR), g.src.ldb, kc, cols, bbuf);
            }
            for (int64_t row = rb; row < re; row += MR)
              g.tile(row, std::min(MR, re - row), q * NR, cols, pc, kc, abuf ? abuf + (row - rb) * kc : nullptr, bp, bs);
          }
          if (q1 > q0) g.finish(pc, kc, rb, re, q0 * NR, std::min(q1 * NR, g.n) - q0 * NR);
        }
      }
    }
  });
}

// One column of B (n == 1) or one row of A (m == 1): a matrix-vector
// product, reading the matrix once in place. The tiled paths pack first,
// which for one vector is a second pass over the matrix with nothing to
// reuse (a Conv whose output is one pixel, 50 x 65720 weights per image:
// 2.6x longer; 1 x 2048 x 512 with B row-major: 3 -> 10 GFLOP/s).
// 8-float vectors, loaded by memcpy into locals: GCC's AVX2 clone moved
// 16-float ones through the stack (a 100 x 512 matrix-vector product ran at
// 3.5 GFLOP/s).
typedef float Floats8 __attribute__((vector_size(32)));

// out[i - i0] = sum over j < k of a[i * lda + j] * x[j], for rows i in [i0, i1).
ONYX_CLONES void dot_rows(const float* a, int64_t lda, const float* x, int64_t k, int64_t i0, int64_t i1, float* out) {
  for (int64_t i = i0; i < i1; ++i) {
    const float* r = a + i * lda;
    Floats8 s[4] = {}, u, v;  // four chains of adds
    int64_t j = 0;
    for (; j + 32 <= k; j += 32)
      for (int q = 0; q < 4; ++q) {
        std::memcpy(&u, r + j + 8 * q, sizeof u);
        std::memcpy(&v, x + j + 8 * q, sizeof v);
        s[q] += u * v;
      }
    s[0] += s[1] + (s[2] + s[3]);
    float sum = 0.0f;
    for (int l = 0; l < 8; ++l) sum += s[0][l];
    for (; j < k; ++j) sum += r[j] * x[j];
    out[i - i0] = sum;
  }
}

// out[i - i0] = sum over j < k of a[j * lda + i] * x[j] (A transposed), for i in [i0, i1).
ONYX_CLONES void axpy_rows(const float* a, int64_t lda, const float* x, int64_t k, int64_t i0, int64_t i1, float* out) {
  std::fill(out, out + (i1 - i0), 0.0f);
  // Four rows of A per pass over out: one load and store of out per 4 FMAs.
  int64_t j = 0;
  for (; j + 4 <= k; j += 4) {
    const float *r0 = a + j * lda, *r1 = r0 + lda, *r2 = r1 + lda, *r3 = r2 + lda;
    const float x0 = x[j], x1 = x[j + 1], x2 = x[j + 2], x3 = x[j + 3];
    int64_t i = i0;
    for (; i + 8 <= i1; i += 8) {
      Floats8 u0, u1, u2, u3, o;
      std::memcpy(&u0, r0 + i, sizeof u0);
      std::memcpy(&u1, r1 + i, sizeof u1);
      std::memcpy(&u2, r2 + i, sizeof u2);
      std::memcpy(&u3, r3 + i, sizeof u3);
      std::memcpy(&o, out + (i - i0), sizeof o);
      o += x0 * u0 + x1 * u1 + x2 * u2 + x3 * u3;
      std::memcpy(out + (i - i0), &o, sizeof o);
    }
    for (; i < i1; ++i) out[i - i0] += x0 * r0[i] + x1 * r1[i] + x2 * r2[i] + x3 * r3[i];
  }
  for (; j < k; ++j) {
    const float* r = a + j * lda;
    const float xj = x[j];
    for (int64_t i = i0; i < i1; ++i) out[i - i0] += xj * r[i];
  }
}

// y = op(M) x, one output per row of op(M), the matrix read once in place:
// C's column when n == 1 (M = op(A)), or C's row when m == 1 (M = op(B)^T,
// so a row-major B is read row after row). The outputs are C's elements
// y[i * y_step]; those of [i0, i1) form a block of C at (row0, col0).
struct MatrixVector {
  const float* mat;
  int64_t ld;
  bool trans;       // op(M)(i, j) = mat[j * ld + i]
  const float* x;   // contiguous, len floats
  int64_t len, rows;
  int64_t y_step;
  bool y_is_row;    // C's row (m == 1) rather than its column
};

void matrix_vector(const Gemm& g, const MatrixVector& mv, const ParallelFor& pf, size_t threads) {
  const int64_t T = std::min<int64_t>(int64_t(threads), mv.rows);
  run_parallel(pf, size_t(T), size_t(T), [&](size_t t0, size_t t1) {
    float sums[1024];  // 4 KB of outputs stay in L1 while the matrix streams past
    for (int64_t t = int64_t(t0); t < int64_t(t1); ++t)
      for (int64_t i0 = split(mv.rows, T, t), end = split(mv.rows, T, t + 1); i0 < end; i0 += 1024) {
        const int64_t i1 = std::min<int64_t>(end, i0 + 1024);
        (mv.trans ? axpy_rows : dot_rows)(mv.mat, mv.ld, mv.x, mv.len, i0, i1, sums);
        for (int64_t i = i0; i < i1; ++i) {
          float* ci = g.c + i * mv.y_step;
          *ci = g.beta == 0.0f ? g.alpha * sums[i - i0] : g.alpha * sums[i - i0] + g.beta * *ci;
        }
        if (g.epilogue.empty()) continue;  // no tiles here: all of it
        if (mv.y_is_row)
          apply_epilogue(g.epilogue, g.c + i0, g.ldc, 1, i1 - i0, 0, i0);
        else
          apply_epilogue(g.epilogue, g.c + i0 * g.ldc, g.ldc, i1 - i0, 1, i0, 0);
      }
  });
}

// One column of C: x is B's column, gathered when strided.
void single_column(const Gemm& g, const ParallelFor& pf, size_t threads) {
  WorkspaceLease ws;
  const float* x = g.src.b;
  if (!g.src.trans && g.src.ldb != 1) {
    float* gathered = ws->b.reserve(size_t(g.k));
    for (int64_t j = 0; j < g.k; ++j) gathered[j] = g.src.b[j * g.src.ldb];
    x = gathered;
  }
  matrix_vector(g, {g.a, g.lda, g.trans_a, x, g.k, g.m, g.ldc, false}, pf, threads);
}

// One row of C: x is A's row, gathered when strided (A transposed); op(B)^T
// is B itself read transposed, or a transposed B read row by row.
void single_row(const Gemm& g, const ParallelFor& pf, size_t threads) {
  WorkspaceLease ws;
  const float* x = g.a;
  if (g.trans_a && g.lda != 1) {
    float* gathered = ws->a.reserve(size_t(g.k));
    for (int64_t j = 0; j < g.k; ++j) gathered[j] = g.a[j * g.lda];
    x = gathered;
  }
  matrix_vector(g, {g.src.b, g.src.ldb, !g.src.trans, x, g.k, g.n, 1, true}, pf, threads);
}

// Many rows: the BLIS loop nest described at the top, B packed once per
// (jc, pc) and shared by all threads; each task packs its own block of A
// rows just before its tiles, so the block is still in L2 when they read it.
void blocked(const Gemm& g, const ParallelFor& pf, size_t threads) {
  const KernelSet& ks = g.ks;
  const int64_t MR = ks.mr, NR = ks.nr, KC = g.kc_max;
  const int64_t NC = ks.nc;  // a multiple of NR (asserted in the kernel files)
  const int64_t T = int64_t(threads);
  const int64_t mpan = ceil_div(g.m, MR), block_panels = std::max<int64_t>(1, ks.mc / MR);
  const PackedB* packed = g.src.packed;

  WorkspaceLease ws;  // the B panel, shared by the tasks
  float* bbuf = packed ? nullptr : ws->b.reserve(size_t(std::min(KC, g.k) * std::min(round_up(g.n, NR), NC)));

  for (int64_t jc = 0; jc < g.n; jc += NC) {
    const int64_t nc = std::min(NC, g.n - jc);
    const int64_t npan = ceil_div(nc, NR);
    // Tasks: (block of <= MC rows) x (range of NR panels); with several
    // threads each gets an equal share, splitting N too when there are too
    // few row blocks to go round.
    int64_t mt = ceil_div(mpan, block_panels), nt = 1;
    if (T > 1) {
      if (mt >= T)
        mt = std::min(mpan, round_up(mt, T));
      else
        nt = std::min(npan, ceil_div(T, mt));
    }
    for (int64_t pc = 0; pc < g.k; pc += KC) {
      const int64_t kc = std::min(KC, g.k - pc);
      const float* bpanel = packed ? packed->data.data() + pc * packed->n_padded + (jc / NR) * kc * NR : bbuf;
      if (!packed) run_parallel(pf, threads, size_t(std::min(T, npan)), [&](size_t t0, size_t t1) {
        const auto tb = int64_t(std::min(T, npan));
        for (auto t = int64_t(t0); t < int64_t(t1); ++t) {
          const int64_t q0 = split(npan, tb, t), q1 = split(npan, tb, t + 1);
          const int64_t cols = std::min(q1 * NR, nc) - q0 * NR;
          ks.pack_b(g.src.trans, g.src.at(pc, jc + q0 * NR), g.src.ldb, kc, cols, bbuf + q0 * NR * kc);
        }
      });
      run_parallel(pf, threads, size_t(mt * nt), [&](size_t t0, size_t t1) {
        WorkspaceLease own;  // this worker's A block
        for (auto t = int64_t(t0); t < int64_t(t1); ++t) {
          const int64_t p0 = split(mpan, mt, t / nt), p1 = split(mpan, mt, t / nt + 1);
          const int64_t q0 = split(npan, nt, t % nt), q1 = split(npan, nt, t % nt + 1);
          if (p1 <= p0 || q1 <= q0) continue;
          const int64_t r0 = p0 * MR, r1 = std::min(p1 * MR, g.m);
          // As in small_m(): A in place only for a task with few columns.
          float* abuf = nullptr;
          if (!g.direct_a() || (q1 - q0) * NR >= g.opt.pack_a_cols) {
            abuf = own->a.reserve(size_t((p1 - p0) * MR * kc));
            ks.pack_a(g.trans_a, g.a_at(r0, pc), g.lda, r1 - r0, kc, abuf);
          }
          for (int64_t q = q0; q < q1; ++q) {
            const float* bp = bpanel + q * kc * NR;
            const int64_t cols = std::min(NR, nc - q * NR);
            for (int64_t p = p0; p < p1; ++p)
              g.tile(p * MR, std::min(MR, g.m - p * MR), jc + q * NR, cols, pc, kc,
                     abuf ? abuf + (p - p0) * MR * kc : nullptr, bp, NR);
          }
          g.finish(pc, kc, r0, r1, jc + q0 * NR, std::min(q1 * NR, nc) - q0 * NR);
        }
      });
    }
  }
}

}  // namespace

void driver(const KernelSet& ks, const DriverOptions& opt, bool trans_a, int64_t m, int64_t n, int64_t k,
            float alpha, const float* a, int64_t lda, const BSource& src, float beta, float* c, int64_t ldc,
            const ParallelFor& pf, const GemmEpilogue& epilogue) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0 || alpha == 0.0f) {
    scale_c(m, n, beta, c, ldc);
    if (!epilogue.empty()) apply_epilogue(epilogue, c, ldc, m, n, 0, 0);
    return;
  }
  const TileEpilogue tile_ep = tile_part(epilogue);
  const Gemm g{ks, trans_a, m, n, k, alpha, a, lda, src, beta, c, ldc,
               src.packed ? src.packed->kc : ks.kc, opt, epilogue, tile_ep, empty(tile_ep)};
  const size_t threads = effective_threads(pf, opt, m, n, k);
  // small_m() reads B in place: strided rows that every tile of a panel
  // reads again, so past a few tiles blocked() packs B once instead; and
  // rows a multiple of 4 KB apart fall into a few cache sets, where a KC x
  // NR panel no longer stays in L1 or even L2 (64 x 2048 x 512: 31 GFLOP/s
  // in small_m(), 54 in blocked()).
  const bool b_in_place = !src.packed && !src.trans;
  const bool b_rows_alias = b_in_place && src.ldb % opt.aliasing_ldb == 0;
  if (n == 1 && !src.packed)
    single_column(g, pf, threads);
  else if (m == 1 && !src.packed)
    single_row(g, pf, threads);
  else if (m <= opt.small_m && !b_rows_alias && !(b_in_place && m > opt.b_in_place_rows))
    small_m(g, pf, threads);
  else
    blocked(g, pf, threads);
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::avx512:
      return "avx512";
    case Isa::avx2:
      return "avx2";
    default:
      return "generic";
  }
}

bool isa_supported(Isa isa) {
  switch (isa) {
    case Isa::generic:
      return true;
#ifdef ONYX_GEMM_X86_KERNELS
    case Isa::avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::avx512:
      // The kernel file is built with F, BW, VL and FMA; the compiler may use any of them.
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx2") &&
             __builtin_cpu_supports("fma");
#endif
    default:
      return false;
  }
}

Isa best_isa() {
  static const Isa best = [] {
    if (const char* env = std::getenv("ONYX_SGEMM_ISA")) {
      for (Isa isa : {Isa::generic, Isa::avx2, Isa::avx512})
        if (std::strcmp(env, isa_name(isa)) == 0 && isa_supported(isa)) return isa;
    }
    for (Isa isa : {Isa::avx512, Isa::avx2})
      if (isa_supported(isa)) return isa;
    return Isa::generic;
  }();
  return best;
}

const KernelSet& kernel_set(Isa isa) {
  switch (isa) {
#ifdef ONYX_GEMM_X86_KERNELS
    case Isa::avx512:
      return kernels_avx512();
    case Isa::avx2:
      return kernels_avx2();
#endif
    default:
      return kernels_generic();
  }
}

void sgemm_with_isa(Isa isa, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                    float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
                    float beta, float* c, int64_t ldc, const ParallelFor& parallel, const GemmEpilogue& epilogue) {
  BSource src;
  src.trans = trans_b;
  src.b = b;
  src.ldb = ldb;
  driver(kernel_set(isa), DriverOptions{}, trans_a, m, n, k, alpha, a, lda, src, beta, c, ldc, parallel, epilogue);
}

std::shared_ptr<PackedB> pack_b_with_isa(Isa isa, bool trans_b, int64_t k, int64_t n,
                                         const float* b, int64_t ldb) {
  return pack_b_with_kernels(kernel_set(isa), trans_b, k, n, b, ldb);
}

std::shared_ptr<PackedB> pack_b_with_kernels(const KernelSet& ks, bool trans_b, int64_t k, int64_t n,
                                             const float* b, int64_t ldb) {
  auto packed = std::make_shared<PackedB>();
  packed->isa = ks.isa;
  packed->k = k;
  packed->n = n;
  packed->kc = ks.kc;
  packed->n_padded = round_up(std::max<int64_t>(n, 1), ks.nr);
  float* dst = packed->data.reserve(size_t(std::max<int64_t>(k, 1) * packed->n_padded));
  for (int64_t k0 = 0; k0 < k; k0 += ks.kc) {
    const int64_t kb = std::min(ks.kc, k - k0);
    const float* from = trans_b ? b + k0 : b + k0 * ldb;
    ks.pack_b(trans_b, from, ldb, kb, n, dst + k0 * packed->n_padded);
  }
  return packed;
}

}  // namespace gemm_detail

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
           const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
           int64_t ldc, const ParallelFor& parallel, const GemmEpilogue& epilogue) {
  gemm_detail::sgemm_with_isa(gemm_detail::best_isa(), trans_a, trans_b, m, n, k, alpha, a, lda,
                              b, ldb, beta, c, ldc, parallel, epilogue);
}

std::shared_ptr<PackedB> pack_b(bool trans_b, int64_t k, int64_t n, const float* b, int64_t ldb) {
  return gemm_detail::pack_b_with_isa(gemm_detail::best_isa(), trans_b, k, n, b, ldb);
}

int64_t packed_b_k(const PackedB& b) { return b.k; }
int64_t packed_b_n(const PackedB& b) { return b.n; }

void sgemm_packed(bool trans_a, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                  int64_t lda, const PackedB& b, float beta, float* c, int64_t ldc,
                  const ParallelFor& parallel, const GemmEpilogue& epilogue) {
  if (b.k != k || b.n != n)
    throw std::invalid_argument("sgemm_packed: B was packed as " + std::to_string(b.k) + "x" +
                                std::to_string(b.n) + ", called with k=" + std::to_string(k) +
                                " n=" + std::to_string(n));
  gemm_detail::BSource src;
  src.packed = &b;
  gemm_detail::driver(gemm_detail::kernel_set(b.isa), gemm_detail::DriverOptions{}, trans_a, m, n, k,
                      alpha, a, lda, src, beta, c, ldc, parallel, epilogue);
}

const char* sgemm_isa() { return gemm_detail::kernel_set(gemm_detail::best_isa()).name; }

}  // namespace onyx::cpu
