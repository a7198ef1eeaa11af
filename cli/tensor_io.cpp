// tensor_io.cpp: TensorProto files and the shared file helpers (.npy is in npy.cpp).
#include "tensor_io.h"

#include <onnx/onnx_pb.h>
#include <onyx/util/atomic_file.h>
#include <onyx/util/read_file.h>
#include <onyx/util/tensor_proto_codec.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>

#include "command.h"
#include "session_setup.h"

namespace onyx::cli {

namespace fs = std::filesystem;

static_assert(std::endian::native == std::endian::little,
              "raw_data and .npy handling assume a little-endian host");

namespace {

// The element count of `dims`, or -1 when a dim is negative or it overflows.
int64_t element_count_or_minus_one(const std::vector<int64_t>& dims) {
  int64_t count = 1;
  for (int64_t d : dims)
    if (d < 0 || __builtin_mul_overflow(count, d, &count)) return -1;
  return count;
}

}  // namespace

std::string read_tensor_bytes(const std::string& path) {
  std::string bytes;
  int error = 0;
  const std::string failure = util::read_regular_file(path, &bytes, &error);
  if (error == ENOENT) throw CliError("tensor file '" + path + "' does not exist");
  if (!failure.empty()) throw CliError("tensor file: " + failure);
  return bytes;
}

LoadedTensor tensor_proto_from_bytes(const std::string& bytes, const std::string& path) {
  const std::string where = "tensor file '" + path + "'";
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes)) throw CliError(where + " is not a valid ONNX TensorProto (protobuf parse failed)");
  // Decoded by the one codec; external data is read beside the file.
  util::DecodedTensor decoded;
  util::CodecError error =
      util::decode_tensor_proto(proto, {fs::path(path).parent_path().string(), fs::path(path).filename().string()},
                                decoded);
  if (!error.ok()) throw CliError(where + ": " + error.message);
  if (decoded.dtype == ONYX_DTYPE_STRING) {
    if (int64_t(decoded.strings.size()) != element_count_or_minus_one(decoded.dims))
      throw CliError(where + ": the string tensor holds " + std::to_string(decoded.strings.size()) +
                     " strings, its dims " + shape_text(decoded.dims, int32_t(decoded.dims.size())) + " need " +
                     std::to_string(element_count_or_minus_one(decoded.dims)));
    try {
      return {proto.name(), onyx::Tensor::strings(decoded.strings, decoded.dims)};
    } catch (const onyx::Error& e) {
      throw CliError(where + ": " + e.what());  // e.g. a string that is not UTF-8, named by element
    }
  }
  onyx::Tensor tensor = onyx::Tensor::zeros(OnyxDataType(decoded.dtype), decoded.dims);
  if (tensor.byte_size() != decoded.bytes)
    throw CliError(where + ": " + dtype_name(decoded.dtype) + " tensors are not supported by the runtime");
  if (decoded.bytes) std::memcpy(tensor.data<void>(), decoded.data, decoded.bytes);
  return {proto.name(), std::move(tensor)};
}

LoadedTensor read_tensor_proto_file(const std::string& path) {
  return tensor_proto_from_bytes(read_tensor_bytes(path), path);
}

// One read of the file (a FIFO is refused, not waited on), then the format
// its first bytes say.
LoadedTensor read_tensor_file(const std::string& path) {
  const std::string bytes = read_tensor_bytes(path);
  if (bytes.size() >= 6 && std::memcmp(bytes.data(), "\x93NUMPY", 6) == 0) return npy_from_bytes(bytes, path);
  return tensor_proto_from_bytes(bytes, path);
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  util::WriteResult written = util::write_file_atomically(path, bytes);
  if (!written.ok()) throw CliError(written.message());
}

std::string tensor_proto_bytes(const std::string& name, onyx::Tensor& tensor) {
  onnx::TensorProto proto;
  if (tensor.dtype() == ONYX_DTYPE_STRING) {  // string_data, one entry per element
    proto.set_name(name);
    proto.set_data_type(onnx::TensorProto::STRING);
    for (int64_t d : tensor.shape()) proto.add_dims(d);
    for (int64_t k = 0; k < tensor.size(); ++k) proto.add_string_data(tensor.string_at(k));
    return proto.SerializeAsString();
  }
  util::CodecError error = util::encode_tensor_proto(
      name, tensor.dtype(), tensor.shape(), {static_cast<const std::byte*>(tensor.data<void>()), tensor.byte_size()},
      proto);
  if (!error.ok()) throw CliError("cannot write output '" + name + "': " + error.message);
  std::string bytes;
  if (!proto.SerializeToString(&bytes))
    throw CliError("cannot serialize output '" + name + "' (" + std::to_string(tensor.byte_size()) +
                   " bytes; TensorProto files are limited to 2 GiB)");
  return bytes;
}

void write_tensor_proto_file(const std::string& path, const std::string& name, onyx::Tensor& tensor) {
  write_file_atomically(path, tensor_proto_bytes(name, tensor));
}

}  // namespace onyx::cli
