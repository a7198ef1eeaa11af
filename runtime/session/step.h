// step.h: one step of a session's execution: a kernel (one node or a fused
// group), a copy between memories, or a node the host runs (control flow,
// or an op on sequences and optionals).
#pragma once

#include <onyx_provider.h>

#include <memory>
#include <string>
#include <vector>

namespace onyx::runtime {

struct ControlFlow;  // session/control_flow.h

struct Step {
  // kHostKernel: a node on sequences or optionals, run by the host's
  // built-in kernels (session/host_kernels.h).
  enum Kind { kKernel, kCopy, kControlFlow, kHostKernel } kind = kKernel;
  int device = 0;          // index into the session's devices; -1: the host (kControlFlow, kHostKernel)
  std::vector<int> nodes;  // graph nodes, in topological order (kKernel, kControlFlow, kHostKernel)
  // Value indices (-1: omitted). A kernel's inputs are its nodes' inputs in
  // node order, less the values computed inside the group; its outputs are
  // its nodes' outputs in node order. This is the order the ABI's ctx_*
  // indices and kernel_output_memory use.
  std::vector<int> inputs;
  std::vector<int> outputs;
  OnyxKernel* kernel = nullptr;                     // kKernel; destroyed by the session
  std::vector<OnyxOutputMemoryInfo> output_memory;  // kKernel: one per output
  int copy_direction = 0;                           // kCopy: an OnyxCopyDirection
  // kCopy: the device whose memory_copy moves the bytes, on its stream: the
  // one whose memory the host cannot read (copy_insertion.h). `device` is
  // where the copy's output lives (the source device for a copy to the host).
  int copy_by = 0;
  // The device whose stream orders the step's work (-1: the host).
  int stream_device() const { return kind == kCopy ? copy_by : device; }
  std::string name;                                 // "Relu 'relu0'", "copy 'x'"
  std::shared_ptr<ControlFlow> control_flow;        // kControlFlow: its compiled subgraphs
};

}  // namespace onyx::runtime
