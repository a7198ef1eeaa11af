// dynamic_quantize.h: DynamicQuantizeLinear's arithmetic on float32, shared
// by its kernel and com.microsoft DynamicQuantizeMatMul, so that the fused
// node the graph optimizer makes computes exactly what the op-by-op chain
// does.
#pragma once

#include <cstdint>

#include "gemm/gemm.h"

namespace onyx::cpu {

struct DynamicQuantization {
  float scale;   // (max - min) / 255 of x's range widened to include 0
  uint8_t zero;  // round(-min / scale), saturated to [0, 255]
};

// Quantizes `n` floats of `x` into `y` (uint8) and returns the scale and
// zero point it chose. NaN elements do not widen the range (vectorized).
// Both passes split across `parallel`'s threads where given: min and max are
// the same in any order, so the result does not depend on the split.
DynamicQuantization dynamic_quantize(const float* x, int64_t n, uint8_t* y, const ParallelFor& parallel = {});

}  // namespace onyx::cpu
