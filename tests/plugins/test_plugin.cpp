// test_plugin.cpp: one source, several purpose-built plugins for the loader
// and placement tests, selected by compile definitions:
//   TEST_PLUGIN_NAME            provider name
//   TEST_PLUGIN_MIN_ABI/MAX_ABI the ABI range the plugin claims to speak
//   TEST_PLUGIN_UNAVAILABLE     reason string: the device is "absent"
//   TEST_PLUGIN_GROWN_TABLE     simulates a newer minor version whose provider
//                               table has functions this host doesn't know
//   TEST_PLUGIN_SHORT_TABLE     a provider table smaller than ABI 1.0's
//   TEST_PLUGIN_TRUNCATED_ENTRY an entry whose struct_size stops before create
//   TEST_PLUGIN_LIES            tells the lie the variable ONYX_TEST_LIE names
//                               (the plugin_handshake fuzzer's findings):
//                               "unterminated_names" (device name and vendor
//                               fill their arrays), "alignment_3" and
//                               "alignment_2g" (memory_alignment), "null_device"
//                               (device_open succeeds with no device),
//                               "null_kernel" (kernel_create likewise),
//                               "status_code_1000" (kernel_create fails with a
//                               code the ABI does not define), "claims_overrun",
//                               "output_memory_overrun" and "properties_overrun"
//                               (written past the struct or array the host
//                               handed over)
//   TEST_PLUGIN_DEVICE_COUNT_LIES device_count returns SIZE_MAX
//   TEST_PLUGIN_PROFILES        reports its Relu's time as its own event (ABI 1.1)
//   TEST_PLUGIN_BOGUS_STATUS    plugin_availability returns the pointer 0x10
//   TEST_PLUGIN_LAZY_KERNEL     Relu returns success without writing its output
//   TEST_PLUGIN_SLOW_KERNEL_MS  Relu takes (sleeps) this many milliseconds
//   TEST_PLUGIN_CRASH_SEGV      Relu writes through a null pointer (SIGSEGV),
//   TEST_PLUGIN_CRASH_ABORT     calls abort() (SIGABRT) or
//   TEST_PLUGIN_CRASH_HANG      never returns, when its input's first element
//                               is kFaultTrigger (666): other inputs run, so a
//                               test can show the next run works again
//   TEST_PLUGIN_CRASH_AT        segfaults where the variable ONYX_TEST_CRASH_AT
//                               says: "load" (a static constructor), "create",
//                               "availability", "claims", "kernel_create", or
//                               calls _exit(0) there for "exit0" (at
//                               kernel_create): faults before any run, which
//                               only an isolated session survives
// Its only kernel is float32 Relu; every other node is declined with a reason.
#include <onyx/plugin_sdk.hpp>

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#ifdef TEST_PLUGIN_NEEDS_DEPENDENCY
extern "C" int onyx_test_dependency_value(void);
#endif

namespace {

constexpr float kFaultTrigger = 666.0f;

#ifdef TEST_PLUGIN_CRASH_AT
// Faults (or exits 0) when ONYX_TEST_CRASH_AT names `where`.
void crash_at(const char* where) {
  const char* chosen = std::getenv("ONYX_TEST_CRASH_AT");
  if (!chosen) return;
  if (std::string(chosen) == "exit0" && std::string(where) == "kernel_create") ::_exit(0);
  if (std::string(chosen) == where) std::raise(SIGSEGV);
}
__attribute__((constructor)) void crash_at_load() { crash_at("load"); }
#else
void crash_at(const char*) {}
#endif

class Relu final : public onyx::sdk::Kernel {
 public:
  OnyxStatus* compute(onyx::sdk::ComputeContext& ctx) override {
    onyx::sdk::Tensor x = ctx.in(0), y;
#ifdef TEST_PLUGIN_LAZY_KERNEL
    return nullptr;
#endif
    [[maybe_unused]] const bool fault = x.size() > 0 && x.data<float>()[0] == kFaultTrigger;
#ifdef TEST_PLUGIN_CRASH_SEGV
    // A volatile pointer: the compiler can neither see it is null nor turn
    // the store into a trap (SIGILL); the store really faults.
    int* volatile nowhere = nullptr;
    if (fault) *nowhere = 1;
#endif
#ifdef TEST_PLUGIN_CRASH_ABORT
    if (fault) std::abort();
#endif
#ifdef TEST_PLUGIN_CRASH_HANG
    while (fault) std::this_thread::sleep_for(std::chrono::seconds(1));
#endif
#ifdef TEST_PLUGIN_SLOW_KERNEL_MS
    // A line per kernel: the run-options test finds its run's tag on it.
    onyx::sdk::host_log(ONYX_LOG_DEBUG, "slow Relu: %d ms", TEST_PLUGIN_SLOW_KERNEL_MS);
    std::this_thread::sleep_for(std::chrono::milliseconds(TEST_PLUGIN_SLOW_KERNEL_MS));
#endif
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, x.dims, &y));
    const float* in = x.data<float>();
    float* out = y.data<float>();
    const int64_t start = onyx::sdk::ComputeContext::monotonic_ns();
    for (int64_t i = 0; i < x.size(); ++i) out[i] = in[i] > 0 ? in[i] : 0;
#ifdef TEST_PLUGIN_PROFILES
    if (ctx.profiling()) ctx.profile_event("test device: Relu", start, onyx::sdk::ComputeContext::monotonic_ns());
#else
    (void)start;
#endif
    return nullptr;
  }
};

void register_kernels(onyx::sdk::KernelRegistry& registry) {
  onyx::sdk::KernelDef relu;
  relu.op_type = "Relu";
  relu.supports = [](const onyx::sdk::NodeInfo& n) {
    crash_at("claims");
    return n.input_dtype(0) == ONYX_DTYPE_FLOAT32 ? std::string()
                                                  : std::string("test plugin: Relu is float32 only");
  };
  relu.create = [](const onyx::sdk::NodeInfo&) {
    crash_at("kernel_create");
    return std::make_unique<Relu>();
  };
  registry.add(relu);
}

#ifdef TEST_PLUGIN_LIES
bool lie(const char* which) {
  const char* chosen = std::getenv("ONYX_TEST_LIE");
  return chosen && std::string(chosen) == which;
}

const OnyxProviderApi* g_honest = nullptr;
const OnyxHostApi* g_host = nullptr;

OnyxStatus* lying_device_properties(OnyxPlugin* plugin, size_t index, OnyxDeviceProperties* out) {
  if (OnyxStatus* st = g_honest->device_properties(plugin, index, out)) return st;
  if (lie("unterminated_names")) {
    std::memset(out->name, 'N', sizeof out->name);
    std::memset(out->vendor, 'V', sizeof out->vendor);
  }
  if (lie("properties_overrun"))  // a plugin built with a bigger OnyxDeviceProperties
    std::memset(reinterpret_cast<char*>(out) + out->struct_size, 0x5a, 64);
  if (lie("alignment_3")) out->memory_alignment = 3;
  if (lie("alignment_2g")) out->memory_alignment = uint32_t(1) << 31;
  return nullptr;
}

OnyxStatus* lying_device_open(OnyxPlugin* plugin, size_t index, const OnyxKeyValue* options, size_t count,
                              const OnyxExtension* extensions, OnyxDevice** out) {
  if (lie("null_device")) {
    *out = nullptr;
    return nullptr;
  }
  return g_honest->device_open(plugin, index, options, count, extensions, out);
}

OnyxStatus* lying_kernel_create(OnyxDevice* device, const OnyxGraphView* graph, const uint32_t* nodes, size_t count,
                                OnyxKernel** out) {
  if (lie("null_kernel")) {
    *out = nullptr;
    return nullptr;
  }
  if (lie("status_code_1000")) return g_host->status_create(1000, "a code of the plugin's own");
  return g_honest->kernel_create(device, graph, nodes, count, out);
}

// The overruns of a plugin built with bigger structs than the host's, or
// with an off-by-one: one entry written past the array the host handed over.
OnyxStatus* lying_get_capability(OnyxDevice* device, const OnyxGraphView* graph, OnyxNodeClaim* claims) {
  if (OnyxStatus* st = g_honest->get_capability(device, graph, claims)) return st;
  if (lie("claims_overrun")) claims[graph->node_count] = claims[0];
  return nullptr;
}

OnyxStatus* lying_kernel_output_memory(OnyxKernel* kernel, OnyxOutputMemoryInfo* out, size_t count) {
  if (g_honest->kernel_output_memory)
    if (OnyxStatus* st = g_honest->kernel_output_memory(kernel, out, count)) return st;
  if (lie("output_memory_overrun")) out[count] = out[0];
  return nullptr;
}
#endif

// A provider table as a newer minor version would ship it: the 1.0 table
// followed by functions an older host has never heard of.
struct GrownTable {
  OnyxProviderApi base;
  void (*future_function_a)(void);
  void (*future_function_b)(void);
};

OnyxStatus* create(const OnyxPluginCreateArgs* args, OnyxPlugin** plugin,
                   const OnyxProviderApi** api) {
  crash_at("create");
  onyx::sdk::HostMemoryProviderConfig config;
  config.device_name = "test device";
  config.vendor = "Onyx tests";
  config.register_kernels = register_kernels;
#ifdef TEST_PLUGIN_UNAVAILABLE
  config.availability = [] { return std::string(TEST_PLUGIN_UNAVAILABLE); };
#elif defined(TEST_PLUGIN_CRASH_AT)
  config.availability = [] {
    crash_at("availability");
    return std::string();
  };
#endif
#ifdef TEST_PLUGIN_NEEDS_DEPENDENCY
  if (onyx_test_dependency_value() != 42) return nullptr;
#endif
  OnyxStatus* st = onyx::sdk::create_host_memory_provider(args, std::move(config), plugin, api);
#ifdef TEST_PLUGIN_GROWN_TABLE
  static GrownTable grown;
  grown.base = **api;
  grown.base.struct_size = sizeof(GrownTable);
  grown.future_function_a = [] {};
  grown.future_function_b = [] {};
  *api = &grown.base;
#endif
#ifdef TEST_PLUGIN_DEVICE_COUNT_LIES
  static OnyxProviderApi lying;
  lying = **api;
  lying.device_count = [](OnyxPlugin*) -> size_t { return SIZE_MAX; };
  *api = &lying;
#endif
#ifdef TEST_PLUGIN_BOGUS_STATUS
  static OnyxProviderApi bogus;
  bogus = **api;
  bogus.plugin_availability = [](OnyxPlugin*) { return reinterpret_cast<OnyxStatus*>(uintptr_t(0x10)); };
  *api = &bogus;
#endif
#ifdef TEST_PLUGIN_LIES
  static OnyxProviderApi lies;
  if (!st) {
    g_honest = *api;
    g_host = args->host;
    lies = **api;
    lies.device_properties = lying_device_properties;
    lies.device_open = lying_device_open;
    lies.kernel_create = lying_kernel_create;
    lies.get_capability = lying_get_capability;
    lies.kernel_output_memory = lying_kernel_output_memory;
    *api = &lies;
  }
#endif
#ifdef TEST_PLUGIN_SHORT_TABLE
  static OnyxProviderApi short_table;
  short_table = **api;
  short_table.struct_size = ONYX_PROVIDER_API_SIZE_1_0 - sizeof(void*);  // no query_extension
  *api = &short_table;
#endif
  return st;
}

#ifdef TEST_PLUGIN_TRUNCATED_ENTRY
constexpr uint32_t kEntrySize = offsetof(OnyxPluginEntry, create);
#else
constexpr uint32_t kEntrySize = sizeof(OnyxPluginEntry);
#endif

const OnyxPluginEntry kEntry = {
    ONYX_PLUGIN_MAGIC, kEntrySize, TEST_PLUGIN_MIN_ABI, TEST_PLUGIN_MAX_ABI,
    TEST_PLUGIN_NAME,  "test",     create,
};

}  // namespace

extern "C" ONYX_DEFINE_PLUGIN_ENTRY(&kEntry)
