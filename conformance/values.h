// values.h: the values of an ONNX test data set (.pb files): tensors
// (TensorProto), sequences (SequenceProto) and optionals (OptionalProto),
// decoded into host bytes laid out as the Onyx ABI expects them.
#pragma once

#include <onnx/onnx-data_pb.h>
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace onyx::conformance {

// A problem with one case (bad file, session error, mismatch). Caught per
// case by the suites; never leaves the runner.
struct CaseError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A dense tensor in host memory: row-major, little-endian, sub-byte types
// packed low bits first (int4/uint4/float4 two per byte, int2/uint2 four, as
// OnyxTensorView describes).
struct HostTensor {
  int32_t dtype = 0;  // OnyxDataType (== TensorProto.DataType)
  std::vector<int64_t> dims;
  std::string bytes;                 // empty for string tensors
  std::vector<std::string> strings;  // string tensors only
  int64_t element_count() const;
};

struct TestValue {
  enum class Kind { kTensor, kSequence, kOptional, kMap };
  Kind kind = Kind::kTensor;
  HostTensor tensor;                // kTensor
  std::vector<TestValue> elements;  // kSequence items; kOptional: 0 or 1 element
};

// Bytes a dense tensor of `count` elements of `dtype` takes (sub-byte types
// round up). Throws CaseError for types without a fixed size (string).
size_t tensor_byte_size(int32_t dtype, int64_t count);
const char* dtype_name(int32_t dtype);

// Decodes a TensorProto (raw_data or the typed fields). `where` names the
// file in errors. External data is refused (the node tests never use it).
HostTensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& where);

// Reads one input_N.pb / output_N.pb file, parsed as the kind `type` says
// (tensor, sequence or optional), as the ONNX backend runner does.
TestValue read_value_file(const std::string& path, const onnx::TypeProto& type);

// "sequence", "optional", "map", "string tensor", or "" when the value is a
// plain numeric tensor the C API can carry.
std::string value_limit(const TestValue& value);

}  // namespace onyx::conformance
