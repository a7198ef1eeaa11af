// device.h: an opened device of a provider, owned by a session, and the
// host's three uses of it: allocate, free, copy.
#pragma once

#include <onyx_provider.h>

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "plugin/provider.h"

namespace onyx::runtime {

struct Device {
  std::shared_ptr<Provider> provider;  // keeps the plugin's code loaded
  OnyxDevice* handle = nullptr;
  OnyxDeviceProperties properties{};
  size_t index = 0;   // the provider's device index (device_open's)
  // The provider's name ("cpu"); "name:index" ("gpuemu:1") for a device other
  // than device 0 or a provider the session opened twice.
  std::string label;
  // The key=value options device_open was given (part of a compiled-cache key).
  std::vector<std::pair<std::string, std::string>> open_options;
  ~Device();

  // Whether the host may read this device's memory directly.
  bool host_readable() const { return properties.host_can_read_device_memory; }
  // Device memory aligned to at least 64 bytes (and the device's alignment).
  Status allocate(size_t bytes, void** out) const;
  void free(void* ptr) const;  // accepts nullptr
  // A copy; `direction` is an OnyxCopyDirection. Without a stream it is
  // complete on return; with one it is ordered on the stream.
  Status copy(int32_t direction, void* dst, const void* src, size_t bytes, OnyxStream* stream = nullptr) const;
};

// Shared: a device tensor the application holds (device_io.h) keeps its
// device open after the session is gone.
using DeviceList = std::vector<std::shared_ptr<Device>>;

// Devices opened once and shared by the sessions given this set
// (SessionOptions::shared_devices): sessions that take turns, such as a
// training step's, then run on the same devices, and device memory one of
// them writes (device_io.h) is memory of the others' device too. A device is
// shared when the provider, device index and open options are the same.
// Holds the devices open while it lives. Thread-safe.
class SharedDevices {
 public:
  // The open device matching these, or null.
  std::shared_ptr<Device> find(const Provider* provider, size_t index,
                               const std::vector<std::pair<std::string, std::string>>& open_options);
  void add(std::shared_ptr<Device> device);

 private:
  std::mutex mutex_;
  DeviceList devices_;
};

// Host memory (-1) or a device the host can read.
// The host's physical memory: a tensor or arena in host memory larger than
// this cannot be held, whatever the allocator would promise (Pad with pads of
// 2^40 overcommitted gigabytes and hung filling them).
size_t host_memory_bytes();

// How much host memory one run may hold, and how an error says so.
struct HostMemoryLimit {
  size_t bytes = 0;
  bool from_options = false;  // SessionOptions::host_memory_limit, not the machine
  static HostMemoryLimit resolve(size_t requested) {
    const size_t machine = host_memory_bytes();
    return requested > 0 && requested < machine ? HostMemoryLimit{requested, true} : HostMemoryLimit{machine, false};
  }
  // "the session's host memory limit of N bytes" or "this machine's N bytes of memory".
  std::string describe() const {
    return from_options ? "the session's host memory limit of " + std::to_string(bytes) + " bytes"
                        : "this machine's " + std::to_string(bytes) + " bytes of memory";
  }
};

inline bool host_readable(const DeviceList& devices, int device) {
  return device < 0 || devices[size_t(device)]->host_readable();
}

}  // namespace onyx::runtime
