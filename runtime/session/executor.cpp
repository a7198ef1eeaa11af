// executor.cpp: runs the steps of a session in order. Kernels get their
// inputs and outputs through a KernelContext (session/kernel_context.h);
// copies and control flow are run here and in control_flow_run.cpp.
#include "session/executor.h"

#include <atomic>
#include <cstring>

#include "core/abi_status.h"
#include "session/control_flow.h"
#include "session/host_kernels.h"
#include "session/kernel_context.h"
#include "session/session.h"
#include "core/step_observer.h"

namespace onyx::runtime {
namespace {

void release_slot(RunState& run, RunSlot& slot) {
  if (slot.dynamic && slot.data) run.streams.free(slot.device, slot.data);
  slot = RunSlot{};
}

// "'a' [2, 3], 'b' [4]": a failing node's inputs, so that an error deep in
// the graph still names the values (often the model's inputs) it came from.
std::string describe_inputs(const RunState& run, const Step& step) {
  std::string text;
  for (int v : step.inputs) {
    if (v < 0) continue;
    const RunSlot& slot = run.slots[size_t(v)];
    text += (text.empty() ? "'" : ", '") + run.session->graph().values[size_t(v)].name + "'" +
            (slot.present ? " " + shape_string(slot.dims) : "");
  }
  return text;
}

// Input `i` (value `v`) of `consumer` is missing although a node produces it:
// that node's kernel returned success without writing it (a plugin bug).
// Names the kernel's node and provider, which is where the fault lies.
Status not_produced(const RunState& run, const Step& consumer, size_t i, int v) {
  const Session& session = *run.session;
  const ir::Value& value = session.graph().values[size_t(v)];
  std::string producer;
  for (const Step& step : session.steps()) {
    if (step.kind != Step::kKernel) continue;
    for (int out : step.outputs)
      if (out == v)
        producer = "; " + step.name + " on provider '" + session.devices()[size_t(step.device)]->provider->name() +
                   "' returned success without writing it";
  }
  return failed_precondition("node " + consumer.name + ": input " + std::to_string(i) + " ('" + value.name +
                             "') was not produced" + producer);
}

Status run_kernel(RunState& run, const Step& step) {
  const Device& device = *run.session->devices()[size_t(step.device)];
  KernelContext ctx(run, step);
  Status status = take_status(device.provider->api().kernel_compute(step.kernel, &ctx));
  if (status.ok()) return status;
  return status.with_context("node " + step.name + " (inputs " + describe_inputs(run, step) + ")");
}

// A returned value bound to stay on the device that computes it: instead of
// the copy to the host, a copy within the device into the caller's tensor or
// a new device tensor (device_io.h).
Status place_bound_output(const RunState& run, const Step& step, RunSlot& dst) {
  const int v = step.outputs[0];
  auto target = run.binding->output_target.find(v);
  if (target == run.binding->output_target.end()) {
    auto made = allocate_on_device(run.session->devices()[size_t(step.device)], dst.dtype, dst.dims);
    if (!made.ok()) return made.status();
    dst.host = made.value();
  } else {
    if (target->second.dtype() != dst.dtype || target->second.shape() != dst.dims)
      return invalid_argument("output '" + run.session->graph().values[size_t(step.inputs[0])].name + "' is " +
                              dtype_name(dst.dtype) + " " + shape_string(dst.dims) + " but the tensor bound to it is " +
                              dtype_name(target->second.dtype()) + " " + shape_string(target->second.shape()));
    dst.host = target->second;
  }
  dst.data = dst.host.data();
  dst.device = step.device;
  return Status();
}

Status run_copy(RunState& run, const Step& step) {
  const Device& mover = *run.session->devices()[size_t(step.copy_by)];
  const RunSlot& src = run.slots[size_t(step.inputs[0])];
  if (!src.present) return not_produced(run, step, 0, step.inputs[0]);
  const int v = step.outputs[0];
  RunSlot dst;
  dst.present = true;
  dst.dtype = src.dtype;
  dst.dims = src.dims;
  if (auto resident = run.session->resident_constants().find(v); resident != run.session->resident_constants().end()) {
    dst.host = resident->second;  // uploaded at session creation
    dst.data = dst.host.data();
    dst.device = step.device;
    run.slots[size_t(v)] = std::move(dst);
    return Status();
  }
  const size_t bytes = storage_bytes(src.dtype, element_count(src.dims));
  const ExecutionPlan::ValuePlan& vp = run.plan->values[size_t(v)];
  int32_t direction = step.copy_direction;
  // An input the caller bound on this device: read in place when no kernel
  // writes over its bytes (no in-place output or view shares them), else
  // copied within the device.
  if (direction == ONYX_COPY_HOST_TO_DEVICE && src.device == step.device) {
    if (!run.plan->bytes_shared(v)) {
      dst.host = src.host;
      dst.data = src.data;
      dst.device = step.device;
      run.slots[size_t(v)] = std::move(dst);
      return Status();
    }
    direction = ONYX_COPY_DEVICE_TO_DEVICE;
  }
  if (direction == ONYX_COPY_DEVICE_TO_HOST && run.binding && run.binding->output_device.count(v)) {
    ONYX_RETURN_IF_ERROR(place_bound_output(run, step, dst));
    if (dst.data == src.data) {  // the kernel wrote into the caller's tensor (KernelContext::place)
      run.slots[size_t(v)] = std::move(dst);
      return Status();
    }
    direction = ONYX_COPY_DEVICE_TO_DEVICE;
  } else if (direction == ONYX_COPY_DEVICE_TO_HOST && step.device == step.copy_by) {  // to the host
    dst.host = Tensor::allocate(src.dtype, src.dims);
    dst.data = dst.host.data();
  } else if (vp.storage == ExecutionPlan::kArena) {
    if (bytes != vp.bytes)  // the source was checked against the same plan
      return internal_error(step.name + ": " + std::to_string(bytes) + " bytes to copy into a planned " +
                            std::to_string(vp.bytes));
    dst.device = step.device;
    dst.data = static_cast<char*>(run.arenas.base(step.device)) + vp.offset;
  } else {
    dst.device = step.device;
    ONYX_RETURN_IF_ERROR(run.session->block_cache().take(step.device, bytes, &dst.data));
    dst.dynamic = true;
  }
  RunSlot& out = run.slots[size_t(v)] = std::move(dst);
  return mover.copy(direction, out.data, src.data, bytes, run.streams.stream(step.copy_by)).with_context(step.name);
}

// A constant no run replaces (not a graph input, not computed by a node, as
// folded constants are): its slot stays bound between runs (SlotCache).
bool bound_for_every_run(const ir::Value& value) {
  return value.constant && value.producer < 0 && !value.is_graph_input;
}

// Binds the graph inputs and the constants (initializers) to their slots;
// the constants of a slot vector from an earlier run are bound already.
void bind_inputs(const ir::Graph& graph, const std::vector<Value>& inputs, RunState& run) {
  for (size_t k = 0; k < graph.inputs.size(); ++k) {
    set_slot_value(run, graph.inputs[k], inputs[k]);
    if (run.binding) run.slots[size_t(graph.inputs[k])].device = run.binding->input_device[k];
  }
  for (size_t v = 0; v < graph.values.size(); ++v) {
    const ir::Value& value = graph.values[v];
    // Folded constants (producer >= 0) are computed by their node like any value.
    if (value.constant && value.producer < 0 && !run.slots[v].present) set_slot_value(run, int(v), *value.constant);
  }
}

// Ends the run's use of its slots: frees the dynamic buffers and empties
// every slot but the constants', then keeps the vector for a later run.
void return_slots(RunState& run) {
  const ir::Graph& graph = run.session->graph();
  for (size_t v = 0; v < run.slots.size(); ++v)
    if (!bound_for_every_run(graph.values[v])) release_slot(run, run.slots[v]);
  run.session->slot_cache().give_back(std::move(run.slots));
}

// The value of slot `v` as a host value the caller owns.
StatusOr<Value> hand_over(const RunState& run, int v) {
  const ir::Graph& graph = run.session->graph();
  const RunSlot& slot = run.slots[size_t(v)];
  if (!slot.present) return failed_precondition("output '" + graph.values[size_t(v)].name + "' was not produced");
  if (!slot.composite.is_tensor()) return slot.composite;  // immutable: shared, not copied
  if (slot.dtype == ONYX_DTYPE_STRING) return Value(slot.host);  // host only, never written after: shared
  // A buffer the run made for the caller is handed over; inputs and constants are copied.
  if (!slot.host.empty() && slot.host.data() == slot.data && !graph.values[size_t(v)].is_graph_input &&
      !graph.values[size_t(v)].constant)
    return Value(slot.host);
  Tensor t = Tensor::allocate(slot.dtype, slot.dims);
  if (!t.bytes()) return Value(t);
  if (host_readable(run.session->devices(), slot.device)) {
    std::memcpy(t.data(), slot.data, t.bytes());
  } else {
    ONYX_RETURN_IF_ERROR(run.session->devices()[size_t(slot.device)]->copy(ONYX_COPY_DEVICE_TO_HOST, t.data(),
                                                                          slot.data, t.bytes()));
  }
  return Value(t);
}

// The profiler's event for a step that began at `start`.
void record_step(Profiler& profiler, const RunState& run, const Step& step, int64_t start) {
  Profiler::Event e;
  e.name = step.name;
  e.category = step.kind == Step::kKernel ? "kernel" : step.kind == Step::kCopy ? "copy" : "control_flow";
  e.start_ns = start;
  e.duration_ns = profiler.now_ns() - start;
  e.thread = Profiler::thread_id();
  if (step.device >= 0) e.args.emplace_back("provider", run.session->devices()[size_t(step.device)]->label);
  std::string ops;
  for (int n : step.nodes) ops += (ops.empty() ? "" : ",") + run.session->graph().nodes[size_t(n)].op_type;
  if (!ops.empty()) e.args.emplace_back("op", ops);
  std::string shapes;
  for (int v : step.inputs)
    if (v >= 0 && run.slots[size_t(v)].present) shapes += (shapes.empty() ? "" : " ") + shape_string(run.slots[size_t(v)].dims);
  e.args.emplace_back("input_shapes", shapes);
  profiler.record(std::move(e));
}

}  // namespace


StatusOr<std::vector<Value>> Executor::run(Session& session, const ExecutionPlan& plan,
                                            const std::vector<Value>& inputs,
                                            const std::vector<int>& returned,
                                            const std::vector<Tensor>* reuse, const DeviceBinding* binding) {
  const ir::Graph& graph = session.graph();
  RunState run;
  run.session = &session;
  run.binding = binding;
  run.plan = &plan;
  run.slots = session.slot_cache().take(graph.values.size());
  run.cancel_generation = session.cancel_generation();
  run.options = RunOptionsScope::current();
  if (run.options) run.options_generation = run.options->cancel_generation();
  if (reuse)
    for (size_t k = 0; k < returned.size(); ++k)
      if (!(*reuse)[k].empty() && (*reuse)[k].data()) run.reuse.emplace(returned[k], (*reuse)[k]);
  ONYX_ASSIGN_OR_RETURN(run.arenas, session.arena_pool().lease(plan.arena_bytes));
  ONYX_ASSIGN_OR_RETURN(run.streams, session.stream_pool().lease());
  struct FreeDynamic {  // also on error, once the streams are done; the arenas go back with the lease
    RunState& run;
    ~FreeDynamic() {
      (void)run.streams.finish();
      return_slots(run);
    }
  } free_dynamic{run};
  bind_inputs(graph, inputs, run);

  run.profiler = session.profiler();  // null: not profiling
  Profiler* const profiler = run.profiler.get();
  const int64_t run_start = profiler ? profiler->now_ns() : 0;
  const std::vector<Step>& steps = session.steps();
  for (size_t s = 0; s < steps.size(); ++s) {
    const Step& step = steps[s];
    if (const char* why = cancelled_by(run))
      return failed_precondition(std::string("run cancelled (") + why + ") before node " + step.name);
    for (size_t i = 0; i < step.inputs.size(); ++i) {
      int v = step.inputs[i];
      if (v >= 0 && !run.slots[size_t(v)].present && step.kind == Step::kKernel &&
          graph.values[size_t(v)].producer >= 0)
        return not_produced(run, step, i, v);
    }
    if (StepObserver observer = step_observer())
      observer(step.device >= 0 ? session.devices()[size_t(step.device)]->label.c_str() : "host",
               step.name.c_str());
    // Inputs written on another stream are waited for with events.
    const bool on_stream = step.kind == Step::kKernel || step.kind == Step::kCopy;
    for (int v : step.inputs)
      if (v >= 0 && run.slots[size_t(v)].present)
        ONYX_RETURN_IF_ERROR(run.streams.wait_for(run.slots[size_t(v)], on_stream ? step.stream_device() : -1));
    // The host pool's idle workers spin for the next loop; a step on another
    // provider may need their cores for threads of its own. The first step
    // follows the last one of the previous run.
    if (step.device != steps[s > 0 ? s - 1 : steps.size() - 1].device) session.thread_pool().quiet();
    const int64_t step_start = profiler ? profiler->now_ns() : 0;
    ONYX_RETURN_IF_ERROR(step.kind == Step::kKernel        ? run_kernel(run, step)
                         : step.kind == Step::kControlFlow ? run_control_flow(run, step)
                         : step.kind == Step::kHostKernel  ? run_host_kernel(run, step)
                                                           : run_copy(run, step));
    if (on_stream)
      for (int v : step.outputs)
        if (v >= 0 && run.slots[size_t(v)].present) run.streams.wrote(step.stream_device(), run.slots[size_t(v)]);
    if (profiler) record_step(*profiler, run, step, step_start);
    for (int v : step.inputs)  // free dynamic buffers whose storage group is done
      if (v >= 0 && plan.last_use[size_t(v)] == int(s) && run.slots[size_t(v)].dynamic &&
          plan.values[size_t(v)].storage != ExecutionPlan::kOutput)
        release_slot(run, run.slots[size_t(v)]);
  }
  ONYX_RETURN_IF_ERROR(run.streams.finish());  // the run's one synchronization per stream

  std::vector<Value> outputs;
  for (int v : returned) {
    ONYX_ASSIGN_OR_RETURN(Value t, hand_over(run, v));
    outputs.push_back(std::move(t));
  }
  if (profiler)
    profiler->record({"run", "run", run_start, profiler->now_ns() - run_start, Profiler::thread_id(),
                      {{"steps", std::to_string(steps.size())}}});
  return outputs;
}

}  // namespace onyx::runtime
