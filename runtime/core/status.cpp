#include "core/status.h"

namespace onyx::runtime {

const char* status_code_name(OnyxStatusCode code) {
  switch (code) {
    case ONYX_STATUS_OK: return "OK";
    case ONYX_STATUS_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case ONYX_STATUS_NOT_FOUND: return "NOT_FOUND";
    case ONYX_STATUS_UNIMPLEMENTED: return "UNIMPLEMENTED";
    case ONYX_STATUS_UNAVAILABLE: return "UNAVAILABLE";
    case ONYX_STATUS_OUT_OF_MEMORY: return "OUT_OF_MEMORY";
    case ONYX_STATUS_INCOMPATIBLE: return "INCOMPATIBLE";
    case ONYX_STATUS_FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case ONYX_STATUS_DATA_LOSS: return "DATA_LOSS";
    case ONYX_STATUS_INTERNAL: return "INTERNAL";
  }
  return "UNKNOWN";
}

std::string Status::to_string() const {
  return ok() ? "OK" : std::string(status_code_name(code_)) + ": " + message_;
}

Status Status::with_context(const std::string& context) const {
  return ok() ? *this : Status(code_, context + ": " + message_);
}

}  // namespace onyx::runtime
