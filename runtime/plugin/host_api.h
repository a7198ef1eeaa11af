// host_api.h: the OnyxHostApi table the core gives to every plugin, and the
// conversion between the ABI's OnyxStatus* and the core's Status.
#pragma once

#include <onyx_provider.h>

#include "core/status.h"

// The host's status object. Plugins only see the opaque pointer.
struct OnyxStatus {
  onyx::runtime::Status status;
};

namespace onyx::runtime {

// The table passed to plugins; static, lives for the whole process.
const OnyxHostApi* host_api();

// Takes ownership of an ABI status (NULL = OK) and returns it as a Status.
Status take_status(OnyxStatus* status);
// Makes an ABI status from a Status (nullptr for OK); ownership to the caller.
OnyxStatus* make_abi_status(const Status& status);

}  // namespace onyx::runtime
