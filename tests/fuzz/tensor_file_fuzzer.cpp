// tensor_file_fuzzer.cpp: libFuzzer harness for the tensor files `onyx run`
// reads (--input NAME=FILE): .npy (header dict, dtype, shape, data size) and
// ONNX TensorProto .pb (protobuf, then the one TensorProto codec), chosen by
// the first bytes as the CLI chooses. Any input must give a tensor layout
// or a CliError.
#include <onnx/onnx_pb.h>
#include <onyx/util/tensor_proto_codec.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "command.h"
#include "npy_layout.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  if (size >= 6 && std::memcmp(data, "\x93NUMPY", 6) == 0) {
    try {
      onyx::cli::NpyLayout layout = onyx::cli::parse_npy_layout(bytes, "fuzz.npy");
      if (layout.data_offset + layout.data_bytes != size) __builtin_trap();
    } catch (const onyx::cli::CliError&) {
    }
    return 0;
  }
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes)) return 0;
  onyx::util::DecodedTensor decoded;
  // "" as the external-data root: a fuzzed tensor may not read files.
  onyx::util::CodecError error = onyx::util::decode_tensor_proto(proto, {"", "fuzz.pb"}, decoded);
  if (!error.ok() && error.message.empty()) __builtin_trap();
  return 0;
}
