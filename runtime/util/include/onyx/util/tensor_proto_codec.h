// tensor_proto_codec.h: the one ONNX TensorProto codec: a TensorProto to a
// plain tensor value (dtype, dims, bytes) and back. The runtime's importer
// (initializers, tensor attributes, runtime/ir/tensor_proto.h), the
// checkpoint library's ONNX interop, the CLI's tensor files and the tests
// decode through it. (conformance/ keeps an independent decoder on purpose:
// a verifier that shares the runtime's decoder would share its bugs.)
//
// Thread-safety: pure functions of their arguments (decoding external data
// reads files). Nothing throws except std::bad_alloc where noted.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace onyx::util {

// A decoded tensor. Dense data: `data` points at `bytes` bytes (row-major,
// little-endian, 4-bit and 2-bit types packed, 64-byte aligned) that
// `storage` keeps alive, so a runtime tensor can adopt them without a copy.
// STRING tensors hold `strings` instead (row-major).
struct DecodedTensor {
  int32_t dtype = 0;  // ONNX TensorProto.DataType, which is OnyxDataType
  std::vector<int64_t> dims;
  std::shared_ptr<void> storage;
  void* data = nullptr;
  size_t bytes = 0;
  std::vector<std::string> strings;
};

// Why decoding or encoding failed; the message names the tensor.
struct CodecError {
  enum Kind {
    kNone,
    kInvalid,      // the proto contradicts itself (sizes, dims, locations)
    kUnsupported,  // valid ONNX that Onyx does not take (unknown dtype, segments)
    kNotFound,     // an external data file is missing
    kReadFailed,   // an external data file could not be read
    kOutOfMemory,
  };
  Kind kind = kNone;
  std::string message;
  bool ok() const { return kind == kNone; }
};

struct DecodeOptions {
  // The folder external data (data_location EXTERNAL) is read from; "" forbids
  // external data. A location that is absolute or that, after resolving "..",
  // symlinks and the like, leaves this folder is refused.
  std::string base_dir;
  // What to call the tensor in messages when the proto has no name.
  std::string what;
};

// Decodes raw_data, the typed *_data fields or external data, after checking
// every size against dtype and dims (a corrupt proto may claim huge dims).
CodecError decode_tensor_proto(const ONNX_NAMESPACE::TensorProto& proto, const DecodeOptions& options,
                               DecodedTensor& out);
// The same, with `raw_data` (when set) standing in for proto.raw_data(): the
// model loader keeps large payloads out of the parsed proto and points into
// the file's bytes instead.
CodecError decode_tensor_proto_with_raw_data(const ONNX_NAMESPACE::TensorProto& proto, const DecodeOptions& options,
                                             std::optional<std::string_view> raw_data, DecodedTensor& out);

// The most bytes a sparse tensor's dense form may take (1 GiB): a file of a
// few bytes may declare dims of 2^30 or more, and densifying is the one place
// where a small input turns into a large allocation.
constexpr uint64_t kMaxDensifiedBytes = uint64_t(1) << 30;

// A dense tensor from a sparse one: zeros except at the indices (either
// [NNZ] linear offsets or [NNZ, rank] coordinates). A dense form past
// kMaxDensifiedBytes is refused before anything is allocated.
CodecError decode_sparse_tensor_proto(const ONNX_NAMESPACE::SparseTensorProto& proto, const DecodeOptions& options,
                                      DecodedTensor& out);

// Reads a file holding one serialized TensorProto (e.g. output_0.pb);
// external data is read relative to the file's folder. Messages name the file.
CodecError decode_tensor_proto_file(const std::string& path, DecodedTensor& out);

// A TensorProto with `data` as raw_data. `data` must hold exactly the bytes
// dtype and dims need; STRING and unknown dtypes are refused.
CodecError encode_tensor_proto(const std::string& name, int32_t dtype, std::span<const int64_t> dims,
                               std::span<const std::byte> data, ONNX_NAMESPACE::TensorProto& out);

}  // namespace onyx::util
