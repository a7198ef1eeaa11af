// plan.cpp: turns one set of concrete input shapes into an ExecutionPlan:
// every value's size, lifetime and storage (arena offset, in-place/alias,
// dynamic), then greedy-by-size offsets per device.
#include "session/plan.h"

#include <algorithm>
#include <optional>

#include "ir/shape_inference.h"
#include "session/memory_planner.h"
#include "session/session.h"

namespace onyx::runtime {
namespace {

// Whether inference for `input_shapes` would change nothing: each input is
// declared with exactly these dims and every value is a tensor whose type
// and shape are known.
bool has_every_shape_for(const ir::Graph& graph, const std::vector<Shape>& input_shapes) {
  for (size_t k = 0; k < graph.inputs.size(); ++k)
    if (k >= input_shapes.size() || graph.values[size_t(graph.inputs[k])].dims != input_shapes[k]) return false;
  return std::all_of(graph.values.begin(), graph.values.end(), [](const ir::Value& v) {
    return v.kind == ir::ValueKind::kTensor && v.dtype != ONYX_DTYPE_UNDEFINED && v.shape_known();
  });
}

}  // namespace

StatusOr<std::shared_ptr<const ExecutionPlan>> build_execution_plan(
    const Session& session, const std::vector<Shape>& input_shapes) {
  const ir::Graph& original = session.graph();
  const std::vector<Step>& steps = session.steps();
  // Sizes for these input shapes: shape inference on a copy of the graph,
  // unless the session's graph already has every shape for exactly these
  // inputs (a static model): the copy would double a big graph's memory.
  std::optional<ir::Graph> inferred;
  if (!has_every_shape_for(original, input_shapes)) {
    inferred = original;
    std::map<std::string, Shape> shapes;
    for (size_t k = 0; k < inferred->inputs.size(); ++k)
      shapes[inferred->values[inferred->inputs[k]].name] = input_shapes[k];
    ONYX_RETURN_IF_ERROR(ir::infer_shapes(*inferred, shapes));
    // Copy steps' outputs have the shape of their source.
    for (const Step& step : steps)
      if (step.kind == Step::kCopy) {
        inferred->values[step.outputs[0]].rank = inferred->values[step.inputs[0]].rank;
        inferred->values[step.outputs[0]].dims = inferred->values[step.inputs[0]].dims;
      }
  }
  const ir::Graph& graph = inferred ? *inferred : original;

  auto plan = std::make_shared<ExecutionPlan>();
  const size_t value_count = graph.values.size();
  std::vector<bool> returned(value_count, false);  // handed to the caller
  for (int v : session.output_values()) returned[size_t(v)] = true;
  plan->values.resize(value_count);
  plan->last_use.assign(value_count, -1);
  std::vector<int> produced_at(value_count, -1);
  for (size_t s = 0; s < steps.size(); ++s) {
    for (int v : steps[s].inputs)
      if (v >= 0) plan->last_use[v] = int(s);
    for (int v : steps[s].outputs)
      if (v >= 0) produced_at[v] = int(s);
  }
  auto known_bytes = [&](int v, size_t* bytes) {
    const ir::Value& value = graph.values[v];
    if (!value.shape_known() || value.dtype == ONYX_DTYPE_UNDEFINED ||
        value.dtype == ONYX_DTYPE_STRING)
      return false;
    *bytes = storage_bytes(value.dtype, element_count(value.dims));
    return true;
  };

  // Storage groups: values sharing bytes (in-place or alias). root[v] is the
  // group's first value; group_last[root] its last reader.
  std::vector<int> root(value_count, -1);
  std::vector<int> group_last(value_count, -1);
  std::vector<MemoryReport> report(session.devices().size());
  for (size_t s = 0; s < steps.size(); ++s) {
    const Step& step = steps[s];
    for (size_t o = 0; o < step.outputs.size(); ++o) {
      int v = step.outputs[o];
      if (v < 0) continue;
      ExecutionPlan::ValuePlan& vp = plan->values[v];
      const ir::Value& value = graph.values[v];
      size_t bytes = 0;
      bool sized = known_bytes(v, &bytes);
      const bool host_step = step.kind == Step::kControlFlow || step.kind == Step::kHostKernel;
      if (sized && !host_step) {
        vp.shape_known = true;
        vp.dtype = value.dtype;
        vp.dims = value.dims;
      }
      if (returned[size_t(v)]) {
        vp.storage = ExecutionPlan::kOutput;
        continue;
      }
      // Uploaded once; no kernel may write over it, so it roots no group.
      if (step.kind == Step::kCopy && session.resident_constants().count(v)) {
        vp.storage = ExecutionPlan::kResident;
        continue;
      }
      // The host writes its steps' outputs as host values, freed at the end of the run.
      if (host_step) {
        vp.storage = ExecutionPlan::kDynamic;
        continue;
      }
      // Try to share an input's bytes when the kernel allows it.
      if (step.kind == Step::kKernel && o < step.output_memory.size() &&
          step.output_memory[o].kind != ONYX_OUTPUT_FRESH) {
        const OnyxOutputMemoryInfo& info = step.output_memory[o];
        int in = info.input_index >= 0 && size_t(info.input_index) < step.inputs.size()
                     ? step.inputs[info.input_index] : -1;
        size_t in_bytes = 0;
        // A declared view shares its input's bytes even where shape inference
        // left a size unknown (a Reshape to a computed shape): the run checks
        // that the sizes agree when the kernel asks for the view.
        const bool view = info.kind == ONYX_OUTPUT_ALIASES_INPUT;
        if (in >= 0 && root[in] >= 0 && (sized && known_bytes(in, &in_bytes) ? in_bytes == bytes : view)) {
          int r = root[in];
          bool dead_after = group_last[r] <= int(s);
          if (view || dead_after) {
            vp.storage = ExecutionPlan::kAlias;
            vp.alias_of = in;
            root[v] = r;
            group_last[r] = std::max(group_last[r], plan->last_use[v]);
            ++(view ? report[step.device].aliased : report[step.device].in_place);
            continue;
          }
        }
      }
      if (sized) {
        vp.storage = ExecutionPlan::kArena;
        vp.bytes = bytes;
      } else {
        vp.storage = ExecutionPlan::kDynamic;
      }
      root[v] = v;
      group_last[v] = std::max(int(s), plan->last_use[v]);
    }
  }
  // A dynamic group is freed after its last reader: record that on its root.
  for (size_t v = 0; v < value_count; ++v)
    if (root[v] == int(v)) plan->last_use[v] = group_last[v];

  // Offsets per device.
  plan->arena_bytes.assign(session.devices().size(), 0);
  for (size_t d = 0; d < session.devices().size(); ++d) {
    std::vector<PlanRequest> requests;
    std::vector<int> owners;
    for (size_t v = 0; v < value_count; ++v) {
      const ExecutionPlan::ValuePlan& vp = plan->values[v];
      if (vp.storage == ExecutionPlan::kDynamic && steps[produced_at[v]].device == int(d))
        ++report[d].dynamic_tensors;
      if (vp.storage != ExecutionPlan::kArena || steps[produced_at[v]].device != int(d)) continue;
      requests.push_back({vp.bytes, produced_at[v], group_last[v]});
      owners.push_back(int(v));
    }
    const Device& device = *session.devices()[d];
    size_t alignment = std::max<size_t>(64, device.properties.memory_alignment);
    MemoryPlan mp = plan_memory(requests, alignment);
    for (size_t k = 0; k < owners.size(); ++k) plan->values[owners[k]].offset = mp.offsets[k];
    plan->arena_bytes[d] = mp.arena_bytes;
    report[d].device = device.label;
    report[d].arena_bytes = mp.arena_bytes;
    report[d].lower_bound = mp.lower_bound;
    report[d].planned_tensors = requests.size();
  }
  plan->report = std::move(report);
  return std::shared_ptr<const ExecutionPlan>(std::move(plan));
}

}  // namespace onyx::runtime
