// sdk/status.hpp: statuses inside a plugin, and the host that creates them.
//
// One error model for everything that runs inside an ABI call and can fail:
// an OnyxStatus* created by the host (nullptr = success), made with
// make_status(). Factories that return a value return StatusOr<T> (the value,
// or the status saying why not). Predicates that decide whether a node is
// claimed return a *decline reason* instead (std::string, "" = accepted): a
// reason is shown to users in the partition report; it is not an error.
//
// The calling host. Statuses are created by the host table the plugin was
// created with, and that table lives in the plugin object (ProviderTable
// keeps it), not in a process global: two hosts with different tables may
// drive one plugin library at the same time. Helpers that take no host
// argument (make_status, log, guard, StatusOr) use the *calling host*: a
// thread-local pointer that ProviderTable's trampolines install for the
// duration of every ABI call (CallingHostScope) and that ComputeContext
// installs on the pool threads that run a parallel_for body. So they work
// anywhere inside an ABI call, on the thread that serves it, and are
// race-free: each thread sees the host whose call it is serving. Outside any
// ABI call there is no calling host; make_status then aborts with a message
// (a status made there could not be returned to anyone).
#pragma once

#include <onyx_provider.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace onyx::sdk {

namespace detail {
inline thread_local const OnyxHostApi* calling_host = nullptr;
}  // namespace detail

// Makes `host` the calling host of this thread until the scope ends, then
// restores the previous one (scopes nest).
class CallingHostScope {
 public:
  explicit CallingHostScope(const OnyxHostApi* host) noexcept : previous_(detail::calling_host) {
    detail::calling_host = host;
  }
  ~CallingHostScope() { detail::calling_host = previous_; }
  CallingHostScope(const CallingHostScope&) = delete;
  CallingHostScope& operator=(const CallingHostScope&) = delete;

 private:
  const OnyxHostApi* previous_;
};

// The host whose ABI call this thread is serving, or nullptr outside one.
inline const OnyxHostApi* calling_host_or_null() noexcept { return detail::calling_host; }

// The host whose ABI call this thread is serving. Aborts outside an ABI call.
inline const OnyxHostApi& calling_host() noexcept {
  if (!detail::calling_host) {
    std::fputs("onyx plugin SDK: a host function was used outside any ABI call (no calling host)\n",
               stderr);
    std::abort();
  }
  return *detail::calling_host;
}

// A plugin's own copy of the host's table. By value: a table from an older
// host (smaller struct_size) is padded with NULL functions, so checking a
// function pointer is enough to know whether the host has it.
inline OnyxHostApi copy_host_table(const OnyxHostApi& host) {
  OnyxHostApi copy{};
  size_t size = std::min(host.struct_size, sizeof copy);
  std::memcpy(&copy, &host, size);
  copy.struct_size = size;
  return copy;
}

// Creates a status with a printf-style message through the calling host.
// Returns nullptr for ONYX_STATUS_OK.
[[gnu::format(printf, 2, 3)]] inline OnyxStatus* make_status(OnyxStatusCode code, const char* fmt, ...) {
  char buf[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  return calling_host().status_create(code, buf);
}

// Writes a printf-style line through the calling host's logger.
[[gnu::format(printf, 2, 3)]] inline void host_log(OnyxLogLevel level, const char* fmt, ...) {
  char buf[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  const OnyxHostApi& host = calling_host();
  if (host.log) host.log(level, buf);
}

#define ONYX_SDK_RETURN_IF_ERROR(expr)     \
  do {                                     \
    OnyxStatus* onyx_sdk_st_ = (expr);     \
    if (onyx_sdk_st_) return onyx_sdk_st_; \
  } while (0)

// Thrown where a node breaks what the plugin's code assumes of it (e.g. it
// has fewer inputs than a kernel reads): guard() makes it INVALID_ARGUMENT.
class InvalidNode : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Runs `fn` and turns any C++ exception into a status: nothing may escape
// through the C ABI.
template <typename Fn>
OnyxStatus* guard(Fn&& fn) noexcept {
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    return make_status(ONYX_STATUS_OUT_OF_MEMORY, "out of memory");
  } catch (const InvalidNode& e) {
    return make_status(ONYX_STATUS_INVALID_ARGUMENT, "%s", e.what());
  } catch (const std::exception& e) {
    return make_status(ONYX_STATUS_INTERNAL, "%s", e.what());
  } catch (...) {
    return make_status(ONYX_STATUS_INTERNAL, "unknown C++ exception in plugin");
  }
}

// A value of type T, or the status that says why there is none. Owns the
// status until release_status() hands it on; one never handed on is
// released (through the calling host) with the StatusOr. Move-only.
template <typename T>
class StatusOr {
 public:
  // A value, or anything that converts to one (std::unique_ptr<Derived> for
  // std::unique_ptr<Base>).
  template <typename U>
    requires(std::is_convertible_v<U &&, T> && !std::is_same_v<std::decay_t<U>, OnyxStatus*>)
  StatusOr(U&& value) : value_(std::forward<U>(value)) {}  // NOLINT: implicit by design
  // The failure; takes ownership of `status` (from make_status).
  StatusOr(OnyxStatus* status) : status_(status) {}  // NOLINT: implicit by design
  StatusOr(StatusOr&& other) noexcept
      : value_(std::move(other.value_)), status_(std::exchange(other.status_, nullptr)) {}
  StatusOr& operator=(StatusOr&& other) noexcept {
    if (this != &other) {
      drop();
      value_ = std::move(other.value_);
      status_ = std::exchange(other.status_, nullptr);
    }
    return *this;
  }
  StatusOr(const StatusOr&) = delete;
  StatusOr& operator=(const StatusOr&) = delete;
  ~StatusOr() { drop(); }

  bool ok() const { return status_ == nullptr; }
  T& value() { return value_; }
  const T& value() const { return value_; }
  // Hands the status to the caller (nullptr when ok()).
  OnyxStatus* release_status() { return std::exchange(status_, nullptr); }

 private:
  void drop() {
    if (!status_) return;
    if (const OnyxHostApi* host = calling_host_or_null()) host->status_release(status_);
    status_ = nullptr;
  }
  T value_{};
  OnyxStatus* status_ = nullptr;
};

}  // namespace onyx::sdk
