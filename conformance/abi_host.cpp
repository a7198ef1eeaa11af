// abi_host.cpp: the runner's own implementation of the host side of the ABI.
#include "abi_host.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

namespace onyx::conformance {

namespace fs = std::filesystem;

namespace {

// The host's status object. Tracked so the suites can tell host-created
// statuses from stray pointers and count leaks.
struct RunnerStatus {
  int32_t code;
  std::string message;
};

std::mutex& status_mutex() {
  static std::mutex m;
  return m;
}
std::set<const void*>& live_statuses() {
  static std::set<const void*> live;
  return live;
}

OnyxStatus* host_status_create(int32_t code, const char* message) {
  if (code == ONYX_STATUS_OK) return nullptr;
  auto* s = new RunnerStatus{code, message ? message : ""};
  std::lock_guard<std::mutex> lock(status_mutex());
  live_statuses().insert(s);
  return reinterpret_cast<OnyxStatus*>(s);
}

void host_status_release(OnyxStatus* status) {
  if (!status) return;
  {
    std::lock_guard<std::mutex> lock(status_mutex());
    if (!live_statuses().erase(status)) return;  // not ours: never free a stray pointer
  }
  delete reinterpret_cast<RunnerStatus*>(status);
}

int32_t host_status_code(const OnyxStatus* status) {
  return status ? reinterpret_cast<const RunnerStatus*>(status)->code : ONYX_STATUS_OK;
}
const char* host_status_message(const OnyxStatus* status) {
  return status ? reinterpret_cast<const RunnerStatus*>(status)->message.c_str() : "";
}
void host_log(int32_t, const char*) {}

// One kernel invocation's state.
struct OutputSlot {
  bool requested = false;
  int32_t dtype = 0;
  std::vector<int64_t> dims;
  void* data = nullptr;     // fresh buffer owned by the slot, or the shared input's
  size_t bytes = 0;
  int32_t shared_input = -1;  // input whose buffer this output gets, or -1
  bool aliases = false;       // ONYX_OUTPUT_ALIASES_INPUT: the kernel must not write
};
struct RunnerContext {
  const OnyxProviderApi* api = nullptr;
  OnyxDevice* device = nullptr;
  OnyxStream* stream = nullptr;
  size_t threads = 1;
  std::vector<bool> present;
  std::vector<OnyxTensorView> inputs;
  std::vector<size_t> input_bytes;
  std::vector<OutputSlot> outputs;
  std::vector<void*> scratch;
};
RunnerContext* ctx_of(const OnyxComputeContext* ctx) {
  return reinterpret_cast<RunnerContext*>(const_cast<OnyxComputeContext*>(ctx));
}

size_t host_ctx_input_count(const OnyxComputeContext* ctx) { return ctx_of(ctx)->inputs.size(); }
size_t host_ctx_output_count(const OnyxComputeContext* ctx) { return ctx_of(ctx)->outputs.size(); }
OnyxStatus* host_ctx_input(const OnyxComputeContext* ctx, size_t index, OnyxTensorView* out) {
  RunnerContext* c = ctx_of(ctx);
  if (!out) return host_status_create(ONYX_STATUS_INVALID_ARGUMENT, "ctx_input: out is NULL");
  if (index >= c->inputs.size())
    return host_status_create(ONYX_STATUS_INVALID_ARGUMENT, "ctx_input: input index out of range");
  if (!c->present[index]) {
    // Omitted optional input: an empty view of dtype UNDEFINED.
    *out = OnyxTensorView{sizeof(OnyxTensorView), ONYX_DTYPE_UNDEFINED, ONYX_MEMORY_HOST, 0, nullptr, nullptr};
    return nullptr;
  }
  *out = c->inputs[index];
  return nullptr;
}

// A fresh device buffer of `bytes` filled with 0xCD, the poison that makes
// elements a kernel never writes visible.
OnyxStatus* alloc_poisoned(RunnerContext* c, size_t bytes, void** out) {
  if (OnyxStatus* st = c->api->memory_alloc(c->device, ONYX_MEMORY_DEVICE, bytes, 64, out)) return st;
  const std::vector<unsigned char> poison(bytes, 0xCD);
  return c->api->memory_copy(c->device, nullptr, ONYX_COPY_HOST_TO_DEVICE, *out, poison.data(), bytes);
}

OnyxStatus* host_ctx_output(OnyxComputeContext* ctx, size_t index, int32_t dtype, const int64_t* dims,
                            size_t rank, OnyxTensorView* out) {
  RunnerContext* c = ctx_of(ctx);
  if (!out || index >= c->outputs.size())
    return host_status_create(ONYX_STATUS_INVALID_ARGUMENT, "ctx_output: output index out of range");
  OutputSlot& slot = c->outputs[index];
  if (slot.requested)
    return host_status_create(ONYX_STATUS_FAILED_PRECONDITION, "ctx_output: output requested twice");
  if (rank && !dims) return host_status_create(ONYX_STATUS_INVALID_ARGUMENT, "ctx_output: dims is NULL");
  int64_t count = 1;
  for (size_t k = 0; k < rank; ++k) {
    if (dims[k] < 0) return host_status_create(ONYX_STATUS_INVALID_ARGUMENT, "ctx_output: negative dim");
    count *= dims[k];
  }
  try {
    slot.bytes = tensor_byte_size(dtype, count);
  } catch (const std::exception& e) {
    return host_status_create(ONYX_STATUS_INVALID_ARGUMENT, e.what());
  }
  if (slot.shared_input >= 0 && c->input_bytes[size_t(slot.shared_input)] != slot.bytes) {
    if (slot.aliases)
      return host_status_create(ONYX_STATUS_INVALID_ARGUMENT,
                                "ctx_output: output declared an alias of an input of another byte size");
    slot.shared_input = -1;  // the planner would not have shared these buffers
  }
  slot.requested = true;
  slot.dtype = dtype;
  slot.dims.assign(dims, dims + rank);
  if (slot.shared_input >= 0) {
    slot.data = c->inputs[size_t(slot.shared_input)].data;
  } else if (slot.bytes) {
    if (OnyxStatus* st = alloc_poisoned(c, slot.bytes, &slot.data)) return st;
  }
  *out = OnyxTensorView{sizeof(OnyxTensorView), dtype, ONYX_MEMORY_DEVICE, rank,
                        slot.dims.empty() ? nullptr : slot.dims.data(), slot.data};
  return nullptr;
}
OnyxStream* host_ctx_stream(const OnyxComputeContext* ctx) { return ctx_of(ctx)->stream; }
OnyxStatus* host_ctx_scratch(OnyxComputeContext* ctx, size_t bytes, void** out) {
  RunnerContext* c = ctx_of(ctx);
  if (!out) return host_status_create(ONYX_STATUS_INVALID_ARGUMENT, "ctx_scratch: out is NULL");
  *out = nullptr;
  if (bytes == 0) return nullptr;
  if (OnyxStatus* st = c->api->memory_alloc(c->device, ONYX_MEMORY_DEVICE, bytes, 64, out)) return st;
  c->scratch.push_back(*out);
  return nullptr;
}
// One thread: the body runs on the caller. More: several chunks per thread,
// handed out dynamically, so that chunk boundaries fall in many places and
// races in the kernel have a chance to show.
void host_ctx_parallel_for(OnyxComputeContext* ctx, size_t n, size_t grain, OnyxParallelBody body, void* user) {
  const size_t threads = ctx_of(ctx)->threads;
  if (n == 0) return;
  if (threads <= 1) {
    body(user, 0, n);
    return;
  }
  const size_t chunk = std::max<size_t>({grain, 1, (n + threads * 4 - 1) / (threads * 4)});
  const size_t chunks = (n + chunk - 1) / chunk;
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t k; (k = next.fetch_add(1)) < chunks;) body(user, k * chunk, std::min(n, (k + 1) * chunk));
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < std::min(threads, chunks); ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
}
size_t host_ctx_thread_count(const OnyxComputeContext* ctx) { return std::max<size_t>(1, ctx_of(ctx)->threads); }

// ABI 1.1: the runner never profiles, so a plugin's own events go nowhere.
bool host_ctx_profiling(const OnyxComputeContext*) { return false; }
void host_ctx_profile_event(const OnyxComputeContext*, const char*, int64_t, int64_t) {}
// Planted beyond a 1.0 table's struct_size: a plugin that reads past the
// size its host gave ends the case loudly instead of calling garbage.
bool host_beyond_1_0_profiling(const OnyxComputeContext*) {
  std::fprintf(stderr, "plugin called ctx_profiling, which a 1.0 host's table (struct_size %zu) does not have\n",
               size_t(ONYX_HOST_API_SIZE_1_0));
  std::abort();
}
void host_beyond_1_0_profile_event(const OnyxComputeContext* ctx, const char*, int64_t, int64_t) {
  host_beyond_1_0_profiling(ctx);
}

uint32_t g_host_max_abi = kHostMaxAbi;

std::string dl_error() {
  const char* e = dlerror();
  return e ? e : "unknown dlopen error";
}

}  // namespace

void set_host_max_abi(uint32_t version) { g_host_max_abi = version; }
uint32_t host_max_abi() { return g_host_max_abi; }

const OnyxHostApi* host_api() {
  static const OnyxHostApi table = [] {
    OnyxHostApi h{};
    h.struct_size = sizeof(OnyxHostApi);
    h.abi_version = kHostMaxAbi;
    h.status_create = host_status_create;
    h.status_release = host_status_release;
    h.status_code = host_status_code;
    h.status_message = host_status_message;
    h.log = host_log;
    h.ctx_input_count = host_ctx_input_count;
    h.ctx_output_count = host_ctx_output_count;
    h.ctx_input = host_ctx_input;
    h.ctx_output = host_ctx_output;
    h.ctx_stream = host_ctx_stream;
    h.ctx_scratch = host_ctx_scratch;
    h.ctx_parallel_for = host_ctx_parallel_for;
    h.ctx_thread_count = host_ctx_thread_count;
    h.ctx_profiling = host_ctx_profiling;
    h.ctx_profile_event = host_ctx_profile_event;
    return h;
  }();
  // A host that speaks only 1.0: its table ends at 1.0's size.
  static const OnyxHostApi table_1_0 = [] {
    OnyxHostApi h = table;
    h.struct_size = ONYX_HOST_API_SIZE_1_0;
    h.abi_version = ONYX_ABI_VERSION(1, 0);
    h.ctx_profiling = host_beyond_1_0_profiling;
    h.ctx_profile_event = host_beyond_1_0_profile_event;
    return h;
  }();
  return g_host_max_abi < ONYX_ABI_VERSION(1, 1) ? &table_1_0 : &table;
}

long live_status_count() {
  std::lock_guard<std::mutex> lock(status_mutex());
  return long(live_statuses().size());
}
bool is_host_status(const OnyxStatus* status) {
  std::lock_guard<std::mutex> lock(status_mutex());
  return live_statuses().count(status) > 0;
}
int32_t status_code_of(const OnyxStatus* status) { return host_status_code(status); }
std::string status_message_of(const OnyxStatus* status) { return host_status_message(status); }
void release_status(OnyxStatus* status) { host_status_release(status); }

void check_status(OnyxStatus* status, const std::string& what) {
  if (!status) return;
  if (!is_host_status(status))
    throw CaseError(what + ": returned a status pointer the host did not create");
  std::string message = what + ": " + status_message_of(status);
  release_status(status);
  throw CaseError(message);
}

std::string version_string(uint32_t v) {
  return std::to_string(ONYX_ABI_VERSION_GET_MAJOR(v)) + "." + std::to_string(ONYX_ABI_VERSION_GET_MINOR(v));
}

std::string resolve_plugin_path(const std::string& name_or_path) {
  if (name_or_path.find('/') != std::string::npos) {
    if (!fs::exists(name_or_path)) throw CaseError("plugin file '" + name_or_path + "' does not exist");
    return name_or_path;
  }
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("ONYX_PROVIDER_PATH")) {
    std::stringstream in(env);
    std::string dir;
    while (std::getline(in, dir, ':'))
      if (!dir.empty()) dirs.emplace_back(dir);
  }
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    dirs.push_back(exe.parent_path());
    dirs.push_back(exe.parent_path() / ".." / "lib" / "onyx" / "providers");
  }
  const std::string file = "libonyx_provider_" + name_or_path + ".so";
  std::string searched;
  for (const fs::path& d : dirs) {
    if (fs::exists(d / file, ec)) return fs::weakly_canonical(d / file, ec).string();
    searched += (searched.empty() ? "" : ", ") + d.string();
  }
  throw CaseError("no plugin '" + file + "' in " + searched);
}

std::unique_ptr<LoadedPlugin> LoadedPlugin::load(const std::string& path, size_t args_size,
                                                 const OnyxHostApi* host) {
  std::unique_ptr<LoadedPlugin> p(new LoadedPlugin);
  p->library_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!p->library_) throw CaseError("dlopen '" + path + "': " + dl_error());
  auto get_entry = reinterpret_cast<OnyxPluginEntryFn>(dlsym(p->library_, ONYX_PLUGIN_ENTRY_SYMBOL));
  if (!get_entry) throw CaseError("'" + path + "' does not export " ONYX_PLUGIN_ENTRY_SYMBOL);
  const OnyxPluginEntry* e = get_entry();
  if (!e) throw CaseError(ONYX_PLUGIN_ENTRY_SYMBOL "() returned NULL");
  if (e->magic != ONYX_PLUGIN_MAGIC) throw CaseError("entry magic is wrong (not an Onyx plugin)");
  if (e->struct_size < ONYX_PLUGIN_ENTRY_SIZE_1_0)
    throw CaseError("entry struct_size " + std::to_string(e->struct_size) + " does not cover the frozen fields (" +
                    std::to_string(ONYX_PLUGIN_ENTRY_SIZE_1_0) + " bytes)");
  if (!e->create) throw CaseError("entry has no create function");
  p->entry_ = e;
  const uint32_t low = std::max(kHostMinAbi, e->min_abi_version);
  const uint32_t high = std::min(g_host_max_abi, e->max_abi_version);
  if (low > high || ONYX_ABI_VERSION_GET_MAJOR(low) != ONYX_ABI_VERSION_GET_MAJOR(high))
    throw CaseError("incompatible: the plugin speaks ABI " + version_string(e->min_abi_version) + "-" +
                    version_string(e->max_abi_version) + ", this host " + version_string(kHostMinAbi) +
                    "-" + version_string(g_host_max_abi));
  p->abi_version_ = high;
  // A newer host passes a larger args struct: zero-filled beyond the 1.0 fields.
  std::vector<unsigned char> storage(std::max(args_size, sizeof(OnyxPluginCreateArgs)), 0);
  auto* args = reinterpret_cast<OnyxPluginCreateArgs*>(storage.data());
  args->struct_size = storage.size();
  args->abi_version = high;
  args->host = host ? host : host_api();
  args->plugin_path = path.c_str();
  args->extensions = nullptr;
  OnyxStatus* st = e->create(args, &p->plugin_, &p->api_);
  check_status(st, "create");
  if (!p->plugin_ || !p->api_) throw CaseError("create succeeded but returned no plugin or no table");
  return p;
}

LoadedPlugin::~LoadedPlugin() {
  if (plugin_ && api_ && api_->struct_size >= offsetof(OnyxProviderApi, plugin_destroy) + sizeof(void*) &&
      api_->plugin_destroy)
    api_->plugin_destroy(plugin_);
  if (library_) dlclose(library_);
}

std::vector<std::string> missing_required_functions(const LoadedPlugin& p, bool asynchronous) {
  std::vector<std::string> missing;
#define ONYX_REQUIRE(field) \
  if (!ONYX_API_HAS(p, field)) missing.push_back(#field);
  ONYX_REQUIRE(plugin_destroy)
  ONYX_REQUIRE(plugin_availability)
  ONYX_REQUIRE(device_count)
  ONYX_REQUIRE(device_properties)
  ONYX_REQUIRE(device_open)
  ONYX_REQUIRE(device_close)
  ONYX_REQUIRE(memory_alloc)
  ONYX_REQUIRE(memory_free)
  ONYX_REQUIRE(memory_copy)
  ONYX_REQUIRE(get_capability)
  ONYX_REQUIRE(kernel_create)
  ONYX_REQUIRE(kernel_destroy)
  ONYX_REQUIRE(kernel_compute)
  if (asynchronous) {
    ONYX_REQUIRE(stream_create)
    ONYX_REQUIRE(stream_destroy)
    ONYX_REQUIRE(stream_synchronize)
  }
#undef ONYX_REQUIRE
  return missing;
}

OpenDevice::OpenDevice(const LoadedPlugin& p, size_t index) : plugin_(p) {
  const OnyxProviderApi* api = p.api();
  auto missing = missing_required_functions(p, false);
  if (!missing.empty()) throw CaseError("the provider table lacks required function " + missing.front());
  if (OnyxStatus* st = api->plugin_availability(p.plugin())) {
    const std::string why = is_host_status(st) ? status_message_of(st) : "(a status the host did not create)";
    release_status(st);
    throw DeviceUnavailable("device unavailable: " + why);
  }
  if (api->device_count(p.plugin()) <= index)
    throw DeviceUnavailable("device unavailable: the plugin reports " + std::to_string(api->device_count(p.plugin())) +
                            " devices");
  props_.struct_size = sizeof props_;
  check_status(api->device_properties(p.plugin(), index, &props_), "device_properties");
  check_status(api->device_open(p.plugin(), index, nullptr, 0, nullptr, &device_), "device_open");
  if (!device_) throw CaseError("device_open succeeded but returned no device");
}

OpenDevice::~OpenDevice() {
  if (device_) plugin_.api()->device_close(device_);
}

namespace {

// The output memory declarations of `kernel`, checked; FRESH when the
// plugin has no kernel_output_memory.
std::vector<OnyxOutputMemoryInfo> output_memory_of(const LoadedPlugin& p, OnyxKernel* kernel,
                                                   const std::vector<KernelInput>& inputs, size_t output_count) {
  std::vector<OnyxOutputMemoryInfo> memory(output_count,
                                           OnyxOutputMemoryInfo{sizeof(OnyxOutputMemoryInfo), ONYX_OUTPUT_FRESH, 0});
  if (!ONYX_API_HAS(p, kernel_output_memory)) return memory;
  check_status(p.api()->kernel_output_memory(kernel, memory.data(), memory.size()), "kernel_output_memory");
  for (size_t k = 0; k < output_count; ++k) {
    const OnyxOutputMemoryInfo& m = memory[k];
    if (m.kind == ONYX_OUTPUT_FRESH) continue;
    if (m.kind != ONYX_OUTPUT_MAY_OVERWRITE_INPUT && m.kind != ONYX_OUTPUT_ALIASES_INPUT)
      throw CaseError("kernel_output_memory: output " + std::to_string(k) + " has unknown kind " +
                      std::to_string(m.kind));
    if (m.input_index < 0 || size_t(m.input_index) >= inputs.size() || !inputs[size_t(m.input_index)].present)
      throw CaseError("kernel_output_memory: output " + std::to_string(k) + " names input " +
                      std::to_string(m.input_index) + ", which is absent");
  }
  return memory;
}

}  // namespace

KernelRun run_kernel(const LoadedPlugin& p, const OpenDevice& device, OnyxKernel* kernel,
                     const std::vector<KernelInput>& inputs, size_t output_count, const KernelRunOptions& options) {
  const OnyxProviderApi* api = p.api();
  KernelRun run;
  run.output_memory = output_memory_of(p, kernel, inputs, output_count);
  RunnerContext c;
  c.api = api;
  c.device = device.get();
  c.threads = std::max<size_t>(1, options.threads);
  c.outputs.resize(output_count);
  std::vector<void*> input_buffers;
  std::vector<std::vector<int64_t>> input_dims;
  input_dims.reserve(inputs.size());
  struct Cleanup {
    RunnerContext& c;
    std::vector<void*>& buffers;
    ~Cleanup() {
      for (void* b : buffers) c.api->memory_free(c.device, ONYX_MEMORY_DEVICE, b);
      for (void* b : c.scratch) c.api->memory_free(c.device, ONYX_MEMORY_DEVICE, b);
      for (auto& o : c.outputs)
        if (o.data && o.shared_input < 0) c.api->memory_free(c.device, ONYX_MEMORY_DEVICE, o.data);
      if (c.stream) c.api->stream_destroy(c.stream);
    }
  } cleanup{c, input_buffers};
  // As the runtime: a host below 1.2 drives no stream (ctx_stream NULL).
  const bool async = device.properties().asynchronous && ONYX_API_HAS(p, stream_create) &&
                     g_host_max_abi >= ONYX_ABI_VERSION(1, 2);
  if (async) check_status(api->stream_create(device.get(), &c.stream), "stream_create");
  for (const KernelInput& in : inputs) {
    input_dims.push_back(in.tensor.dims);
    void* data = nullptr;
    if (in.present && !in.tensor.bytes.empty()) {
      check_status(api->memory_alloc(device.get(), ONYX_MEMORY_DEVICE, in.tensor.bytes.size(), 64, &data),
                   "memory_alloc");
      input_buffers.push_back(data);
      check_status(api->memory_copy(device.get(), nullptr, ONYX_COPY_HOST_TO_DEVICE, data,
                                    in.tensor.bytes.data(), in.tensor.bytes.size()),
                   "memory_copy to the device");
    }
    c.present.push_back(in.present);
    c.input_bytes.push_back(in.present ? in.tensor.bytes.size() : 0);
    c.inputs.push_back(OnyxTensorView{sizeof(OnyxTensorView), in.tensor.dtype, ONYX_MEMORY_DEVICE,
                                      in.tensor.dims.size(),
                                      input_dims.back().empty() ? nullptr : input_dims.back().data(), data});
  }
  // Aliases first: an aliased input must stay intact, so no other output may
  // then overwrite it; a constant is never overwritten either.
  std::vector<bool> taken(inputs.size(), false);
  for (size_t k = 0; k < output_count; ++k) {
    const OnyxOutputMemoryInfo& m = run.output_memory[k];
    if (m.kind != ONYX_OUTPUT_ALIASES_INPUT) continue;
    c.outputs[k].shared_input = m.input_index;
    c.outputs[k].aliases = true;
    taken[size_t(m.input_index)] = true;
  }
  for (size_t k = 0; k < output_count && options.outputs_in_place; ++k) {
    const OnyxOutputMemoryInfo& m = run.output_memory[k];
    if (m.kind != ONYX_OUTPUT_MAY_OVERWRITE_INPUT) continue;
    const size_t i = size_t(m.input_index);
    if (inputs[i].constant || taken[i]) continue;
    c.outputs[k].shared_input = m.input_index;
    taken[i] = true;
  }
  check_status(api->kernel_compute(kernel, reinterpret_cast<OnyxComputeContext*>(&c)), "kernel_compute");
  if (c.stream) check_status(api->stream_synchronize(c.stream), "stream_synchronize");
  run.outputs.resize(output_count);
  run.shared_with_input.assign(output_count, false);
  for (size_t k = 0; k < output_count; ++k) {
    const OutputSlot& slot = c.outputs[k];
    if (!slot.requested) continue;
    HostTensor& out = run.outputs[k];
    out.dtype = slot.dtype;
    out.dims = slot.dims;
    out.bytes.resize(slot.bytes);
    if (slot.bytes)
      check_status(api->memory_copy(device.get(), nullptr, ONYX_COPY_DEVICE_TO_HOST, out.bytes.data(), slot.data,
                                    slot.bytes),
                   "memory_copy from the device");
    run.shared_with_input[k] = slot.shared_input >= 0;
    if (slot.aliases && out.bytes != inputs[size_t(slot.shared_input)].tensor.bytes)
      throw CaseError("the kernel wrote into output " + std::to_string(k) +
                      ", which it declared ONYX_OUTPUT_ALIASES_INPUT of input " + std::to_string(slot.shared_input));
  }
  return run;
}

std::vector<HostTensor> run_kernel(const LoadedPlugin& p, const OpenDevice& device, OnyxKernel* kernel,
                                   const std::vector<KernelInput>& inputs, size_t output_count) {
  return run_kernel(p, device, kernel, inputs, output_count, KernelRunOptions{}).outputs;
}

}  // namespace onyx::conformance
