// isolation.h: runs cases in forked worker processes with a per-case time
// limit, so that a case that hangs or crashes (a provider bug) costs only
// that case: the worker is killed or reaped, the case is reported, and a new
// worker continues with the next case.
#pragma once

#include <cstddef>
#include <functional>

#include "results.h"

namespace onyx::conformance {

struct IsolationOptions {
  int jobs = 2;                       // worker processes running at once
  double case_timeout_s = 60;         // a case running longer is killed
  size_t memory_limit_bytes = 0;      // address-space limit per worker (0: none)
  bool quiet_workers = true;          // send workers' stdout/stderr to /dev/null
};

// Runs run_case(i) for i in [0, count) in workers (forked from this process:
// call before creating threads or Onyx objects here) and calls on_done(i, r)
// in this process as results arrive. A crash or time-out yields a failed
// result naming the signal or the limit.
void run_isolated(size_t count, const std::function<RunResult(size_t)>& run_case,
                  const std::function<void(size_t, RunResult)>& on_done,
                  const IsolationOptions& options);

}  // namespace onyx::conformance
