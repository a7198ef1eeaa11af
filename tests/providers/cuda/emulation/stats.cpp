// stats.cpp: the emulated device's counters (host_runtime.h), exported for
// tests: they dlsym "onyx_gpuemu_stats" in the loaded plugin to check which
// copies and kernels a run made and on which stream.
#include <onyx_provider.h>

#include "host_runtime.h"

// Writes min(count, kEmulationCounters) counters (EmulationCounter order)
// and returns how many the emulation has. Thread-safe.
extern "C" ONYX_PLUGIN_EXPORT size_t onyx_gpuemu_stats(uint64_t* out, size_t count) {
  for (size_t k = 0; k < count && k < kEmulationCounters; ++k) out[k] = g_emulation_stats[k].load();
  return kEmulationCounters;
}
