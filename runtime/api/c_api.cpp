// c_api.cpp: the application C API over the core. Every entry point converts
// C++ exceptions and Status into OnyxStatus*; nothing throws across.
#include <onyx/onyx_c_api.h>
#include <onyx/util/json_writer.h>

#include <cstring>

#include "session/session.h"
#include "api/c_api_internal.h"

namespace {

using onyx::runtime::Status;
using onyx::runtime::capi::copy_string;
using onyx::runtime::capi::guarded;
using onyx::runtime::capi::null_arg;

// Creates a session with `create` and stores it in *out, or returns why
// there is none. With isolation on, the worker gets the model (path or
// bytes), the options and every folder this registry searches, so that it
// opens the same plugins; it creates its session first, so that a plugin that
// crashes or hangs while loading, opening its device, claiming nodes or
// creating kernels takes down the worker, not the application (the error
// names the provider and what it was doing), before this process loads it.
template <typename Create>
Status hand_out(Create&& create, OnyxSession** out, const OnyxEnv& env, const OnyxSessionOptions* options,
                std::string model_path, std::string model_bytes) {
  std::unique_ptr<onyx::runtime::isolate::WorkerProcess> worker;
  if (options && options->isolate) {
    onyx::runtime::isolate::WorkerConfig config;
    config.model_path = std::move(model_path);
    config.model_bytes = std::move(model_bytes);
    config.options = options->options;
    config.provider_dirs = env.registry.search_dirs();
    auto started = onyx::runtime::isolate::WorkerProcess::start(std::move(config), options->run_timeout_s);
    if (!started.ok()) return started.status().with_context("isolated mode");
    worker = std::move(started).value();
  }
  onyx::runtime::StatusOr<std::unique_ptr<onyx::runtime::Session>> session = create();
  if (!session.ok()) return session.status();
  *out = new OnyxSession{std::move(session).value(), std::move(worker)};
  return Status();
}

const onyx::runtime::SessionOptions& options_of(const OnyxSessionOptions* options) {
  static const onyx::runtime::SessionOptions defaults;
  return options ? options->options : defaults;
}

Status metadata(const OnyxSession* session, size_t index, bool input, OnyxValueMetadata* out) {
  if (!session || !out) return null_arg("onyx_session_*_metadata", "argument");
  const onyx::runtime::ir::Graph& g = session->session->graph();
  const std::vector<int>& list = input ? g.inputs : g.outputs;
  if (index >= list.size())
    return onyx::runtime::invalid_argument(std::string(input ? "input" : "output") + " index " +
                                  std::to_string(index) + " out of range (" +
                                  std::to_string(list.size()) + ")");
  const onyx::runtime::ir::Value& v = g.values[list[index]];
  OnyxValueMetadata m{};
  m.struct_size = std::min(out->struct_size, sizeof m);
  m.name = v.name.c_str();
  m.dtype = v.dtype;
  m.rank = v.rank;
  m.dims = v.dims.data();
  m.kind = v.kind == onyx::runtime::ir::ValueKind::kSequence   ? ONYX_VALUE_SEQUENCE
           : v.kind == onyx::runtime::ir::ValueKind::kOptional ? ONYX_VALUE_OPTIONAL
           : v.kind == onyx::runtime::ir::ValueKind::kMap      ? ONYX_VALUE_MAP
                                                                : ONYX_VALUE_TENSOR;
  std::memcpy(out, &m, m.struct_size);
  return Status();
}

}  // namespace

extern "C" {

OnyxStatusCode onyx_status_code(const OnyxStatus* s) { return s ? s->status.code() : ONYX_STATUS_OK; }
const char* onyx_status_message(const OnyxStatus* s) { return s ? s->status.message().c_str() : ""; }
void onyx_status_release(OnyxStatus* s) { onyx::runtime::release_abi_status(s); }
void onyx_string_release(char* s) { std::free(s); }
const char* onyx_version(void) { return "0.1.0"; }

OnyxStatus* onyx_env_create(OnyxEnv** out) {
  return guarded([&] {
    if (!out) return null_arg("onyx_env_create", "out");
    *out = new OnyxEnv();
    return Status();
  });
}
void onyx_env_release(OnyxEnv* env) { delete env; }

OnyxStatus* onyx_env_add_provider_dir(OnyxEnv* env, const char* dir) {
  return guarded([&] {
    if (!env || !dir) return null_arg("onyx_env_add_provider_dir", "argument");
    env->registry.add_search_dir(dir);
    return Status();
  });
}

OnyxStatus* onyx_env_set_logger(OnyxEnv* env, OnyxLogCallback callback, void* user, int32_t min_level) {
  return guarded([&] {
    if (!env) return null_arg("onyx_env_set_logger", "env");
    if (min_level < ONYX_LOG_DEBUG || min_level > ONYX_LOG_ERROR)
      return onyx::runtime::invalid_argument("onyx_env_set_logger: min_level " + std::to_string(min_level) +
                                             " is not an OnyxLogLevel");
    env->registry.logger()->set(callback, user, min_level);
    return Status();
  });
}

OnyxStatus* onyx_env_list_providers(OnyxEnv* env, char** json) {
  return guarded([&] {
    if (!env || !json) return null_arg("onyx_env_list_providers", "argument");
    onyx::util::JsonWriter w;
    w.begin_array();
    for (const auto& found : env->registry.discover()) {
      w.begin_object();
      w.key("path").value(found.path);
      if (!found.provider) {
        w.key("name").value("");
        w.key("loaded").value(false);
        w.key("available").value(false);
        w.key("reason").value(found.load_status.message());
        w.end_object();
        continue;
      }
      const onyx::runtime::Provider& p = *found.provider;
      Status available = p.availability();
      w.key("name").value(p.name());
      w.key("version").value(p.version());
      w.key("abi").value(onyx::runtime::abi_version_string(p.abi_version()));
      w.key("loaded").value(true);
      w.key("available").value(available.ok());
      w.key("reason").value(available.message());
      w.key("devices").begin_array();
      for (size_t d = 0; available.ok() && d < p.device_count(); ++d) {
        auto props = p.device_properties(d);
        if (!props.ok()) continue;
        w.begin_object();
        w.key("index").value(uint64_t(d));
        w.key("name").value(props->name);
        w.key("vendor").value(props->vendor);
        w.key("kind").value(props->kind == ONYX_DEVICE_GPU           ? "gpu"
                            : props->kind == ONYX_DEVICE_ACCELERATOR ? "accelerator"
                                                                     : "cpu");
        w.key("stable_id").value(props->stable_id);
        w.key("memory_bytes").value(uint64_t(props->memory_bytes));
        w.key("free_memory_bytes").value(uint64_t(props->free_memory_bytes));
        w.end_object();
      }
      w.end_array();
      w.end_object();
    }
    w.end_array();
    *json = copy_string(w.str());
    return Status();
  });
}

OnyxStatus* onyx_session_options_create(OnyxSessionOptions** out) {
  return guarded([&] {
    if (!out) return null_arg("onyx_session_options_create", "out");
    *out = new OnyxSessionOptions();
    return Status();
  });
}
void onyx_session_options_release(OnyxSessionOptions* o) { delete o; }

OnyxStatus* onyx_session_options_append_provider(OnyxSessionOptions* o, const char* name,
                                                 const char* const* keys,
                                                 const char* const* values, size_t count) {
  return guarded([&] {
    if (!o || !name) return null_arg("onyx_session_options_append_provider", "argument");
    if (count && (!keys || !values))
      return null_arg("onyx_session_options_append_provider", "keys/values");
    onyx::runtime::ProviderRequest request{name, {}};
    for (size_t k = 0; k < count; ++k) {
      if (!keys[k] || !values[k]) return null_arg("onyx_session_options_append_provider", "option");
      request.options.emplace_back(keys[k], values[k]);
    }
    o->options.providers.push_back(std::move(request));
    return Status();
  });
}

OnyxStatus* onyx_session_options_set_fallback(OnyxSessionOptions* o, OnyxFallbackPolicy policy) {
  return guarded([&] {
    if (!o) return null_arg("onyx_session_options_set_fallback", "options");
    if (policy < ONYX_FALLBACK_FAIL || policy > ONYX_FALLBACK_ALLOW)
      return onyx::runtime::invalid_argument("unknown fallback policy " + std::to_string(int(policy)));
    o->options.fallback = policy == ONYX_FALLBACK_FAIL   ? onyx::runtime::FallbackPolicy::kFail
                          : policy == ONYX_FALLBACK_WARN ? onyx::runtime::FallbackPolicy::kWarn
                                                         : onyx::runtime::FallbackPolicy::kAllow;
    return Status();
  });
}

OnyxStatus* onyx_session_options_set_device_policy(OnyxSessionOptions* o, OnyxDevicePolicy policy) {
  return guarded([&] {
    if (!o) return null_arg("onyx_session_options_set_device_policy", "options");
    if (policy < ONYX_DEVICE_POLICY_NONE || policy > ONYX_DEVICE_POLICY_FASTEST)
      return onyx::runtime::invalid_argument("unknown device policy " + std::to_string(int(policy)));
    o->options.device_policy = policy == ONYX_DEVICE_POLICY_PREFER_GPU   ? onyx::runtime::DevicePolicy::kPreferGpu
                               : policy == ONYX_DEVICE_POLICY_PREFER_CPU ? onyx::runtime::DevicePolicy::kPreferCpu
                               : policy == ONYX_DEVICE_POLICY_FASTEST    ? onyx::runtime::DevicePolicy::kFastest
                                                                         : onyx::runtime::DevicePolicy::kNone;
    return Status();
  });
}

OnyxStatus* onyx_session_options_set_intra_op_threads(OnyxSessionOptions* o, size_t threads) {
  return guarded([&] {
    if (!o) return null_arg("onyx_session_options_set_intra_op_threads", "options");
    o->options.intra_op_threads = threads;
    return Status();
  });
}

OnyxStatus* onyx_session_options_set_allow_reduced_precision(OnyxSessionOptions* o, bool allow) {
  return guarded([&] {
    if (!o) return null_arg("onyx_session_options_set_allow_reduced_precision", "options");
    o->options.allow_reduced_precision = allow;
    return Status();
  });
}

OnyxStatus* onyx_session_options_set_graph_optimization(OnyxSessionOptions* o, OnyxGraphOptimization level) {
  return guarded([&] {
    using Level = onyx::runtime::GraphOptimization;
    if (!o) return null_arg("onyx_session_options_set_graph_optimization", "options");
    switch (level) {
      case ONYX_GRAPH_OPTIMIZATION_OFF: o->options.graph_optimization = Level::kOff; break;
      case ONYX_GRAPH_OPTIMIZATION_BASIC: o->options.graph_optimization = Level::kBasic; break;
      case ONYX_GRAPH_OPTIMIZATION_ALL: o->options.graph_optimization = Level::kAll; break;
      default:
        return onyx::runtime::invalid_argument("onyx_session_options_set_graph_optimization: level " + std::to_string(int(level)) +
                                " is not OFF (0), BASIC (1) or ALL (2)");
    }
    return Status();
  });
}

OnyxStatus* onyx_session_options_set_host_memory_limit(OnyxSessionOptions* o, size_t bytes) {
  return guarded([&] {
    if (!o) return null_arg("onyx_session_options_set_host_memory_limit", "options");
    o->options.host_memory_limit = bytes;
    return Status();
  });
}

OnyxStatus* onyx_session_options_set_isolation(OnyxSessionOptions* o, bool isolate, double run_timeout_seconds) {
  return guarded([&] {
    if (!o) return null_arg("onyx_session_options_set_isolation", "options");
    if (!(run_timeout_seconds >= 0))  // also NaN
      return onyx::runtime::invalid_argument("onyx_session_options_set_isolation: run_timeout_seconds " +
                                             std::to_string(run_timeout_seconds) + " is negative");
    o->isolate = isolate;
    o->run_timeout_s = run_timeout_seconds;
    return Status();
  });
}

OnyxStatus* onyx_session_options_set_compiled_cache(OnyxSessionOptions* o, const char* folder) {
  return guarded([&] {
    if (!o) return null_arg("onyx_session_options_set_compiled_cache", "options");
    o->options.compiled_cache_dir = folder ? folder : "";
    return Status();
  });
}

OnyxStatus* onyx_session_create(OnyxEnv* env, const char* path, const OnyxSessionOptions* options,
                                OnyxSession** out) {
  return guarded([&] {
    if (!env || !path || !out) return null_arg("onyx_session_create", "argument");
    return hand_out([&] { return onyx::runtime::Session::create_from_file(env->registry, path, options_of(options)); },
                    out, *env, options, path, "");
  });
}

OnyxStatus* onyx_session_create_from_buffer(OnyxEnv* env, const void* data, size_t size,
                                            const OnyxSessionOptions* options, OnyxSession** out) {
  return guarded([&] {
    if (!env || !data || !out) return null_arg("onyx_session_create_from_buffer", "argument");
    return hand_out(
        [&] { return onyx::runtime::Session::create_from_bytes(env->registry, data, size, options_of(options)); },
        out, *env, options, "", std::string(static_cast<const char*>(data), size));
  });
}

void onyx_session_release(OnyxSession* s) { delete s; }

size_t onyx_session_input_count(const OnyxSession* s) {
  return s ? s->session->graph().inputs.size() : 0;
}
size_t onyx_session_output_count(const OnyxSession* s) {
  return s ? s->session->graph().outputs.size() : 0;
}
OnyxStatus* onyx_session_input_metadata(const OnyxSession* s, size_t i, OnyxValueMetadata* out) {
  return guarded([&] { return metadata(s, i, true, out); });
}
OnyxStatus* onyx_session_output_metadata(const OnyxSession* s, size_t i, OnyxValueMetadata* out) {
  return guarded([&] { return metadata(s, i, false, out); });
}

OnyxStatus* onyx_session_run(OnyxSession* s, const char* const* input_names,
                             const OnyxTensor* const* inputs, size_t input_count,
                             const char* const* output_names, size_t output_count,
                             OnyxTensor** outputs) {
  return guarded([&] {
    if (!s || (input_count && (!input_names || !inputs)) || (output_count && !outputs))
      return null_arg("onyx_session_run", "argument");
    std::vector<std::pair<std::string, onyx::runtime::Tensor>> in;
    for (size_t k = 0; k < input_count; ++k) {
      if (!input_names[k] || !inputs[k]) return null_arg("onyx_session_run", "input");
      in.emplace_back(input_names[k], inputs[k]->tensor);
    }
    std::vector<std::string> names;
    if (output_names) {
      for (size_t k = 0; k < output_count; ++k) {
        if (!output_names[k]) return null_arg("onyx_session_run", "output name");
        names.emplace_back(output_names[k]);
      }
    } else if (output_count != s->session->graph().outputs.size()) {
      return onyx::runtime::invalid_argument("onyx_session_run: output_count is " +
                                    std::to_string(output_count) + " but the model has " +
                                    std::to_string(s->session->graph().outputs.size()) + " outputs");
    }
    bool on_device = false;
    for (size_t k = 0; k < input_count; ++k) on_device = on_device || inputs[k]->device;
    if (on_device) {  // device tensors among the inputs: the outputs come back to the host
      if (s->worker) return onyx::runtime::unimplemented("onyx_session_run: an isolated session takes host tensors only");
      std::vector<std::string> in_names(input_names, input_names + input_count), out_names = names;
      if (out_names.empty())
        for (int v : s->session->graph().outputs) out_names.push_back(s->session->graph().values[size_t(v)].name);
      std::vector<onyx::runtime::Tensor> results;
      ONYX_RETURN_IF_ERROR(onyx::runtime::capi::run_device_inputs(
          s, in_names, std::vector<const OnyxTensor*>(inputs, inputs + input_count), out_names, &results));
      for (size_t k = 0; k < output_count; ++k) outputs[k] = new OnyxTensor{results[k]};
      return Status();
    }
    auto result = s->worker ? s->worker->run(in, names) : s->session->run(in, names);
    if (!result.ok()) return result.status();
    if (result.value().size() != output_count)  // a worker's reply is not trusted
      return onyx::runtime::internal_error("onyx_session_run: the isolated worker returned " +
                                           std::to_string(result.value().size()) + " outputs, not " +
                                           std::to_string(output_count));
    for (size_t k = 0; k < output_count; ++k) outputs[k] = new OnyxTensor{result.value()[k]};
    return Status();
  });
}

void onyx_session_cancel_runs(OnyxSession* s) {
  if (s) s->session->cancel_runs();
  if (s && s->worker) s->worker->kill_run();
}

OnyxStatus* onyx_run_options_create(OnyxRunOptions** out) {
  return guarded([&] {
    if (!out) return null_arg("onyx_run_options_create", "out");
    *out = new OnyxRunOptions();
    return Status();
  });
}

void onyx_run_options_release(OnyxRunOptions* options) { delete options; }

OnyxStatus* onyx_run_options_set_tag(OnyxRunOptions* options, const char* tag) {
  return guarded([&] {
    if (!options) return null_arg("onyx_run_options_set_tag", "options");
    options->options.set_tag(tag ? tag : "");
    return Status();
  });
}

void onyx_run_options_cancel(OnyxRunOptions* options) {
  if (options) options->options.cancel();
}

OnyxStatus* onyx_session_run_with_options(OnyxSession* s, const OnyxRunOptions* options,
                                          const char* const* input_names, const OnyxTensor* const* inputs,
                                          size_t input_count, const char* const* output_names, size_t output_count,
                                          OnyxTensor** outputs) {
  // The executor (and an isolated session's worker) find them on this thread.
  onyx::runtime::RunOptionsScope scope(options ? &options->options : nullptr);
  return onyx_session_run(s, input_names, inputs, input_count, output_names, output_count, outputs);
}

OnyxStatus* onyx_session_partition_report(const OnyxSession* s, char** json) {
  return guarded([&] {
    if (!s || !json) return null_arg("onyx_session_partition_report", "argument");
    *json = copy_string(s->session->partition_report().to_json(s->session->graph()));
    return Status();
  });
}

OnyxStatus* onyx_session_memory_report(OnyxSession* s, const char* const* names,
                                       const int64_t* const* dims, const size_t* ranks,
                                       size_t count, char** json) {
  return guarded([&] {
    if (!s || !json || (count && (!names || !dims || !ranks)))
      return null_arg("onyx_session_memory_report", "argument");
    std::map<std::string, onyx::runtime::Shape> shapes;
    for (size_t k = 0; k < count; ++k) shapes[names[k]] = onyx::runtime::Shape(dims[k], dims[k] + ranks[k]);
    auto report = s->session->memory_report(shapes);
    if (!report.ok()) return report.status();
    onyx::util::JsonWriter w;
    w.begin_array();
    for (const onyx::runtime::MemoryReport& r : report.value()) {
      w.begin_object();
      w.key("device").value(r.device);
      w.key("arena_bytes").value(uint64_t(r.arena_bytes));
      w.key("lower_bound_bytes").value(uint64_t(r.lower_bound));
      w.key("ratio").value(r.lower_bound ? double(r.arena_bytes) / double(r.lower_bound) : 1.0);
      w.key("planned_tensors").value(uint64_t(r.planned_tensors));
      w.key("dynamic_tensors").value(uint64_t(r.dynamic_tensors));
      w.key("in_place").value(uint64_t(r.in_place));
      w.key("aliased").value(uint64_t(r.aliased));
      w.end_object();
    }
    w.end_array();
    *json = copy_string(w.str());
    return Status();
  });
}

OnyxStatus* onyx_session_start_profiling(OnyxSession* s) {
  return guarded([&] {
    if (!s) return null_arg("onyx_session_start_profiling", "session");
    s->session->start_profiling();
    return Status();
  });
}

OnyxStatus* onyx_session_end_profiling(OnyxSession* s, char** json) {
  return guarded([&] {
    if (!s || !json) return null_arg("onyx_session_end_profiling", "argument");
    auto trace = s->session->end_profiling();
    if (!trace.ok()) return trace.status();
    *json = copy_string(trace.value());
    return Status();
  });
}

OnyxStatus* onyx_tensor_create(int32_t dtype, const int64_t* dims, size_t rank, OnyxTensor** out) {
  return guarded([&] {
    if (!out || (rank && !dims)) return null_arg("onyx_tensor_create", "argument");
    if (onyx::runtime::storage_bytes(dtype, 2) == 0)
      return onyx::runtime::invalid_argument("onyx_tensor_create: unsupported dtype " + std::to_string(dtype));
    for (size_t k = 0; k < rank; ++k)
      if (dims[k] < 0) return onyx::runtime::invalid_argument("onyx_tensor_create: negative dim");
    *out = new OnyxTensor{onyx::runtime::Tensor::allocate(dtype, onyx::runtime::Shape(dims, dims + rank))};
    return Status();
  });
}

OnyxStatus* onyx_tensor_create_borrowed(int32_t dtype, const int64_t* dims, size_t rank, void* data,
                                        size_t bytes, OnyxTensor** out) {
  return guarded([&] {
    if (!out || (rank && !dims)) return null_arg("onyx_tensor_create_borrowed", "argument");
    if (onyx::runtime::storage_bytes(dtype, 2) == 0)
      return onyx::runtime::invalid_argument("onyx_tensor_create_borrowed: unsupported dtype " +
                                    std::to_string(dtype));
    onyx::runtime::Shape shape(dims, dims + rank);
    for (int64_t d : shape)
      if (d < 0) return onyx::runtime::invalid_argument("onyx_tensor_create_borrowed: negative dim");
    size_t need = onyx::runtime::storage_bytes(dtype, onyx::runtime::element_count(shape));
    if (bytes != need)
      return onyx::runtime::invalid_argument("onyx_tensor_create_borrowed: " + std::to_string(bytes) +
                                    " bytes given, shape " + onyx::runtime::shape_string(shape) + " of " +
                                    onyx::runtime::dtype_name(dtype) + " needs " + std::to_string(need));
    if (need && !data) return null_arg("onyx_tensor_create_borrowed", "data");
    *out = new OnyxTensor{onyx::runtime::Tensor::wrap(dtype, shape, data, nullptr)};
    return Status();
  });
}

void onyx_tensor_release(OnyxTensor* t) { delete t; }
int32_t onyx_tensor_dtype(const OnyxTensor* t) { return t ? t->tensor.dtype() : 0; }
size_t onyx_tensor_rank(const OnyxTensor* t) { return t ? t->tensor.shape().size() : 0; }
const int64_t* onyx_tensor_dims(const OnyxTensor* t) { return t ? t->tensor.shape().data() : nullptr; }
int64_t onyx_tensor_element_count(const OnyxTensor* t) { return t ? t->tensor.size() : 0; }
size_t onyx_tensor_byte_size(const OnyxTensor* t) { return t ? t->tensor.bytes() : 0; }
void* onyx_tensor_data(OnyxTensor* t) { return t ? t->tensor.data() : nullptr; }

}  // extern "C"
