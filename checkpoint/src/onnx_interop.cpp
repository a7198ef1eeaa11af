// onnx_interop.cpp: parameters between ONNX initializers and checkpoints.
// TensorProtos go through the one codec (onyx/util/tensor_proto_codec.h),
// the runtime importer's too, so both read models the same way.
#include <onyx/util/tensor_proto_codec.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <set>
#include <vector>

#include "core/decoded_tensor.h"
#include "file_io.h"
#include "onyx/checkpoint_onnx.h"

namespace onyx::checkpoint {
namespace {

bool floating_point(int32_t dtype) {
  return dtype == ONYX_DTYPE_FLOAT32 || dtype == ONYX_DTYPE_FLOAT16 || dtype == ONYX_DTYPE_BFLOAT16 ||
         dtype == ONYX_DTYPE_FLOAT64;
}

Status add_initializer(const std::string& name, Tensor tensor, bool trainable, Checkpoint& c) {
  if (tensor.dtype() == ONYX_DTYPE_STRING)
    return invalid_argument("initializer '" + name + "' is a string tensor; checkpoints hold numeric tensors");
  TensorRecord t;
  t.name = name;
  t.dtype = tensor.dtype();
  t.shape = tensor.shape();
  t.data = std::move(tensor);
  (trainable ? c.module.trainable : c.module.frozen).push_back(std::move(t));
  return {};
}

// A dense or sparse initializer as a tensor that adopts the decoded bytes.
template <typename Decode, typename Proto>
StatusOr<Tensor> decode(Decode decode_proto, const Proto& proto, const std::string& model_dir) {
  util::DecodedTensor decoded;
  util::CodecError error = decode_proto(proto, {model_dir, ""}, decoded);
  if (!error.ok()) return runtime::status_of(error);
  return runtime::tensor_of(std::move(decoded));
}

}  // namespace

StatusOr<Checkpoint> import_onnx_initializers(const ONNX_NAMESPACE::ModelProto& model, const std::string& model_dir,
                                              std::span<const std::string> trainable) {
  std::set<std::string> wanted(trainable.begin(), trainable.end());
  std::set<std::string> found;
  Checkpoint c;
  c.metadata.model_identity = model.graph().name();
  for (const ONNX_NAMESPACE::TensorProto& proto : model.graph().initializer()) {
    ONYX_ASSIGN_OR_RETURN(Tensor tensor, decode(util::decode_tensor_proto, proto, model_dir));
    bool is_trainable = wanted.empty() ? floating_point(tensor.dtype()) : wanted.count(proto.name()) > 0;
    found.insert(proto.name());
    ONYX_RETURN_IF_ERROR(add_initializer(proto.name(), std::move(tensor), is_trainable, c));
  }
  for (const ONNX_NAMESPACE::SparseTensorProto& proto : model.graph().sparse_initializer()) {
    ONYX_ASSIGN_OR_RETURN(Tensor tensor, decode(util::decode_sparse_tensor_proto, proto, model_dir));
    const std::string& name = proto.values().name();
    bool is_trainable = wanted.empty() ? floating_point(tensor.dtype()) : wanted.count(name) > 0;
    found.insert(name);
    ONYX_RETURN_IF_ERROR(add_initializer(name, std::move(tensor), is_trainable, c));
  }
  for (const std::string& name : wanted)
    if (!found.count(name)) return not_found("'" + name + "' is not an initializer of the model");
  ONYX_RETURN_IF_ERROR(validate(c));
  return c;
}

Status export_parameters_to_onnx(const Checkpoint& checkpoint, ONNX_NAMESPACE::ModelProto& model, bool add_missing) {
  if (checkpoint.metadata.shard_count != 1)
    return failed_precondition("the checkpoint is shard " + std::to_string(checkpoint.metadata.shard_index) + " of " +
                               std::to_string(checkpoint.metadata.shard_count) + ": aggregate the shards first");
  if (checkpoint.nominal())
    return failed_precondition("the checkpoint is nominal: it has no parameter values to export");
  ONYX_RETURN_IF_ERROR(validate(checkpoint));
  auto* graph = model.mutable_graph();
  for (const auto* list : {&checkpoint.module.trainable, &checkpoint.module.frozen}) {
    for (const TensorRecord& t : *list) {
      auto& inits = *graph->mutable_initializer();
      auto it = std::find_if(inits.begin(), inits.end(), [&](const auto& p) { return p.name() == t.name; });
      ONNX_NAMESPACE::TensorProto* proto = nullptr;
      if (it != inits.end()) {
        proto = &*it;
        Shape dims(proto->dims().begin(), proto->dims().end());
        if (proto->data_type() != t.dtype || dims != t.shape)
          return invalid_argument("parameter '" + t.name + "' is " + dtype_name(t.dtype) + " " + shape_string(t.shape) +
                                  " but the model's initializer is " + dtype_name(proto->data_type()) + " " +
                                  shape_string(dims));
      } else if (add_missing) {
        proto = graph->add_initializer();
      } else {
        return not_found("parameter '" + t.name + "' has no initializer of that name in the model");
      }
      util::CodecError error = util::encode_tensor_proto(
          t.name, t.dtype, t.shape, {static_cast<const std::byte*>(t.data.data()), t.bytes()}, *proto);
      if (!error.ok()) return runtime::status_of(error);
    }
  }
  return {};
}

StatusOr<ONNX_NAMESPACE::ModelProto> read_onnx_model(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot open model '" + path.string() + "'");
  ONNX_NAMESPACE::ModelProto model;
  if (!model.ParseFromIstream(&in)) return invalid_argument("'" + path.string() + "' is not a valid ONNX model");
  return model;
}

Status write_onnx_model(const ONNX_NAMESPACE::ModelProto& model, const std::filesystem::path& path) {
  size_t size = model.ByteSizeLong();
  if (size > size_t(std::numeric_limits<int32_t>::max()))
    return invalid_argument("the model would be " + std::to_string(size) +
                            " bytes, above protobuf's 2 GiB limit: write its weights as external data");
  std::string bytes;
  if (!model.SerializeToString(&bytes)) return internal_error("cannot serialize the model");
  Status status = replace_file_atomically(path, [&](Sink& sink) {
    return sink.append({reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()});
  });
  return status.with_context("writing model '" + path.string() + "'");
}

Status write_onnx_model_with_external_data(ONNX_NAMESPACE::ModelProto model, const std::filesystem::path& path,
                                           const std::string& data_file, size_t min_bytes) {
  if (data_file.empty() || data_file.find('/') != std::string::npos || data_file == "." || data_file == "..")
    return invalid_argument("external data file '" + data_file + "' must be a plain file name (it is created beside the model)");
  std::filesystem::path data_path = path.parent_path() / data_file;
  // Collect the blobs first, so the data file is complete before the model names it.
  auto& initializers = *model.mutable_graph()->mutable_initializer();
  std::vector<int> moved;  // indices of the initializers that move out
  std::vector<const std::string*> blobs;
  std::vector<uint64_t> offsets;
  uint64_t end = 0;
  for (int k = 0; k < initializers.size(); ++k) {
    const ONNX_NAMESPACE::TensorProto& proto = initializers.Get(k);
    if (proto.data_location() == ONNX_NAMESPACE::TensorProto::EXTERNAL || !proto.has_raw_data() ||
        proto.raw_data().size() < min_bytes)
      continue;
    uint64_t offset = (end + 63) / 64 * 64;
    moved.push_back(k);
    blobs.push_back(&proto.raw_data());
    offsets.push_back(offset);
    end = offset + proto.raw_data().size();
  }
  Status status = replace_file_atomically(data_path, [&](Sink& sink) {
    static const std::byte zeros[64] = {};
    uint64_t at = 0;
    for (size_t k = 0; k < blobs.size(); ++k) {
      ONYX_RETURN_IF_ERROR(sink.append({zeros, size_t(offsets[k] - at)}));
      ONYX_RETURN_IF_ERROR(sink.append({reinterpret_cast<const std::byte*>(blobs[k]->data()), blobs[k]->size()}));
      at = offsets[k] + blobs[k]->size();
    }
    return Status();
  });
  ONYX_RETURN_IF_ERROR(status.with_context("writing external data '" + data_path.string() + "'"));
  for (size_t next = 0; next < moved.size(); ++next) {
    ONNX_NAMESPACE::TensorProto& proto = *initializers.Mutable(moved[next]);
    uint64_t length = proto.raw_data().size();
    proto.clear_raw_data();
    proto.set_data_location(ONNX_NAMESPACE::TensorProto::EXTERNAL);
    proto.clear_external_data();
    for (auto [key, value] : {std::pair<const char*, std::string>{"location", data_file},
                              {"offset", std::to_string(offsets[next])},
                              {"length", std::to_string(length)}}) {
      auto* entry = proto.add_external_data();
      entry->set_key(key);
      entry->set_value(value);
    }
  }
  return write_onnx_model(model, path);
}

}  // namespace onyx::checkpoint
