#include "plugin/host_api.h"

#include <exception>
#include <new>

#include "core/log.h"

namespace onyx::runtime {
namespace {

// Runs fn (returning Status) and turns its result or exception into an ABI status.
template <typename Fn>
OnyxStatus* guarded(const char* what, Fn&& fn) noexcept {
  try {
    return make_abi_status(fn());
  } catch (const std::bad_alloc&) {
    return make_abi_status(Status(ONYX_STATUS_OUT_OF_MEMORY, std::string(what) + ": out of memory"));
  } catch (const std::exception& e) {
    return make_abi_status(internal_error(std::string(what) + ": " + e.what()));
  } catch (...) {
    return make_abi_status(internal_error(std::string(what) + ": unknown exception"));
  }
}

// Plugins' lines go to the logger of the work the calling thread does for
// (core/log.h); the threshold is that logger's.
void log_line(int32_t level, const char* message) {
  if (level < ONYX_LOG_DEBUG || level > ONYX_LOG_ERROR) level = ONYX_LOG_ERROR;
  try {
    LogRoute::current().log(level, message ? message : "");
  } catch (...) {  // nothing may cross the ABI; a lost line is the lesser harm
  }
}

size_t ctx_input_count(const OnyxComputeContext* ctx) { return ctx->input_count(); }
size_t ctx_output_count(const OnyxComputeContext* ctx) { return ctx->output_count(); }

OnyxStatus* ctx_input(const OnyxComputeContext* ctx, size_t index, OnyxTensorView* out) {
  return guarded("ctx_input", [&] {
    if (!out) return invalid_argument("ctx_input: out is NULL");
    return ctx->input(index, out);
  });
}

OnyxStatus* ctx_output(OnyxComputeContext* ctx, size_t index, int32_t dtype, const int64_t* dims,
                       size_t rank, OnyxTensorView* out) {
  return guarded("ctx_output", [&] {
    if (!out) return invalid_argument("ctx_output: out is NULL");
    if (rank && !dims) return invalid_argument("ctx_output: dims is NULL");
    return ctx->output(index, dtype, std::span<const int64_t>(dims, rank), out);
  });
}

OnyxStream* ctx_stream(const OnyxComputeContext* ctx) { return ctx->stream(); }

OnyxStatus* ctx_scratch(OnyxComputeContext* ctx, size_t bytes, void** out) {
  return guarded("ctx_scratch", [&] {
    if (!out) return invalid_argument("ctx_scratch: out is NULL");
    *out = nullptr;
    return ctx->scratch(bytes, out);
  });
}

void ctx_parallel_for(OnyxComputeContext* ctx, size_t n, size_t grain, OnyxParallelBody body,
                      void* user) {
  ctx->parallel_for(n, grain, body, user);
}

size_t ctx_thread_count(const OnyxComputeContext* ctx) { return ctx->thread_count(); }

bool ctx_profiling(const OnyxComputeContext* ctx) { return ctx->profiling(); }

void ctx_profile_event(const OnyxComputeContext* ctx, const char* name, int64_t start_ns, int64_t end_ns) {
  if (!name || end_ns < start_ns) return;
  try {
    ctx->profile_event(name, start_ns, end_ns);
  } catch (...) {  // nothing may cross the ABI; a lost event is the lesser harm
  }
}

}  // namespace

const OnyxHostApi* host_api() {
  static const OnyxHostApi api = [] {
    OnyxHostApi a{};
    a.struct_size = sizeof(OnyxHostApi);
    a.abi_version = ONYX_ABI_VERSION(ONYX_ABI_VERSION_MAJOR, ONYX_ABI_VERSION_MINOR);
    fill_status_functions(a);
    a.log = log_line;
    a.ctx_input_count = ctx_input_count;
    a.ctx_output_count = ctx_output_count;
    a.ctx_input = ctx_input;
    a.ctx_output = ctx_output;
    a.ctx_stream = ctx_stream;
    a.ctx_scratch = ctx_scratch;
    a.ctx_parallel_for = ctx_parallel_for;
    a.ctx_thread_count = ctx_thread_count;
    a.ctx_profiling = ctx_profiling;
    a.ctx_profile_event = ctx_profile_event;
    return a;
  }();
  return &api;
}

}  // namespace onyx::runtime
