// sdk/compute_context.hpp: what a kernel sees while it runs: its inputs and
// outputs as typed tensors, scratch memory, the stream and the host's thread
// pool, all reached through the ctx_* functions of the host that called
// kernel_compute (ComputeContext carries that host; ProviderTable builds it).
#pragma once

#include <onyx_provider.h>

#include <chrono>

#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "dtype.hpp"
#include "status.hpp"

namespace onyx::sdk {

// A borrowed tensor inside kernel_compute.
struct Tensor {
  int32_t dtype = 0;
  std::span<const int64_t> dims;
  void* raw = nullptr;
  template <typename T>
  T* data() const { return static_cast<T*>(raw); }
  int64_t size() const { return element_count(dims); }
  size_t rank() const { return dims.size(); }
  // Dimension k; past the rank (a kernel indexing rank() - 1 of a scalar)
  // it throws InvalidNode, which guard() turns into INVALID_ARGUMENT,
  // instead of reading outside dims.
  int64_t dim(size_t k) const {
    if (k >= dims.size())
      throw InvalidNode("dimension " + std::to_string(int64_t(k)) + " of a tensor of rank " +
                        std::to_string(dims.size()) + " was asked for");
    return dims[k];
  }
  std::vector<int64_t> shape() const { return {dims.begin(), dims.end()}; }
};

// One kernel invocation. Valid during kernel_compute only; used by the
// thread that runs it (and, through parallel_for, by the host's pool).
class ComputeContext {
 public:
  ComputeContext(const OnyxHostApi& host, OnyxComputeContext* ctx) : host_(&host), ctx_(ctx) {}

  // The host that called kernel_compute.
  const OnyxHostApi& host() const { return *host_; }

  size_t input_count() const { return host_->ctx_input_count(ctx_); }
  size_t output_count() const { return host_->ctx_output_count(ctx_); }
  // Returns nullopt for an omitted optional input.
  std::optional<Tensor> input(size_t k) const {
    if (k >= input_count()) return std::nullopt;
    OnyxTensorView v{sizeof(OnyxTensorView), 0, 0, 0, nullptr, nullptr};
    if (OnyxStatus* st = host_->ctx_input(ctx_, k, &v)) {  // unreachable: k was checked above
      host_->status_release(st);
      return std::nullopt;
    }
    if (v.dtype == ONYX_DTYPE_UNDEFINED) return std::nullopt;  // omitted optional input
    return Tensor{v.dtype, {v.dims, v.rank}, v.data};
  }
  // An input the op requires. A node that omits it (an empty name in its
  // inputs, or too few inputs) fails its run with INVALID_ARGUMENT naming
  // the input (InvalidNode, through guard()) instead of reading an absent
  // tensor (a fuzzed Resize with no X read a rank from nowhere).
  Tensor in(size_t k) const {
    std::optional<Tensor> t = input(k);
    if (!t)
      throw InvalidNode("input " + std::to_string(k) + " is required but " +
                        (k < input_count() ? std::string("omitted (an empty name)")
                                           : "the node has only " + std::to_string(input_count())));
    return *t;
  }
  // Asks the host for output k of type `dtype` with shape `dims`.
  OnyxStatus* output(size_t k, int32_t dtype, std::span<const int64_t> dims, Tensor* out) {
    OnyxTensorView v{sizeof(OnyxTensorView), 0, 0, 0, nullptr, nullptr};
    ONYX_SDK_RETURN_IF_ERROR(host_->ctx_output(ctx_, k, dtype, dims.data(), dims.size(), &v));
    *out = Tensor{v.dtype, {v.dims, v.rank}, v.data};
    return nullptr;
  }
  OnyxStatus* scratch(size_t bytes, void** out) { return host_->ctx_scratch(ctx_, bytes, out); }
  OnyxStream* stream() const { return host_->ctx_stream(ctx_); }
  size_t thread_count() const { return host_->ctx_thread_count(ctx_); }

  // ABI 1.1, safe under a 1.0 host (false / nothing there): whether this run
  // is profiled, and an event of the plugin's own (device time, a compile)
  // in its trace, timed with monotonic_ns().
  bool profiling() const { return has_1_1() && host_->ctx_profiling(ctx_); }
  void profile_event(const char* name, int64_t start_ns, int64_t end_ns) const {
    if (has_1_1()) host_->ctx_profile_event(ctx_, name, start_ns, end_ns);
  }
  static int64_t monotonic_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch()).count();
  }

  // Runs fn(begin, end) over [0, n) on the host's pool; chunks hold at least
  // `grain` items. fn must not throw. On the pool's threads this host is the
  // calling host while fn runs.
  template <typename Fn>
  void parallel_for(size_t n, size_t grain, Fn&& fn) {
    if (n == 0) return;
    if (n <= grain || thread_count() <= 1) {
      fn(size_t(0), n);
      return;
    }
    struct Job {
      const OnyxHostApi* host;
      std::remove_reference_t<Fn>* fn;
    } job{host_, &fn};
    host_->ctx_parallel_for(
        ctx_, n, grain,
        [](void* user, size_t b, size_t e) {
          const Job& j = *static_cast<const Job*>(user);
          CallingHostScope scope(j.host);
          (*j.fn)(b, e);
        },
        &job);
  }
  OnyxComputeContext* raw() { return ctx_; }

 private:
  bool has_1_1() const {
    return host_->struct_size >= ONYX_HOST_API_SIZE_1_1 && host_->abi_version >= ONYX_ABI_VERSION(1, 1) &&
           host_->ctx_profiling && host_->ctx_profile_event;
  }

  const OnyxHostApi* host_;
  OnyxComputeContext* ctx_;
};

}  // namespace onyx::sdk
