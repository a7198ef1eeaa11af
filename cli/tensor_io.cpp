// tensor_io.cpp: TensorProto files and the shared file helpers (.npy is in npy.cpp).
#include "tensor_io.h"

#include <onnx/onnx_pb.h>
#include <onyx/util/atomic_file.h>

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "command.h"
#include "session_setup.h"

namespace onyx::cli {

namespace fs = std::filesystem;

static_assert(std::endian::native == std::endian::little,
              "raw_data and .npy handling assume a little-endian host");

namespace {

std::string read_whole_file(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw CliError("tensor file '" + path + "' does not exist");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CliError("cannot open tensor file '" + path + "'");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) throw CliError("cannot read tensor file '" + path + "'");
  return bytes.str();
}

// Elements of `dims`, refusing negative dims and counts that overflow.
int64_t checked_count(const std::vector<int64_t>& dims, const std::string& where) {
  int64_t count = 1;
  for (int64_t d : dims) {
    if (d < 0) throw CliError(where + ": negative dimension " + std::to_string(d));
    if (d != 0 && count > std::numeric_limits<int64_t>::max() / d)
      throw CliError(where + ": element count overflows");
    count *= d;
  }
  return count;
}

// Copies a typed repeated field into the tensor, narrowing each element to T
// (ONNX stores e.g. int8 and float16 bits one per int32_data entry).
template <typename T, typename Field>
void copy_field(const Field& field, int64_t expected, onyx::Tensor& tensor, const std::string& where) {
  if (int64_t(field.size()) != expected)
    throw CliError(where + ": holds " + std::to_string(field.size()) + " values, shape needs " +
                   std::to_string(expected));
  T* out = tensor.data<T>();
  for (int64_t k = 0; k < expected; ++k) out[k] = static_cast<T>(field.Get(int(k)));
}

}  // namespace

LoadedTensor read_tensor_proto_file(const std::string& path) {
  std::string bytes = read_whole_file(path);
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes))
    throw CliError("tensor file '" + path + "' is not a valid ONNX TensorProto (protobuf parse failed)");
  const std::string where = "tensor file '" + path + "'";
  int32_t dtype = proto.data_type();
  if (dtype == ONYX_DTYPE_STRING) throw CliError(where + ": string tensors are not supported");
  size_t item = dtype_size(dtype);
  if (item == 0) throw CliError(where + ": unsupported data type " + dtype_name(dtype));
  if (proto.data_location() == onnx::TensorProto::EXTERNAL)
    throw CliError(where + ": external data in tensor files is not supported");
  if (proto.has_segment()) throw CliError(where + ": segmented tensors are not supported");

  std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  int64_t count = checked_count(dims, where);
  onyx::Tensor tensor = onyx::Tensor::zeros(OnyxDataType(dtype), dims);

  if (proto.has_raw_data()) {
    const std::string& raw = proto.raw_data();
    if (raw.size() != tensor.byte_size())
      throw CliError(where + ": raw_data has " + std::to_string(raw.size()) + " bytes, shape " +
                     shape_text(dims, int32_t(dims.size())) + " of " + dtype_name(dtype) + " needs " +
                     std::to_string(tensor.byte_size()));
    if (!raw.empty()) std::memcpy(tensor.data<void>(), raw.data(), raw.size());
    return {proto.name(), std::move(tensor)};
  }

  switch (dtype) {
    case ONYX_DTYPE_FLOAT32: copy_field<float>(proto.float_data(), count, tensor, where); break;
    case ONYX_DTYPE_COMPLEX64: copy_field<float>(proto.float_data(), 2 * count, tensor, where); break;
    case ONYX_DTYPE_FLOAT64: copy_field<double>(proto.double_data(), count, tensor, where); break;
    case ONYX_DTYPE_COMPLEX128: copy_field<double>(proto.double_data(), 2 * count, tensor, where); break;
    case ONYX_DTYPE_INT64: copy_field<int64_t>(proto.int64_data(), count, tensor, where); break;
    case ONYX_DTYPE_UINT32: copy_field<uint32_t>(proto.uint64_data(), count, tensor, where); break;
    case ONYX_DTYPE_UINT64: copy_field<uint64_t>(proto.uint64_data(), count, tensor, where); break;
    case ONYX_DTYPE_INT32: copy_field<int32_t>(proto.int32_data(), count, tensor, where); break;
    case ONYX_DTYPE_INT16: copy_field<int16_t>(proto.int32_data(), count, tensor, where); break;
    case ONYX_DTYPE_UINT16:
    case ONYX_DTYPE_FLOAT16:
    case ONYX_DTYPE_BFLOAT16: copy_field<uint16_t>(proto.int32_data(), count, tensor, where); break;
    case ONYX_DTYPE_INT8: copy_field<int8_t>(proto.int32_data(), count, tensor, where); break;
    case ONYX_DTYPE_UINT8:
    case ONYX_DTYPE_BOOL: copy_field<uint8_t>(proto.int32_data(), count, tensor, where); break;
    default: throw CliError(where + ": unsupported data type " + dtype_name(dtype));
  }
  return {proto.name(), std::move(tensor)};
}

LoadedTensor read_tensor_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::error_code ec;
    if (!fs::exists(path, ec)) throw CliError("tensor file '" + path + "' does not exist");
    throw CliError("cannot open tensor file '" + path + "'");
  }
  char magic[6] = {};
  in.read(magic, sizeof magic);
  if (in.gcount() == 6 && std::memcmp(magic, "\x93NUMPY", 6) == 0) return read_npy_file(path);
  return read_tensor_proto_file(path);
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  util::WriteResult written = util::write_file_atomically(path, bytes);
  if (!written.ok()) throw CliError(written.message());
}

void write_tensor_proto_file(const std::string& path, const std::string& name, onyx::Tensor& tensor) {
  if (tensor.dtype() == ONYX_DTYPE_STRING || dtype_size(tensor.dtype()) == 0)
    throw CliError("cannot write output '" + name + "': unsupported data type " + dtype_name(tensor.dtype()));
  onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(tensor.dtype());
  for (int64_t d : tensor.shape()) proto.add_dims(d);
  proto.set_raw_data(std::string(static_cast<const char*>(tensor.data<void>()), tensor.byte_size()));
  std::string bytes;
  if (!proto.SerializeToString(&bytes))
    throw CliError("cannot serialize output '" + name + "' (" + std::to_string(tensor.byte_size()) +
                   " bytes; TensorProto files are limited to 2 GiB)");
  write_file_atomically(path, bytes);
}

}  // namespace onyx::cli
