#include "session/device.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>

#include "core/abi_status.h"

namespace onyx::runtime {

size_t host_memory_bytes() {
  static const size_t bytes = [] {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? size_t(pages) * size_t(page) : SIZE_MAX;
  }();
  return bytes;
}

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

Status Device::copy(int32_t direction, void* dst, const void* src, size_t bytes, OnyxStream* stream) const {
  return take_status(provider->api().memory_copy(handle, stream, direction, dst, src, bytes));
}

std::shared_ptr<Device> SharedDevices::find(const Provider* provider, size_t index,
                                            const std::vector<std::pair<std::string, std::string>>& open_options) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& d : devices_)
    if (d->provider.get() == provider && d->index == index && d->open_options == open_options) return d;
  return nullptr;
}

void SharedDevices::add(std::shared_ptr<Device> device) {
  std::lock_guard<std::mutex> lock(mutex_);
  devices_.push_back(std::move(device));
}

}  // namespace onyx::runtime
