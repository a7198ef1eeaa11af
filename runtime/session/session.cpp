#include "session/session.h"

#include <algorithm>
#include <map>
#include <optional>

#include "core/abi_status.h"
#include "core/step_observer.h"
#include "core/string_tensor.h"
#include "ir/onnx_import.h"
#include "ir/value_kinds.h"
#include "plugin/write_guard.h"
#include "session/control_flow.h"
#include "session/copy_insertion.h"
#include "session/device_choice.h"
#include "session/compiled_cache.h"
#include "session/executor.h"
#include "session/fused_groups.h"
#include "session/graph_view.h"
#include "session/host_kernels.h"
#include "session/provider_probe.h"

namespace onyx::runtime {

namespace {

// Every input an application must feed is a typed tensor, or a sequence,
// optional or map (which the host carries): else no provider can claim its readers,
// and "no provider supports op ..." would name the wrong problem.
Status check_graph_inputs(const ir::Graph& graph) {
  for (int v : graph.inputs) {
    const ir::Value& value = graph.values[size_t(v)];
    if (value.constant) continue;  // an initializer's default gives the type
    const std::string where = "graph '" + graph.name + "' input '" + value.name + "'";
    switch (value.kind) {
      case ir::ValueKind::kTensor:
        if (value.dtype == ONYX_DTYPE_UNDEFINED)
          return invalid_argument(where + " declares no element type; a model's inputs must be typed tensors");
        break;
      case ir::ValueKind::kSequence:
      case ir::ValueKind::kOptional:
      case ir::ValueKind::kMap:
        break;  // carried by the host (core/value.h)
      case ir::ValueKind::kSparseTensor:
        return unimplemented(where + " is a sparse tensor; Onyx takes dense tensor inputs only");
    }
  }
  return Status();
}

}  // namespace

StatusOr<std::unique_ptr<Session>> Session::create(ProviderRegistry& registry, ir::Model model,
                                                   const SessionOptions& options) {
  if (!model.graph) return invalid_argument("model has no graph");
  if (options.device_policy != DevicePolicy::kNone) return create_with_device_policy(registry, model, options);
  std::unique_ptr<Session> s(new Session());
  s->logger_ = registry.logger();
  LogRoute route(s->logger_.get());
  s->model_ = std::move(model);
  s->pool_ = options.thread_pool ? options.thread_pool : std::make_shared<ThreadPool>(options.intra_op_threads);
  // Devices open before optimizing: rewrites such as QDQ fusion ask them
  // whether they would run the node a rewrite makes.
  ONYX_RETURN_IF_ERROR(s->open_devices(registry, options));
  if (options.graph_optimization != GraphOptimization::kOff) {
    // The caller may share the graph; the session rewrites its own copy.
    if (s->model_.graph.use_count() > 1) s->model_.graph = std::make_shared<ir::Graph>(*s->model_.graph);
    const Session* self = s.get();
    ProviderRank providers = [self](const ir::Graph& g, const ir::Node& n) {
      return first_claiming_device(self->devices_, g, n);
    };
    ONYX_RETURN_IF_ERROR(
        optimize_graph(*s->model_.graph, options.graph_optimization, &s->partition_.optimization, providers));
    s->partition_.optimization_level = options.graph_optimization;
  }
  ONYX_RETURN_IF_ERROR(
      partition_graph(*s->model_.graph, s->devices_, options.fallback, *s->logger_, s->partition_));
  // The CPU provider the session added after the listed ones (open_devices)
  // goes again when no node fell back to it: reports name only devices in use.
  if (s->implicit_cpu_ && std::none_of(s->partition_.nodes.begin(), s->partition_.nodes.end(),
                                       [&](const NodePlacement& p) { return p.device + 1 == int(s->devices_.size()); })) {
    s->devices_.pop_back();
    s->partition_.devices.pop_back();
  }
  s->memory_limit_ = HostMemoryLimit::resolve(options.host_memory_limit);
  s->arenas_ = std::make_unique<ArenaPool>(s->devices_, s->memory_limit_);
  s->blocks_ = std::make_unique<BlockCache>(s->devices_);
  s->streams_ = std::make_unique<StreamPool>(s->devices_, *s->blocks_);
  ONYX_RETURN_IF_ERROR(s->build_steps());
  ONYX_RETURN_IF_ERROR(s->create_kernels(options));
  ONYX_RETURN_IF_ERROR(s->upload_constants());
  ONYX_RETURN_IF_ERROR(s->compile_subgraphs(registry, options));
  return s;
}

StatusOr<std::unique_ptr<Session>> Session::create_from_file(ProviderRegistry& registry, const std::string& path,
                                                             const SessionOptions& options) {
  ONYX_ASSIGN_OR_RETURN(ir::Model model, ir::load_model(path));
  ONYX_RETURN_IF_ERROR(check_graph_inputs(*model.graph).with_context("'" + path + "'"));
  return create(registry, std::move(model), options);
}

StatusOr<std::unique_ptr<Session>> Session::create_from_bytes(ProviderRegistry& registry, const void* data,
                                                              size_t size, const SessionOptions& options) {
  ONYX_ASSIGN_OR_RETURN(ir::Model model, ir::load_model_from_bytes(data, size, ""));
  ONYX_RETURN_IF_ERROR(check_graph_inputs(*model.graph));
  return create(registry, std::move(model), options);
}

Session::~Session() {
  LogRoute route(logger_.get());  // kernel_destroy and device_close may log
  plans_.clear();
  arenas_.reset();  // frees arenas while the devices are open
  streams_.reset();
  blocks_.reset();
  for (Step& step : steps_)
    if (step.kernel) devices_[size_t(step.device)]->provider->api().kernel_destroy(step.kernel);
  steps_.clear();
  resident_.clear();
  devices_.clear();
}

Status Session::open_devices(ProviderRegistry& registry, const SessionOptions& options) {
  std::vector<ProviderRequest> requests = options.providers;
  if (requests.empty()) requests.push_back({"cpu", {}});
  bool lists_cpu = false;
  size_t implicit_cpu = SIZE_MAX;  // the index of a "cpu" request the application did not make
  for (size_t r = 0; r < requests.size(); ++r) {
    const ProviderRequest request = requests[r];  // a copy: the loop may append
    auto loaded = registry.get(request.name_or_path);
    if (!loaded.ok() && r == implicit_cpu) break;  // no CPU plugin here: nothing to fall back to
    ONYX_ASSIGN_OR_RETURN(std::shared_ptr<Provider> provider, std::move(loaded));
    lists_cpu = lists_cpu || provider->name() == "cpu";
    // Under 'warn' or 'allow' the CPU provider comes after the listed ones
    // (as ONNX Runtime's always does), so a node none of them takes still
    // runs, named by a fallback warning under 'warn'; 'fail' adds nothing.
    if (r + 1 == requests.size() && !lists_cpu && options.fallback != FallbackPolicy::kFail) {
      requests.push_back({"cpu", {}});
      implicit_cpu = requests.size() - 1;
    }
    ProviderActivity activity(provider->name(), "opening its device");
    Status available = provider->availability();
    if (available.ok() && provider->device_count() == 0) available = unavailable("it reports no devices");
    if (!available.ok()) {
      // Under 'warn' or 'allow' an unavailable provider is skipped like one
      // that declines every node; the partition report says why.
      if (options.fallback == FallbackPolicy::kFail)
        return unavailable("provider '" + provider->name() + "' is unavailable: " + available.message());
      if (options.fallback == FallbackPolicy::kWarn)
        logger_->warning("provider '" + provider->name() + "' is unavailable, falling back: " +
                         available.message());
      partition_.unavailable.push_back({provider->name(), available.message(), devices_.size()});
      continue;
    }
    auto device = std::make_shared<Device>();
    device->provider = provider;
    std::vector<OnyxKeyValue> kv;
    bool reduced_precision_set = false;
    const std::string* selector = nullptr;  // the host's "device" option: not the plugin's
    for (const auto& [k, v] : request.options) {
      if (k == kDeviceOption) {
        selector = &v;
        continue;
      }
      kv.push_back(OnyxKeyValue{sizeof(OnyxKeyValue), k.c_str(), v.c_str()});
      reduced_precision_set = reduced_precision_set || k == "allow_reduced_precision";
    }
    if (selector) {
      ONYX_ASSIGN_OR_RETURN(device->index, resolve_device(*provider, *selector));
    }
    for (const auto& d : devices_)
      if (d->provider == provider && d->index == device->index)
        return invalid_argument("provider '" + provider->name() + "' device " + std::to_string(device->index) +
                                " is listed twice (a provider may be listed once per device)");
    ONYX_ASSIGN_OR_RETURN(device->properties, provider->device_properties(device->index));
    if (options.allow_reduced_precision && !reduced_precision_set)
      kv.push_back(OnyxKeyValue{sizeof(OnyxKeyValue), "allow_reduced_precision", "1"});
    for (const OnyxKeyValue& option : kv) device->open_options.emplace_back(option.key, option.value);
    if (options.shared_devices) {
      if (auto open = options.shared_devices->find(provider.get(), device->index, device->open_options)) {
        devices_.push_back(std::move(open));
        implicit_cpu_ = r == implicit_cpu;
        continue;
      }
    }
    const std::string which = (device->index ? "device " + std::to_string(device->index) : std::string("a device")) +
                              " of provider '" + provider->name() + "'";
    ONYX_RETURN_IF_ERROR(take_status(provider->api().device_open(
        provider->plugin(), device->index, kv.data(), kv.size(), nullptr, &device->handle)).with_context(
            "opening " + which));
    if (!device->handle)
      return internal_error("opening " + which + ": device_open succeeded but returned no device (a plugin bug)");
    if (options.shared_devices) options.shared_devices->add(device);
    devices_.push_back(std::move(device));
    implicit_cpu_ = r == implicit_cpu;
  }
  if (devices_.empty()) {
    std::string why;
    for (const UnavailableProvider& u : partition_.unavailable) why += "\n  " + u.name + ": " + u.reason;
    return unavailable("none of the listed providers is available:" + why);
  }
  // "gpuemu:1" where the provider's name alone would not say which device.
  for (const auto& device : devices_) {
    const std::string& name = device->provider->name();
    const size_t same_name = size_t(std::count_if(devices_.begin(), devices_.end(),
                                                  [&](const auto& d) { return d->provider->name() == name; }));
    device->label = name;
    if (same_name > 1 || device->index != 0) device->label += ":" + std::to_string(device->index);
  }
  // Labels name devices in reports and the C API: two plugin files of one
  // name opening the same index would be indistinguishable.
  for (size_t a = 0; a < devices_.size(); ++a)
    for (size_t b = a + 1; b < devices_.size(); ++b)
      if (devices_[a]->label == devices_[b]->label)
        return invalid_argument("provider '" + devices_[a]->provider->name() + "' is listed twice (" +
                                devices_[a]->provider->path() + " and " + devices_[b]->provider->path() + ")");
  return Status();
}

Status Session::build_steps() {
  ir::Graph& graph = *model_.graph;
  // One step per node or fused group, each after the steps it reads from.
  ONYX_ASSIGN_OR_RETURN(std::vector<std::vector<int>> order, step_order(graph, partition_));
  std::vector<Step> steps;
  for (std::vector<int>& nodes : order) {
    const ir::Node& first = graph.nodes[size_t(nodes[0])];
    const NodePlacement& place = partition_.nodes[size_t(nodes[0])];
    Step& step = steps.emplace_back();
    step.device = place.device;
    step.name = first.op_type + " '" + first.name + "'";
    if (place.on_host) {
      step.kind = is_control_flow(first) ? Step::kControlFlow : Step::kHostKernel;
      if (step.kind == Step::kHostKernel && !find_host_kernel(first))
        return unimplemented("no provider supports op " + first.op_type + " (node '" + first.name +
                             "'): it reads or writes a sequence, an optional or a string tensor, which only "
                             "the host carries, and the host has no kernel for it");
    }
    step.nodes = std::move(nodes);
    for (int n : step.nodes) {
      const ir::Node& node = graph.nodes[size_t(n)];
      std::vector<int> inputs = node.inputs;
      if (step.kind == Step::kControlFlow) {  // values its subgraphs read
        std::vector<int> captures = control_flow_captures(graph, node);
        inputs.insert(inputs.end(), captures.begin(), captures.end());
      }
      for (int v : inputs) {
        // Values computed inside the group stay inside the kernel.
        const int producer = v >= 0 ? graph.values[size_t(v)].producer : -1;
        if (producer < 0 || std::find(step.nodes.begin(), step.nodes.end(), producer) == step.nodes.end())
          step.inputs.push_back(v);
      }
      step.outputs.insert(step.outputs.end(), node.outputs.begin(), node.outputs.end());
    }
  }
  CopyInsertion copies = insert_copies(graph, devices_, std::move(steps));
  steps_ = std::move(copies.steps);
  output_values_ = std::move(copies.output_values);
  partition_.copies = std::move(copies.copies);
  input_positions_.clear();
  for (size_t k = 0; k < graph.inputs.size(); ++k) input_positions_.emplace(graph.values[size_t(graph.inputs[k])].name, k);
  return Status();
}

Status Session::create_kernels(const SessionOptions& options) {
  const ir::Graph& graph = *model_.graph;
  GraphView view(graph);
  std::optional<CompiledCache> cache;
  if (!options.compiled_cache_dir.empty()) cache.emplace(options.compiled_cache_dir, *logger_);
  for (Step& step : steps_) {
    if (step.kind != Step::kKernel) continue;
    const Device& device = *devices_[size_t(step.device)];
    std::vector<uint32_t> nodes(step.nodes.begin(), step.nodes.end());
    Status st;
    if (cache) {
      st = cache->create_kernel(device, *view.get(), nodes, step.name, &step.kernel,
                                &partition_.compiled_cache.emplace_back());
    } else {
      ProviderActivity activity(device.label, "creating the kernel of " + step.name);
      st = take_status(device.provider->api().kernel_create(device.handle, view.get(), nodes.data(), nodes.size(),
                                                            &step.kernel));
    }
    if (!st.ok()) return st.with_context("creating the kernel of " + step.name + " on " + device.label);
    // Every later call passes the kernel back; a plugin would dereference NULL.
    if (!step.kernel)
      return internal_error("creating the kernel of " + step.name + " on " + device.label +
                            ": kernel_create succeeded but returned no kernel (a plugin bug)");
    // Fused steps too: the entries follow the group's outputs (session/step.h).
    WriteGuarded<OnyxOutputMemoryInfo> memory(step.outputs.size());
    for (size_t k = 0; k < memory.size(); ++k) memory[k] = {sizeof(OnyxOutputMemoryInfo), 0, -1};
    if (device.provider->api().kernel_output_memory) {
      ONYX_RETURN_IF_ERROR(take_status(device.provider->api().kernel_output_memory(
          step.kernel, memory.data(), memory.size())));
      ONYX_RETURN_IF_ERROR(memory.check(device.label, "kernel_output_memory's entries for " + step.name));
    }
    step.output_memory.assign(memory.data(), memory.data() + memory.size());
  }
  if (cache) log_compiled_cache_summary();
  return Status();
}

void Session::log_compiled_cache_summary() const {
  std::map<std::string, size_t> outcomes;
  for (const CompiledCacheRecord& r : partition_.compiled_cache) ++outcomes[r.outcome];
  std::string text;
  for (const auto& [outcome, count] : outcomes) text += (text.empty() ? "" : ", ") + std::to_string(count) + " " + outcome;
  if (!text.empty())
    logger_->log(ONYX_LOG_INFO, "compiled cache: " + text + " (per step: the partition report's compiled_cache)");
}

StatusOr<std::shared_ptr<const ExecutionPlan>> Session::plan_for(const std::vector<Shape>& shapes) {
  {
    std::lock_guard lock(plans_mutex_);
    if (auto it = plans_.find(shapes); it != plans_.end()) return it->second;
  }
  ONYX_ASSIGN_OR_RETURN(std::shared_ptr<const ExecutionPlan> plan, build_execution_plan(*this, shapes));
  std::lock_guard lock(plans_mutex_);
  if (plans_.size() >= 16) plans_.erase(plans_.begin());  // bound the cache
  plans_[shapes] = plan;
  return plan;
}

namespace {

// Dims that the model names alike ("sequence" of input_ids and of
// attention_mask) must agree: otherwise a mask of the wrong length could
// broadcast silently, or fail deep inside the graph far from its cause.
Status check_dim_params(const ir::Graph& graph, const std::vector<Tensor>& bound) {
  struct Binding {
    int64_t size;
    std::string input;
    size_t dim;
  };
  std::map<std::string, Binding> seen;
  for (size_t k = 0; k < bound.size(); ++k) {
    const ir::Value& decl = graph.values[size_t(graph.inputs[k])];
    const Shape& shape = bound[k].shape();
    for (size_t d = 0; d < decl.dim_params.size() && d < shape.size(); ++d) {
      const std::string& symbol = decl.dim_params[d];
      if (symbol.empty()) continue;
      auto [it, first] = seen.emplace(symbol, Binding{shape[d], decl.name, d});
      if (!first && it->second.size != shape[d])
        return invalid_argument("input '" + decl.name + "' has shape " + shape_string(shape) + ": its dimension " +
                                std::to_string(d) + " ('" + symbol + "') is " + std::to_string(shape[d]) +
                                ", but input '" + it->second.input + "' gives '" + symbol + "' = " +
                                std::to_string(it->second.size) + " (dimension " + std::to_string(it->second.dim) +
                                "); the model declares them the same size");
    }
  }
  return Status();
}

}  // namespace

namespace {

// Fails unless `given` may be bound to the graph input `decl`.
Status check_input(const ir::Value& decl, const Value& given) {
  const std::string& name = decl.name;
  const bool want_tensor = !ir::is_host_only_kind(decl.kind);
  if (want_tensor != given.is_tensor() ||
      (!want_tensor && decl.kind == ir::ValueKind::kSequence && given.kind() != Value::Kind::kSequence) ||
      (!want_tensor && decl.kind == ir::ValueKind::kOptional && given.kind() != Value::Kind::kOptional) ||
      (!want_tensor && decl.kind == ir::ValueKind::kMap && given.kind() != Value::Kind::kMap))
    return invalid_argument("input '" + name + "' is a " + given.describe() + ", the model expects " +
                            (want_tensor ? "a tensor"
                             : decl.kind == ir::ValueKind::kSequence ? "a sequence"
                             : decl.kind == ir::ValueKind::kOptional ? "an optional"
                                                                     : "a map"));
  if (!given.is_tensor()) {
    const int32_t have = given.elem_dtype();
    if (decl.elem_dtype != ONYX_DTYPE_UNDEFINED && have != ONYX_DTYPE_UNDEFINED && have != decl.elem_dtype &&
        (given.kind() == Value::Kind::kSequence || given.kind() == Value::Kind::kMap || given.has_element()))
      return invalid_argument("input '" + name + "' is a " + given.describe() + ", the model expects element type " +
                              dtype_name(decl.elem_dtype));
    return Status();
  }
  const Tensor& tensor = given.tensor();
  if (decl.dtype != ONYX_DTYPE_UNDEFINED && tensor.dtype() != decl.dtype)
    return invalid_argument(std::string("input '") + name + "' has type " + dtype_name(tensor.dtype()) +
                            ", the model expects " + dtype_name(decl.dtype));
  bool shape_ok = decl.rank < 0 || size_t(decl.rank) == tensor.shape().size();
  for (size_t i = 0; shape_ok && decl.rank > 0 && i < decl.dims.size(); ++i)
    shape_ok = decl.dims[i] < 0 || decl.dims[i] == tensor.shape()[i];
  if (!shape_ok)
    return invalid_argument("input '" + name + "' has shape " + shape_string(tensor.shape()) +
                            ", the model expects " + shape_string(decl.dims));
  if (tensor.dtype() == ONYX_DTYPE_STRING) return check_utf8(tensor, "input '" + name + "'");
  return Status();
}

}  // namespace

StatusOr<std::vector<Tensor>> Session::run(const std::vector<std::pair<std::string, Tensor>>& inputs,
                                           const std::vector<std::string>& output_names,
                                           const std::vector<Tensor>* reuse) {
  std::vector<std::pair<std::string, Value>> values(inputs.begin(), inputs.end());
  ONYX_ASSIGN_OR_RETURN(std::vector<Value> outputs, run_impl(values, output_names, reuse));
  std::vector<Tensor> tensors;
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (!outputs[k].is_tensor())
      return invalid_argument("output " + std::to_string(k) + " is a " + outputs[k].describe() +
                              ": read it with run_values (onyx_session_run_values)");
    tensors.push_back(outputs[k].tensor());
  }
  return tensors;
}

StatusOr<std::vector<Value>> Session::run_values(const std::vector<std::pair<std::string, Value>>& inputs,
                                                 const std::vector<std::string>& output_names) {
  return run_impl(inputs, output_names, nullptr);
}

StatusOr<std::vector<Value>> Session::run_impl(const std::vector<std::pair<std::string, Value>>& inputs,
                                               const std::vector<std::string>& output_names,
                                               const std::vector<Tensor>* reuse,
                                               const DeviceBinding* binding) {
  LogRoute route(logger_.get());
  const ir::Graph& graph = *model_.graph;
  std::vector<Value> bound(graph.inputs.size());
  std::vector<bool> given(graph.inputs.size(), false);
  for (const auto& input : inputs) {
    const std::string& name = input.first;  // not a structured binding: clang 15 cannot capture one
    const Value& value = input.second;
    auto it = input_positions_.find(name);
    if (it == input_positions_.end()) return invalid_argument("model has no input named '" + name + "'");
    const size_t k = it->second;
    if (given[k]) return invalid_argument("input '" + name + "' given twice");
    ONYX_RETURN_IF_ERROR(check_input(graph.values[size_t(graph.inputs[k])], value));
    bound[k] = value;
    given[k] = true;
  }
  for (size_t k = 0; k < bound.size(); ++k) {
    if (given[k]) continue;
    const ir::Value& decl = graph.values[size_t(graph.inputs[k])];
    if (decl.kind == ir::ValueKind::kOptional) {  // an optional input left out: an empty optional
      bound[k] = Value::optional(nullptr, Value::Kind::kTensor, decl.dtype);
      continue;
    }
    if (!decl.constant) return invalid_argument("missing input '" + decl.name + "'");
    bound[k] = *decl.constant;  // an initializer's default value
  }
  std::vector<Tensor> bound_tensors;  // for the dim_param check: composites count as rank 0
  for (const Value& v : bound) bound_tensors.push_back(v.tensor());
  ONYX_RETURN_IF_ERROR(check_dim_params(graph, bound_tensors));
  std::vector<int> returned;
  if (output_names.empty()) {
    returned = output_values_;
  } else {
    for (const std::string& name : output_names) {
      auto it = std::find_if(graph.outputs.begin(), graph.outputs.end(),
                             [&](int v) { return graph.values[size_t(v)].name == name; });
      if (it == graph.outputs.end()) return invalid_argument("model has no output named '" + name + "'");
      returned.push_back(output_values_[size_t(it - graph.outputs.begin())]);
    }
  }
  if (reuse && reuse->size() != returned.size())
    return invalid_argument("run: " + std::to_string(reuse->size()) + " output buffers to reuse for " +
                            std::to_string(returned.size()) + " outputs");
  // A failure names the run's inputs too: the failing node may be far from
  // them (a sequence longer than a position table fails in the table's Gather).
  auto with_inputs = [&](const Status& failed) {
    std::string text;
    for (size_t k = 0; k < bound.size(); ++k) {
      const ir::Value& decl = graph.values[size_t(graph.inputs[k])];
      if (decl.constant) continue;  // initializers
      text += (text.empty() ? "" : ", ") + decl.name + " " +
              (bound[k].is_tensor() ? shape_string(bound[k].tensor().shape()) : bound[k].describe());
    }
    return text.empty() ? failed : Status(failed.code(), failed.message() + " (this run's inputs: " + text + ")");
  };
  std::vector<Shape> shapes;
  for (const Value& v : bound) shapes.push_back(v.tensor().shape());
  auto plan = plan_for(shapes);
  if (!plan.ok()) return with_inputs(plan.status());
  auto outputs = Executor::run(*this, **plan, bound, returned, reuse, binding);
  if (!outputs.ok()) return with_inputs(outputs.status());
  return outputs;
}

StatusOr<std::vector<MemoryReport>> Session::memory_report(const std::map<std::string, Shape>& input_shapes) {
  const ir::Graph& graph = *model_.graph;
  std::vector<Shape> shapes;
  for (int v : graph.inputs) {
    const ir::Value& decl = graph.values[size_t(v)];
    if (auto it = input_shapes.find(decl.name); it != input_shapes.end()) {
      shapes.push_back(it->second);
      continue;
    }
    if (decl.rank < 0) return invalid_argument("input '" + decl.name + "' has unknown rank: give its shape");
    Shape s = decl.dims;
    for (int64_t& d : s) d = d < 0 ? 1 : d;
    shapes.push_back(s);
  }
  ONYX_ASSIGN_OR_RETURN(std::shared_ptr<const ExecutionPlan> plan, plan_for(shapes));
  return plan->report;
}

void Session::start_profiling() { std::atomic_store(&profiler_, std::make_shared<Profiler>()); }

StatusOr<std::string> Session::end_profiling() {
  std::shared_ptr<Profiler> profiler = std::atomic_exchange(&profiler_, std::shared_ptr<Profiler>());
  if (!profiler) return failed_precondition("end_profiling: the session is not profiling (start_profiling first)");
  return profiler->chrome_trace();
}

}  // namespace onyx::runtime
