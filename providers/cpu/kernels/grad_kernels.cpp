// grad_kernels.cpp: register_grad_kernels.
#include "kernels/grad_kernels.h"

namespace onyx::cpu {

void register_grad_kernels(sdk::KernelRegistry& registry) {
  register_grad_reduce_kernels(registry);
  register_grad_loss_kernels(registry);
  register_grad_gather_kernels(registry);
  register_grad_conv_kernels(registry);
  register_grad_pool_kernels(registry);
}

}  // namespace onyx::cpu
