// plan.h: the execution plan of a session for one set of input shapes:
// where each value's bytes come from in a run, and the memory report.
//
// Built once per input-shape signature (Session::plan_for caches it) and
// immutable afterwards, so concurrent runs share it. It owns no memory: the
// arenas it sizes come from the session's ArenaPool.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace onyx::runtime {

class Session;

struct MemoryReport {
  std::string device;
  size_t arena_bytes = 0, lower_bound = 0;
  size_t planned_tensors = 0, dynamic_tensors = 0, in_place = 0, aliased = 0;
};

struct ExecutionPlan {
  enum Storage {
    kNone,     // not produced by a step (graph inputs, constants)
    kArena,    // at `offset` in its device's arena
    kAlias,    // shares the bytes of `alias_of` (in-place or a declared view)
    kDynamic,  // the plan does not know its size (a data-dependent shape, or a
               // control-flow output): allocated when produced, freed after its
               // last reader
    kOutput,   // returned to the caller: a host buffer of its own
    kResident, // a constant's copy the session keeps on the device
               // (Session::resident_constants): never written by a run
  };
  struct ValuePlan {
    Storage storage = kNone;
    size_t offset = 0, bytes = 0;  // kArena
    int alias_of = -1;             // kAlias: the value whose bytes it shares
    // What shape inference says the producer will write. When known, a
    // kernel that asks for another dtype or shape is an error.
    bool shape_known = false;
    int32_t dtype = ONYX_DTYPE_UNDEFINED;
    Shape dims;
  };
  std::vector<ValuePlan> values;     // per value of the session's graph
  std::vector<size_t> arena_bytes;   // per device
  std::vector<int> last_use;         // per value: the last step reading its bytes (-1: none)
  std::vector<MemoryReport> report;  // per device

  // Whether another value shares the bytes of `v`, directly or through a
  // chain of kAlias values (an in-place output, a view): then v's bytes
  // must be the run's own, never a caller's tensor.
  bool bytes_shared(int v) const {
    for (const ValuePlan& vp : values)
      for (int a = vp.storage == kAlias ? vp.alias_of : -1, hops = 0; a >= 0 && hops <= int(values.size());
           a = values[size_t(a)].storage == kAlias ? values[size_t(a)].alias_of : -1, ++hops)
        if (a == v) return true;
    return false;
  }
};

// Builds the plan for `input_shapes` (one per graph input, concrete).
StatusOr<std::shared_ptr<const ExecutionPlan>> build_execution_plan(
    const Session& session, const std::vector<Shape>& input_shapes);

}  // namespace onyx::runtime
