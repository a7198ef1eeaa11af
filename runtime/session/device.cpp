#include "session/device.h"

#include <algorithm>

#include "core/abi_status.h"

namespace onyx::runtime {

Device::~Device() {
  if (handle) provider->api().device_close(handle);
}

Status Device::allocate(size_t bytes, void** out) const {
  size_t alignment = std::max<size_t>(64, properties.memory_alignment);
  return take_status(provider->api().memory_alloc(handle, ONYX_MEMORY_DEVICE, bytes, alignment, out));
}

void Device::free(void* ptr) const {
  if (ptr) provider->api().memory_free(handle, ONYX_MEMORY_DEVICE, ptr);
}

Status Device::copy(int32_t direction, void* dst, const void* src, size_t bytes) const {
  return take_status(provider->api().memory_copy(handle, nullptr, direction, dst, src, bytes));
}

}  // namespace onyx::runtime
