// values.cpp: decoding ONNX test data files into host tensors.
#include "values.h"

#include <onyx_dtype.h>

#include <bit>
#include <cstring>
#include <fstream>
#include <sstream>

namespace onyx::conformance {

static_assert(std::endian::native == std::endian::little,
              "raw_data is little-endian; the runner assumes a little-endian host");

namespace {

// Sizes and names come from the ABI's one dtype table (onyx_dtype.h), which
// also knows the types newer than onnx 1.12's enum (21-26). The decoding of
// TensorProto fields below stays this runner's own, on purpose: it checks
// the runtime's decoder rather than sharing it.
bool is_sub_byte(int32_t dtype) { return onyx_dtype_elements_per_byte(dtype) > 0; }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CaseError("cannot open '" + path + "'");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// Stores `values` (one per element, or per packed byte) as `width`-byte
// little-endian integers: the typed fields hold narrow types widened.
template <typename Field>
void store_narrowed(const Field& values, size_t width, std::string& out) {
  out.resize(values.size() * width);
  for (int i = 0; i < values.size(); ++i) {
    uint64_t v = static_cast<uint64_t>(values.Get(i));
    std::memcpy(out.data() + size_t(i) * width, &v, width);
  }
}

template <typename Field>
void store_exact(const Field& values, std::string& out) {
  out.assign(reinterpret_cast<const char*>(values.data()),
             values.size() * sizeof(typename Field::value_type));
}

}  // namespace

int64_t HostTensor::element_count() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

const char* dtype_name(int32_t dtype) {
  const char* name = onyx_dtype_name(dtype);
  return name ? name : "unknown";
}

size_t tensor_byte_size(int32_t dtype, int64_t count) {
  if (onyx_dtype_storage_bytes(dtype, 1) == 0)
    throw CaseError(std::string("no dense layout for element type ") + dtype_name(dtype));
  return onyx_dtype_storage_bytes(dtype, count);
}

HostTensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& where) {
  HostTensor t;
  t.dtype = proto.data_type();
  for (int64_t d : proto.dims()) {
    if (d < 0) throw CaseError(where + ": negative dimension " + std::to_string(d));
    t.dims.push_back(d);
  }
  if (proto.data_location() == onnx::TensorProto::EXTERNAL)
    throw CaseError(where + ": external tensor data is not supported in test data");
  const int64_t count = t.element_count();
  if (t.dtype == onnx::TensorProto::STRING) {
    if (proto.string_data_size() != count)
      throw CaseError(where + ": " + std::to_string(proto.string_data_size()) +
                      " strings for " + std::to_string(count) + " elements");
    t.strings.assign(proto.string_data().begin(), proto.string_data().end());
    return t;
  }
  const size_t bytes = tensor_byte_size(t.dtype, count);
  if (proto.has_raw_data()) {
    t.bytes = proto.raw_data();
  } else {
    switch (t.dtype) {
      case 1: case 14: store_exact(proto.float_data(), t.bytes); break;
      case 11: case 15: store_exact(proto.double_data(), t.bytes); break;
      case 7: store_exact(proto.int64_data(), t.bytes); break;
      case 6: store_exact(proto.int32_data(), t.bytes); break;
      case 12: store_narrowed(proto.uint64_data(), 4, t.bytes); break;
      case 13: store_exact(proto.uint64_data(), t.bytes); break;
      default:  // narrow types widened into int32_data (sub-byte: one packed byte each)
        store_narrowed(proto.int32_data(), is_sub_byte(t.dtype) ? 1 : onyx_dtype_size(t.dtype), t.bytes);
    }
  }
  if (t.bytes.size() != bytes)
    throw CaseError(where + ": " + std::to_string(t.bytes.size()) + " data bytes for a " +
                    dtype_name(t.dtype) + " tensor of " + std::to_string(count) +
                    " elements (expected " + std::to_string(bytes) + ")");
  return t;
}

namespace {

TestValue value_from_sequence(const onnx::SequenceProto& seq, const std::string& where);
TestValue value_from_optional(const onnx::OptionalProto& opt, const std::string& where);

TestValue tensor_value(HostTensor t) {
  TestValue v;
  v.kind = TestValue::Kind::kTensor;
  v.tensor = std::move(t);
  return v;
}

TestValue value_from_sequence(const onnx::SequenceProto& seq, const std::string& where) {
  TestValue v;
  v.kind = TestValue::Kind::kSequence;
  for (const auto& t : seq.tensor_values()) v.elements.push_back(tensor_value(tensor_from_proto(t, where)));
  for (const auto& s : seq.sequence_values()) v.elements.push_back(value_from_sequence(s, where));
  for (const auto& o : seq.optional_values()) v.elements.push_back(value_from_optional(o, where));
  if (seq.map_values_size() > 0) throw CaseError(where + ": sequences of maps are not supported");
  return v;
}

TestValue value_from_optional(const onnx::OptionalProto& opt, const std::string& where) {
  TestValue v;
  v.kind = TestValue::Kind::kOptional;
  if (opt.has_tensor_value()) v.elements.push_back(tensor_value(tensor_from_proto(opt.tensor_value(), where)));
  if (opt.has_sequence_value()) v.elements.push_back(value_from_sequence(opt.sequence_value(), where));
  if (opt.has_optional_value()) v.elements.push_back(value_from_optional(opt.optional_value(), where));
  return v;
}

}  // namespace

TestValue read_value_file(const std::string& path, const onnx::TypeProto& type) {
  const std::string bytes = read_file(path);
  auto parse_failed = [&](const char* what) {
    return CaseError("'" + path + "' is not a valid " + what + " (protobuf parse failed)");
  };
  if (type.has_sequence_type()) {
    onnx::SequenceProto seq;
    if (!seq.ParseFromString(bytes)) throw parse_failed("SequenceProto");
    return value_from_sequence(seq, path);
  }
  if (type.has_optional_type()) {
    onnx::OptionalProto opt;
    if (!opt.ParseFromString(bytes)) throw parse_failed("OptionalProto");
    return value_from_optional(opt, path);
  }
  if (type.has_map_type()) {
    TestValue v;
    v.kind = TestValue::Kind::kMap;
    return v;
  }
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes)) throw parse_failed("TensorProto");
  HostTensor t = tensor_from_proto(proto, path);
  // Older ONNX test data (numpy has no bfloat16 or float8) stores such
  // values in uint16/uint8 containers: take the model's declared type when
  // the container is an unsigned integer of the same width.
  const int32_t declared = type.has_tensor_type() ? type.tensor_type().elem_type() : 0;
  const bool container = t.dtype == onnx::TensorProto::UINT16 || t.dtype == onnx::TensorProto::UINT8;
  if (declared != 0 && declared != t.dtype && container && !is_sub_byte(declared) &&
      onyx_dtype_size(declared) == onyx_dtype_size(t.dtype))
    t.dtype = declared;
  return tensor_value(std::move(t));
}

std::string value_limit(const TestValue& value) {
  switch (value.kind) {
    case TestValue::Kind::kSequence: return "sequence";
    case TestValue::Kind::kOptional: return "optional";
    case TestValue::Kind::kMap: return "map";
    case TestValue::Kind::kTensor: break;
  }
  return value.tensor.dtype == onnx::TensorProto::STRING ? "string tensor" : "";
}

}  // namespace onyx::conformance
