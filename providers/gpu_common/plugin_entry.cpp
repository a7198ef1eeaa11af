// plugin_entry.cpp: the one exported symbol of a GPU provider plugin. The
// name ("cuda" or "rocm") comes from gpu_vendor.h.
#include "gpu_provider.h"

namespace {

const OnyxPluginEntry kEntry = {
    ONYX_PLUGIN_MAGIC,
    sizeof(OnyxPluginEntry),
    ONYX_ABI_VERSION(1, 0),
    ONYX_ABI_VERSION(ONYX_ABI_VERSION_MAJOR, ONYX_ABI_VERSION_MINOR),
    ONYX_GPU_PROVIDER_NAME,
    "0.1.0",
    onyx::gpu::create_gpu_plugin,
};

}  // namespace

extern "C" ONYX_DEFINE_PLUGIN_ENTRY(&kEntry)
