// host_kernels.h: the host's built-in kernels for ops on sequences,
// optionals, maps and STRING tensors (ABI 1.x carries only numeric tensors to
// providers; onyx_provider.h, "Values that are not numeric tensors").
//
// The partitioner places a node on the host when it reads or writes a value
// that is not a numeric tensor (ir/value_kinds.h); build_steps makes it a Step of
// kind kHostKernel, and the executor calls run_host_kernel. Inputs arrive as
// host Values, outputs are written as host Values. Semantics follow the
// ONNX operator spec.
#pragma once

#include <string>
#include <vector>

#include "core/value.h"
#include "ir/graph.h"

namespace onyx::runtime {

struct RunState;
struct Step;

// What one host kernel call sees.
struct HostKernelCall {
  const ir::Node& node;
  std::string name;           // "SequenceAt 'n0'", for messages
  std::vector<Value> inputs;  // per node input; an empty Value when omitted
  std::vector<Value> outputs; // per node output, set by the kernel

  // Input k as a tensor; an error naming the node when it is missing or is
  // not a tensor.
  StatusOr<Tensor> tensor(size_t k) const;
  // Input k as a sequence; an error naming the node otherwise.
  StatusOr<Value> sequence(size_t k) const;
  // Input k, a scalar (or one-element) integer tensor, as int64.
  StatusOr<int64_t> scalar_int(size_t k) const;
};

using HostKernelFn = Status (*)(HostKernelCall& call);

// The host kernel for `node`, or nullptr when the host has none.
HostKernelFn find_host_kernel(const ir::Node& node);

// True when the host runs `node` (not a provider): control flow aside, when
// it reads or writes a sequence, an optional or a STRING tensor.
bool runs_on_host_kernels(const ir::Graph& graph, const ir::Node& node);

// Runs one kHostKernel step.
Status run_host_kernel(RunState& run, const Step& step);

// Registration, one function per family (host_kernels_*.cpp).
struct HostKernelEntry {
  const char* op_type;  // "domain::Op" outside ai.onnx ("ai.onnx.ml::LabelEncoder")
  HostKernelFn fn;
};
std::vector<HostKernelEntry> sequence_host_kernels();
std::vector<HostKernelEntry> optional_host_kernels();
std::vector<HostKernelEntry> string_host_kernels();
std::vector<HostKernelEntry> ml_host_kernels();
std::vector<HostKernelEntry> map_host_kernels();

}  // namespace onyx::runtime
