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
  CpuProvider() { onyx::cpu::register_all_kernels(registry_); }
  sdk::StatusOr<sdk::DeviceDescription> describe_device(size_t) const {
    return host_device(onyx::cpu::sgemm_isa(), "Onyx");
  }
  const sdk::KernelRegistry& registry() const { return registry_; }

 private:
  sdk::KernelRegistry registry_;
};

const OnyxPluginEntry kEntry = sdk::plugin_entry<CpuProvider>("cpu", "0.1.0");

}  // namespace

extern "C" ONYX_DEFINE_PLUGIN_ENTRY(&kEntry)
