// sdk/status.hpp: statuses inside a plugin. One error model for everything
// that runs inside an ABI call and can fail: an OnyxStatus* created by the
// host (nullptr = success), made with make_status(). Factories that return a
// value return StatusOr<T> (the value, or the status saying why not).
// Predicates that decide whether a node is claimed return a *decline reason*
// instead (std::string, "" = accepted): a reason is shown to users, not an
// error.
#pragma once

#include <onyx_provider.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <type_traits>
#include <utility>

namespace onyx::sdk {

// The host's table, kept by value from plugin creation (see
// HostMemoryProvider or call set_host yourself). By value, because one
// process may load the plugin from several environments, each handing over
// its own table object and destroying it with its environment, while the
// functions in them are the same: a stored pointer would dangle.
// Limitation: one host implementation per process (two different hosts
// loading the same plugin at once would share the last table given).
inline OnyxHostApi& host_storage() {
  static OnyxHostApi host{};
  return host;
}
inline void set_host(const OnyxHostApi* host) {
  OnyxHostApi copy{};
  std::memcpy(&copy, host, std::min(host->struct_size, sizeof copy));
  copy.struct_size = std::min(host->struct_size, sizeof copy);
  // Rewrite only when it changes: kernels of another environment may be
  // reading it right now.
  if (std::memcmp(&copy, &host_storage(), sizeof copy) != 0) host_storage() = copy;
}
inline const OnyxHostApi& host() { return host_storage(); }

// Creates a host status with a printf-style message. Returns nullptr for OK.
[[gnu::format(printf, 2, 3)]] inline OnyxStatus* make_status(OnyxStatusCode code, const char* fmt,
                                                              ...) {
  char buf[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  return host().status_create(code, buf);
}

#define ONYX_SDK_RETURN_IF_ERROR(expr)     \
  do {                                     \
    OnyxStatus* onyx_sdk_st_ = (expr);     \
    if (onyx_sdk_st_) return onyx_sdk_st_; \
  } while (0)

// Runs `fn` and turns any C++ exception into a status: nothing may escape
// through the C ABI.
template <typename Fn>
OnyxStatus* guard(Fn&& fn) noexcept {
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    return make_status(ONYX_STATUS_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return make_status(ONYX_STATUS_INTERNAL, "%s", e.what());
  } catch (...) {
    return make_status(ONYX_STATUS_INTERNAL, "unknown C++ exception in plugin");
  }
}

// A value of type T, or the status that says why there is none. Owns the
// status until release_status() hands it on (a status that is never handed
// on is released with the StatusOr). Move-only. Use it inside ABI calls
// only, like make_status.
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
    if (status_) host().status_release(std::exchange(status_, nullptr));
  }
  T value_{};
  OnyxStatus* status_ = nullptr;
};

}  // namespace onyx::sdk
