#include "core/abi_status.h"

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

}  // namespace

Status take_status(OnyxStatus* status) {
  if (!status) return Status();
  Status s = std::move(status->status);
  delete status;
  return s;
}

OnyxStatus* make_abi_status(const Status& status) {
  return status.ok() ? nullptr : new OnyxStatus{status};
}

void fill_status_functions(OnyxHostApi& api) {
  api.status_create = status_create;
  api.status_release = status_release;
  api.status_code = status_code;
  api.status_message = status_message;
}

}  // namespace onyx::runtime
