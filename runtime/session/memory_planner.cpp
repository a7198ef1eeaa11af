#include "session/memory_planner.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>

namespace onyx::runtime {
namespace {

size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

bool overlap(const PlanRequest& a, const PlanRequest& b) {
  return a.first_step <= b.last_step && b.first_step <= a.last_step;
}

}  // namespace

MemoryPlan plan_memory(std::span<const PlanRequest> requests, size_t alignment) {
  MemoryPlan plan;
  const size_t n = requests.size();
  plan.offsets.assign(n, 0);
  std::vector<size_t> size(n);
  for (size_t k = 0; k < n; ++k) size[k] = align_up(requests[k].bytes, alignment);

  // Lower bound: sweep the steps, adding sizes at first use, removing after last.
  std::map<int, long long> delta;
  for (size_t k = 0; k < n; ++k) {
    if (!size[k]) continue;
    delta[requests[k].first_step] += (long long)size[k];
    delta[requests[k].last_step + 1] -= (long long)size[k];
  }
  long long live = 0;
  for (const auto& [step, d] : delta) {
    live += d;
    plan.lower_bound = std::max(plan.lower_bound, size_t(live));
  }

  // Greedy by size; ties broken by earlier start for determinism.
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (size[a] != size[b]) return size[a] > size[b];
    return requests[a].first_step < requests[b].first_step;
  });
  std::vector<size_t> placed;  // indices of placed requests
  std::vector<std::pair<size_t, size_t>> busy;  // [offset, end) of overlapping placed ones
  for (size_t k : order) {
    if (!size[k]) continue;
    busy.clear();
    for (size_t p : placed)
      if (overlap(requests[k], requests[p])) busy.emplace_back(plan.offsets[p], plan.offsets[p] + size[p]);
    std::sort(busy.begin(), busy.end());
    // Best fit: the smallest gap that holds the buffer, else the end.
    size_t best = SIZE_MAX, best_gap = SIZE_MAX, cursor = 0;
    for (const auto& [begin, end] : busy) {
      if (begin > cursor && begin - cursor >= size[k] && begin - cursor < best_gap) {
        best = cursor;
        best_gap = begin - cursor;
      }
      cursor = std::max(cursor, end);
    }
    plan.offsets[k] = best != SIZE_MAX ? best : cursor;
    plan.arena_bytes = std::max(plan.arena_bytes, plan.offsets[k] + size[k]);
    placed.push_back(k);
  }
  return plan;
}

}  // namespace onyx::runtime
