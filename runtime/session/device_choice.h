// device_choice.h: which device of a provider a session opens. A provider
// request names it with the host's reserved option "device" (never passed
// to device_open): an index ("1") or the device's stable id ("PCI:0000:3b:00.0",
// "EMU:1", "cpu:0"; OnyxDeviceProperties.stable_id, ABI 1.3). Without the
// option the session opens device 0, as before.
#pragma once

#include <string>

#include "core/status.h"
#include "plugin/provider.h"

namespace onyx::runtime {

inline constexpr const char* kDeviceOption = "device";

// The index of the device `selector` names: all digits is an index below
// device_count, anything else a stable id (exact, case-sensitive match).
// INVALID_ARGUMENT for no such device or an id two devices share, with the
// provider's devices listed (describe_devices).
StatusOr<size_t> resolve_device(const Provider& provider, const std::string& selector);

// The provider's devices, one per line: "  1: EMU:1, host emulation, 8.0 GiB free".
std::string describe_devices(const Provider& provider);

}  // namespace onyx::runtime
