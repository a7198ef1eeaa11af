// executor.h: memory plans per input-shape signature, and the sequential run.
#pragma once

#include <map>
#include <mutex>
#include <memory>
#include <vector>

#include "session/session.h"

namespace onyx::runtime {

// How each value gets its bytes in a run with given input shapes.
struct ExecutionPlan {
  enum Storage { kNone, kArena, kAlias, kDynamic, kOutput };
  struct ValuePlan {
    Storage storage = kNone;
    size_t offset = 0, bytes = 0;  // kArena
    int alias_of = -1;             // kAlias / in-place: the value whose bytes it shares
  };
  std::vector<ValuePlan> values;      // per graph value
  std::vector<size_t> arena_bytes;    // per device
  std::vector<int> last_use;          // per value: last step reading it (-1: none)
  std::vector<MemoryReport> report;   // per device

  // Arenas of finished runs, reused by the next run (one per device).
  struct ArenaSet {
    std::vector<void*> per_device;
  };
  mutable std::mutex arena_mutex;
  mutable std::vector<ArenaSet> free_arenas;
  const Session* owner = nullptr;
  ~ExecutionPlan();
};

// Builds the plan for `input_shapes` (one per graph input, concrete).
StatusOr<std::shared_ptr<const ExecutionPlan>> build_execution_plan(
    const Session& session, const std::vector<Shape>& input_shapes);

class Executor {
 public:
  // Runs every step; `inputs` are bound to the graph inputs in order.
  // `reuse`: null, or one host tensor per output value (see Session::run).
  static StatusOr<std::vector<Tensor>> run(Session& session, const ExecutionPlan& plan,
                                           const std::vector<Tensor>& inputs,
                                           const std::vector<int>& output_values,
                                           const std::vector<Tensor>* reuse = nullptr);
};

}  // namespace onyx::runtime
