// kernel_generic.cpp: portable microkernel for CPUs without AVX2/FMA (and
// non-x86 builds). Plain loops the compiler can vectorise for the baseline ISA.
#include "kernel_set.h"
#include "pack_impl.h"

namespace onyx::cpu::gemm_detail {
namespace {

// 4 x 8: 32 accumulators = 8 SSE registers, leaving room for B and A.
constexpr int kMR = 4;
constexpr int kNR = 8;

template <int M>
void ukr(int64_t kc, const float* a, const float* b, int64_t bs, float* c, int64_t ldc,
         float alpha, float beta, int64_t cols, const TileEpilogue* ep) {
  float acc[M][kNR] = {};
  for (int64_t k = 0; k < kc; ++k) {
    for (int i = 0; i < M; ++i) {
      const float ai = a[i];
      for (int j = 0; j < kNR; ++j) acc[i][j] += ai * b[j];
    }
    a += kMR;
    b += bs;
  }
  for (int i = 0; i < M; ++i) {
    float* ci = c + i * ldc;
    for (int64_t j = 0; j < cols; ++j) {
      const float v = beta == 0.0f ? alpha * acc[i][j] : alpha * acc[i][j] + beta * ci[j];
      ci[j] = ep ? tile_epilogue_at(*ep, v, i, j) : v;
    }
  }
}

template <int M>
constexpr MicroKernel pick() {
  if constexpr (M >= 1 && M <= kMR)
    return &ukr<M>;
  else
    return nullptr;
}

void pack_a(bool trans, const float* a, int64_t lda, int64_t rows, int64_t kc, float* dst) {
  pack_a_impl<kMR>(trans, a, lda, rows, kc, dst);
}
void pack_b(bool trans, const float* b, int64_t ldb, int64_t kc, int64_t cols, float* dst) {
  pack_b_impl<kNR>(trans, b, ldb, kc, cols, dst);
}

static_assert(kMR <= kMaxMR);
constexpr KernelSet kSet = {
    Isa::generic, "generic", kMR, kNR,
    /*mc=*/128, /*kc=*/256, /*nc=*/1024,
    {pick<0>(), pick<1>(), pick<2>(), pick<3>(), pick<4>(), pick<5>(), pick<6>(), pick<7>(), pick<8>(),
     pick<9>(), pick<10>(), pick<11>(), pick<12>(), pick<13>(), pick<14>(), pick<15>(), pick<16>()},
    pack_a, pack_b};
static_assert(kSet.nc % kNR == 0 && kSet.mc % kMR == 0);

}  // namespace

const KernelSet& kernels_generic() { return kSet; }

}  // namespace onyx::cpu::gemm_detail
