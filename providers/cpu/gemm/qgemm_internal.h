// qgemm_internal.h: internals of the integer GEMM shared with its tests (not
// part of the provider's interface): run it with a given microkernel, so that
// the tests cover the portable kernel and every ISA's on the same inputs.
#pragma once

#include "qgemm.h"
#include "qkernel_set.h"

namespace onyx::cpu {

struct PackedQB {
  int64_t k = 0, n = 0;
  int64_t kp = 0;       // K pairs: ceil(k / 2)
  int64_t panels = 0;   // ceil(n / kNR); panel j: kp steps of kNR int16 pairs
  std::unique_ptr<int16_t[]> data;
};

namespace qgemm_detail {

QMicroKernel qkernel_generic();
// The kernel qgemm uses on this CPU.
QMicroKernel qkernel_best();

// Cache blocking, in K pairs and rows; tests shrink them to cross every boundary.
struct QBlocking {
  int64_t kc = 128;  // K pairs per block: a B sub-panel of 8 KiB stays in L1
  int64_t mc = 96;   // rows of A packed per block (16 micro-panels, 48 KiB in L2)
  double min_ops_per_thread = 2.0e6;
};

void qgemm_with(QMicroKernel kernel, const QBlocking& blocking, int64_t m, int64_t n, int64_t k,
                const QMatrix& a, const int32_t* a_zero, int64_t a_zero_count, const PackedQB& b,
                int32_t* c, int64_t ldc, const QTileDone& tile_done, const ParallelFor& parallel);

}  // namespace qgemm_detail
}  // namespace onyx::cpu
