// status.h: the core's one error type. A Status is OK or carries a code (the
// ABI's OnyxStatusCode, so that statuses cross the plugin boundary unchanged)
// and a message that names the problem and the place.
#pragma once

#include <onyx_provider.h>

#include <string>
#include <utility>
#include <variant>

namespace onyx::runtime {

class Status {
 public:
  Status() = default;  // OK
  Status(OnyxStatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == ONYX_STATUS_OK; }
  OnyxStatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: message"
  std::string to_string() const;
  // Returns a copy whose message is prefixed with `context: `.
  Status with_context(const std::string& context) const;

 private:
  OnyxStatusCode code_ = ONYX_STATUS_OK;
  std::string message_;
};

const char* status_code_name(OnyxStatusCode code);

inline Status invalid_argument(std::string m) { return {ONYX_STATUS_INVALID_ARGUMENT, std::move(m)}; }
inline Status not_found(std::string m) { return {ONYX_STATUS_NOT_FOUND, std::move(m)}; }
inline Status unimplemented(std::string m) { return {ONYX_STATUS_UNIMPLEMENTED, std::move(m)}; }
inline Status unavailable(std::string m) { return {ONYX_STATUS_UNAVAILABLE, std::move(m)}; }
inline Status incompatible(std::string m) { return {ONYX_STATUS_INCOMPATIBLE, std::move(m)}; }
inline Status failed_precondition(std::string m) {
  return {ONYX_STATUS_FAILED_PRECONDITION, std::move(m)};
}
inline Status data_loss(std::string m) { return {ONYX_STATUS_DATA_LOSS, std::move(m)}; }
inline Status internal_error(std::string m) { return {ONYX_STATUS_INTERNAL, std::move(m)}; }

// A value or the Status explaining why there is none.
template <typename T>
class StatusOr {
 public:
  StatusOr(T value) : v_(std::move(value)) {}          // NOLINT: implicit by design
  StatusOr(Status status) : v_(std::move(status)) {}   // NOLINT
  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status ok_status;
    return ok() ? ok_status : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  T& operator*() & { return value(); }

 private:
  std::variant<T, Status> v_;
};

#define ONYX_CONCAT_INNER(a, b) a##b
#define ONYX_CONCAT(a, b) ONYX_CONCAT_INNER(a, b)

#define ONYX_RETURN_IF_ERROR(expr)                 \
  do {                                             \
    ::onyx::runtime::Status onyx_status_ = (expr); \
    if (!onyx_status_.ok()) return onyx_status_;   \
  } while (0)

// ONYX_ASSIGN_OR_RETURN(auto x, expr): unwraps a StatusOr or returns its error.
#define ONYX_ASSIGN_OR_RETURN(decl, expr)                                    \
  auto ONYX_CONCAT(onyx_so_, __LINE__) = (expr);                             \
  if (!ONYX_CONCAT(onyx_so_, __LINE__).ok())                                 \
    return ONYX_CONCAT(onyx_so_, __LINE__).status();                         \
  decl = std::move(ONYX_CONCAT(onyx_so_, __LINE__)).value()

}  // namespace onyx::runtime
