// reduction.h: the Reduce* kernels' sum, for other kernels that reduce (the
// gradient of a broadcast, SumToShape).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include <onyx/plugin_sdk.hpp>

namespace onyx::cpu::reduce {

// y = x (shape `dims`) summed over the dims flagged in `axes`; y holds the
// other dims in their order. Sums are kept in double, split over ctx's
// threads, and each output's sum does not depend on the thread count.
// x and y must not overlap; y must hold the product of the kept dims.
void sum(sdk::ComputeContext& ctx, std::span<const int64_t> dims, const std::vector<bool>& axes, const float* x,
         float* y);
void sum(sdk::ComputeContext& ctx, std::span<const int64_t> dims, const std::vector<bool>& axes, const double* x,
         double* y);

}  // namespace onyx::cpu::reduce
