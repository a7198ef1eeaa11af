// abi_status.h: the host's OnyxStatus (the ABI's opaque status object) and the
// conversions between it and the core's Status. Every layer that calls
// across the ABI (plugin loading, sessions, the C API) uses these, so they
// live at the bottom, beside Status.
#pragma once

#include <onyx_provider.h>

#include "core/status.h"

// The host's status object. Plugins and applications only see the opaque
// pointer; the host creates every one (status_create or make_abi_status).
struct OnyxStatus {
  onyx::runtime::Status status;
};

namespace onyx::runtime {

// Takes ownership of an ABI status (NULL = OK) and returns it as a Status.
// A pointer the host did not create (a plugin's lie) is never read: it gives
// an internal error saying so, which the caller names the plugin in.
Status take_status(OnyxStatus* status);
// Makes an ABI status from a Status (nullptr for OK); ownership to the caller.
OnyxStatus* make_abi_status(const Status& status);
// Frees a status the host made; ignores NULL and pointers it did not make.
void release_abi_status(OnyxStatus* status);

// Fills the host table's status functions: status_create, status_release,
// status_code and status_message.
void fill_status_functions(OnyxHostApi& api);

}  // namespace onyx::runtime
