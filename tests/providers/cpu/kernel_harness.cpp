// kernel_harness.cpp: the fake host (OnyxHostApi) and run_node. Tensors and
// attributes are in kernel_harness_tensor.cpp, the ONNX backend-test loader
// in kernel_harness_onnx.cpp.
#include "kernel_harness.h"

#include <onyx/plugin_sdk.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>

#include "kernels/registry.h"

namespace onyx::test {

namespace {

// Bytes a tensor of `dtype` with `count` elements occupies (sub-byte types
// pack two per byte); SIZE_MAX for types without a byte layout (string).
size_t byte_size(int32_t dtype, int64_t count) {
  if (dtype == ONYX_DTYPE_INT4 || dtype == ONYX_DTYPE_UINT4 || dtype == ONYX_DTYPE_FLOAT4E2M1)
    return size_t(count + 1) / 2;
  size_t element = sdk::dtype_size(dtype);
  return element ? size_t(count) * element : SIZE_MAX;
}

// ---------------------------------------------------------------------------
// The fake host
// ---------------------------------------------------------------------------

struct FakeStatus {
  int32_t code;
  std::string message;
};
FakeStatus* as_fake(const OnyxStatus* s) {
  return reinterpret_cast<FakeStatus*>(const_cast<OnyxStatus*>(s));
}

std::mutex g_log_mutex;
std::vector<std::string> g_log;

// 64-byte aligned bytes, like the CPU device's allocator gives.
struct Buffer {
  std::unique_ptr<unsigned char, decltype(&std::free)> ptr{nullptr, &std::free};
  size_t bytes = 0;
  explicit Buffer(size_t n) : bytes(n) {
    ptr.reset(static_cast<unsigned char*>(std::aligned_alloc(64, (std::max<size_t>(n, 1) + 63) / 64 * 64)));
    if (!ptr) throw std::bad_alloc();
  }
  unsigned char* data() const { return ptr.get(); }
};

struct OutputSlot {
  bool requested = false;
  int32_t dtype = 0;
  std::vector<int64_t> dims;
  std::unique_ptr<Buffer> fresh;
  int32_t shared_input = -1;  // input whose buffer this output uses, or -1
  bool aliases = false;       // ONYX_OUTPUT_ALIASES_INPUT (kernel must not write)
};

struct FakeContext {
  const RunOptions* options = nullptr;
  std::vector<const HostTensor*> inputs;
  std::vector<std::unique_ptr<Buffer>> input_buffers;  // working copies (null: omitted)
  std::vector<OutputSlot> outputs;
  std::vector<std::unique_ptr<Buffer>> scratch;
};
FakeContext* as_ctx(const OnyxComputeContext* c) {
  return reinterpret_cast<FakeContext*>(const_cast<OnyxComputeContext*>(c));
}

OnyxStatus* fake_status_create(int32_t code, const char* message) {
  if (code == ONYX_STATUS_OK) return nullptr;
  return reinterpret_cast<OnyxStatus*>(new FakeStatus{code, message ? message : ""});
}

OnyxStatus* ctx_output(OnyxComputeContext* c, size_t index, int32_t dtype, const int64_t* dims,
                       size_t rank, OnyxTensorView* out) {
  FakeContext& ctx = *as_ctx(c);
  if (index >= ctx.outputs.size())
    return fake_status_create(ONYX_STATUS_INVALID_ARGUMENT, "ctx_output: index out of range");
  OutputSlot& slot = ctx.outputs[index];
  if (slot.requested)
    return fake_status_create(ONYX_STATUS_FAILED_PRECONDITION, "ctx_output: output requested twice");
  if (rank && !dims)
    return fake_status_create(ONYX_STATUS_INVALID_ARGUMENT, "ctx_output: dims is NULL");
  for (size_t k = 0; k < rank; ++k)
    if (dims[k] < 0)
      return fake_status_create(ONYX_STATUS_INVALID_ARGUMENT, "ctx_output: negative dim");
  slot.dtype = dtype;
  slot.dims.assign(dims, dims + rank);
  size_t bytes = byte_size(dtype, sdk::element_count(slot.dims));
  if (bytes == SIZE_MAX)
    return fake_status_create(ONYX_STATUS_INVALID_ARGUMENT, "ctx_output: dtype has no byte layout");
  slot.requested = true;
  unsigned char* data = nullptr;
  if (slot.shared_input >= 0) {
    const Buffer& in = *ctx.input_buffers[size_t(slot.shared_input)];
    if (in.bytes == bytes) {
      data = in.data();
    } else if (slot.aliases) {
      return fake_status_create(ONYX_STATUS_INVALID_ARGUMENT,
                                "ctx_output: output declared as an alias of an input of a "
                                "different byte size");
    } else {
      slot.shared_input = -1;  // the planner would not have shared these
    }
  }
  if (!data) {
    slot.fresh = std::make_unique<Buffer>(bytes);
    std::memset(slot.fresh->data(), 0xCD, bytes);  // poison: unwritten elements show
    data = slot.fresh->data();
  }
  out->dtype = dtype;
  out->memory_kind = ONYX_MEMORY_HOST;
  out->rank = rank;
  out->dims = slot.dims.data();
  out->data = data;
  return nullptr;
}

void ctx_parallel_for(OnyxComputeContext* c, size_t n, size_t grain, OnyxParallelBody body,
                      void* user) {
  size_t threads = as_ctx(c)->options->threads;
  if (n == 0) return;
  if (threads <= 1) {
    body(user, 0, n);
    return;
  }
  // Several chunks per thread, handed out dynamically, so that chunk
  // boundaries fall in many places and races have a chance to show.
  size_t chunk = std::max<size_t>({grain, 1, (n + threads * 4 - 1) / (threads * 4)});
  size_t chunks = (n + chunk - 1) / chunk;
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t k; (k = next.fetch_add(1)) < chunks;)
      body(user, k * chunk, std::min(n, (k + 1) * chunk));
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < std::min(threads, chunks); ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
}

const OnyxHostApi& fake_host() {
  static const OnyxHostApi api = [] {
    OnyxHostApi h{};
    h.struct_size = sizeof(OnyxHostApi);
    h.abi_version = ONYX_ABI_VERSION(ONYX_ABI_VERSION_MAJOR, ONYX_ABI_VERSION_MINOR);
    h.status_create = fake_status_create;
    h.status_release = [](OnyxStatus* s) { delete as_fake(s); };
    h.status_code = [](const OnyxStatus* s) { return s ? as_fake(s)->code : int32_t(ONYX_STATUS_OK); };
    h.status_message = [](const OnyxStatus* s) { return s ? as_fake(s)->message.c_str() : ""; };
    h.log = [](int32_t level, const char* message) {
      std::lock_guard<std::mutex> lock(g_log_mutex);
      g_log.emplace_back(message ? message : "");
      if (level >= ONYX_LOG_WARNING) std::fprintf(stderr, "[kernel log] %s\n", g_log.back().c_str());
    };
    h.ctx_input_count = [](const OnyxComputeContext* c) { return as_ctx(c)->inputs.size(); };
    h.ctx_output_count = [](const OnyxComputeContext* c) { return as_ctx(c)->outputs.size(); };
    h.ctx_input = [](const OnyxComputeContext* c, size_t index, OnyxTensorView* out) -> OnyxStatus* {
      FakeContext& ctx = *as_ctx(c);
      if (!out) return fake_status_create(ONYX_STATUS_INVALID_ARGUMENT, "ctx_input: out is NULL");
      if (index >= ctx.inputs.size())
        return fake_status_create(ONYX_STATUS_INVALID_ARGUMENT, "ctx_input: index out of range");
      bool omitted = !ctx.input_buffers[index];
      const HostTensor* t = omitted ? nullptr : ctx.inputs[index];
      out->dtype = omitted ? int32_t(ONYX_DTYPE_UNDEFINED) : t->dtype;
      out->memory_kind = ONYX_MEMORY_HOST;
      out->rank = omitted ? 0 : t->dims.size();
      out->dims = omitted || t->dims.empty() ? nullptr : t->dims.data();
      out->data = omitted ? nullptr : ctx.input_buffers[index]->data();
      return nullptr;
    };
    h.ctx_output = ctx_output;
    h.ctx_stream = [](const OnyxComputeContext*) -> OnyxStream* { return nullptr; };
    h.ctx_scratch = [](OnyxComputeContext* c, size_t bytes, void** out) -> OnyxStatus* {
      as_ctx(c)->scratch.push_back(std::make_unique<Buffer>(bytes));
      *out = as_ctx(c)->scratch.back()->data();
      return nullptr;
    };
    h.ctx_parallel_for = ctx_parallel_for;
    h.ctx_thread_count = [](const OnyxComputeContext* c) {
      return std::max<size_t>(1, as_ctx(c)->options->threads);
    };
    return h;
  }();
  return api;
}

// The CPU provider, created once through its real entry path.
struct Provider {
  OnyxPlugin* plugin = nullptr;
  const OnyxProviderApi* api = nullptr;
  OnyxDevice* device = nullptr;
};

const Provider& provider() {
  static const Provider p = [] {
    Provider out;
    OnyxPluginCreateArgs args{};
    args.struct_size = sizeof args;
    args.abi_version = fake_host().abi_version;
    args.host = &fake_host();
    args.plugin_path = "in-process";
    sdk::HostMemoryProviderConfig config;
    config.device_name = "cpu (kernel harness)";
    config.register_kernels = onyx::cpu::register_all_kernels;
    OnyxStatus* st = sdk::create_host_memory_provider(&args, std::move(config), &out.plugin, &out.api);
    if (!st) st = out.api->device_open(out.plugin, 0, nullptr, 0, nullptr, &out.device);
    if (st) {
      std::fprintf(stderr, "kernel harness: cannot create the CPU provider: %s\n",
                   as_fake(st)->message.c_str());
      std::abort();
    }
    return out;
  }();
  return p;
}

// Takes a status returned by the provider: fills code/message, frees it.
bool take_status(OnyxStatus* st, RunResult* result) {
  if (!st) return false;
  result->status_code = as_fake(st)->code;
  result->error = as_fake(st)->message;
  if (result->error.empty()) result->error = "(status without message)";
  delete as_fake(st);
  return true;
}

OnyxTensorView view_of(const HostTensor& t) {
  return OnyxTensorView{sizeof(OnyxTensorView), t.dtype, ONYX_MEMORY_HOST, t.dims.size(),
                        t.dims.empty() ? nullptr : t.dims.data(),
                        const_cast<unsigned char*>(t.bytes.data())};
}

std::string check_tensor(const HostTensor& t, const std::string& what) {
  size_t want = byte_size(t.dtype, t.size());
  if (want == SIZE_MAX) return what + ": the harness cannot hold tensors of this dtype";
  if (t.bytes.size() != want)
    return what + " has " + std::to_string(t.bytes.size()) + " bytes, its dtype and dims need " +
           std::to_string(want);
  return {};
}

}  // namespace

// ---------------------------------------------------------------------------
// run_node
// ---------------------------------------------------------------------------

RunResult run_node(const NodeSpec& spec, const RunOptions& options) {
  RunResult result;
  const Provider& p = provider();

  for (size_t k = 0; k < spec.inputs.size(); ++k) {
    if (!spec.inputs[k].present) continue;
    std::string bad = check_tensor(spec.inputs[k], "harness: input " + std::to_string(k));
    if (!bad.empty()) {
      result.error = bad;
      result.status_code = ONYX_STATUS_INVALID_ARGUMENT;
      return result;
    }
  }

  // --- the graph view: one node, its input and output values --------------
  std::vector<std::string> names;
  std::vector<OnyxTensorView> constant_views(spec.inputs.size());
  std::vector<OnyxValueInfo> values;
  std::vector<int32_t> input_ids, output_ids;
  for (size_t k = 0; k < spec.inputs.size(); ++k) names.push_back("input_" + std::to_string(k));
  for (size_t k = 0; k < spec.output_count; ++k) names.push_back("output_" + std::to_string(k));
  for (size_t k = 0; k < spec.inputs.size(); ++k) {
    const HostTensor& t = spec.inputs[k];
    if (!t.present) {
      input_ids.push_back(ONYX_NO_VALUE);
      continue;
    }
    OnyxValueInfo v{};
    v.struct_size = sizeof v;
    v.name = names[k].c_str();
    v.dtype = t.dtype;
    bool hide = options.hide_input_shapes && !t.constant;
    v.rank = hide ? -1 : int32_t(t.dims.size());
    v.dims = hide || t.dims.empty() ? nullptr : t.dims.data();
    v.flags = ONYX_VALUE_GRAPH_INPUT;
    if (t.constant) {
      constant_views[k] = view_of(t);
      v.flags = ONYX_VALUE_CONSTANT;
      v.constant = &constant_views[k];
    }
    input_ids.push_back(int32_t(values.size()));
    values.push_back(v);
  }
  for (size_t k = 0; k < spec.output_count; ++k) {
    OnyxValueInfo v{};
    v.struct_size = sizeof v;
    v.name = names[spec.inputs.size() + k].c_str();
    v.dtype = k < spec.output_dtypes.size() ? spec.output_dtypes[k] : 0;
    v.rank = -1;
    v.flags = ONYX_VALUE_GRAPH_OUTPUT;
    output_ids.push_back(int32_t(values.size()));
    values.push_back(v);
  }

  std::vector<OnyxAttribute> attrs;
  std::vector<std::vector<const char*>> string_lists(spec.attributes.size());
  std::vector<OnyxTensorView> tensor_views(spec.attributes.size());
  for (size_t k = 0; k < spec.attributes.size(); ++k) {
    const auto& [key, a] = spec.attributes[k];
    OnyxAttribute out{};
    out.struct_size = sizeof out;
    out.name = key.c_str();
    out.type = a.type;
    out.i = a.i;
    out.f = a.f;
    if (a.type == ONYX_ATTR_STRING) {
      out.s = a.s.data();
      out.s_len = a.s.size();
    } else if (a.type == ONYX_ATTR_INTS) {
      out.ints = a.ints.data();
      out.count = a.ints.size();
    } else if (a.type == ONYX_ATTR_FLOATS) {
      out.floats = a.floats.data();
      out.count = a.floats.size();
    } else if (a.type == ONYX_ATTR_STRINGS) {
      for (const std::string& s : a.strings) string_lists[k].push_back(s.c_str());
      out.strings = string_lists[k].data();
      out.count = a.strings.size();
    } else if (a.type == ONYX_ATTR_TENSOR) {
      std::string bad = check_tensor(a.tensor, "harness: attribute '" + key + "'");
      if (!bad.empty()) {
        result.error = bad;
        result.status_code = ONYX_STATUS_INVALID_ARGUMENT;
        return result;
      }
      tensor_views[k] = view_of(a.tensor);
      out.tensor = &tensor_views[k];
    }
    attrs.push_back(out);
  }

  OnyxNodeView node{};
  node.struct_size = sizeof node;
  node.name = spec.name.c_str();
  node.op_type = spec.op_type.c_str();
  node.domain = spec.domain.c_str();
  node.opset_version = spec.opset;
  node.inputs = input_ids.data();
  node.input_count = input_ids.size();
  node.outputs = output_ids.data();
  node.output_count = output_ids.size();
  node.attributes = attrs.data();
  node.attribute_count = attrs.size();
  OnyxGraphView graph{sizeof(OnyxGraphView), values.data(), values.size(), &node, 1};

  // --- capability, creation, memory declarations ---------------------------
  OnyxNodeClaim claim{};
  claim.struct_size = sizeof claim;
  if (take_status(p.api->get_capability(p.device, &graph, &claim), &result)) return result;
  if (!claim.claimed) {
    result.declined = true;
    result.error = claim.reason;
    result.status_code = ONYX_STATUS_UNIMPLEMENTED;
    return result;
  }
  uint32_t node_index = 0;
  OnyxKernel* kernel = nullptr;
  if (take_status(p.api->kernel_create(p.device, &graph, &node_index, 1, &kernel), &result))
    return result;
  std::unique_ptr<OnyxKernel, void (*)(OnyxKernel*)> kernel_guard(kernel, p.api->kernel_destroy);

  result.output_memory.assign(spec.output_count, OnyxOutputMemoryInfo{sizeof(OnyxOutputMemoryInfo),
                                                                      ONYX_OUTPUT_FRESH, 0});
  if (p.api->kernel_output_memory &&
      take_status(p.api->kernel_output_memory(kernel, result.output_memory.data(),
                                              result.output_memory.size()),
                  &result))
    return result;

  // --- the compute context --------------------------------------------------
  FakeContext ctx;
  ctx.options = &options;
  for (const HostTensor& t : spec.inputs) {
    ctx.inputs.push_back(&t);
    std::unique_ptr<Buffer> buffer;
    if (t.present) {
      buffer = std::make_unique<Buffer>(t.bytes.size());
      if (!t.bytes.empty()) std::memcpy(buffer->data(), t.bytes.data(), t.bytes.size());
    }
    ctx.input_buffers.push_back(std::move(buffer));
  }
  ctx.outputs.resize(spec.output_count);
  // Aliases first: an aliased input must stay intact, so no output may then
  // overwrite it; a constant (initializer) is never overwritten either.
  std::vector<bool> input_taken(spec.inputs.size(), false);
  for (size_t k = 0; k < spec.output_count; ++k) {
    const OnyxOutputMemoryInfo& m = result.output_memory[k];
    if (m.kind != ONYX_OUTPUT_ALIASES_INPUT) continue;
    if (m.input_index < 0 || size_t(m.input_index) >= spec.inputs.size() ||
        !spec.inputs[size_t(m.input_index)].present) {
      result.error = "harness: output " + std::to_string(k) + " is declared an alias of input " +
                     std::to_string(m.input_index) + ", which is absent";
      return result;
    }
    ctx.outputs[k].shared_input = m.input_index;
    ctx.outputs[k].aliases = true;
    input_taken[size_t(m.input_index)] = true;
  }
  for (size_t k = 0; k < spec.output_count && options.in_place; ++k) {
    const OnyxOutputMemoryInfo& m = result.output_memory[k];
    if (m.kind != ONYX_OUTPUT_MAY_OVERWRITE_INPUT || m.input_index < 0 ||
        size_t(m.input_index) >= spec.inputs.size())
      continue;
    const HostTensor& in = spec.inputs[size_t(m.input_index)];
    if (!in.present || in.constant || input_taken[size_t(m.input_index)]) continue;
    ctx.outputs[k].shared_input = m.input_index;
    input_taken[size_t(m.input_index)] = true;
  }

  {
    std::lock_guard<std::mutex> lock(g_log_mutex);
    g_log.clear();
  }
  bool failed = take_status(p.api->kernel_compute(kernel, reinterpret_cast<OnyxComputeContext*>(&ctx)),
                            &result);
  {
    std::lock_guard<std::mutex> lock(g_log_mutex);
    result.log = std::move(g_log);
    g_log.clear();
  }
  if (failed) return result;

  // --- outputs ----------------------------------------------------------------
  for (size_t k = 0; k < spec.output_count; ++k) {
    const OutputSlot& slot = ctx.outputs[k];
    HostTensor t;
    t.present = slot.requested;
    result.shared_with_input.push_back(slot.requested && slot.shared_input >= 0);
    if (slot.requested) {
      t.dtype = slot.dtype;
      t.dims = slot.dims;
      size_t bytes = byte_size(slot.dtype, sdk::element_count(slot.dims));
      const unsigned char* data = slot.shared_input >= 0
                                      ? ctx.input_buffers[size_t(slot.shared_input)]->data()
                                      : slot.fresh->data();
      t.bytes.assign(data, data + bytes);
      if (slot.aliases && t.bytes != spec.inputs[size_t(slot.shared_input)].bytes) {
        result.error = "harness: the kernel wrote into output " + std::to_string(k) +
                       ", which it declared ONYX_OUTPUT_ALIASES_INPUT of input " +
                       std::to_string(slot.shared_input);
        return result;
      }
    }
    result.outputs.push_back(std::move(t));
  }
  return result;
}

}  // namespace onyx::test
