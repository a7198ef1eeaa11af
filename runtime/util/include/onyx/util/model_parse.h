// model_parse.h: parsing a serialized ModelProto without copying its weights.
// Protobuf copies every bytes field into the message, so a 300 MB model cost
// 300 MB (file) + 300 MB (proto) + 300 MB (tensors) before its graph was even
// checked. Here the top-level initializers' raw_data stay in the caller's
// bytes: the parsed proto is small, and tensors are decoded from the views
// (tensor_proto_codec.h, decode_tensor_proto_with_raw_data) once the graph is
// known to be valid.
//
// Thread-safety: a pure function of its arguments.
#pragma once

#include <onnx/onnx_pb.h>

#include <string_view>
#include <vector>

namespace onyx::util {

// Parses `bytes` into `out`. Each top-level initializer that had raw_data
// keeps an empty raw_data field in `out`, and `raw_data[k]` views its bytes
// in `bytes` (initializer k, in order; a null view, data() == nullptr, when
// it had none). When the bytes are not in the plain form this walker takes
// (groups, a graph field repeated for protobuf to merge), `out` is parsed as
// usual and `raw_data` is empty. Returns false when protobuf cannot parse the
// model. The views live as long as `bytes`.
bool parse_model_proto(std::string_view bytes, ONNX_NAMESPACE::ModelProto& out,
                       std::vector<std::string_view>& raw_data);

}  // namespace onyx::util
