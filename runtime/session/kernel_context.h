// kernel_context.h: the host side of one kernel_compute call. Kernels reach
// it through the host table's ctx_* functions (plugin/host_api.h): inputs
// are views of the run's slots, and outputs are placed by the policy below.
//
// Output placement, for output `index` of the step, asked for with a dtype
// and shape:
//  1. an omitted optional output (-1): scratch freed after the call;
//  2. where the plan knows the value's dtype and shape, the request must
//     match them: a kernel that disagrees with shape inference is an error
//     naming the node, the output and both shapes;
//  3. the plan's storage: the bytes of the input it shares (kAlias), its
//     place in the device's arena (kArena), the caller's buffer or a new
//     host tensor (kOutput), or, where the plan does not know the size
//     (kDynamic), a device allocation freed after the value's last reader;
//  4. an output the kernel declared a view of an input (ALIASES_INPUT) that
//     the plan could not place in that input's bytes gets a copy of them.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "plugin/host_api.h"
#include "session/run_state.h"
#include "session/step.h"

namespace onyx::runtime {

class KernelContext final : public OnyxComputeContext {
 public:
  KernelContext(RunState& run, const Step& step) : run_(run), step_(step) {}
  ~KernelContext();  // frees scratch and omitted outputs
  KernelContext(const KernelContext&) = delete;
  KernelContext& operator=(const KernelContext&) = delete;

  size_t input_count() const override { return step_.inputs.size(); }
  size_t output_count() const override { return step_.outputs.size(); }
  Status input(size_t index, OnyxTensorView* out) const override;
  Status output(size_t index, int32_t dtype, std::span<const int64_t> dims, OnyxTensorView* out) override;
  OnyxStream* stream() const override { return run_.streams.stream(step_.device); }  // run_streams.h
  Status scratch(size_t bytes, void** out) override;
  void parallel_for(size_t n, size_t grain, OnyxParallelBody body, void* user) override;
  size_t thread_count() const override;
  bool profiling() const override { return run_.profiler != nullptr; }
  void profile_event(const char* name, int64_t start_ns, int64_t end_ns) const override;

 private:
  Status check_planned(size_t index, int v, int32_t dtype, const Shape& shape) const;
  Status place(int v, RunSlot& slot, size_t bytes);

  RunState& run_;
  const Step& step_;
  std::vector<std::pair<int, void*>> scratch_;  // (device, pointer)
  // Outputs the graph does not use; pointers, so that the views stay put.
  // Empty (no allocation) in almost every call.
  std::vector<std::unique_ptr<RunSlot>> omitted_outputs_;
};

}  // namespace onyx::runtime
