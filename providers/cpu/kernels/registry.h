// registry.h: the CPU provider's kernel families. Each kernels/*.cpp file
// defines one register_* function that adds its KernelDefs.
#pragma once

#include <onyx/plugin_sdk.hpp>

namespace onyx::cpu {

void register_elementwise_kernels(sdk::KernelRegistry& registry);   // math, activations, compare
void register_reduction_kernels(sdk::KernelRegistry& registry);     // Reduce*, ArgMax/ArgMin
void register_shape_kernels(sdk::KernelRegistry& registry);         // Reshape ... Gather, Cast
void register_linalg_kernels(sdk::KernelRegistry& registry);        // MatMul, Gemm
void register_nn_kernels(sdk::KernelRegistry& registry);            // Conv, pools, norms, softmax
void register_grad_kernels(sdk::KernelRegistry& registry);          // ai.onyx gradient/loss ops (grad_*.cpp)
void register_optimizer_kernels(sdk::KernelRegistry& registry);     // fused ai.onyx.optimizers updates

// All of the above, in a fixed order.
inline void register_all_kernels(sdk::KernelRegistry& registry) {
  register_elementwise_kernels(registry);
  register_reduction_kernels(registry);
  register_shape_kernels(registry);
  register_linalg_kernels(registry);
  register_nn_kernels(registry);
  register_grad_kernels(registry);
  register_optimizer_kernels(registry);
}

}  // namespace onyx::cpu
