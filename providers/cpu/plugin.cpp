// The CPU provider: a host-memory device whose kernels are the project's own.
#include <onyx/plugin_sdk.hpp>

#include "gemm/gemm.h"
#include "kernels/registry.h"

namespace {

OnyxStatus* create(const OnyxPluginCreateArgs* args, OnyxPlugin** plugin,
                   const OnyxProviderApi** api) {
  onyx::sdk::HostMemoryProviderConfig config;
  config.device_name = onyx::cpu::sgemm_isa();
  config.vendor = "Onyx";
  config.register_kernels = onyx::cpu::register_all_kernels;
  return onyx::sdk::create_host_memory_provider(args, std::move(config), plugin, api);
}

const OnyxPluginEntry kEntry = {
    ONYX_PLUGIN_MAGIC,
    sizeof(OnyxPluginEntry),
    ONYX_ABI_VERSION(1, 0),
    ONYX_ABI_VERSION(ONYX_ABI_VERSION_MAJOR, ONYX_ABI_VERSION_MINOR),
    "cpu",
    "0.1.0",
    create,
};

}  // namespace

extern "C" ONYX_DEFINE_PLUGIN_ENTRY(&kEntry)
