// value_io.h: sequences, optionals and maps in files, as ONNX's test data
// holds them: a SequenceProto (of tensors or maps), an OptionalProto or a
// MapProto (.pb).
#pragma once

#include <onyx/onyx.hpp>

#include <string>

namespace onyx::cli {

struct LoadedValue {
  std::string name;  // the proto's name ("" when unnamed)
  onyx::Value value;
};

// Reads a SequenceProto (kind ONYX_VALUE_SEQUENCE), an OptionalProto
// (ONYX_VALUE_OPTIONAL) or a MapProto (ONYX_VALUE_MAP). Throws CliError
// naming the file (and a map's repeated key).
LoadedValue read_value_proto_file(const std::string& path, OnyxValueKind kind);

// Writes a sequence, optional or map value as a SequenceProto /
// OptionalProto / MapProto, atomically.
void write_value_proto_file(const std::string& path, const std::string& name, const onyx::Value& value);

// "sequence of 3 float32 tensors", "optional holding a float32 tensor [2]",
// "empty optional": one line for `onyx run`.
std::string value_summary(const onyx::Value& value);

}  // namespace onyx::cli
