// memory_planner.h: static offset assignment in an arena.
//
// Each request is a buffer with a size and a lifetime [first_step, last_step]
// (inclusive, in execution order). Two requests may share bytes only when
// their lifetimes do not overlap. The planner places them "greedy by size"
// (largest first, each at the lowest offset that fits among already-placed
// buffers whose lifetimes overlap), which lands close to the lower bound: the
// largest total size of buffers alive at one step.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace onyx::runtime {

struct PlanRequest {
  size_t bytes = 0;
  int first_step = 0;
  int last_step = 0;
};

struct MemoryPlan {
  std::vector<size_t> offsets;  // one per request, multiples of the alignment
  size_t arena_bytes = 0;       // planned size
  size_t lower_bound = 0;       // max over steps of live bytes (aligned sizes)
};

MemoryPlan plan_memory(std::span<const PlanRequest> requests, size_t alignment = 64);

}  // namespace onyx::runtime
