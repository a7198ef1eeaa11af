// qgemm_internal.h: internals of the integer GEMM shared with its tests (not
// part of the provider's interface): run it with a given microkernel, so that
// the tests cover the portable kernel and every ISA's on the same inputs.
#pragma once

#include "qgemm.h"
#include "qkernel_set.h"

namespace onyx::cpu {

static_assert(qgemm_detail::kNR == 16, "PackedQB's layout (qgemm.h) is written for 16-column panels");

namespace qgemm_detail {

// The set the kernels use on this CPU (AVX2 where present).
const QKernelSet& qkernels_best();

// Cache blocking, in K pairs and rows; tests shrink them to cross every boundary.
struct QBlocking {
  int64_t kc = 128;  // K pairs per block: a B sub-panel of 8 KiB stays in L1
  int64_t mc = 96;   // rows of A packed per block (16 micro-panels, 48 KiB in L2)
  double min_ops_per_thread = 2.0e6;
};

void qgemm_with(const QKernelSet& kernels, const QBlocking& blocking, int64_t m, int64_t n, int64_t k,
                const QMatrix& a, const int32_t* a_zero, int64_t a_zero_count, const PackedQB& b,
                int32_t* c, int64_t ldc, const QTileDone& tile_done, const ParallelFor& parallel);

}  // namespace qgemm_detail
}  // namespace onyx::cpu
