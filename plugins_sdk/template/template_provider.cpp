// template_provider.cpp: the smallest complete Onyx provider, to copy.
//
// A provider is a shared library exporting one symbol, OnyxGetPluginEntry,
// that returns a static OnyxPluginEntry (see onyx_provider.h). The host loads
// it, checks the ABI versions, calls `create`, and from then on talks to the
// plugin only through the OnyxProviderApi table that `create` returns.
//
// The SDK's ProviderTable<TemplateProvider> generates that whole table from
// the class below: it checks arguments, turns C++ exceptions into statuses
// and calls the class's hooks (see onyx/sdk/provider_table.hpp for all of
// them). This device computes in host memory, so the class takes the memory
// hooks from sdk::HostMemory; a device with its own memory writes
// memory_alloc/free/copy (and streams, if it has them) itself: see
// providers/gpu_common in the Onyx sources. Its one op is Relu on float32.
//
// Rules every provider keeps (the conformance suite checks them):
//  - claim only nodes you will run correctly; decline the others with a
//    reason, which users see in the partition report;
//  - never let a C++ exception cross the ABI (ProviderTable sees to it);
//  - report "unavailable" with a reason when your device or driver is
//    missing, never crash or fail to load.
#include <onyx/plugin_sdk.hpp>

namespace {

namespace sdk = onyx::sdk;

// A kernel is created once per node at session creation and may run
// concurrently from several threads: keep its state immutable.
class ReluKernel : public sdk::Kernel {
 public:
  explicit ReluKernel(const sdk::NodeInfo&) {}
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

class TemplateProvider : public sdk::HostMemory {
 public:
  TemplateProvider() {
    // Relu's float semantics are unchanged since opset 6. A node the
    // definition does not accept (another type, another input count) is
    // declined with a reason that says so.
    registry_.add(sdk::KernelDefBuilder("Relu")
                      .since(6)
                      .inputs(1)
                      .input_type(0, sdk::dtypes::kFloat32)
                      .create<ReluKernel>());
  }
  // Probe your hardware here: "" when usable, else why not (the device and
  // driver may be absent: say so, never crash).
  std::string availability() const { return {}; }
  sdk::StatusOr<sdk::DeviceDescription> describe_device(size_t) const {
    return host_device("template CPU device", "Your Company");
  }
  // Capability (which nodes to claim) and kernel creation use the registry.
  const sdk::KernelRegistry& registry() const { return registry_; }

 private:
  sdk::KernelRegistry registry_;
};

// The one exported symbol returns this static entry: magic and struct size
// let any host read it; the ABI range says which host versions this plugin
// speaks (1.0 up to the headers it was built with); the name is what
// applications ask for. Its create builds a TemplateProvider and the table.
const OnyxPluginEntry kEntry = sdk::plugin_entry<TemplateProvider>("template", "0.1.0");

}  // namespace

extern "C" ONYX_DEFINE_PLUGIN_ENTRY(&kEntry)
