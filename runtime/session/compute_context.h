// compute_context.h: the state behind OnyxComputeContext during one run, and
// the host functions (ctx_*) that kernels call through OnyxHostApi.
#pragma once

#include <onyx_provider.h>

#include <deque>
#include <map>
#include <vector>

#include "core/tensor.h"

namespace onyx::runtime {

class Session;
struct ExecutionPlan;
struct Step;

// Where one value's bytes are during a run.
struct RunSlot {
  bool present = false;
  int32_t dtype = 0;
  Shape dims;
  void* data = nullptr;
  int device = -1;          // -1: host memory not owned by a device (inputs, constants)
  bool dynamic = false;     // allocated at run time: freed after its last use
  Tensor host;              // keeps host storage (inputs, constants, graph outputs) alive
};

// Everything one run needs; owned by Executor::run.
struct RunState {
  Session* session = nullptr;
  const ExecutionPlan* plan = nullptr;
  std::vector<void*> arenas;  // per device
  std::vector<RunSlot> slots; // per value
  std::map<int, Tensor> reuse; // output value -> caller's buffer (Session::run)
};

}  // namespace onyx::runtime

struct OnyxComputeContext {
  onyx::runtime::RunState* run;
  const onyx::runtime::Step* step;
  std::vector<std::pair<int, void*>> scratch;  // (device, ptr) freed after compute
  std::deque<onyx::runtime::RunSlot> omitted_outputs;   // outputs the graph does not use
};

namespace onyx::runtime {
// Installs the ctx_* functions into the host table.
void fill_compute_context_functions(OnyxHostApi& api);
}  // namespace onyx::runtime
