// template_provider.cpp: the smallest complete Onyx provider, to copy.
//
// A provider is a shared library exporting one symbol, OnyxGetPluginEntry,
// that returns a static OnyxPluginEntry (see onyx_provider.h). The host loads
// it, checks the ABI versions, calls `create`, and from then on talks to the
// plugin only through the OnyxProviderApi table that `create` returns.
//
// This template runs on the host CPU, so it can use the SDK's
// HostMemoryProvider, which fills the whole table (devices, memory, copies,
// capability, kernels) from a KernelRegistry. A device with its own memory
// fills the table itself: see providers/cuda and providers/rocm in the Onyx
// sources. Its one op is Relu on float32 tensors.
//
// Rules every provider keeps (the conformance suite checks them):
//  - claim only nodes you will run correctly; decline the others with a
//    reason, which users see in the partition report;
//  - never let a C++ exception cross the ABI (the SDK's guard() does this);
//  - report "unavailable" with a reason when your device or driver is
//    missing, never crash or fail to load.
#include <onyx/plugin_sdk.hpp>

namespace {

namespace sdk = onyx::sdk;

// A kernel is created once per node at session creation and may run
// concurrently from several threads: keep its state immutable.
class ReluKernel : public sdk::Kernel {
 public:
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), y;
    // Ask the host for the output buffer: same type and shape as the input.
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_FLOAT32, x.dims, &y));
    const float* in = x.data<float>();
    float* out = y.data<float>();
    // The host's thread pool; chunks of at least 4096 elements.
    ctx.parallel_for(size_t(x.size()), 4096, [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) out[i] = in[i] > 0.f ? in[i] : 0.f;
    });
    return nullptr;  // NULL status: success
  }
  // Relu may write its output over its input when the input has no other
  // reader: this lets the core's memory planner share the buffer.
  void output_memory(std::span<OnyxOutputMemoryInfo> out) const override {
    out[0].kind = ONYX_OUTPUT_MAY_OVERWRITE_INPUT;
    out[0].input_index = 0;
  }
};

void register_kernels(sdk::KernelRegistry& registry) {
  registry.add({
      /*domain=*/"",  // "" is the ai.onnx domain
      /*op_type=*/"Relu",
      /*since_version=*/6,  // Relu's float semantics are unchanged since opset 6
      /*until_version=*/1 << 30,
      // Returns "" to claim the node, or the reason it is declined.
      [](const sdk::NodeInfo& node) {
        return sdk::require_input_types(node, {ONYX_DTYPE_FLOAT32});
      },
      [](const sdk::NodeInfo&) -> std::unique_ptr<sdk::Kernel> {
        return std::make_unique<ReluKernel>();
      },
  });
}

OnyxStatus* create(const OnyxPluginCreateArgs* args, OnyxPlugin** plugin,
                   const OnyxProviderApi** api) {
  sdk::HostMemoryProviderConfig config;
  config.device_name = "template CPU device";
  config.vendor = "Your Company";
  // Probe your hardware here: return "" when usable, else why not.
  config.availability = [] { return std::string(); };
  config.register_kernels = register_kernels;
  return sdk::create_host_memory_provider(args, std::move(config), plugin, api);
}

// The static entry: magic and struct size let any host read it; the ABI
// range says which host versions this plugin speaks (1.0 up to the headers
// it was built with); the name is what applications ask for.
const OnyxPluginEntry kEntry = {
    ONYX_PLUGIN_MAGIC,
    sizeof(OnyxPluginEntry),
    ONYX_ABI_VERSION(1, 0),
    ONYX_ABI_VERSION(ONYX_ABI_VERSION_MAJOR, ONYX_ABI_VERSION_MINOR),
    "template",
    "0.1.0",
    create,
};

}  // namespace

extern "C" ONYX_DEFINE_PLUGIN_ENTRY(&kEntry)
