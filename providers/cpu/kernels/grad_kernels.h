// grad_kernels.h: the CPU provider's kernels for the ai.onyx gradient and
// loss ops that runtime/autodiff emits (one register_* per grad_*.cpp file).
#pragma once

#include <onyx/plugin_sdk.hpp>

namespace onyx::cpu {

// The domain of Onyx's own ops.
inline constexpr const char* kOnyxDomain = "ai.onyx";

void register_grad_reduce_kernels(sdk::KernelRegistry& registry);  // SumToShape
void register_grad_loss_kernels(sdk::KernelRegistry& registry);    // NegativeLogLikelihoodLoss(+Grad)
void register_grad_gather_kernels(sdk::KernelRegistry& registry);  // GatherGrad, SliceGrad
void register_grad_conv_kernels(sdk::KernelRegistry& registry);    // ConvGrad
void register_grad_pool_kernels(sdk::KernelRegistry& registry);    // MaxPoolGrad, AveragePoolGrad

// All of the above.
void register_grad_kernels(sdk::KernelRegistry& registry);

}  // namespace onyx::cpu
