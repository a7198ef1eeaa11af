// session_parameters.cpp: TrainingSession's parameter access: counts, the
// flat buffer in both directions, and one parameter at a time.
#include <cstring>

#include "training/training_session.h"

namespace onyx::runtime::training {

std::vector<checkpoint::TensorRecord*> TrainingSession::parameters(bool trainable_only) {
  std::vector<checkpoint::TensorRecord*> list;
  for (auto& p : state_->module.trainable) list.push_back(&p);
  if (!trainable_only)
    for (auto& p : state_->module.frozen) list.push_back(&p);
  return list;
}

std::vector<const checkpoint::TensorRecord*> TrainingSession::parameters(bool trainable_only) const {
  std::vector<const checkpoint::TensorRecord*> list;
  for (const auto& p : state_->module.trainable) list.push_back(&p);
  if (!trainable_only)
    for (const auto& p : state_->module.frozen) list.push_back(&p);
  return list;
}

size_t TrainingSession::parameter_count(bool trainable_only) const { return parameters(trainable_only).size(); }

size_t TrainingSession::parameters_elements(bool trainable_only) const {
  size_t n = 0;
  for (const auto* p : parameters(trainable_only)) n += size_t(element_count(p->shape));
  return n;
}

size_t TrainingSession::parameters_bytes(bool trainable_only) const {
  size_t n = 0;
  for (const auto* p : parameters(trainable_only)) n += p->bytes();
  return n;
}

Status TrainingSession::copy_parameters_to_buffer(void* buffer, size_t bytes, bool trainable_only) const {
  ONYX_RETURN_IF_ERROR(check_ready("copy_parameters_to_buffer"));
  ONYX_RETURN_IF_ERROR(sync_state().with_context("copy_parameters_to_buffer"));
  size_t need = parameters_bytes(trainable_only);
  if (bytes != need)
    return invalid_argument("copy_parameters_to_buffer: buffer is " + std::to_string(bytes) +
                            " bytes, the parameters take " + std::to_string(need));
  auto* out = static_cast<unsigned char*>(buffer);
  for (const auto* p : parameters(trainable_only)) {
    std::memcpy(out, p->data.data(), p->bytes());
    out += p->bytes();
  }
  return Status();
}

Status TrainingSession::copy_buffer_to_parameters(const void* buffer, size_t bytes, bool trainable_only) {
  size_t need = parameters_bytes(trainable_only);
  if (bytes != need)
    return invalid_argument("copy_buffer_to_parameters: buffer is " + std::to_string(bytes) +
                            " bytes, the parameters take " + std::to_string(need));
  ONYX_RETURN_IF_ERROR(sync_state().with_context("copy_buffer_to_parameters"));
  const auto* in = static_cast<const unsigned char*>(buffer);
  for (auto* p : parameters(trainable_only)) {
    // A fresh tensor: whoever still holds the old value keeps it unchanged.
    Tensor t = Tensor::allocate(p->dtype, p->shape);
    std::memcpy(t.data(), in, p->bytes());
    in += p->bytes();
    p->data = std::move(t);
    p->checksum.reset();
  }
  return Status();
}

StatusOr<Tensor> TrainingSession::get_parameter(const std::string& name) const {
  ONYX_RETURN_IF_ERROR(sync_state().with_context("get_parameter"));
  const checkpoint::TensorRecord* p = state_->find_parameter(name);
  if (!p) return not_found("get_parameter: no parameter named '" + name + "'");
  if (!p->has_data()) return failed_precondition("get_parameter: '" + name + "' has no data (nominal checkpoint)");
  return p->data.clone();
}

Status TrainingSession::update_parameter(const std::string& name, const Tensor& value) {
  ONYX_RETURN_IF_ERROR(sync_state().with_context("update_parameter"));
  checkpoint::TensorRecord* p = state_->find_parameter(name);
  if (!p) return not_found("update_parameter: no parameter named '" + name + "'");
  if (value.dtype() != p->dtype || value.shape() != p->shape)
    return invalid_argument("update_parameter: '" + name + "' is " + dtype_name(p->dtype) + " " +
                            shape_string(p->shape) + ", the new value is " + dtype_name(value.dtype()) + " " +
                            shape_string(value.shape()));
  p->data = value.clone();
  p->checksum.reset();
  return Status();
}

Status TrainingSession::load_parameters_from(const checkpoint::Checkpoint& source) {
  // Check everything before changing anything.
  for (auto* p : parameters(false)) {
    const checkpoint::TensorRecord* from = source.find_parameter(p->name);
    if (!from) return not_found("load_parameters_from: the source checkpoint lacks parameter '" + p->name + "'");
    if (from->dtype != p->dtype || from->shape != p->shape)
      return invalid_argument("shape mismatch for parameter '" + p->name + "': the source checkpoint has " +
                              dtype_name(from->dtype) + " " + shape_string(from->shape) + ", the session " +
                              dtype_name(p->dtype) + " " + shape_string(p->shape));
    if (!from->has_data())
      return failed_precondition("load_parameters_from: parameter '" + p->name + "' has no data in the source");
  }
  ONYX_RETURN_IF_ERROR(sync_state().with_context("load_parameters_from"));
  for (auto* p : parameters(false)) {
    p->data = source.find_parameter(p->name)->data.clone();
    p->checksum.reset();
  }
  return Status();
}

}  // namespace onyx::runtime::training
