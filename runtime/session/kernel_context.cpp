#include "session/kernel_context.h"

#include <unistd.h>

#include <cstring>
#include <new>

#include "core/log.h"
#include "session/plan.h"
#include "session/session.h"

namespace onyx::runtime {
namespace {

const Device& device_of(const RunState& run, int d) { return *run.session->devices()[size_t(d)]; }

void fill_view(const RunState& run, const RunSlot& slot, OnyxTensorView* out) {
  size_t size = out->struct_size;
  std::memset(out, 0, size);
  out->struct_size = size;
  out->dtype = slot.dtype;
  out->memory_kind = host_readable(run.session->devices(), slot.device) ? ONYX_MEMORY_HOST : ONYX_MEMORY_DEVICE;
  out->rank = slot.dims.size();
  out->dims = slot.dims.empty() ? nullptr : slot.dims.data();
  out->data = slot.data;
}

size_t slot_bytes(const RunSlot& slot) { return storage_bytes(slot.dtype, element_count(slot.dims)); }

std::string typed_shape(int32_t dtype, const Shape& dims) {
  return std::string(dtype_name(dtype)) + " " + shape_string(dims);
}

}  // namespace

KernelContext::~KernelContext() {
  for (auto& [d, p] : scratch_) run_.streams.free(d, p);  // after the stream passed it
}

Status KernelContext::input(size_t index, OnyxTensorView* out) const {
  if (index >= step_.inputs.size())
    return invalid_argument(step_.name + ": ctx_input: input " + std::to_string(index) + " out of range");
  int v = step_.inputs[index];
  if (v >= 0 && run_.slots[size_t(v)].present) {
    fill_view(run_, run_.slots[size_t(v)], out);  // the view points into the slot
  } else {
    fill_view(run_, RunSlot{}, out);  // omitted: dtype UNDEFINED, no data, rank 0
  }
  return Status();
}

Status KernelContext::check_planned(size_t index, int v, int32_t dtype, const Shape& shape) const {
  const ExecutionPlan::ValuePlan& vp = run_.plan->values[size_t(v)];
  if (!vp.shape_known || (vp.dtype == dtype && vp.dims == shape)) return Status();
  return internal_error("output " + std::to_string(index) + " ('" +
                        run_.session->graph().values[size_t(v)].name + "') is planned as " +
                        typed_shape(vp.dtype, vp.dims) +
                        " (shape inference and the model's declarations), but the kernel asked for " +
                        typed_shape(dtype, shape));
}


Status KernelContext::place(int v, RunSlot& slot, size_t bytes) {
  const ExecutionPlan::ValuePlan& vp = run_.plan->values[size_t(v)];
  const Device& device = device_of(run_, step_.device);
  // Bound to the caller's device tensor and read only by its copy there: the
  // kernel writes into that tensor (run_copy then copies nothing).
  if (run_.binding) {
    auto direct = run_.binding->direct_output.find(v);
    if (direct != run_.binding->direct_output.end() && direct->second.dtype() == slot.dtype &&
        direct->second.shape() == slot.dims && !run_.plan->bytes_shared(v)) {
      slot.host = direct->second;
      slot.data = slot.host.data();
      return Status();
    }
  }
  switch (vp.storage) {
    case ExecutionPlan::kAlias: {
      const RunSlot& shared = run_.slots[size_t(vp.alias_of)];
      if (!shared.present || slot_bytes(shared) != bytes)
        return internal_error("the plan shares the bytes of '" +
                              run_.session->graph().values[size_t(vp.alias_of)].name +
                              "', which does not hold " + std::to_string(bytes) + " bytes");
      slot.data = shared.data;
      return Status();
    }
    case ExecutionPlan::kArena:
      slot.data = static_cast<char*>(run_.arenas.base(step_.device)) + vp.offset;
      return Status();
    case ExecutionPlan::kOutput: {
      if (!device.host_readable())  // copy insertion gives such outputs a copy to the host
        return internal_error("a returned value placed in device memory");
      auto reused = run_.reuse.find(v);
      if (reused != run_.reuse.end() && reused->second.dtype() == slot.dtype &&
          reused->second.shape() == slot.dims)
        slot.host = reused->second;
      else  // written whole by the kernel, as planned memory is (its contents are unspecified)
        slot.host = run_.session->output_buffers().allocate_uninitialized(slot.dtype, slot.dims);
      slot.data = slot.host.data();
      return Status();
    }
    case ExecutionPlan::kDynamic:
    case ExecutionPlan::kNone:
    case ExecutionPlan::kResident:  // never a kernel's output
      break;
  }
  ONYX_RETURN_IF_ERROR(run_.session->block_cache().take(step_.device, bytes, &slot.data));
  slot.dynamic = true;
  return Status();
}

Status KernelContext::output(size_t index, int32_t dtype, std::span<const int64_t> dims,
                             OnyxTensorView* out) {
  if (index >= step_.outputs.size())
    return invalid_argument(step_.name + ": output " + std::to_string(index) + " out of range");
  Shape shape(dims.begin(), dims.end());
  for (int64_t d : shape)
    if (d < 0) return invalid_argument(step_.name + ": negative output dim " + shape_string(shape));
  if (dtype_size(dtype) == 0 && storage_bytes(dtype, 2) == 0)
    return invalid_argument(step_.name + ": output " + std::to_string(index) + " has unsupported dtype " +
                            dtype_name(dtype));
  const Device& device = device_of(run_, step_.device);
  int v = step_.outputs[index];
  const std::optional<size_t> checked = checked_storage_bytes(dtype, shape);
  if (!checked)
    return invalid_argument(step_.name + ": output " + std::to_string(index) + " of shape " + shape_string(shape) +
                            " has more elements or bytes than any machine can address");
  const size_t bytes = *checked;
  const HostMemoryLimit& limit = run_.session->host_memory_limit();
  if (host_readable(run_.session->devices(), step_.device) && bytes > limit.bytes)
    return Status(ONYX_STATUS_OUT_OF_MEMORY, step_.name + ": output " + std::to_string(index) + " (" +
                                                 typed_shape(dtype, shape) + ") needs " + std::to_string(bytes) +
                                                 " bytes, more than " + limit.describe());
  RunSlot slot;
  slot.present = true;
  slot.dtype = dtype;
  slot.dims = std::move(shape);  // `shape` is not read below
  slot.device = step_.device;
  // An allocation that fails names the node and the tensor it was for.
  auto for_output = [&](auto&& allocate) {
    Status s;
    try {
      s = allocate();
    } catch (const std::bad_alloc&) {
      s = Status(ONYX_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    if (s.ok()) return s;  // the context string only for an error: this runs for every output of every run
    return s.with_context(step_.name + ": output " + std::to_string(index) + " (" + dtype_name(dtype) + " " +
                          shape_string(slot.dims) + ", " + std::to_string(bytes) + " bytes)");
  };
  if (v < 0) {  // omitted optional output: scratch the kernel may write
    ONYX_RETURN_IF_ERROR(for_output([&] { return run_.session->block_cache().take(step_.device, bytes, &slot.data); }));
    scratch_.emplace_back(step_.device, slot.data);
    fill_view(run_, *omitted_outputs_.emplace_back(std::make_unique<RunSlot>(std::move(slot))), out);
    return Status();
  }
  if (run_.slots[size_t(v)].present)
    return invalid_argument(step_.name + ": output " + std::to_string(index) + " requested twice");
  ONYX_RETURN_IF_ERROR(check_planned(index, v, dtype, slot.dims));
  // A declared view of an input: the kernel writes nothing.
  const OnyxOutputMemoryInfo* mem = index < step_.output_memory.size() ? &step_.output_memory[index] : nullptr;
  int viewed = mem && mem->kind == ONYX_OUTPUT_ALIASES_INPUT && mem->input_index >= 0 &&
                       size_t(mem->input_index) < step_.inputs.size()
                   ? step_.inputs[size_t(mem->input_index)] : -1;
  const RunSlot* source = viewed >= 0 && run_.slots[size_t(viewed)].present ? &run_.slots[size_t(viewed)] : nullptr;
  if (viewed >= 0 && (!source || slot_bytes(*source) != bytes))
    return invalid_argument(step_.name + ": output " + std::to_string(index) +
                            " declared as a view of its input but the sizes differ");
  ONYX_RETURN_IF_ERROR(for_output([&] { return place(v, slot, bytes); }));
  RunSlot& placed = run_.slots[size_t(v)] = std::move(slot);  // the run frees it, also on error
  // A view the plan could not place in its input's bytes: the host copies them.
  if (source && bytes && placed.data != source->data) {
    if (device.host_readable() && host_readable(run_.session->devices(), source->device))
      std::memmove(placed.data, source->data, bytes);
    else
      ONYX_RETURN_IF_ERROR(device.copy(ONYX_COPY_DEVICE_TO_DEVICE, placed.data, source->data, bytes, stream()));
  }
  fill_view(run_, placed, out);
  return Status();
}

Status KernelContext::scratch(size_t bytes, void** out) {
  if (bytes == 0) return Status();
  ONYX_RETURN_IF_ERROR(run_.session->block_cache().take(step_.device, bytes, out));
  scratch_.emplace_back(step_.device, *out);
  return Status();
}

void KernelContext::parallel_for(size_t n, size_t grain, OnyxParallelBody body, void* user) {
  // The body captures one pointer, so that std::function keeps it inline
  // (six captured references were a heap allocation per loop).
  const struct {
    const Logger* route;  // the pool's threads log where this one does
    const std::string* tag;
    Profiler* profiler;
    OnyxParallelBody body;
    void* user;
    const std::string& step;
  } loop{LogRoute::route(), LogTag::current(), run_.profiler.get(), body, user, step_.name};
  run_.session->thread_pool().parallel_for(n, grain, [l = &loop](size_t b, size_t e) {
    LogRoute chunk(l->route);
    LogTag chunk_tag(l->tag);
    const int64_t start = l->profiler ? l->profiler->now_ns() : 0;
    l->body(l->user, b, e);
    if (l->profiler)  // one event per chunk: the threads a kernel ran on, in the trace
      l->profiler->record({l->step, "thread", start, l->profiler->now_ns() - start, Profiler::thread_id(),
                           {{"items", std::to_string(b) + ".." + std::to_string(e)}}});
  });
}

void KernelContext::profile_event(const char* name, int64_t start_ns, int64_t end_ns) const {
  Profiler* profiler = run_.profiler.get();
  if (!profiler) return;
  profiler->record({name, "provider", profiler->from_monotonic_ns(start_ns), end_ns - start_ns, Profiler::thread_id(),
                    {{"provider", device_of(run_, step_.device).label}, {"kernel", step_.name}}});
}

size_t KernelContext::thread_count() const { return run_.session->thread_pool().thread_count(); }

}  // namespace onyx::runtime
