// host_kernels.cpp: dispatching kHostKernel steps (see host_kernels.h).
#include "session/host_kernels.h"

#include <map>

#include "ir/value_kinds.h"
#include "session/run_state.h"
#include "session/session.h"
#include "session/step.h"

namespace onyx::runtime {

StatusOr<Tensor> HostKernelCall::tensor(size_t k) const {
  if (k >= inputs.size() || (inputs[k].is_tensor() && inputs[k].tensor().empty()))
    return invalid_argument(name + ": input " + std::to_string(k) + " is missing");
  if (!inputs[k].is_tensor())
    return invalid_argument(name + ": input " + std::to_string(k) + " must be a tensor, got a " +
                            inputs[k].describe());
  return inputs[k].tensor();
}

StatusOr<Value> HostKernelCall::sequence(size_t k) const {
  if (k >= inputs.size() || inputs[k].kind() != Value::Kind::kSequence)
    return invalid_argument(name + ": input " + std::to_string(k) + " must be a sequence, got a " +
                            (k < inputs.size() ? inputs[k].describe() : std::string("missing value")));
  return inputs[k];
}

StatusOr<int64_t> HostKernelCall::scalar_int(size_t k) const {
  ONYX_ASSIGN_OR_RETURN(Tensor t, tensor(k));
  if (t.size() != 1 || (t.dtype() != ONYX_DTYPE_INT64 && t.dtype() != ONYX_DTYPE_INT32))
    return invalid_argument(name + ": input " + std::to_string(k) + " must be one int32 or int64, got " +
                            Value(t).describe());
  return t.dtype() == ONYX_DTYPE_INT64 ? *t.data_as<int64_t>() : int64_t(*t.data_as<int32_t>());
}

HostKernelFn find_host_kernel(const ir::Node& node) {
  static const std::map<std::string, HostKernelFn> kernels = [] {
    std::map<std::string, HostKernelFn> m;
    for (auto family : {sequence_host_kernels, optional_host_kernels, string_host_kernels, ml_host_kernels,
                        map_host_kernels})
      for (const HostKernelEntry& e : family()) m[e.op_type] = e.fn;
    return m;
  }();
  auto it = kernels.find(node.domain.empty() ? node.op_type : node.domain + "::" + node.op_type);
  return it == kernels.end() ? nullptr : it->second;
}

bool runs_on_host_kernels(const ir::Graph& graph, const ir::Node& node) {
  for (const std::vector<int>* list : {&node.inputs, &node.outputs})
    for (int v : *list)
      if (v >= 0 && (ir::is_host_only_kind(graph.values[size_t(v)].kind) ||
                     graph.values[size_t(v)].dtype == ONYX_DTYPE_STRING))
        return true;
  return false;
}

Status run_host_kernel(RunState& run, const Step& step) {
  const ir::Node& node = run.session->graph().nodes[size_t(step.nodes[0])];
  HostKernelFn fn = find_host_kernel(node);
  if (!fn)  // Session::build_steps refuses these; kept for safety
    return unimplemented(step.name + ": the host has no kernel for op " + node.op_type +
                         " on sequences, optionals or strings");
  HostKernelCall call{node, step.name, {}, {}};
  for (int v : step.inputs) call.inputs.push_back(slot_value(run, v));  // the node's, or their host copies
  call.outputs.resize(step.outputs.size());
  ONYX_RETURN_IF_ERROR(fn(call));
  for (size_t k = 0; k < step.outputs.size(); ++k) set_slot_value(run, step.outputs[k], call.outputs[k]);
  return Status();
}

}  // namespace onyx::runtime
