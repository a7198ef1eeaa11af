// The CPU provider: a host-memory device whose kernels are the project's own.
#include <onyx/plugin_sdk.hpp>

#include "gemm/gemm.h"
#include "kernels/registry.h"

namespace {

namespace sdk = onyx::sdk;

// Always available: the host CPU runs it. The device name says which GEMM
// instruction set was picked at run time ("AVX-512", ...).
class CpuProvider : public sdk::HostMemory {
 public:
  sdk::StatusOr<sdk::DeviceDescription> describe_device(size_t) const {
    return host_device(onyx::cpu::sgemm_isa(), "Onyx");
  }
  // Built once per loaded library and shared by every provider instance
  // (each ProviderRegistry creates its own): the kernel definitions hold no
  // per-instance state and are read-only once built, so any thread may read
  // them. Hundreds of definitions: building them per instance was most of the
  // cost of loading the provider.
  const sdk::KernelRegistry& registry() const {
    static const sdk::KernelRegistry kernels = [] {
      sdk::KernelRegistry r;
      onyx::cpu::register_all_kernels(r);
      return r;
    }();
    return kernels;
  }
};

const OnyxPluginEntry kEntry = sdk::plugin_entry<CpuProvider>("cpu", "0.1.0");

}  // namespace

extern "C" ONYX_DEFINE_PLUGIN_ENTRY(&kEntry)
