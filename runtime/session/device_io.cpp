#include "session/device_io.h"

#include <cstring>

namespace onyx::runtime {
namespace {

struct DeviceAllocation {
  std::shared_ptr<Device> device;
  void* data = nullptr;
  ~DeviceAllocation() { device->free(data); }
};

}  // namespace

StatusOr<Tensor> allocate_on_device(const std::shared_ptr<Device>& device, int32_t dtype, Shape shape) {
  if (dtype_size(dtype) == 0 && storage_bytes(dtype, 2) == 0)
    return invalid_argument(std::string("a device tensor cannot hold ") + dtype_name(dtype) + " elements");
  const std::optional<size_t> bytes = checked_storage_bytes(dtype, shape);
  if (!bytes) return invalid_argument("a device tensor of shape " + shape_string(shape) + " is too large");
  auto owner = std::make_shared<DeviceAllocation>();
  owner->device = device;
  if (*bytes) ONYX_RETURN_IF_ERROR(device->allocate(*bytes, &owner->data));
  void* data = owner->data;
  return Tensor::wrap(dtype, std::move(shape), data, std::move(owner));
}

Status copy_tensor(const Tensor& dst, const Device* dst_device, const Tensor& src, const Device* src_device) {
  if (dst.dtype() != src.dtype() || dst.shape() != src.shape())
    return invalid_argument("copy between tensors of different types or shapes: " +
                            std::string(dtype_name(src.dtype())) + " " + shape_string(src.shape()) + " into " +
                            dtype_name(dst.dtype()) + " " + shape_string(dst.shape()));
  const size_t bytes = src.bytes();
  if (!bytes) return Status();
  const bool dst_host = !dst_device || dst_device->host_readable();
  const bool src_host = !src_device || src_device->host_readable();
  if (dst_host && src_host) {
    std::memmove(dst.data(), src.data(), bytes);
    return Status();
  }
  if (dst_device && src_device && dst_device != src_device && !dst_host && !src_host)
    return unimplemented("copy between two devices: copy through a host tensor");
  if (src_host) return dst_device->copy(ONYX_COPY_HOST_TO_DEVICE, dst.data(), src.data(), bytes);
  if (dst_host) return src_device->copy(ONYX_COPY_DEVICE_TO_HOST, dst.data(), src.data(), bytes);
  return dst_device->copy(ONYX_COPY_DEVICE_TO_DEVICE, dst.data(), src.data(), bytes);
}

}  // namespace onyx::runtime
