// executor.cpp: runs the steps of a session in order, giving kernels their
// inputs and planned output buffers through the ctx_* host functions.
#include "session/executor.h"

#include <cstring>

#include "plugin/host_api.h"
#include "session/compute_context.h"
#include "session/control_flow.h"

namespace onyx::runtime {
namespace {

const Device& device_of(const RunState& run, int d) { return *run.session->devices()[d]; }

bool host_readable(const RunState& run, int d) {
  return d < 0 || device_of(run, d).properties.host_can_read_device_memory;
}

Status device_alloc(const Device& device, size_t bytes, void** out) {
  size_t alignment = std::max<size_t>(64, device.properties.memory_alignment);
  return take_status(
      device.provider->api().memory_alloc(device.handle, ONYX_MEMORY_DEVICE, bytes, alignment, out));
}

void device_free(const Device& device, void* ptr) {
  if (ptr) device.provider->api().memory_free(device.handle, ONYX_MEMORY_DEVICE, ptr);
}

void release_slot(RunState& run, RunSlot& slot) {
  if (slot.dynamic && slot.data) device_free(device_of(run, slot.device), slot.data);
  slot = RunSlot{};
}

// --- ctx_* functions ---------------------------------------------------------

size_t ctx_input_count(const OnyxComputeContext* ctx) { return ctx->step->inputs.size(); }
size_t ctx_output_count(const OnyxComputeContext* ctx) { return ctx->step->outputs.size(); }

void fill_view(const RunState& run, const RunSlot& slot, OnyxTensorView* out) {
  size_t size = out->struct_size;
  std::memset(out, 0, size);
  out->struct_size = size;
  out->dtype = slot.dtype;
  out->memory_kind = host_readable(run, slot.device) ? ONYX_MEMORY_HOST : ONYX_MEMORY_DEVICE;
  out->rank = slot.dims.size();
  out->dims = slot.dims.empty() ? nullptr : slot.dims.data();
  out->data = slot.data;
}

OnyxStatus* ctx_input(const OnyxComputeContext* ctx, size_t index, OnyxTensorView* out) {
  if (!out) return make_abi_status(invalid_argument("ctx_input: out is NULL"));
  if (index >= ctx->step->inputs.size())
    return make_abi_status(invalid_argument(ctx->step->name + ": ctx_input: input " +
                                            std::to_string(index) + " out of range"));
  int v = ctx->step->inputs[index];
  if (v < 0 || !ctx->run->slots[v].present) {
    fill_view(*ctx->run, RunSlot{}, out);  // omitted: dtype UNDEFINED, no data, rank 0
    return nullptr;
  }
  fill_view(*ctx->run, ctx->run->slots[v], out);
  return nullptr;
}

Status output_impl(OnyxComputeContext* ctx, size_t index, int32_t dtype, const int64_t* dims,
                   size_t rank, OnyxTensorView* out) {
  const Step& step = *ctx->step;
  RunState& run = *ctx->run;
  if (!out) return invalid_argument("ctx_output: out is NULL");
  if (index >= step.outputs.size())
    return invalid_argument(step.name + ": output " + std::to_string(index) + " out of range");
  if (rank && !dims) return invalid_argument(step.name + ": ctx_output: dims is NULL");
  Shape shape(dims, dims + rank);
  for (int64_t d : shape)
    if (d < 0) return invalid_argument(step.name + ": negative output dim " + shape_string(shape));
  if (dtype_size(dtype) == 0 && storage_bytes(dtype, 2) == 0)
    return invalid_argument(step.name + ": output " + std::to_string(index) +
                            " has unsupported dtype " + dtype_name(dtype));
  const Device& device = device_of(run, step.device);
  int v = step.outputs[index];
  size_t bytes = storage_bytes(dtype, element_count(shape));
  RunSlot slot;
  slot.present = true;
  slot.dtype = dtype;
  slot.dims = shape;
  slot.device = step.device;
  if (v < 0) {  // omitted optional output: scratch the kernel may write
    void* p = nullptr;
    ONYX_RETURN_IF_ERROR(device_alloc(device, bytes, &p));
    ctx->scratch.emplace_back(step.device, p);
    RunSlot& tmp = ctx->omitted_outputs.emplace_back(std::move(slot));
    tmp.data = p;
    fill_view(run, tmp, out);
    return Status();
  }
  if (run.slots[v].present)
    return invalid_argument(step.name + ": output " + std::to_string(index) + " requested twice");
  const ExecutionPlan::ValuePlan& vp = run.plan->values[v];
  const OnyxOutputMemoryInfo* mem =
      index < step.output_memory.size() ? &step.output_memory[index] : nullptr;
  int alias_input = mem && mem->kind == ONYX_OUTPUT_ALIASES_INPUT && mem->input_index >= 0 &&
                            size_t(mem->input_index) < step.inputs.size()
                        ? step.inputs[mem->input_index] : -1;
  const RunSlot* source = alias_input >= 0 && run.slots[alias_input].present
                              ? &run.slots[alias_input] : nullptr;
  if (alias_input >= 0 && (!source || storage_bytes(source->dtype, element_count(source->dims)) != bytes))
    return invalid_argument(step.name + ": output " + std::to_string(index) +
                            " declared as a view of its input but the sizes differ");
  bool placed = false;
  if (vp.storage == ExecutionPlan::kAlias) {
    const RunSlot& in = run.slots[vp.alias_of];
    if (in.present && storage_bytes(in.dtype, element_count(in.dims)) == bytes) {
      slot.data = in.data;
      placed = true;
      source = nullptr;  // same bytes: nothing to copy
    }
  } else if (vp.storage == ExecutionPlan::kArena && bytes <= vp.bytes) {
    slot.data = static_cast<char*>(run.arenas[step.device]) + vp.offset;
    placed = true;
  } else if (vp.storage == ExecutionPlan::kOutput && host_readable(run, step.device)) {
    auto reused = run.reuse.find(v);
    if (reused != run.reuse.end() && reused->second.dtype() == dtype && reused->second.shape() == shape)
      slot.host = reused->second;
    else
      slot.host = Tensor::allocate(dtype, shape);
    slot.data = slot.host.data();
    placed = true;
  }
  if (!placed) {
    ONYX_RETURN_IF_ERROR(device_alloc(device, bytes, &slot.data));
    slot.dynamic = true;
  }
  // A view the plan could not honour: the kernel writes nothing, so the
  // host provides the bytes.
  if (source && bytes) {
    if (host_readable(run, step.device) && host_readable(run, source->device)) {
      std::memmove(slot.data, source->data, bytes);
    } else {
      Status st = take_status(device.provider->api().memory_copy(
          device.handle, nullptr, ONYX_COPY_DEVICE_TO_DEVICE, slot.data, source->data, bytes));
      if (!st.ok()) return st;
    }
  }
  run.slots[v] = std::move(slot);
  fill_view(run, run.slots[v], out);
  return Status();
}

OnyxStatus* ctx_output(OnyxComputeContext* ctx, size_t index, int32_t dtype, const int64_t* dims,
                       size_t rank, OnyxTensorView* out) {
  try {
    return make_abi_status(output_impl(ctx, index, dtype, dims, rank, out));
  } catch (const std::exception& e) {
    return make_abi_status(internal_error(std::string("ctx_output: ") + e.what()));
  }
}

OnyxStream* ctx_stream(const OnyxComputeContext*) { return nullptr; }

OnyxStatus* ctx_scratch(OnyxComputeContext* ctx, size_t bytes, void** out) {
  if (!out) return make_abi_status(invalid_argument("ctx_scratch: out is NULL"));
  *out = nullptr;
  if (bytes == 0) return nullptr;
  Status st = device_alloc(device_of(*ctx->run, ctx->step->device), bytes, out);
  if (st.ok()) ctx->scratch.emplace_back(ctx->step->device, *out);
  return make_abi_status(st);
}

void ctx_parallel_for(OnyxComputeContext* ctx, size_t n, size_t grain, OnyxParallelBody body,
                      void* user) {
  ctx->run->session->thread_pool().parallel_for(
      n, grain, [&](size_t b, size_t e) { body(user, b, e); });
}

size_t ctx_thread_count(const OnyxComputeContext* ctx) {
  return ctx->run->session->thread_pool().thread_count();
}

}  // namespace

void fill_compute_context_functions(OnyxHostApi& api) {
  api.ctx_input_count = ctx_input_count;
  api.ctx_output_count = ctx_output_count;
  api.ctx_input = ctx_input;
  api.ctx_output = ctx_output;
  api.ctx_stream = ctx_stream;
  api.ctx_scratch = ctx_scratch;
  api.ctx_parallel_for = ctx_parallel_for;
  api.ctx_thread_count = ctx_thread_count;
}

// --- the run -----------------------------------------------------------------

namespace {

Status run_kernel(RunState& run, const Step& step) {
  const Device& device = device_of(run, step.device);
  OnyxComputeContext ctx{&run, &step, {}, {}};
  Status st = take_status(device.provider->api().kernel_compute(step.kernel, &ctx));
  for (auto& [d, p] : ctx.scratch) device_free(device_of(run, d), p);
  return st.with_context("node " + step.name);
}

Status run_copy(RunState& run, const Step& step) {
  const Device& device = device_of(run, step.device);
  const RunSlot& src = run.slots[step.inputs[0]];
  RunSlot dst;
  dst.present = true;
  dst.dtype = src.dtype;
  dst.dims = src.dims;
  size_t bytes = storage_bytes(src.dtype, element_count(src.dims));
  bool to_host = step.copy_direction == ONYX_COPY_DEVICE_TO_HOST;
  if (to_host) {
    dst.host = Tensor::allocate(src.dtype, src.dims);
    dst.data = dst.host.data();
  } else {
    dst.device = step.device;
    const ExecutionPlan::ValuePlan& vp = run.plan->values[step.outputs[0]];
    if (vp.storage == ExecutionPlan::kArena && bytes <= vp.bytes) {
      dst.data = static_cast<char*>(run.arenas[step.device]) + vp.offset;
    } else {
      ONYX_RETURN_IF_ERROR(device_alloc(device, bytes, &dst.data));
      dst.dynamic = true;
    }
  }
  run.slots[step.outputs[0]] = std::move(dst);
  return take_status(device.provider->api().memory_copy(device.handle, nullptr, step.copy_direction,
                                                        run.slots[step.outputs[0]].data, src.data,
                                                        bytes))
      .with_context("copy " + step.name);
}

}  // namespace

StatusOr<std::vector<Tensor>> Executor::run(Session& session, const ExecutionPlan& plan,
                                            const std::vector<Tensor>& inputs,
                                            const std::vector<int>& output_values,
                                            const std::vector<Tensor>* reuse) {
  const ir::Graph& graph = session.graph();
  RunState run;
  run.session = &session;
  run.plan = &plan;
  run.slots.resize(graph.values.size());
  if (reuse)
    for (size_t k = 0; k < output_values.size(); ++k)
      if (!(*reuse)[k].empty() && (*reuse)[k].data()) run.reuse.emplace(output_values[k], (*reuse)[k]);
  // Arenas: reuse a finished run's, else allocate.
  {
    std::lock_guard lock(plan.arena_mutex);
    if (!plan.free_arenas.empty()) {
      run.arenas = std::move(plan.free_arenas.back().per_device);
      plan.free_arenas.pop_back();
    }
  }
  if (run.arenas.empty()) {
    run.arenas.assign(session.devices().size(), nullptr);
    for (size_t d = 0; d < run.arenas.size(); ++d)
      if (plan.arena_bytes[d]) {
        Status st = device_alloc(*session.devices()[d], plan.arena_bytes[d], &run.arenas[d]);
        if (!st.ok()) {
          for (size_t e = 0; e < d; ++e) device_free(*session.devices()[e], run.arenas[e]);
          return st.with_context("arena of " + std::to_string(plan.arena_bytes[d]) + " bytes");
        }
      }
  }
  struct Cleanup {  // frees dynamic buffers and returns the arenas, also on error
    RunState& run;
    const ExecutionPlan& plan;
    ~Cleanup() {
      for (RunSlot& slot : run.slots) release_slot(run, slot);
      std::lock_guard lock(plan.arena_mutex);
      plan.free_arenas.push_back({std::move(run.arenas)});
    }
  } cleanup{run, plan};

  for (size_t k = 0; k < graph.inputs.size(); ++k) {
    RunSlot& slot = run.slots[graph.inputs[k]];
    slot.present = true;
    slot.dtype = inputs[k].dtype();
    slot.dims = inputs[k].shape();
    slot.data = inputs[k].data();
    slot.host = inputs[k];
  }
  for (size_t v = 0; v < graph.values.size(); ++v) {
    const ir::Value& value = graph.values[v];
    // Folded constants (producer >= 0) are computed by their node like any value.
    if (!value.constant || value.producer >= 0 || run.slots[v].present) continue;
    RunSlot& slot = run.slots[v];
    slot.present = true;
    slot.dtype = value.constant->dtype();
    slot.dims = value.constant->shape();
    slot.data = value.constant->data();
    slot.host = *value.constant;
  }

  const std::vector<Step>& steps = session.steps();
  for (size_t s = 0; s < steps.size(); ++s) {
    const Step& step = steps[s];
    for (size_t i = 0; i < step.inputs.size(); ++i) {
      int v = step.inputs[i];
      if (v >= 0 && !run.slots[v].present && step.kind == Step::kKernel &&
          graph.values[v].producer >= 0)
        return failed_precondition("node " + step.name + ": input " + std::to_string(i) + " ('" +
                                   graph.values[v].name + "') was not produced");
    }
    ONYX_RETURN_IF_ERROR(step.kind == Step::kKernel        ? run_kernel(run, step)
                         : step.kind == Step::kControlFlow ? run_control_flow(run, step)
                                                           : run_copy(run, step));
    for (int v : step.inputs)  // free dynamic buffers whose group is done
      if (v >= 0 && plan.last_use[v] == int(s) && run.slots[v].dynamic &&
          !graph.values[v].is_graph_output)
        release_slot(run, run.slots[v]);
  }

  std::vector<Tensor> outputs;
  for (int v : output_values) {
    RunSlot& slot = run.slots[v];
    if (!slot.present)
      return failed_precondition("output '" + graph.values[v].name + "' was not produced");
    if (!slot.host.empty() && slot.host.data() == slot.data && !graph.values[v].is_graph_input &&
        !graph.values[v].constant) {
      outputs.push_back(slot.host);
      continue;
    }
    Tensor t = Tensor::allocate(slot.dtype, slot.dims);
    if (t.bytes()) {
      if (host_readable(run, slot.device)) {
        std::memcpy(t.data(), slot.data, t.bytes());
      } else {
        const Device& device = device_of(run, slot.device);
        ONYX_RETURN_IF_ERROR(take_status(device.provider->api().memory_copy(
            device.handle, nullptr, ONYX_COPY_DEVICE_TO_HOST, t.data(), slot.data, t.bytes())));
      }
    }
    outputs.push_back(std::move(t));
  }
  return outputs;
}

}  // namespace onyx::runtime
