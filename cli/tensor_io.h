// tensor_io.h: tensors in files. ONNX TensorProto (.pb, as in the ONNX test
// data sets) and NumPy .npy (v1/v2/v3 headers, little-endian, C order).
#pragma once

#include <onyx/onyx.hpp>

#include <string>

namespace onyx::cli {

struct LoadedTensor {
  std::string name;  // the TensorProto's name ("" for .npy or an unnamed proto)
  onyx::Tensor tensor;
};

// Reads a .pb TensorProto or a .npy file (chosen by the file's first bytes,
// so the extension does not matter). Throws CliError naming the file.
LoadedTensor read_tensor_file(const std::string& path);

LoadedTensor read_tensor_proto_file(const std::string& path);
// `tensor` as a serialized TensorProto named `name`.
std::string tensor_proto_bytes(const std::string& name, onyx::Tensor& tensor);
LoadedTensor read_npy_file(const std::string& path);

// A tensor file's bytes (a regular file only, read without blocking); throws
// CliError naming the file.
std::string read_tensor_bytes(const std::string& path);
// The tensor in a serialized TensorProto (a whole file, or an element of a
// SequenceProto/OptionalProto in it); `path` names it in errors and roots a
// .pb's external data.
LoadedTensor tensor_proto_from_bytes(const std::string& bytes, const std::string& path);
LoadedTensor npy_from_bytes(const std::string& bytes, const std::string& path);

// Write `tensor` atomically (onyx/util/atomic_file.h), so a reader never
// sees a half-written file.
void write_tensor_proto_file(const std::string& path, const std::string& name, onyx::Tensor& tensor);
void write_npy_file(const std::string& path, onyx::Tensor& tensor);

// Writes `bytes` to `path` atomically; throws CliError naming the file.
void write_file_atomically(const std::string& path, const std::string& bytes);

}  // namespace onyx::cli
