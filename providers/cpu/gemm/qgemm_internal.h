// qgemm_internal.h: internals of the integer GEMM shared with its tests (not
// part of the provider's interface): run it with a given microkernel, so that
// the tests cover the portable kernel and every ISA's on the same inputs.
#pragma once

#include <algorithm>
#include <functional>

#include "qgemm.h"
#include "qkernel_set.h"

namespace onyx::cpu {

static_assert(qgemm_detail::kNR == 16, "PackedQB's layout (qgemm.h) is written for 16-column panels");

namespace qgemm_detail {

// The set the kernels use on this CPU (AVX-512 VNNI, else AVX2, where present).
const QKernelSet& qkernels_best();
// The set for a product over k: the best, except that short reductions
// (k < 128) take AVX-512 VNNI's set where the best is AMX.
const QKernelSet& qkernels_for(int64_t k);
// The set for a product whose A (pack_qa) or B (pack_qb) is packed once:
// AVX2's bytes with that operand as int8 where qkernels_for(k) is AVX2's
// pairs, else that one.
const QKernelSet& qkernels_for_packed_a(int64_t k);
const QKernelSet& qkernels_for_packed_b(int64_t k);
// The set a packed A or B was packed for (pack_qa and pack_qb fall back to
// pairs where too many of its pairs need corrections).
const QKernelSet& qkernels_for_packed(const PackedQA& a);
const QKernelSet& qkernels_for_packed(const PackedQB& b);

// Cache blocking, in K steps (pairs or quads) and rows; tests shrink them to
// cross every boundary.
struct QBlocking {
  int64_t kc = 128;  // K steps per block: a pair B panel of 8 KiB (quads: 4 panels, 32 KiB) stays in L1
  int64_t mc = 96;   // rows of A packed per block (16 micro-panels, 48 KiB in L2)
  int64_t nc = 16;   // B panels per chunk: 96 x 256 int32 sums (96 KiB) finish in L2
  double min_ops_per_thread = 2.0e6;
};

// Where the driver takes A from: an 8-bit matrix packed block by block as it
// goes, or a PackedQA packed once with the same blocking.
struct QASource {
  QMatrix matrix;
  const int32_t* zero = nullptr;
  int64_t zero_count = 0;
  const PackedQA* packed = nullptr;
};

// A product as tasks of a row block (mc rows) x a group of B's panels:
// threads only where each gets enough work to pay for waking it. Where the
// columns are split, B's panels form one group per thread and tasks run
// group by group, so that the pool's contiguous share of tasks per thread
// covers every row block (whose sizes differ: 128 rows are 96 + 32) for an
// equal share of the columns. Task t takes row block row_block(t) and
// panels [first_panel(t), first_panel(t + 1 in its group)).
struct QTasks {
  int64_t m_blocks = 0, n_groups = 1, panels = 0, count = 0;
  bool parallel = false;

  int64_t row_block(int64_t t) const { return t % m_blocks; }
  int64_t group(int64_t t) const { return t / m_blocks; }
  int64_t panel_begin(int64_t t) const { return group(t) * panels / n_groups; }
  int64_t panel_end(int64_t t) const { return (group(t) + 1) * panels / n_groups; }

  // body(first, last) over all tasks, on the pool where parallel.
  void run(const ParallelFor& pf, const std::function<void(size_t, size_t)>& body) const {
    if (parallel)
      pf.run(size_t(count), body);
    else
      body(0, size_t(count));
  }
};
QTasks split_tasks(const QBlocking& blocking, int64_t m, int64_t n, int64_t k, int64_t panels, const ParallelFor& pf);

// A finished chunk of C (rows [r0, r0 + rows) x columns [c0, c1)): zeros
// when K is empty, then handed to tile_done.
inline void finish_chunk(int32_t* c, int64_t ldc, int64_t r0, int64_t rows, int64_t c0, int64_t c1, bool empty_k,
                         const QTileDone& tile_done) {
  if (empty_k)
    for (int64_t i = r0; i < r0 + rows; ++i) std::fill(c + i * ldc + c0, c + i * ldc + c1, 0);
  if (tile_done) tile_done(r0, r0 + rows, c0, c1);
}
QTasks split_tasks(const QBlocking& blocking, int64_t m, int64_t n, int64_t k, int64_t panels, const ParallelFor& pf);

void qgemm_with(const QKernelSet& kernels, const QBlocking& blocking, int64_t m, int64_t n, int64_t k,
                const QASource& a, const PackedQB& b, int32_t* c, int64_t ldc, const QTileDone& tile_done,
                const ParallelFor& parallel);
std::shared_ptr<PackedQA> pack_qa_with(const QKernelSet& kernels, const QBlocking& blocking, const QMatrix& a,
                                       int64_t m, int64_t k, const int32_t* zero, int64_t zero_count);
void pack_qb_with(const QKernelSet& kernels, const QMatrix& b, int64_t k, int64_t n, const int32_t* zero,
                  int64_t zero_count, PackedQB* out, const ParallelFor& parallel);

// The quad layout's half (qgemm_quads.cpp); qgemm_with and the packers above
// call these for a set whose layout is quads.
void qgemm_quads(const QKernelSet& kernels, const QBlocking& blocking, int64_t m, int64_t n, int64_t k,
                 const QASource& a, const PackedQB& b, int32_t* c, int64_t ldc, const QTileDone& tile_done,
                 const ParallelFor& parallel);
void pack_qa_quads(const QuadForm& form, const QBlocking& blocking, const QMatrix& a, int64_t m, int64_t k, const int32_t* zero,
                   int64_t zero_count, PackedQA* out);
void pack_qb_quads(const QKernelSet& kernels, const QMatrix& b, int64_t k, int64_t n, const int32_t* zero,
                   int64_t zero_count, PackedQB* out, const ParallelFor& parallel);

}  // namespace qgemm_detail
}  // namespace onyx::cpu
