// decoded_tensor.h: results of the one TensorProto codec
// (onyx/util/tensor_proto_codec.h) as the core's types: a CodecError as a
// Status with the matching code, a DecodedTensor as a Tensor that adopts the
// decoded storage (no copy). For the importer and the checkpoint library.
#pragma once

#include <onyx/util/tensor_proto_codec.h>

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace onyx::runtime {

inline Status status_of(const util::CodecError& e) {
  switch (e.kind) {
    case util::CodecError::kNone: return Status();
    case util::CodecError::kInvalid: return invalid_argument(e.message);
    case util::CodecError::kUnsupported: return unimplemented(e.message);
    case util::CodecError::kNotFound: return not_found(e.message);
    case util::CodecError::kReadFailed: return data_loss(e.message);
    case util::CodecError::kOutOfMemory: return Status(ONYX_STATUS_OUT_OF_MEMORY, e.message);
  }
  return internal_error(e.message);
}

// STRING tensors keep their strings in a vector the tensor owns (ir/graph.h).
inline Tensor tensor_of(util::DecodedTensor decoded) {
  if (decoded.dtype == ONYX_DTYPE_STRING) {
    auto strings = std::make_shared<std::vector<std::string>>(std::move(decoded.strings));
    strings->resize(size_t(std::max<int64_t>(element_count(decoded.dims), 0)));
    return Tensor::wrap(ONYX_DTYPE_STRING, std::move(decoded.dims), strings->data(), strings);
  }
  return Tensor::wrap(decoded.dtype, std::move(decoded.dims), decoded.data, std::move(decoded.storage));
}

}  // namespace onyx::runtime
