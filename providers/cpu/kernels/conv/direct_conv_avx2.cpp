// direct_conv_avx2.cpp: the direct convolution (direct_conv_impl.h) on AVX2
// + FMA registers: 8 lanes, blocks of 4 channels x 3 vectors (12
// accumulators, 3 input vectors and a broadcast weight: all 16 registers).
#include "kernels/conv/direct_conv_impl.h"

#if defined(ONYX_CPU_AVX2_LOOPS)
#include <immintrin.h>

#include "gemm/avx2_registers.h"

namespace onyx::cpu::direct_conv {
namespace {

struct Avx2 : avx2::Vec {
  static constexpr int kVectors = 3;
  // 4 x 2 accumulators, 4 dY vectors and an X vector: 13 of the 16 registers.
  static constexpr int kWeightPairs = 2;
};

}  // namespace

void detail::run_avx2(const Work& w, int64_t block_lo, int64_t block_hi) {
  impl::run<Avx2>(w, block_lo, block_hi);
}

void detail::run_lanes_avx2(const LaneWork& w, int64_t p_lo, int64_t p_hi) { impl::run_lanes<Avx2>(w, p_lo, p_hi); }

void detail::run_flat_avx2(const LaneWork& w, int64_t row_lo, int64_t row_hi) { impl::run_flat<Avx2>(w, row_lo, row_hi); }

void detail::weight_gradient_avx2(const Work& w, int64_t block_lo, int64_t block_hi) {
  impl::weight_gradient<Avx2>(w, block_lo, block_hi);
}

void detail::weight_gradient_lanes_avx2(const Work& w, int64_t pair_lo, int64_t pair_hi) {
  impl::weight_gradient_lanes<Avx2>(w, pair_lo, pair_hi);
}

}  // namespace onyx::cpu::direct_conv

#endif  // ONYX_CPU_AVX2_LOOPS
