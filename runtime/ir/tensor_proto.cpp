// tensor_proto.cpp: the codec's results as runtime tensors (core/decoded_tensor.h).
#include "ir/tensor_proto.h"

#include <onyx/util/tensor_proto_codec.h>

#include "core/decoded_tensor.h"

namespace onyx::runtime::ir {
namespace {

StatusOr<Tensor> adopt(const util::CodecError& error, util::DecodedTensor decoded) {
  if (!error.ok()) return status_of(error);
  return tensor_of(std::move(decoded));
}

}  // namespace

StatusOr<Tensor> tensor_from_proto(const ONNX_NAMESPACE::TensorProto& proto, const std::string& base_dir,
                                   const std::string& what, std::optional<std::string_view> raw_data) {
  util::DecodedTensor decoded;
  util::CodecError error = util::decode_tensor_proto_with_raw_data(proto, {base_dir, what}, raw_data, decoded);
  return adopt(error, std::move(decoded));
}

StatusOr<Tensor> sparse_to_dense(const ONNX_NAMESPACE::SparseTensorProto& proto, const std::string& base_dir,
                                 const std::string& what) {
  util::DecodedTensor decoded;
  util::CodecError error = util::decode_sparse_tensor_proto(proto, {base_dir, what}, decoded);
  return adopt(error, std::move(decoded));
}

StatusOr<Tensor> load_tensor_file(const std::string& path) {
  util::DecodedTensor decoded;
  util::CodecError error = util::decode_tensor_proto_file(path, decoded);
  return adopt(error, std::move(decoded));
}

}  // namespace onyx::runtime::ir
