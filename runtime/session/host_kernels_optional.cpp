// host_kernels_optional.cpp: Optional, OptionalHasElement and
// OptionalGetElement on optional values (the CPU provider runs the latter
// two on plain tensors), as the ONNX operator spec defines them.
#include "session/host_kernels.h"

namespace onyx::runtime {
namespace {

bool given(const HostKernelCall& call, size_t k) {
  return k < call.inputs.size() && !(call.inputs[k].is_tensor() && call.inputs[k].tensor().empty());
}

// Optional(input?): the input wrapped, or an empty optional (its type comes
// from the `type` attribute, which only tools read: the host keeps none).
Status optional(HostKernelCall& call) {
  if (given(call, 0)) {
    if (call.inputs[0].kind() == Value::Kind::kOptional)
      return invalid_argument(call.name + ": an optional cannot hold an optional");
    call.outputs[0] = Value::optional(&call.inputs[0], call.inputs[0].kind(), call.inputs[0].elem_dtype());
  } else {
    call.outputs[0] = Value::optional(nullptr, Value::Kind::kTensor, ONYX_DTYPE_UNDEFINED);
  }
  return Status();
}

Status optional_has_element(HostKernelCall& call) {
  bool has = given(call, 0) && (call.inputs[0].kind() != Value::Kind::kOptional || call.inputs[0].has_element());
  Tensor out = Tensor::allocate(ONYX_DTYPE_BOOL, {});
  *out.data_as<uint8_t>() = has ? 1 : 0;
  call.outputs[0] = out;
  return Status();
}

// An optional's element; a tensor or sequence is its own element. An
// empty optional is an error: the spec leaves the output undefined.
Status optional_get_element(HostKernelCall& call) {
  if (!given(call, 0)) return invalid_argument(call.name + ": input 0 is missing");
  const Value& in = call.inputs[0];
  if (in.kind() != Value::Kind::kOptional) {
    call.outputs[0] = in;
    return Status();
  }
  if (!in.has_element())
    return invalid_argument(call.name + ": the optional input is empty, and OptionalGetElement requires a value");
  call.outputs[0] = in.items()[0];
  return Status();
}

}  // namespace

std::vector<HostKernelEntry> optional_host_kernels() {
  return {{"Optional", optional},
          {"OptionalHasElement", optional_has_element},
          {"OptionalGetElement", optional_get_element}};
}

}  // namespace onyx::runtime
