#include "core/abi_status.h"

#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>

namespace onyx::runtime {
namespace {

// Every OnyxStatus the host made and nobody has released yet. A plugin may
// hand back any pointer as a status (0x10 was seen); only these are read.
class LiveStatuses {
 public:
  OnyxStatus* add(OnyxStatus* s) {
    std::lock_guard lock(mutex_);
    live_.insert(s);
    return s;
  }
  bool remove(const OnyxStatus* s) {
    std::lock_guard lock(mutex_);
    return live_.erase(s) == 1;
  }
  bool contains(const OnyxStatus* s) {
    std::lock_guard lock(mutex_);
    return live_.count(s) == 1;
  }

 private:
  std::mutex mutex_;
  std::unordered_set<const OnyxStatus*> live_;
};

// Never destroyed: plugins and applications may release statuses during exit.
LiveStatuses& live_statuses() {
  static LiveStatuses* live = new LiveStatuses;
  return *live;
}

OnyxStatus* new_status(Status status) {
  auto owned = std::make_unique<OnyxStatus>(OnyxStatus{std::move(status)});
  live_statuses().add(owned.get());
  return owned.release();
}

OnyxStatus* status_create(int32_t code, const char* message) {
  if (code == ONYX_STATUS_OK) return nullptr;
  try {
    // A code the ABI does not define is kept in the message, never cast:
    // the host switches over OnyxStatusCode, and a plugin may pass any int.
    if (code < ONYX_STATUS_OK || code > ONYX_STATUS_INTERNAL)
      return new_status(internal_error("status code " + std::to_string(code) + " (not an ABI status code): " +
                                       (message ? message : "")));
    return new_status(Status(OnyxStatusCode(code), message ? message : ""));
  } catch (...) {
    return nullptr;  // out of memory while reporting: nothing better to do
  }
}
void status_release(OnyxStatus* s) { release_abi_status(s); }
int32_t status_code(const OnyxStatus* s) {
  if (!s) return ONYX_STATUS_OK;
  return live_statuses().contains(s) ? s->status.code() : ONYX_STATUS_INTERNAL;
}
const char* status_message(const OnyxStatus* s) {
  if (!s) return "";
  return live_statuses().contains(s) ? s->status.message().c_str() : "not a status the host created";
}

std::string pointer_text(const void* p) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", p);
  return text;
}

}  // namespace

Status take_status(OnyxStatus* status) {
  if (!status) return Status();
  if (!live_statuses().remove(status))
    return internal_error("a plugin returned " + pointer_text(status) +
                          " as a status, which the host did not create (a plugin bug; statuses come from "
                          "the host's status_create)");
  Status s = std::move(status->status);
  delete status;
  return s;
}

OnyxStatus* make_abi_status(const Status& status) { return status.ok() ? nullptr : new_status(status); }

void release_abi_status(OnyxStatus* status) {
  if (status && live_statuses().remove(status)) delete status;
}

void fill_status_functions(OnyxHostApi& api) {
  api.status_create = status_create;
  api.status_release = status_release;
  api.status_code = status_code;
  api.status_message = status_message;
}

}  // namespace onyx::runtime
