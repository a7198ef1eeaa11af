// plugin_handshake_fuzzer.cpp: libFuzzer harness for the host's side of the
// provider ABI. The fake plugin (fake_provider_plugin.cpp) takes the input's
// bytes before each load and picks from them its entry, its tables, its
// device's properties, its claims, its memory declarations, its statuses and
// what its kernels do. Each input loads it through a fresh ProviderRegistry
// and, when it loads, creates a session for a fixed model (Relu -> Add -> Mul,
// float32 [N, 3], N from the input) with the plugin first and the CPU
// provider as fallback, and runs it once. The input's first byte picks the
// rows, fallback policy, threads and graph optimization, its second whether
// the session uses a compiled-partition cache folder (shared by the
// process's inputs); the rest configures the plugin.
//
// Findings: a crash or sanitizer report; an error without a message; a
// successful run whose output differs from the reference (unless the plugin
// declared an output a view of an input, which by contract it then leaves
// unwritten); device properties handed on without their terminating NUL; a
// plugin object (device, kernel, buffer) still alive after the registry and
// session are gone; and any host call the plugin finds against the ABI
// (it traps: see the plugin).
#include <dlfcn.h>
#include <unistd.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>

#include "core/log.h"
#include "core/tensor.h"
#include "ir/onnx_import.h"
#include "optimize/graph_optimizer.h"
#include "plugin/provider.h"
#include "session/session.h"

namespace {

using namespace onyx::runtime;

// Says which invariant broke, then stops as a crash libFuzzer keeps.
[[noreturn]] void finding(const char* why) {
  std::fprintf(stderr, "plugin_handshake finding: %s\n", why);
  __builtin_trap();
}

// How far inputs get, printed at exit when ONYX_FUZZ_STATS is set: loads,
// sessions, runs, runs whose result was checked.
size_t g_loads = 0, g_sessions = 0, g_runs = 0, g_checked = 0;

struct FakePlugin {
  void (*configure)(const uint8_t*, size_t);
  size_t (*live_objects)();
  bool (*results_checkable)();
};

// Kept open for the process: the registry's loads share these handles, so
// no library is unmapped when a registry goes (libFuzzer keeps reading the
// coverage counters of every instrumented library it has seen), and the
// fake plugin's configuration survives each registry's unload.
const FakePlugin& fake_plugin() {
  static const FakePlugin p = [] {
    if (!::dlopen(ONYX_FUZZ_PROVIDER_DIR "/libonyx_provider_cpu.so", RTLD_NOW | RTLD_LOCAL)) finding(::dlerror());
    void* handle = ::dlopen(ONYX_FUZZ_FAKE_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    if (!handle) finding(::dlerror());
    FakePlugin f{reinterpret_cast<void (*)(const uint8_t*, size_t)>(::dlsym(handle, "onyx_fuzz_plugin_configure")),
                 reinterpret_cast<size_t (*)()>(::dlsym(handle, "onyx_fuzz_plugin_live_objects")),
                 reinterpret_cast<bool (*)()>(::dlsym(handle, "onyx_fuzz_plugin_results_checkable"))};
    if (!f.configure || !f.live_objects || !f.results_checkable) finding("the fake plugin lacks its functions");
    if (std::getenv("ONYX_FUZZ_STATS"))
      std::atexit([] {
        std::fprintf(stderr, "plugin_handshake: %zu loads, %zu sessions, %zu runs, %zu checked\n", g_loads,
                     g_sessions, g_runs, g_checked);
      });
    return f;
  }();
  return p;
}

// X [N, 3] -> Relu -> r; Add(r, B [3]) -> s; Mul(s, r) -> Y [N, 3].
const std::string& model_bytes() {
  static const std::string bytes = [] {
    ONNX_NAMESPACE::ModelProto m;
    m.set_ir_version(8);
    auto* opset = m.add_opset_import();
    opset->set_domain("");
    opset->set_version(17);
    auto* g = m.mutable_graph();
    g->set_name("handshake");
    auto typed = [](ONNX_NAMESPACE::ValueInfoProto* v, const char* name) {
      v->set_name(name);
      auto* t = v->mutable_type()->mutable_tensor_type();
      t->set_elem_type(ONNX_NAMESPACE::TensorProto::FLOAT);
      t->mutable_shape()->add_dim()->set_dim_param("N");
      t->mutable_shape()->add_dim()->set_dim_value(3);
    };
    typed(g->add_input(), "X");
    typed(g->add_output(), "Y");
    auto* b = g->add_initializer();
    b->set_name("B");
    b->set_data_type(ONNX_NAMESPACE::TensorProto::FLOAT);
    b->add_dims(3);
    for (float v : {0.5f, -1.0f, 2.0f}) b->add_float_data(v);
    auto node = [&](const char* op, std::initializer_list<const char*> in, const char* out) {
      auto* n = g->add_node();
      n->set_op_type(op);
      n->set_name(std::string(op) + "_" + out);
      for (const char* i : in) n->add_input(i);
      n->add_output(out);
    };
    node("Relu", {"X"}, "r");
    node("Add", {"r", "B"}, "s");
    node("Mul", {"s", "r"}, "Y");
    return m.SerializeAsString();
  }();
  return bytes;
}

float expected(float x, size_t column) {
  static const float b[3] = {0.5f, -1.0f, 2.0f};
  const float r = x > 0.0f ? x : 0.0f;
  return (r + b[column]) * r;
}

void check_error(const Status& s) {
  if (!s.ok() && s.message().empty()) finding("an error without a message");
}

// The host hands device names on as C strings: they must end inside their arrays.
void check_properties(const Provider& provider) {
  if (!provider.availability().ok() || provider.device_count() == 0) return;
  auto props = provider.device_properties(0);
  if (!props.ok()) return check_error(props.status());
  if (!std::memchr(props->name, 0, sizeof props->name) || !std::memchr(props->vendor, 0, sizeof props->vendor) ||
      !std::memchr(props->stable_id, 0, sizeof props->stable_id))
    finding("device properties without their terminating NUL");
}

// A compiled-partition cache folder for this process, removed at exit: its
// entries outlive one input, so later inputs read what earlier ones wrote.
// (Never destroyed: the exit handler, registered while it is made, runs
// after the destructors of statics made before it returned.)
const std::string& cache_folder() {
  static const std::string* folder = [] {
    auto* f = new std::string(
        (std::filesystem::temp_directory_path() / ("onyx_fuzz_cache_" + std::to_string(getpid()))).string());
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(cache_folder(), ec);
    });
    return f;
  }();
  return *folder;
}

void load_and_run(const uint8_t* data, size_t size) {
  const uint8_t choice = data[0];
  const uint8_t more = size > 1 ? data[1] : 0;  // bit 0: the compiled-partition cache on
  const size_t used = std::min<size_t>(size, 2);
  const int64_t rows = choice % 4;
  ProviderRegistry registry;
  registry.logger()->set(nullptr, nullptr, ONYX_LOG_ERROR);  // fallback warnings are expected
  registry.add_search_dir(ONYX_FUZZ_PROVIDER_DIR);
  fake_plugin().configure(data + used, size - used);
  auto provider = registry.get(ONYX_FUZZ_FAKE_PLUGIN);
  if (!provider.ok()) return check_error(provider.status());
  check_properties(**provider);
  ++g_loads;

  auto model = ir::load_model_from_bytes(model_bytes().data(), model_bytes().size(), "");
  if (!model.ok()) finding("the fixed model does not load");
  SessionOptions options;
  options.providers = {{ONYX_FUZZ_FAKE_PLUGIN, {}}, {"cpu", {}}};
  options.fallback = (choice >> 2) % 3 == 0 ? FallbackPolicy::kFail
                     : (choice >> 2) % 3 == 1 ? FallbackPolicy::kWarn
                                               : FallbackPolicy::kAllow;
  options.intra_op_threads = (choice & 0x40) ? 2 : 1;
  options.graph_optimization = (choice & 0x80) ? GraphOptimization::kOff : GraphOptimization::kAll;
  options.host_memory_limit = size_t(64) << 20;
  if (more & 1) options.compiled_cache_dir = cache_folder();
  auto session = Session::create(registry, std::move(*model), options);
  if (!session.ok()) return check_error(session.status());
  ++g_sessions;

  Tensor x = Tensor::allocate(ONYX_DTYPE_FLOAT32, {rows, 3});
  float* xs = static_cast<float*>(x.data());
  for (int64_t k = 0; k < rows * 3; ++k) xs[k] = float(k % 5) - 2.0f;  // both signs, and zeros
  auto out = (*session)->run({{"X", x}});
  if (!out.ok()) return check_error(out.status());
  ++g_runs;
  if (!fake_plugin().results_checkable()) return;
  ++g_checked;
  if (out->size() != 1) finding("not one output");
  const Tensor& y = (*out)[0];
  if (y.dtype() != ONYX_DTYPE_FLOAT32 || y.shape() != Shape{rows, 3}) finding("an output of the wrong type or shape");
  const float* ys = static_cast<const float*>(y.data());
  for (int64_t k = 0; k < rows * 3; ++k)
    if (std::fabs(ys[k] - expected(xs[k], size_t(k % 3))) > 1e-5f) finding("a wrong result");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  load_and_run(data, size);
  // The registry and session are gone: every device, kernel and buffer too.
  if (fake_plugin().live_objects() != 0) finding("plugin objects outlived the registry and session");
  return 0;
}
