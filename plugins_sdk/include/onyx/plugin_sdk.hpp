// plugin_sdk.hpp: the whole C++ SDK over the provider ABI (onyx_provider.h),
// for writing provider plugins. Header-only; a plugin compiles it in, so
// nothing C++ crosses the ABI. Include a piece alone when that is all you
// need (a device with its own memory needs no host_memory.hpp):
//
//   sdk/status.hpp           the error model: make_status, guard, StatusOr,
//                            and the calling host they create statuses with
//   sdk/dtype.hpp            element type sizes, names, DTypeSet
//   sdk/node_info.hpp        NodeInfo: a node of a graph view as C++ values
//   sdk/compute_context.hpp  Tensor, ComputeContext: what a running kernel sees
//   sdk/kernel_registry.hpp  Kernel, KernelDef, KernelDefBuilder, KernelRegistry
//   sdk/provider_table.hpp   ProviderTable<Impl>: the whole OnyxProviderApi
//                            generated from a provider's hooks
//   sdk/host_memory.hpp      HostMemory (memory hooks for host-memory devices),
//                            HostMemoryProvider (such a provider, configured)
#pragma once

#include "sdk/compute_context.hpp"
#include "sdk/dtype.hpp"
#include "sdk/host_meminfo.hpp"
#include "sdk/host_memory.hpp"
#include "sdk/kernel_cache.hpp"
#include "sdk/kernel_registry.hpp"
#include "sdk/node_info.hpp"
#include "sdk/provider_table.hpp"
#include "sdk/status.hpp"
