// session_device.cpp: the session's device-resident values (device_io.h):
// constants uploaded once, and Session::run_bound, runs whose inputs and
// outputs may stay in device memory.
#include <algorithm>

#include "session/session.h"

namespace onyx::runtime {
namespace {

// Whether every step that reads value `v` is a copy onto device `d`: then a
// run can read v from d's memory (the copies become copies within d).
bool read_only_by_copies_to(const std::vector<Step>& steps, int v, int d) {
  for (const Step& step : steps)
    if (std::find(step.inputs.begin(), step.inputs.end(), v) != step.inputs.end() &&
        (step.kind != Step::kCopy || step.device != d || step.copy_direction != ONYX_COPY_HOST_TO_DEVICE))
      return false;
  return true;
}

// The step that copies value `c` to the host (the copy of a graph output
// that copy insertion placed last), when no other step reads `c`.
const Step* output_copy_step(const std::vector<Step>& steps, int c) {
  const Step* producer = nullptr;
  for (const Step& step : steps) {
    if (std::find(step.inputs.begin(), step.inputs.end(), c) != step.inputs.end()) return nullptr;
    if (step.kind == Step::kCopy && step.outputs[0] == c && step.copy_direction == ONYX_COPY_DEVICE_TO_HOST)
      producer = &step;
  }
  return producer;
}

// How many steps read value `v`.
size_t readers_of(const std::vector<Step>& steps, int v) {
  size_t n = 0;
  for (const Step& step : steps) n += size_t(std::count(step.inputs.begin(), step.inputs.end(), v));
  return n;
}

}  // namespace

Status Session::upload_constants() {
  const ir::Graph& graph = *model_.graph;
  for (const Step& step : steps_) {
    if (step.kind != Step::kCopy || step.copy_direction != ONYX_COPY_HOST_TO_DEVICE) continue;
    const ir::Value& source = graph.values[size_t(step.inputs[0])];
    // An initializer a run may override (also a graph input) is copied per run.
    if (!source.constant || source.producer >= 0 || source.is_graph_input) continue;
    const Tensor& host = *source.constant;
    ONYX_ASSIGN_OR_RETURN(Tensor on_device, allocate_on_device(devices_[size_t(step.device)], host.dtype(), host.shape()));
    ONYX_RETURN_IF_ERROR(copy_tensor(on_device, devices_[size_t(step.device)].get(), host, nullptr)
                             .with_context("uploading constant '" + source.name + "'"));
    resident_[step.outputs[0]] = on_device;
  }
  return Status();
}

int Session::device_index(const Device* device) const {
  for (size_t d = 0; d < devices_.size(); ++d)
    if (devices_[d].get() == device) return int(d);
  return -1;
}

StatusOr<std::vector<BoundTensor>> Session::run_bound(
    const std::vector<std::pair<std::string, BoundTensor>>& inputs,
    const std::vector<std::pair<std::string, BoundTensor>>& outputs) {
  const ir::Graph& graph = *model_.graph;
  DeviceBinding binding;
  binding.input_device.assign(graph.inputs.size(), -1);
  std::vector<std::pair<std::string, Value>> values;
  for (const auto& [name, bound] : inputs) {
    Tensor tensor = bound.tensor;
    const std::string& wanted = name;  // clang 15 captures no structured binding
    auto it = std::find_if(graph.inputs.begin(), graph.inputs.end(),
                           [&](int v) { return graph.values[size_t(v)].name == wanted; });
    const int d = bound.device;
    if (d >= 0 && !devices_[size_t(d)]->host_readable() && it != graph.inputs.end()) {
      if (read_only_by_copies_to(steps_, *it, d)) {
        binding.input_device[size_t(it - graph.inputs.begin())] = d;
      } else {  // read on another device or by the host: staged through host memory
        Tensor host = Tensor::allocate(tensor.dtype(), tensor.shape());
        ONYX_RETURN_IF_ERROR(copy_tensor(host, nullptr, tensor, devices_[size_t(d)].get()));
        tensor = host;
      }
    }
    values.emplace_back(name, Value(tensor));
  }
  std::vector<std::string> names;
  std::vector<Tensor> reuse;
  for (const auto& [name, target] : outputs) {
    const std::string& wanted = name;  // clang 15 captures no structured binding
    auto it = std::find_if(graph.outputs.begin(), graph.outputs.end(),
                           [&](int v) { return graph.values[size_t(v)].name == wanted; });
    if (it == graph.outputs.end()) return invalid_argument("model has no output named '" + name + "'");
    const int c = output_values_[size_t(it - graph.outputs.begin())];
    const Step* copy = target.device >= 0 ? output_copy_step(steps_, c) : nullptr;
    if (copy && copy->device == target.device) {
      binding.output_device[c] = target.device;
      if (!target.tensor.empty()) {
        binding.output_target[c] = target.tensor;
        const int v = copy->inputs[0];
        const ir::Value& produced = graph.values[size_t(v)];
        if (readers_of(steps_, v) == 1 && !produced.is_graph_input && !produced.constant)
          binding.direct_output[v] = target.tensor;
      }
    }
    names.push_back(name);
    reuse.push_back(target.device < 0 ? target.tensor : Tensor());
  }
  ONYX_ASSIGN_OR_RETURN(std::vector<Value> results, run_impl(values, names, &reuse, &binding));
  std::vector<BoundTensor> returned;
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (!results[k].is_tensor())
      return invalid_argument("output '" + names[k] + "' is a " + results[k].describe() + ", not a tensor");
    const BoundTensor& target = outputs[k].second;
    const int c = output_values_[size_t(std::find_if(graph.outputs.begin(), graph.outputs.end(), [&](int v) {
                                          return graph.values[size_t(v)].name == names[k];
                                        }) - graph.outputs.begin())];
    if (binding.output_device.count(c)) {  // already where it was bound
      returned.push_back({results[k].tensor(), target.device});
      continue;
    }
    const Tensor& host = results[k].tensor();
    const Device* device = target.device >= 0 ? devices_[size_t(target.device)].get() : nullptr;
    Tensor out = target.tensor;
    if (out.empty() && !device) out = host;
    if (out.empty()) {
      auto made = allocate_on_device(devices_[size_t(target.device)], host.dtype(), host.shape());
      if (!made.ok()) return made.status();
      out = made.value();
    }
    if (out.data() != host.data())
      ONYX_RETURN_IF_ERROR(copy_tensor(out, device, host, nullptr).with_context("output '" + names[k] + "'"));
    returned.push_back({out, target.device});
  }
  return returned;
}

}  // namespace onyx::runtime
