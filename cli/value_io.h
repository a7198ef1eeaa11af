// value_io.h: sequences and optionals in files, as ONNX's test data holds
// them: a SequenceProto or an OptionalProto (.pb) of tensors.
#pragma once

#include <onyx/onyx.hpp>

#include <string>

namespace onyx::cli {

struct LoadedValue {
  std::string name;  // the proto's name ("" when unnamed)
  onyx::Value value;
};

// Reads a SequenceProto (kind ONYX_VALUE_SEQUENCE) or an OptionalProto
// (ONYX_VALUE_OPTIONAL) of tensors. Throws CliError naming the file.
LoadedValue read_value_proto_file(const std::string& path, OnyxValueKind kind);

// Writes a sequence or optional value as a SequenceProto / OptionalProto,
// atomically.
void write_value_proto_file(const std::string& path, const std::string& name, const onyx::Value& value);

// "sequence of 3 float32 tensors", "optional holding a float32 tensor [2]",
// "empty optional": one line for `onyx run`.
std::string value_summary(const onyx::Value& value);

}  // namespace onyx::cli
