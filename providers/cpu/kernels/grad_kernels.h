// grad_kernels.h: the CPU provider's kernels for the ai.onyx gradient and
// loss ops that runtime/autodiff emits (one register_* per grad_*.cpp file).
#pragma once

#include <onyx/plugin_sdk.hpp>

namespace onyx::cpu {

// The domain of Onyx's own ops.
inline constexpr const char* kOnyxDomain = "ai.onyx";

void register_grad_reduce_kernels(sdk::KernelRegistry& registry);  // SumToShape
void register_grad_loss_kernels(sdk::KernelRegistry& registry);    // NegativeLogLikelihoodLoss(+Grad)

// All of the above.
void register_grad_kernels(sdk::KernelRegistry& registry);

}  // namespace onyx::cpu
