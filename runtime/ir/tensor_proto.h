// tensor_proto.h: onnx TensorProto / SparseTensorProto -> onyx::runtime::Tensor
// through the one codec (onyx/util/tensor_proto_codec.h). Used by the
// importer (initializers, tensor attributes) and by tests that read the
// backend test data (input_K.pb / output_K.pb).
#pragma once

#include <onnx/onnx_pb.h>

#include <optional>
#include <string>
#include <string_view>

#include "core/tensor.h"

namespace onyx::runtime::ir {

// Decodes raw_data or the typed *_data fields (all element types Onyx knows,
// sub-byte types packed, STRING as documented in ir/graph.h).
// External data (data_location EXTERNAL) is read from a file relative to
// `base_dir`; "" forbids external data. A location that is absolute or that,
// after resolving "..", symlinks and the like, leaves `base_dir` is refused.
// Errors name the tensor (`what` when the proto has no name). `raw_data`, when
// set, stands in for proto.raw_data() (onyx/util/model_parse.h).
StatusOr<Tensor> tensor_from_proto(const ONNX_NAMESPACE::TensorProto& proto,
                                   const std::string& base_dir, const std::string& what = "",
                                   std::optional<std::string_view> raw_data = std::nullopt);

// A dense tensor from a sparse one: zeros except at `indices` (either
// [NNZ] linear offsets or [NNZ, rank] coordinates).
StatusOr<Tensor> sparse_to_dense(const ONNX_NAMESPACE::SparseTensorProto& proto,
                                 const std::string& base_dir, const std::string& what = "");

// Reads a file holding one serialized TensorProto (e.g. output_0.pb).
StatusOr<Tensor> load_tensor_file(const std::string& path);

}  // namespace onyx::runtime::ir
