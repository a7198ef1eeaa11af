// qkernel_set.h: what each ISA's int16-pair microkernel provides to the
// integer GEMM driver (qgemm.cpp). Free of standard-library templates for the
// reason kernel_set.h gives.
#pragma once

#include <cstdint>

namespace onyx::cpu::qgemm_detail {

// Register tile of every kernel: kMR rows x kNR columns of int32.
constexpr int kMR = 6;
constexpr int kNR = 16;

// One kMR x kNR tile of C; only its first rows x cols elements are written.
//   C (=|+=) sum_p A(:, p) . B(p, :)   over kp steps of one K pair each.
// a: kp steps of kMR int16 pairs (row i of step p at a[(p * kMR + i) * 2]).
// b: kp steps of kNR int16 pairs (column j of step p at b[(p * kNR + j) * 2]).
// accumulate: add to C instead of overwriting it.
using QMicroKernel = void (*)(int64_t kp, const int16_t* a, const int16_t* b, int32_t* c,
                              int64_t ldc, bool accumulate, int rows, int cols);

// Defined in qkernel_avx2.cpp; call only where the CPU has AVX2.
QMicroKernel qkernel_avx2();

}  // namespace onyx::cpu::qgemm_detail
