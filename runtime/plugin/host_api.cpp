#include "plugin/host_api.h"

#include <cstdio>

#include "session/compute_context.h"

namespace onyx::runtime {
namespace {

OnyxStatus* status_create(int32_t code, const char* message) {
  if (code == ONYX_STATUS_OK) return nullptr;
  try {
    return new OnyxStatus{Status(OnyxStatusCode(code), message ? message : "")};
  } catch (...) {
    return nullptr;  // out of memory while reporting: nothing better to do
  }
}
void status_release(OnyxStatus* s) { delete s; }
int32_t status_code(const OnyxStatus* s) { return s ? s->status.code() : ONYX_STATUS_OK; }
const char* status_message(const OnyxStatus* s) { return s ? s->status.message().c_str() : ""; }

void log_line(int32_t level, const char* message) {
  static const char* names[] = {"debug", "info", "warning", "error"};
  if (level < ONYX_LOG_INFO) return;
  std::fprintf(stderr, "onyx [%s] %s\n", names[level < 0 || level > 3 ? 3 : level],
               message ? message : "");
}

}  // namespace

const OnyxHostApi* host_api() {
  static const OnyxHostApi api = [] {
    OnyxHostApi a{};
    a.struct_size = sizeof(OnyxHostApi);
    a.abi_version = ONYX_ABI_VERSION(ONYX_ABI_VERSION_MAJOR, ONYX_ABI_VERSION_MINOR);
    a.status_create = status_create;
    a.status_release = status_release;
    a.status_code = status_code;
    a.status_message = status_message;
    a.log = log_line;
    fill_compute_context_functions(a);
    return a;
  }();
  return &api;
}

Status take_status(OnyxStatus* status) {
  if (!status) return Status();
  Status s = std::move(status->status);
  delete status;
  return s;
}

OnyxStatus* make_abi_status(const Status& status) {
  return status.ok() ? nullptr : new OnyxStatus{status};
}

}  // namespace onyx::runtime
