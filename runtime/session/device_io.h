// device_io.h: values that stay in a device's memory between runs (the C
// API's device tensors and I/O binding, Session::run_bound).
//
// A device tensor is a core Tensor whose data pointer is device memory (not
// host-readable unless the device says so), owned by a DeviceAllocation that
// frees it and keeps the Device open. The executor reads such a run input
// only through the copy steps that copy insertion placed for the device that
// holds it (which then copy within the device), and writes a run output bound
// to the device it is computed on with a copy within the device instead of
// the copy to the host: a loop of runs with device-bound inputs and outputs
// moves no bytes through the host.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "core/tensor.h"
#include "session/device.h"

namespace onyx::runtime {

// A run input or output and where its bytes are: `device` indexes the
// session's devices, -1 is host memory.
struct BoundTensor {
  Tensor tensor;
  int device = -1;
};

// What one run binds to devices (RunState::binding).
struct DeviceBinding {
  std::vector<int> input_device;          // per graph input: -1 host, or the device holding it
  std::map<int, int> output_device;       // returned copy value -> device the output stays on
  std::map<int, Tensor> output_target;    // returned copy value -> the caller's device tensor to fill
  // Value -> that tensor, for a value whose only reader is that output's
  // copy: its kernel writes into the caller's tensor, and the copy is none.
  std::map<int, Tensor> direct_output;
};

// `bytes` of device memory as a Tensor of `dtype` and `shape` (contents
// unspecified). The memory is freed, and the device may close, when the last
// copy of the Tensor is gone. Thread-safe.
StatusOr<Tensor> allocate_on_device(const std::shared_ptr<Device>& device, int32_t dtype, Shape shape);

// Synchronous copy of a whole tensor between host memory (device nullptr)
// and a device, or within one device; dtypes and shapes must be equal.
Status copy_tensor(const Tensor& dst, const Device* dst_device, const Tensor& src, const Device* src_device);

}  // namespace onyx::runtime
