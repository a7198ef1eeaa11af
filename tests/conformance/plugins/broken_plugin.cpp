// broken_plugin.cpp: deliberately broken providers that the conformance
// suite must catch. Built twice (see ../CMakeLists.txt):
//
//   broken   kernels with one defect each:
//              Add     correct (the control: must pass)
//              Relu    wrong results (negative inputs pass through)
//              Sigmoid a false claim: claimed, but kernel creation fails
//              Neg     crashes (SIGSEGV) in compute
//              Abs     hangs in compute
//   badsize  (BROKEN_STRUCT_SIZES) correct Relu, but its provider table's
//            struct_size stops before get_capability, and device_properties
//            writes a whole struct whatever struct_size the caller gave.
#include <onyx/plugin_sdk.hpp>

#include <csignal>
#include <thread>

namespace {

using onyx::sdk::ComputeContext;
using onyx::sdk::Kernel;
using onyx::sdk::KernelDef;
using onyx::sdk::KernelRegistry;
using onyx::sdk::NodeInfo;
using onyx::sdk::Tensor;

enum class Defect { kNone, kWrongRelu, kCrash, kHang };

class Unary final : public Kernel {
 public:
  Unary(float (*fn)(float), Defect defect) : fn_(fn), defect_(defect) {}
  OnyxStatus* compute(ComputeContext& ctx) override {
    if (defect_ == Defect::kCrash) std::raise(SIGSEGV);
    if (defect_ == Defect::kHang)
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    Tensor x = ctx.in(0), y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, x.dims, &y));
    for (int64_t i = 0; i < x.size(); ++i) y.data<float>()[i] = fn_(x.data<float>()[i]);
    return nullptr;
  }

 private:
  float (*fn_)(float);
  Defect defect_;
};

class AddSameShape final : public Kernel {
 public:
  OnyxStatus* compute(ComputeContext& ctx) override {
    Tensor a = ctx.in(0), b = ctx.in(1), y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, a.dtype, a.dims, &y));
    for (int64_t i = 0; i < a.size(); ++i) y.data<float>()[i] = a.data<float>()[i] + b.data<float>()[i];
    return nullptr;
  }
};

std::string float_only(const NodeInfo& n) {
  for (size_t k = 0; k < n.inputs.size(); ++k)
    if (n.input_dtype(k) != ONYX_DTYPE_FLOAT32) return "broken test plugin: float32 only";
  return "";
}

void add_unary(KernelRegistry& r, const char* op, float (*fn)(float), Defect defect) {
  KernelDef def;
  def.op_type = op;
  def.supports = float_only;
  def.create = [fn, defect](const NodeInfo&) { return std::make_unique<Unary>(fn, defect); };
  r.add(def);
}

void register_kernels(KernelRegistry& r) {
#ifdef BROKEN_STRUCT_SIZES
  add_unary(r, "Relu", [](float x) { return x > 0 ? x : 0.0f; }, Defect::kNone);
#else
  add_unary(r, "Relu", [](float x) { return x; }, Defect::kWrongRelu);
  add_unary(r, "Neg", [](float x) { return -x; }, Defect::kCrash);
  add_unary(r, "Abs", [](float x) { return x < 0 ? -x : x; }, Defect::kHang);
  KernelDef sigmoid;  // claimed, yet no kernel can be made
  sigmoid.op_type = "Sigmoid";
  sigmoid.supports = float_only;
  sigmoid.create = [](const NodeInfo&) -> std::unique_ptr<Kernel> { return nullptr; };
  r.add(sigmoid);
  KernelDef add;
  add.op_type = "Add";
  add.supports = [](const NodeInfo& n) {
    std::string why = float_only(n);
    if (why.empty() && n.inputs[0].dims != n.inputs[1].dims) why = "broken test plugin: no broadcasting";
    if (why.empty() && n.inputs[0].rank < 0) why = "broken test plugin: needs known shapes";
    return why;
  };
  add.create = [](const NodeInfo&) { return std::make_unique<AddSameShape>(); };
  r.add(add);
#endif
}

OnyxStatus* create(const OnyxPluginCreateArgs* args, OnyxPlugin** plugin, const OnyxProviderApi** api) {
  onyx::sdk::HostMemoryProviderConfig config;
  config.device_name = "broken test device";
  config.vendor = "Onyx conformance tests";
  config.register_kernels = register_kernels;
  OnyxStatus* st = onyx::sdk::create_host_memory_provider(args, std::move(config), plugin, api);
#ifdef BROKEN_STRUCT_SIZES
  static OnyxProviderApi table;
  table = **api;
  table.struct_size = offsetof(OnyxProviderApi, get_capability);
  static OnyxStatus* (*sdk_properties)(OnyxPlugin*, size_t, OnyxDeviceProperties*) = table.device_properties;
  table.device_properties = [](OnyxPlugin* p, size_t index, OnyxDeviceProperties* out) -> OnyxStatus* {
    if (out) out->struct_size = sizeof(OnyxDeviceProperties);  // ignores the caller's size
    return sdk_properties(p, index, out);
  };
  *api = &table;
#endif
  return st;
}

const OnyxPluginEntry kEntry = {
    ONYX_PLUGIN_MAGIC, sizeof(OnyxPluginEntry), ONYX_ABI_VERSION(1, 0), ONYX_ABI_VERSION(1, 0),
    BROKEN_PLUGIN_NAME, "test", create,
};

}  // namespace

extern "C" ONYX_DEFINE_PLUGIN_ENTRY(&kEntry)
