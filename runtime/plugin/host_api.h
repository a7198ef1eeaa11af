// host_api.h: the OnyxHostApi table the core gives to every plugin, and the
// host's side of OnyxComputeContext that its ctx_* functions forward to.
//
// The table is assembled here from parts of the layers below: status
// objects (core/abi_status.h) and the ctx_* trampolines, which convert
// statuses and catch exceptions so that none crosses the ABI. What a ctx_*
// call does (where an output's bytes go, what an input view holds) is the
// session's business: it implements OnyxComputeContext
// (session/kernel_context.h) and passes one to each kernel_compute.
#pragma once

#include <onyx_provider.h>

#include <cstddef>
#include <span>

#include "core/abi_status.h"

// What a kernel may ask of the host during one kernel_compute call. The
// ABI's contract for each (onyx_provider.h, OnyxHostApi.ctx_*) holds here;
// the trampolines have already checked that `out` pointers are not NULL.
struct OnyxComputeContext {
  virtual size_t input_count() const = 0;
  virtual size_t output_count() const = 0;
  // An omitted optional input is OK with out->dtype ONYX_DTYPE_UNDEFINED.
  virtual onyx::runtime::Status input(size_t index, OnyxTensorView* out) const = 0;
  virtual onyx::runtime::Status output(size_t index, int32_t dtype, std::span<const int64_t> dims,
                                       OnyxTensorView* out) = 0;
  virtual OnyxStream* stream() const = 0;
  virtual onyx::runtime::Status scratch(size_t bytes, void** out) = 0;
  virtual void parallel_for(size_t n, size_t grain, OnyxParallelBody body, void* user) = 0;
  virtual size_t thread_count() const = 0;
  // ABI 1.1: the run's profiler, if it is profiled (ctx_profiling, ctx_profile_event).
  virtual bool profiling() const = 0;
  virtual void profile_event(const char* name, int64_t start_ns, int64_t end_ns) const = 0;

 protected:
  ~OnyxComputeContext() = default;  // owned by whoever calls kernel_compute
};

namespace onyx::runtime {

// The table passed to plugins; static, lives for the whole process.
const OnyxHostApi* host_api();

}  // namespace onyx::runtime
