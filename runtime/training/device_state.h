// device_state.h: the training state a TrainingSession keeps in the memory of
// a device the host cannot read (a GPU) between its steps: every parameter,
// the gradients and the optimizer's slots. A step on such a device then
// copies its data in and its loss out, not every weight, gradient and slot
// both ways (the test MLP on an H200: 48 of the optimizer step's copies, 2.6
// of its 2.75 ms, were that traffic).
//
// While the device holds the state (holds_state()), the checkpoint's host
// tensors are stale; download() brings them up to date, after which the
// host holds the state again and the next step uploads it. The
// TrainingSession downloads before anything outside its steps reads or
// writes the checkpoint (training_session.h says where).
//
// Thread-safety: not synchronized; its TrainingSession serializes the calls.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "onyx/checkpoint.h"
#include "session/device.h"

namespace onyx::runtime::training {

class DeviceState {
 public:
  explicit DeviceState(std::shared_ptr<Device> device) : device_(std::move(device)) {}

  const std::shared_ptr<Device>& device() const { return device_; }
  // The device's parameters and slots are the current values.
  bool holds_state() const { return holds_state_; }
  // The device's gradients are the current ones (the last train_step's).
  bool holds_gradients() const { return holds_gradients_; }
  void set_holds_gradients() { holds_gradients_ = true; }

  // Copies the parameters (in checkpoint order: trainable, then frozen) and,
  // when `group` has any, the optimizer slots from the host; a no-op while
  // the device holds the state.
  Status upload(const std::vector<const checkpoint::TensorRecord*>& parameters,
                const checkpoint::OptimizerGroup* group);
  // Copies the slots alone (the optimizer's first step just made them).
  Status upload_slots(const checkpoint::OptimizerGroup& group);
  // Copies parameters, slots and, when held, the gradients back into the
  // checkpoint (and `gradients`, per trainable parameter); the host then
  // holds the state. A host tensor no one else shares is written in place;
  // a shared one (a snapshot being saved) is replaced, never changed.
  Status download(const std::vector<checkpoint::TensorRecord*>& parameters, checkpoint::OptimizerGroup* group,
                  std::vector<Tensor>& gradients);

  // The device tensors: parameters in checkpoint order, gradients and slots
  // per trainable parameter (gradients empty until the first step makes them;
  // slots empty while the checkpoint has no optimizer state).
  std::vector<Tensor>& parameters() { return parameters_; }
  std::vector<Tensor>& gradients() { return gradients_; }
  std::vector<std::vector<Tensor>>& slots() { return slots_; }
  // An accumulating step's own gradients, before they join the sum.
  std::vector<Tensor>& fresh_gradients() { return fresh_; }

 private:
  // `held` refilled from `host` (reallocated when its dtype or shape differ).
  Status to_device(Tensor& held, const Tensor& host);
  // `host` refilled from `held`.
  Status to_host(Tensor& host, const Tensor& held) const;

  std::shared_ptr<Device> device_;
  std::vector<Tensor> parameters_, gradients_, fresh_;
  std::vector<std::vector<Tensor>> slots_;
  bool holds_state_ = false, holds_gradients_ = false;
};

// The gradient arithmetic a device-held step needs, as a model that runs on
// the device like any other (float32 gradients; names g<k>, sum<k>, out<k>
// per trainable parameter, and the scalar w): out<k> = sum<k> + w * g<k>
// when `accumulate`, else out<k> = w * g<k> (step weights, averaging).
std::string gradient_arithmetic_model(const std::vector<checkpoint::TensorRecord>& trainable, bool accumulate);

}  // namespace onyx::runtime::training
