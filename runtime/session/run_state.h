// run_state.h: the state of one run of a session: where each value's bytes
// are. Owned by Executor::run; kernels reach it through their KernelContext
// (session/kernel_context.h), control-flow steps directly.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "core/tensor.h"
#include "core/value.h"
#include "session/arena_pool.h"
#include "session/device_io.h"
#include "session/profiler.h"
#include "session/run_options.h"
#include "session/run_streams.h"

namespace onyx::runtime {

class Session;
struct ExecutionPlan;

// Where one value's bytes are during a run.
struct RunSlot {
  bool present = false;
  int32_t dtype = 0;
  Shape dims;
  void* data = nullptr;
  int device = -1;       // -1: host memory not owned by a device (inputs, constants)
  bool dynamic = false;  // allocated at run time on `device`: freed after its last use
  Tensor host;           // keeps host storage (inputs, constants, graph outputs) alive
  // A sequence or optional (host memory only); the fields above stay unset.
  Value composite;
  // The device whose run stream writes the bytes (-1: written when the step
  // returned) and the number of that write on it (run_streams.h).
  int writer = -1;
  uint64_t write_seq = 0;
};

struct RunState {
  Session* session = nullptr;
  const ExecutionPlan* plan = nullptr;
  ArenaLease arenas;            // one per device, from the session's pool
  RunStreams streams;           // destroyed first: waits for the streams before the arenas go back
  std::vector<RunSlot> slots;   // per value
  std::map<int, Tensor> reuse;  // output value -> caller's buffer (Session::run)
  std::shared_ptr<Profiler> profiler;  // null: this run is not profiled
  uint64_t cancel_generation = 0;  // Session::cancel_generation() when the run started
  const RunOptions* options = nullptr;  // the thread's RunOptionsScope when the run started
  uint64_t options_generation = 0;      // options->cancel_generation() then
  const DeviceBinding* binding = nullptr;  // null: every input and output in host memory
};

// Slot vectors kept from one run to the next with the graph's constants
// still bound (binding them was a copy of each one's tensor and shape, three
// allocations a constant, every run). Thread-safe: concurrent runs take
// different vectors.
class SlotCache {
 public:
  // A vector of `values` slots: a spare one (its constants bound, every other
  // slot empty) or a new one.
  std::vector<RunSlot> take(size_t values);
  // Keeps `slots` for a later run; the caller has emptied every slot but the
  // constants'.
  void give_back(std::vector<RunSlot> slots);

 private:
  std::mutex mutex_;
  std::vector<std::vector<RunSlot>> spare_;
};

// Null while the run may go on; otherwise what cancelled it ("cancel_runs",
// or "its run options"), for a "run cancelled (...)" error.
const char* cancelled_by(const RunState& run);

// Value `v` as the host sees it: the sequence or optional, or the tensor
// (a host tensor sharing the slot's bytes, or a host copy of bytes that a
// host-readable device holds). An empty Value when omitted or not produced.
Value slot_value(const RunState& run, int v);
// Makes value `v` hold `value` (a tensor in host memory, or a composite).
void set_slot_value(RunState& run, int v, const Value& value);

}  // namespace onyx::runtime
