// device_c_api.cpp: device tensors, copies and I/O binding of the C API
// (onyx_c_api.h, "device-resident values"); the core side is
// session/device_io.h and Session::run_bound.
#include "api/c_api_internal.h"

namespace {

using onyx::runtime::BoundTensor;
using onyx::runtime::Status;
using onyx::runtime::capi::guarded;
using onyx::runtime::capi::null_arg;

// The session's device `tensor` lives on, as run_bound counts it (-1: host).
onyx::runtime::StatusOr<int> device_in(const OnyxSession* s, const OnyxTensor& tensor, const std::string& what) {
  if (!tensor.device) return -1;
  const int d = s->session->device_index(tensor.device.get());
  if (d < 0)
    return onyx::runtime::invalid_argument(what + " is a tensor on a device of another session ('" +
                                           tensor.device->label + "'): copy it to this session's device first");
  return d;
}

OnyxStatus* find_device(OnyxSession* s, const char* provider, std::shared_ptr<onyx::runtime::Device>* out) {
  for (const auto& d : s->session->devices())
    if (d->label == provider) {
      *out = d;
      return nullptr;
    }
  std::string have;
  for (const auto& d : s->session->devices()) have += (have.empty() ? "" : ", ") + d->label;
  return onyx::runtime::make_abi_status(onyx::runtime::invalid_argument(
      std::string("the session has no device of provider '") + provider + "' (it has: " + have + ")"));
}

}  // namespace

namespace onyx::runtime::capi {

Status run_device_inputs(OnyxSession* s, const std::vector<std::string>& input_names,
                         const std::vector<const OnyxTensor*>& inputs, const std::vector<std::string>& output_names,
                         std::vector<Tensor>* results) {
  std::vector<std::pair<std::string, BoundTensor>> in;
  for (size_t k = 0; k < inputs.size(); ++k) {
    ONYX_ASSIGN_OR_RETURN(int d, device_in(s, *inputs[k], "input '" + input_names[k] + "'"));
    in.emplace_back(input_names[k], BoundTensor{inputs[k]->tensor, d});
  }
  std::vector<std::pair<std::string, BoundTensor>> out;
  for (const std::string& name : output_names) out.emplace_back(name, BoundTensor{});
  ONYX_ASSIGN_OR_RETURN(std::vector<BoundTensor> bound, s->session->run_bound(in, out));
  for (BoundTensor& b : bound) results->push_back(std::move(b.tensor));
  return Status();
}

}  // namespace onyx::runtime::capi

extern "C" {

OnyxStatus* onyx_tensor_create_on_device(OnyxSession* s, const char* provider, int32_t dtype, const int64_t* dims,
                                         size_t rank, OnyxTensor** out) {
  return guarded([&] {
    if (!s || !provider || !out || (rank && !dims)) return null_arg("onyx_tensor_create_on_device", "argument");
    std::shared_ptr<onyx::runtime::Device> device;
    if (OnyxStatus* missing = find_device(s, provider, &device)) return onyx::runtime::take_status(missing);
    for (size_t i = 0; i < rank; ++i)
      if (dims[i] < 0) return onyx::runtime::invalid_argument("onyx_tensor_create_on_device: negative dim");
    ONYX_ASSIGN_OR_RETURN(onyx::runtime::Tensor t, onyx::runtime::allocate_on_device(
                                                       device, dtype, onyx::runtime::Shape(dims, dims + rank)));
    *out = new OnyxTensor{std::move(t), device->host_readable() ? nullptr : device};
    return Status();
  });
}

const char* onyx_tensor_device(const OnyxTensor* tensor) {
  return tensor && tensor->device ? tensor->device->label.c_str() : nullptr;
}

OnyxStatus* onyx_tensor_copy(OnyxTensor* dst, const OnyxTensor* src) {
  return guarded([&] {
    if (!dst || !src) return null_arg("onyx_tensor_copy", "tensor");
    if (src->tensor.dtype() == ONYX_DTYPE_STRING || dst->tensor.dtype() == ONYX_DTYPE_STRING)
      return onyx::runtime::invalid_argument("onyx_tensor_copy: STRING tensors have no dense bytes");
    return onyx::runtime::copy_tensor(dst->tensor, dst->device.get(), src->tensor, src->device.get());
  });
}

OnyxStatus* onyx_io_binding_create(OnyxSession* s, OnyxIoBinding** out) {
  return guarded([&] {
    if (!s || !out) return null_arg("onyx_io_binding_create", "argument");
    if (s->worker) return onyx::runtime::unimplemented("onyx_io_binding_create: an isolated session's runs cannot use device memory");
    *out = new OnyxIoBinding{s, {}, {}};
    return Status();
  });
}

void onyx_io_binding_release(OnyxIoBinding* binding) { delete binding; }

OnyxStatus* onyx_io_binding_bind_input(OnyxIoBinding* b, const char* name, const OnyxTensor* tensor) {
  return guarded([&] {
    if (!b || !name || !tensor) return null_arg("onyx_io_binding_bind_input", "argument");
    ONYX_RETURN_IF_ERROR(device_in(b->session, *tensor, std::string("input '") + name + "'").status());
    for (auto& [bound, t] : b->inputs)
      if (bound == name) {
        t = *tensor;
        return Status();
      }
    b->inputs.emplace_back(name, *tensor);
    return Status();
  });
}

// Binds output `name` to `target` (a tensor to fill, or an empty one naming a device).
static Status bind_output(OnyxIoBinding* b, const char* name, OnyxTensor target) {
  ONYX_RETURN_IF_ERROR(device_in(b->session, target, std::string("output '") + name + "'").status());
  for (OnyxIoBinding::Output& o : b->outputs)
    if (o.name == name) {
      o.target = std::move(target);
      o.result = OnyxTensor{};
      return Status();
    }
  b->outputs.push_back({name, std::move(target), {}});
  return Status();
}

OnyxStatus* onyx_io_binding_bind_output(OnyxIoBinding* b, const char* name, OnyxTensor* tensor) {
  return guarded([&] {
    if (!b || !name || !tensor) return null_arg("onyx_io_binding_bind_output", "argument");
    if (tensor->tensor.dtype() == ONYX_DTYPE_STRING)
      return onyx::runtime::invalid_argument("onyx_io_binding_bind_output: a STRING tensor cannot be filled in place");
    return bind_output(b, name, *tensor);
  });
}

OnyxStatus* onyx_io_binding_bind_output_to_device(OnyxIoBinding* b, const char* name, const char* provider) {
  return guarded([&] {
    if (!b || !name) return null_arg("onyx_io_binding_bind_output_to_device", "argument");
    OnyxTensor target;
    if (provider)
      if (OnyxStatus* missing = find_device(b->session, provider, &target.device))
        return onyx::runtime::take_status(missing);
    if (target.device && target.device->host_readable()) target.device = nullptr;
    return bind_output(b, name, std::move(target));
  });
}

OnyxStatus* onyx_session_run_binding(OnyxSession* s, OnyxIoBinding* b) {
  return guarded([&] {
    if (!s || !b) return null_arg("onyx_session_run_binding", "argument");
    if (b->session != s) return onyx::runtime::invalid_argument("onyx_session_run_binding: the binding belongs to another session");
    std::vector<std::pair<std::string, BoundTensor>> in, out;
    for (const auto& [name, t] : b->inputs) {
      ONYX_ASSIGN_OR_RETURN(int d, device_in(s, t, "input '" + name + "'"));
      in.emplace_back(name, BoundTensor{t.tensor, d});
    }
    for (const OnyxIoBinding::Output& o : b->outputs) {
      ONYX_ASSIGN_OR_RETURN(int d, device_in(s, o.target, "output '" + o.name + "'"));
      out.emplace_back(o.name, BoundTensor{o.target.tensor, d});
    }
    ONYX_ASSIGN_OR_RETURN(std::vector<BoundTensor> results, s->session->run_bound(in, out));
    for (size_t k = 0; k < results.size(); ++k)
      b->outputs[k].result = OnyxTensor{std::move(results[k].tensor), b->outputs[k].target.device};
    return Status();
  });
}

OnyxStatus* onyx_io_binding_output(const OnyxIoBinding* b, const char* name, OnyxTensor** out) {
  return guarded([&] {
    if (!b || !name || !out) return null_arg("onyx_io_binding_output", "argument");
    for (const OnyxIoBinding::Output& o : b->outputs)
      if (o.name == name) {
        if (o.result.tensor.empty())
          return onyx::runtime::failed_precondition(std::string("output '") + name + "' has not been computed: run first");
        *out = new OnyxTensor{o.result};
        return Status();
      }
    return onyx::runtime::invalid_argument(std::string("no output named '") + name + "' is bound");
  });
}

}  // extern "C"
