// emulation_stats.h: the emulated GPU runtime's counters, as tests read them
// from the loaded gpuemu plugin (emulation/stats.cpp). On a real GPU plugin
// the symbol is absent and counting checks are skipped.
#pragma once

#include <dlfcn.h>

#include <array>
#include <cstdint>
#include <string>

namespace onyx::gpu_test {

// The order of emulation/host_runtime.h's EmulationCounter.
enum Counter {
  kH2D, kD2H, kD2D, kKernelsOnStream, kKernelsWithoutStream, kStreamSyncs, kEventSyncs, kStreamsCreated,
  kDeviceSyncs, kKernelsOnDevice0, kKernelsOnDevice1, kCounters
};
using Stats = std::array<uint64_t, kCounters>;
using StatsFn = size_t (*)(uint64_t*, size_t);

// The counters of the loaded plugin `name` in `dir`, or nullptr.
inline StatsFn stats_function(const std::string& dir, const std::string& name) {
  const std::string path = dir + "/libonyx_provider_" + name + ".so";
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  return handle ? reinterpret_cast<StatsFn>(dlsym(handle, "onyx_gpuemu_stats")) : nullptr;
}

inline Stats read_stats(StatsFn fn) {
  Stats s{};
  fn(s.data(), s.size());
  return s;
}

// after - before, counter by counter.
inline Stats delta(const Stats& after, const Stats& before) {
  Stats d{};
  for (size_t k = 0; k < d.size(); ++k) d[k] = after[k] - before[k];
  return d;
}

}  // namespace onyx::gpu_test
