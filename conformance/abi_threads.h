// abi_threads.h: one round of every thread-safe ABI function on a device,
// and running such rounds from several threads at once.
#pragma once

#include "abi_host.h"

namespace onyx::conformance {

// `iterations` rounds of: availability, device count and properties,
// allocate/copy/free, get_capability on a float32 Relu graph and, when the
// plugin claims it, kernel create/compute/destroy with the result checked.
// Throws CaseError on the first problem.
void exercise_device(const LoadedPlugin& p, const OpenDevice& device, int iterations);

// `threads` threads at once, each running exercise_device on the shared
// device, opening and closing a device of its own, and computing with one
// kernel shared by all (kernel_compute may be called concurrently).
void run_concurrently(const LoadedPlugin& p, const OpenDevice& device, int threads, int iterations);

}  // namespace onyx::conformance
