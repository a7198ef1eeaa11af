#include "training/device_state.h"

#include <onnx/onnx_pb.h>

#include "session/device_io.h"

namespace onyx::runtime::training {

Status DeviceState::to_device(Tensor& held, const Tensor& host) {
  if (held.empty() || held.dtype() != host.dtype() || held.shape() != host.shape()) {
    ONYX_ASSIGN_OR_RETURN(held, allocate_on_device(device_, host.dtype(), host.shape()));
  }
  return copy_tensor(held, device_.get(), host, nullptr);
}

Status DeviceState::to_host(Tensor& host, const Tensor& held) const {
  // Written in place only when this record is its storage's one user.
  if (host.empty() || host.storage_users() != 1 || host.dtype() != held.dtype() || host.shape() != held.shape())
    host = Tensor::allocate(held.dtype(), held.shape());
  return copy_tensor(host, nullptr, held, device_.get());
}

Status DeviceState::upload(const std::vector<const checkpoint::TensorRecord*>& parameters,
                           const checkpoint::OptimizerGroup* group) {
  if (holds_state_) return Status();
  parameters_.resize(parameters.size());
  for (size_t k = 0; k < parameters.size(); ++k)
    ONYX_RETURN_IF_ERROR(to_device(parameters_[k], parameters[k]->data)
                             .with_context("copying parameter '" + parameters[k]->name + "' to the device"));
  slots_.clear();
  if (group && !group->parameters.empty()) ONYX_RETURN_IF_ERROR(upload_slots(*group));
  holds_state_ = true;
  return Status();
}

Status DeviceState::upload_slots(const checkpoint::OptimizerGroup& group) {
  slots_.resize(group.parameters.size());
  for (size_t k = 0; k < group.parameters.size(); ++k) {
    const auto& tensors = group.parameters[k].tensors;
    slots_[k].resize(tensors.size());
    for (size_t s = 0; s < tensors.size(); ++s)
      ONYX_RETURN_IF_ERROR(to_device(slots_[k][s], tensors[s].data)
                               .with_context("copying optimizer state '" + tensors[s].name + "' of '" +
                                             group.parameters[k].parameter + "' to the device"));
  }
  return Status();
}

Status DeviceState::download(const std::vector<checkpoint::TensorRecord*>& parameters,
                             checkpoint::OptimizerGroup* group, std::vector<Tensor>& gradients) {
  if (holds_state_) {
    for (size_t k = 0; k < parameters.size() && k < parameters_.size(); ++k) {
      ONYX_RETURN_IF_ERROR(to_host(parameters[k]->data, parameters_[k])
                               .with_context("copying parameter '" + parameters[k]->name + "' from the device"));
      parameters[k]->checksum.reset();
    }
    if (group && !slots_.empty()) {
      for (size_t k = 0; k < group->parameters.size() && k < slots_.size(); ++k) {
        auto& tensors = group->parameters[k].tensors;
        for (size_t s = 0; s < tensors.size() && s < slots_[k].size(); ++s) {
          ONYX_RETURN_IF_ERROR(to_host(tensors[s].data, slots_[k][s]).with_context(
              "copying optimizer state '" + tensors[s].name + "' of '" + group->parameters[k].parameter +
              "' from the device"));
          tensors[s].checksum.reset();
        }
      }
    }
    holds_state_ = false;
  }
  if (holds_gradients_) {
    gradients.resize(gradients_.size());
    for (size_t k = 0; k < gradients_.size(); ++k)
      ONYX_RETURN_IF_ERROR(to_host(gradients[k], gradients_[k]).with_context("copying a gradient from the device"));
    holds_gradients_ = false;
  }
  return Status();
}

std::string gradient_arithmetic_model(const std::vector<checkpoint::TensorRecord>& trainable, bool accumulate) {
  namespace onnx = ONNX_NAMESPACE;
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("onyx");
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  onnx::GraphProto& g = *model.mutable_graph();
  g.set_name(accumulate ? "gradient_sum" : "gradient_scale");
  auto declare = [](onnx::ValueInfoProto* info, const std::string& name, const Shape& shape) {
    info->set_name(name);
    auto* tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(onnx::TensorProto::FLOAT);
    auto* dims = tensor->mutable_shape();
    for (int64_t d : shape) dims->add_dim()->set_dim_value(d);
  };
  auto node = [&g](const char* op, std::vector<std::string> in, const std::string& out) {
    onnx::NodeProto* n = g.add_node();
    n->set_op_type(op);
    n->set_name(out);
    for (auto& name : in) n->add_input(name);
    n->add_output(out);
  };
  declare(g.add_input(), "w", {});
  for (size_t k = 0; k < trainable.size(); ++k) {
    const std::string i = std::to_string(k);
    declare(g.add_input(), "g" + i, trainable[k].shape);
    declare(g.add_output(), "out" + i, trainable[k].shape);
    if (!accumulate) {
      node("Mul", {"g" + i, "w"}, "out" + i);
      continue;
    }
    declare(g.add_input(), "sum" + i, trainable[k].shape);
    node("Mul", {"g" + i, "w"}, "weighted" + i);
    node("Add", {"sum" + i, "weighted" + i}, "out" + i);
  }
  return model.SerializeAsString();
}

}  // namespace onyx::runtime::training
