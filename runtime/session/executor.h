// executor.h: one run of a session: the steps in order.
#pragma once

#include <vector>

#include "core/value.h"
#include "session/device_io.h"

namespace onyx::runtime {

class Session;
struct ExecutionPlan;

class Executor {
 public:
  // Runs every step; `inputs` are bound to the graph inputs in order, and
  // the values `returned` are handed back (Session::output_values entries).
  // `reuse`: null, or one host tensor per returned value (see Session::run).
  // `binding`: null, or the inputs and outputs that stay on devices
  // (Session::run_bound); its outputs come back as device tensors.
  static StatusOr<std::vector<Value>> run(Session& session, const ExecutionPlan& plan,
                                           const std::vector<Value>& inputs,
                                           const std::vector<int>& returned,
                                           const std::vector<Tensor>* reuse = nullptr,
                                           const DeviceBinding* binding = nullptr);
};

}  // namespace onyx::runtime
