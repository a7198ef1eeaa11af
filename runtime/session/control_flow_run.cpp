// control_flow_run.cpp: running If, Loop and Scan steps on host tensors
// (see control_flow.h). Semantics follow the ONNX operator spec.
#include <algorithm>
#include <cstring>

#include "session/control_flow.h"
#include "session/executor.h"
#include "session/plan.h"
#include "session/run_state.h"
#include "session/session.h"

namespace onyx::runtime {
namespace {

// --- host tensor helpers -----------------------------------------------------

const ir::Node& node_of(const RunState& run, const Step& step) {
  return run.session->graph().nodes[size_t(step.nodes[0])];
}

// Step input `k` as a host value (an empty Value when omitted).
Value input_value(const RunState& run, const Step& step, size_t k) {
  return slot_value(run, k < step.inputs.size() ? step.inputs[k] : -1);
}

// Step input `k` as a host tensor (empty when omitted or not a tensor).
Tensor input(const RunState& run, const Step& step, size_t k) { return input_value(run, step, k).tensor(); }

// `what` (a body output that is stacked or sliced) as a tensor.
StatusOr<Tensor> as_tensor(const Value& v, const std::string& what) {
  if (!v.is_tensor()) return invalid_argument(what + " must be a tensor, got a " + v.describe());
  return v.tensor();
}

void set_output(RunState& run, const Step& step, size_t k, Value value) {
  set_slot_value(run, step.outputs[k], value);
}

Tensor scalar_int64(int64_t value) {
  Tensor t = Tensor::allocate(ONYX_DTYPE_INT64, {});
  *t.data_as<int64_t>() = value;
  return t;
}

Tensor scalar_bool(bool value) {
  Tensor t = Tensor::allocate(ONYX_DTYPE_BOOL, {});
  *t.data_as<uint8_t>() = value ? 1 : 0;
  return t;
}

StatusOr<bool> read_bool(const Tensor& t, const std::string& what) {
  if (t.dtype() != ONYX_DTYPE_BOOL || t.size() != 1)
    return invalid_argument(what + " must be one bool, got " + dtype_name(t.dtype()) + " " +
                            shape_string(t.shape()));
  return *t.data_as<uint8_t>() != 0;
}

// Bytes per element of a tensor that is sliced or stacked.
StatusOr<size_t> element_bytes(const Tensor& t, const std::string& what) {
  size_t size = dtype_size(t.dtype());
  if (size == 0 || t.dtype() == ONYX_DTYPE_STRING)
    return unimplemented(what + ": slicing " + dtype_name(t.dtype()) + " tensors is not supported");
  return size;
}

int64_t product(const Shape& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t k = begin; k < end; ++k) p *= dims[k];
  return p;
}

// t with `axis` removed, taking position `index` along it.
Tensor slice_axis(const Tensor& t, size_t axis, int64_t index, size_t esize) {
  const Shape& dims = t.shape();
  Shape out_dims = dims;
  out_dims.erase(out_dims.begin() + long(axis));
  Tensor out = Tensor::allocate(t.dtype(), out_dims);
  const int64_t outer = product(dims, 0, axis);
  const size_t inner = size_t(product(dims, axis + 1, dims.size())) * esize;
  const size_t block = size_t(dims[axis]) * inner;
  auto* dst = static_cast<char*>(out.data());
  const auto* src = static_cast<const char*>(t.data());
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(dst + size_t(o) * inner, src + size_t(o) * block + size_t(index) * inner, inner);
  return out;
}

// Stacks equally shaped slices along a new `axis` (in reverse order if asked).
StatusOr<Tensor> stack(const std::vector<Tensor>& slices, int64_t axis, bool reverse, const std::string& what) {
  const Tensor& first = slices[0];
  const int64_t rank = int64_t(first.shape().size()) + 1;
  if (axis < -rank || axis >= rank)
    return invalid_argument(what + ": axis " + std::to_string(axis) + " out of range for rank " +
                            std::to_string(rank));
  const size_t a = size_t(axis < 0 ? axis + rank : axis);
  ONYX_ASSIGN_OR_RETURN(size_t esize, element_bytes(first, what));
  for (const Tensor& s : slices)
    if (s.dtype() != first.dtype() || s.shape() != first.shape())
      return invalid_argument(what + " changes from " + dtype_name(first.dtype()) + " " +
                              shape_string(first.shape()) + " to " + dtype_name(s.dtype()) + " " +
                              shape_string(s.shape()) + " between iterations");
  Shape dims = first.shape();
  const size_t n = slices.size();
  dims.insert(dims.begin() + long(a), int64_t(n));
  Tensor out = Tensor::allocate(first.dtype(), dims);
  const int64_t outer = product(first.shape(), 0, a);
  const size_t inner = size_t(product(first.shape(), a, first.shape().size())) * esize;
  auto* dst = static_cast<char*>(out.data());
  for (size_t i = 0; i < n; ++i) {
    const auto* src = static_cast<const char*>(slices[reverse ? n - 1 - i : i].data());
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(dst + (size_t(o) * n + i) * inner, src + size_t(o) * inner, inner);
  }
  return out;
}

// An empty stack ([0, ...]) for a scan output of a loop that ran no iteration.
Tensor empty_stack(const CompiledSubgraph& sub, size_t output) {
  const ir::Value& v = sub.session->graph().values[size_t(sub.session->graph().outputs[output])];
  Shape dims = {0};
  if (v.shape_known()) dims.insert(dims.end(), v.dims.begin(), v.dims.end());
  return Tensor::allocate(v.dtype != ONYX_DTYPE_UNDEFINED ? v.dtype : ONYX_DTYPE_FLOAT32, dims);
}

// Runs a subgraph with its own inputs followed by its captured values.
StatusOr<std::vector<Value>> run_child(const RunState& run, const Step& step, const CompiledSubgraph& sub,
                                       std::vector<Value> inputs) {
  if (const char* why = cancelled_by(run))
    return failed_precondition(std::string("run cancelled (") + why + ") in " + step.name + " before subgraph '" +
                               sub.attribute + "'");
  for (size_t k : sub.capture_inputs) {
    inputs.push_back(input_value(run, step, k));
    if (inputs.back().is_tensor() && inputs.back().tensor().empty())
      return failed_precondition(step.name + ": subgraph '" + sub.attribute + "' reads '" +
                                 sub.session->graph().values[size_t(sub.session->graph().inputs[inputs.size() - 1])].name +
                                 "', which was not produced");
  }
  auto outs = sub.session->run_subgraph(inputs);
  if (!outs.ok()) return outs.status().with_context(step.name + " subgraph '" + sub.attribute + "'");
  return outs;
}

const CompiledSubgraph& subgraph(const Step& step, const std::string& attr) {
  for (const CompiledSubgraph& s : step.control_flow->subgraphs)
    if (s.attribute == attr) return s;
  return step.control_flow->subgraphs.front();  // compile_subgraphs checked the names
}

// --- the three ops -----------------------------------------------------------

Status run_if(RunState& run, const Step& step) {
  ONYX_ASSIGN_OR_RETURN(bool taken, read_bool(input(run, step, 0), step.name + ": cond"));
  ONYX_ASSIGN_OR_RETURN(std::vector<Value> outs,
                        run_child(run, step, subgraph(step, taken ? "then_branch" : "else_branch"), {}));
  for (size_t k = 0; k < step.outputs.size(); ++k) set_output(run, step, k, std::move(outs[k]));
  return Status();
}

Status run_loop(RunState& run, const Step& step) {
  const ir::Node& node = node_of(run, step);
  const CompiledSubgraph& body = subgraph(step, "body");
  int64_t trip_count = -1;  // -1: no limit
  if (Tensor m = input(run, step, 0); !m.empty()) {
    if (m.dtype() != ONYX_DTYPE_INT64 || m.size() != 1)
      return invalid_argument(step.name + ": M must be one int64, got " + dtype_name(m.dtype()) + " " +
                              shape_string(m.shape()));
    trip_count = std::max<int64_t>(0, *m.data_as<int64_t>());
  }
  bool cond = true;
  if (Tensor c = input(run, step, 1); !c.empty()) {
    ONYX_ASSIGN_OR_RETURN(cond, read_bool(c, step.name + ": cond"));
  }
  const size_t carried = node.inputs.size() - 2;
  const size_t scan_outputs = node.outputs.size() - carried;
  std::vector<Value> state;
  for (size_t k = 0; k < carried; ++k) {
    state.push_back(input_value(run, step, 2 + k));
    if (state.back().is_tensor() && state.back().tensor().empty())
      return invalid_argument(step.name + ": loop-carried input " + std::to_string(k) + " is missing");
  }
  std::vector<std::vector<Tensor>> scans(scan_outputs);
  for (int64_t i = 0; (trip_count < 0 || i < trip_count) && cond; ++i) {
    std::vector<Value> in = {scalar_int64(i), scalar_bool(cond)};
    in.insert(in.end(), state.begin(), state.end());
    ONYX_ASSIGN_OR_RETURN(std::vector<Value> outs, run_child(run, step, body, std::move(in)));
    ONYX_ASSIGN_OR_RETURN(cond, read_bool(outs[0].tensor(), step.name + ": the body's cond output"));
    for (size_t k = 0; k < carried; ++k) state[k] = std::move(outs[1 + k]);
    for (size_t k = 0; k < scan_outputs; ++k) {
      ONYX_ASSIGN_OR_RETURN(Tensor t, as_tensor(outs[1 + carried + k], step.name + ": scan output " + std::to_string(k)));
      scans[k].push_back(std::move(t));
    }
  }
  for (size_t k = 0; k < carried; ++k) set_output(run, step, k, std::move(state[k]));
  for (size_t k = 0; k < scan_outputs; ++k) {
    if (scans[k].empty()) {
      set_output(run, step, carried + k, empty_stack(body, 1 + carried + k));
      continue;
    }
    ONYX_ASSIGN_OR_RETURN(Tensor stacked, stack(scans[k], 0, false,
                                                step.name + ": scan output " + std::to_string(k)));
    set_output(run, step, carried + k, std::move(stacked));
  }
  return Status();
}

struct ScanAxes {
  std::vector<int64_t> in_axes, in_reverse, out_axes, out_reverse;
};

std::vector<int64_t> ints_or(const ir::Node& node, const std::string& name, size_t count) {
  const ir::Attribute* a = node.attr(name);
  if (a && a->ints.size() == count) return a->ints;
  return std::vector<int64_t>(count, 0);
}

// One scan over `length` slices: returns the final states, then the stacked scan outputs.
StatusOr<std::vector<Value>> scan_once(const RunState& run, const Step& step, const CompiledSubgraph& body,
                                       std::vector<Value> states, const std::vector<Tensor>& scans,
                                        const ScanAxes& axes, int64_t length, size_t scan_outputs) {
  std::vector<size_t> in_axes, esizes;
  for (size_t j = 0; j < scans.size(); ++j) {
    const int64_t rank = int64_t(scans[j].shape().size());
    const int64_t a = axes.in_axes[j] < 0 ? axes.in_axes[j] + rank : axes.in_axes[j];
    if (a < 0 || a >= rank)
      return invalid_argument(step.name + ": scan input " + std::to_string(j) + " of shape " +
                              shape_string(scans[j].shape()) + " has no axis " + std::to_string(axes.in_axes[j]));
    if (scans[j].shape()[size_t(a)] < length)
      return invalid_argument(step.name + ": scan inputs differ in length along their scan axes");
    in_axes.push_back(size_t(a));
    ONYX_ASSIGN_OR_RETURN(size_t esize, element_bytes(scans[j], step.name));
    esizes.push_back(esize);
  }
  const size_t n = states.size();
  std::vector<std::vector<Tensor>> slices(scan_outputs);
  for (int64_t t = 0; t < length; ++t) {
    std::vector<Value> in = states;
    for (size_t j = 0; j < scans.size(); ++j)
      in.push_back(slice_axis(scans[j], in_axes[j], axes.in_reverse[j] ? length - 1 - t : t, esizes[j]));
    ONYX_ASSIGN_OR_RETURN(std::vector<Value> outs, run_child(run, step, body, std::move(in)));
    for (size_t k = 0; k < n; ++k) states[k] = std::move(outs[k]);
    for (size_t k = 0; k < scan_outputs; ++k) {
      ONYX_ASSIGN_OR_RETURN(Tensor slice, as_tensor(outs[n + k], step.name + ": scan output " + std::to_string(k)));
      slices[k].push_back(std::move(slice));
    }
  }
  for (size_t k = 0; k < scan_outputs; ++k) {
    if (slices[k].empty()) {
      states.push_back(empty_stack(body, n + k));
      continue;
    }
    ONYX_ASSIGN_OR_RETURN(Tensor stacked, stack(slices[k], axes.out_axes[k], axes.out_reverse[k] != 0,
                                                step.name + ": scan output " + std::to_string(k)));
    states.push_back(std::move(stacked));
  }
  return states;
}

// Scan 9+: states, then scan inputs sliced along their axes.
Status run_scan(RunState& run, const Step& step) {
  const ir::Node& node = node_of(run, step);
  const size_t m = size_t(node.attr_int("num_scan_inputs", 0));
  const size_t n = node.inputs.size() - m, k = node.outputs.size() - n;
  ScanAxes axes{ints_or(node, "scan_input_axes", m), ints_or(node, "scan_input_directions", m),
                ints_or(node, "scan_output_axes", k), ints_or(node, "scan_output_directions", k)};
  std::vector<Tensor> states, scans;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    (i < n ? states : scans).push_back(input(run, step, i));
    if ((i < n ? states : scans).back().empty())
      return invalid_argument(step.name + ": input " + std::to_string(i) + " is missing");
  }
  const int64_t rank0 = int64_t(scans[0].shape().size());
  const int64_t axis0 = axes.in_axes[0] < 0 ? axes.in_axes[0] + rank0 : axes.in_axes[0];
  if (axis0 < 0 || axis0 >= rank0)
    return invalid_argument(step.name + ": scan input 0 of shape " + shape_string(scans[0].shape()) +
                            " has no axis " + std::to_string(axes.in_axes[0]));
  const int64_t length = scans[0].shape()[size_t(axis0)];
  ONYX_ASSIGN_OR_RETURN(std::vector<Value> outs,
                        scan_once(run, step, subgraph(step, "body"), {states.begin(), states.end()}, scans, axes,
                                  length, k));
  for (size_t o = 0; o < outs.size(); ++o) set_output(run, step, o, std::move(outs[o]));
  return Status();
}

// Scan 8: a leading batch axis on every input and output, the scan axis
// after it, and optional per-batch sequence_lens (outputs zero-padded).
Status run_scan8(RunState& run, const Step& step) {
  const ir::Node& node = node_of(run, step);
  const size_t m = size_t(node.attr_int("num_scan_inputs", 0));
  const size_t n = node.inputs.size() - 1 - m, k = node.outputs.size() - n;
  ScanAxes axes{std::vector<int64_t>(m, 0), ints_or(node, "directions", m), std::vector<int64_t>(k, 0),
                std::vector<int64_t>(k, 0)};
  std::vector<Tensor> states, scans;
  for (size_t i = 1; i < node.inputs.size(); ++i) {
    (i <= n ? states : scans).push_back(input(run, step, i));
    const Tensor& t = (i <= n ? states : scans).back();
    if (t.empty() || t.shape().size() < (i <= n ? 1u : 2u))
      return invalid_argument(step.name + ": input " + std::to_string(i) +
                              " is missing or lacks the batch (and scan) axis");
  }
  const int64_t batch = scans[0].shape()[0], max_length = scans[0].shape()[1];
  for (const Tensor& t : states)
    if (t.shape()[0] != batch) return invalid_argument(step.name + ": inputs differ in batch size");
  Tensor lens = input(run, step, 0);
  if (!lens.empty() && (lens.dtype() != ONYX_DTYPE_INT64 || lens.size() != batch))
    return invalid_argument(step.name + ": sequence_lens must be int64 [" + std::to_string(batch) + "]");
  std::vector<Tensor> outputs(node.outputs.size());
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t length = lens.empty() ? max_length : lens.data_as<int64_t>()[b];
    if (length < 0 || length > max_length)
      return invalid_argument(step.name + ": sequence_lens[" + std::to_string(b) + "] = " +
                              std::to_string(length) + " is outside [0, " + std::to_string(max_length) + "]");
    std::vector<Tensor> item_states, item_scans;
    for (const Tensor& t : states) {
      ONYX_ASSIGN_OR_RETURN(size_t esize, element_bytes(t, step.name));
      item_states.push_back(slice_axis(t, 0, b, esize));
    }
    for (const Tensor& t : scans) {
      ONYX_ASSIGN_OR_RETURN(size_t esize, element_bytes(t, step.name));
      item_scans.push_back(slice_axis(t, 0, b, esize));
    }
    ONYX_ASSIGN_OR_RETURN(std::vector<Value> outs,
                          scan_once(run, step, subgraph(step, "body"), {item_states.begin(), item_states.end()},
                                    item_scans, axes, length, k));
    for (size_t o = 0; o < outs.size(); ++o) {
      ONYX_ASSIGN_OR_RETURN(Tensor out, as_tensor(outs[o], step.name + ": output " + std::to_string(o)));
      // Per batch item: a state, or [length, ...] scan output padded to max_length.
      Shape item_dims = out.shape();
      if (o >= n) item_dims[0] = max_length;
      Shape dims = item_dims;
      dims.insert(dims.begin(), batch);
      if (outputs[o].empty()) outputs[o] = Tensor::allocate(out.dtype(), dims);
      if (outputs[o].shape() != dims || outputs[o].dtype() != out.dtype())
        return invalid_argument(step.name + ": output " + std::to_string(o) + " differs between batch items");
      const size_t item_bytes = storage_bytes(out.dtype(), element_count(item_dims));
      std::memcpy(static_cast<char*>(outputs[o].data()) + size_t(b) * item_bytes, out.data(),
                  out.bytes());
    }
  }
  for (size_t o = 0; o < outputs.size(); ++o) set_output(run, step, o, std::move(outputs[o]));
  return Status();
}

// SequenceMap: the body per position of the input sequence; additional
// inputs that are sequences (of the same length) give their item at that
// position, tensors are passed whole. Each body output becomes a sequence.
Status run_sequence_map(RunState& run, const Step& step) {
  const ir::Node& node = node_of(run, step);
  const CompiledSubgraph& body = subgraph(step, "body");
  std::vector<Value> inputs;
  for (size_t k = 0; k < node.inputs.size(); ++k) inputs.push_back(input_value(run, step, k));
  if (inputs[0].kind() != Value::Kind::kSequence)
    return invalid_argument(step.name + ": input 0 must be a sequence, got a " + inputs[0].describe());
  const size_t length = inputs[0].items().size();
  for (size_t k = 1; k < inputs.size(); ++k)
    if (inputs[k].kind() == Value::Kind::kSequence && inputs[k].items().size() != length)
      return invalid_argument(step.name + ": input " + std::to_string(k) + " is a sequence of " +
                              std::to_string(inputs[k].items().size()) + " items, input 0 of " +
                              std::to_string(length));
  std::vector<std::vector<Value>> results(node.outputs.size());
  for (size_t i = 0; i < length; ++i) {
    std::vector<Value> in;
    for (const Value& v : inputs) in.push_back(v.kind() == Value::Kind::kSequence ? v.items()[i] : v);
    ONYX_ASSIGN_OR_RETURN(std::vector<Value> outs, run_child(run, step, body, std::move(in)));
    for (size_t k = 0; k < outs.size() && k < results.size(); ++k) results[k].push_back(std::move(outs[k]));
  }
  const ir::Graph& g = body.session->graph();
  for (size_t k = 0; k < results.size(); ++k) {
    auto seq = Value::sequence(g.values[size_t(g.outputs[k])].dtype, std::move(results[k]));
    if (!seq.ok()) return seq.status().with_context(step.name + ": output " + std::to_string(k));
    set_output(run, step, k, std::move(seq).value());
  }
  return Status();
}

}  // namespace

Status run_control_flow(RunState& run, const Step& step) {
  const ir::Node& node = node_of(run, step);
  if (node.op_type == "If") return run_if(run, step);
  if (node.op_type == "SequenceMap") return run_sequence_map(run, step);
  if (node.op_type == "Loop") return run_loop(run, step);
  return run.session->graph().opset("") < 9 ? run_scan8(run, step) : run_scan(run, step);
}

StatusOr<std::vector<Value>> Session::run_subgraph(const std::vector<Value>& inputs) {
  const ir::Graph& graph = *model_.graph;
  if (inputs.size() != graph.inputs.size())
    return internal_error("subgraph run with " + std::to_string(inputs.size()) + " inputs for " +
                          std::to_string(graph.inputs.size()));
  std::vector<Shape> shapes;
  for (const Value& v : inputs) shapes.push_back(v.tensor().shape());
  ONYX_ASSIGN_OR_RETURN(std::shared_ptr<const ExecutionPlan> plan, plan_for(shapes));
  return Executor::run(*this, *plan, inputs, output_values_);
}

}  // namespace onyx::runtime
