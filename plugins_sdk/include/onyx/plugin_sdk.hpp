// plugin_sdk.hpp: the whole C++ SDK over the provider ABI (onyx_provider.h),
// for writing provider plugins. Header-only; a plugin compiles it in, so
// nothing C++ crosses the ABI. Each piece can also be included alone:
//
//   sdk/status.hpp           make_status, guard, StatusOr: the error model
//   sdk/dtype.hpp            element type sizes, names and DTypeSet
//   sdk/node_info.hpp        NodeInfo: a node of a graph view as C++ values
//   sdk/compute_context.hpp  Tensor and ComputeContext: what a kernel sees
//   sdk/kernel_registry.hpp  Kernel, KernelDef(+Builder), KernelRegistry
//   sdk/host_memory_provider.hpp  a complete provider for host-memory devices
//
// Thread-safety: everything here is safe to use from several threads once the
// registry is built (registration happens at plugin creation).
#pragma once

#include "sdk/compute_context.hpp"
#include "sdk/dtype.hpp"
#include "sdk/host_memory_provider.hpp"
#include "sdk/kernel_registry.hpp"
#include "sdk/node_info.hpp"
#include "sdk/status.hpp"
