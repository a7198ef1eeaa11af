// value_io.cpp: SequenceProto / OptionalProto files of tensors (value_io.h).
#include "value_io.h"

#include <onnx/onnx-data_pb.h>

#include <vector>

#include "command.h"
#include "session_setup.h"
#include "tensor_io.h"

namespace onyx::cli {
namespace {

onyx::Value tensor_value(const onnx::TensorProto& proto, const std::string& path) {
  return onyx::Value::tensor(tensor_proto_from_bytes(proto.SerializeAsString(), path).tensor);
}

onyx::Value sequence_value(const onnx::SequenceProto& seq, const std::string& path) {
  if (seq.elem_type() != onnx::SequenceProto::TENSOR && seq.elem_type() != onnx::SequenceProto::UNDEFINED)
    throw CliError("value file '" + path + "': only sequences of tensors are supported");
  std::vector<onyx::Value> items;
  for (const onnx::TensorProto& t : seq.tensor_values()) items.push_back(tensor_value(t, path));
  try {
    return onyx::Value::sequence(items);
  } catch (const onyx::Error& e) {
    throw CliError("value file '" + path + "': " + e.what());
  }
}

std::string tensor_summary(onyx::Tensor t) {
  std::vector<int64_t> shape = t.shape();
  return std::string(dtype_name(t.dtype())) + " tensor " + shape_text(shape, int32_t(shape.size()));
}

}  // namespace

LoadedValue read_value_proto_file(const std::string& path, OnyxValueKind kind) {
  const std::string bytes = read_tensor_bytes(path);
  if (kind == ONYX_VALUE_SEQUENCE) {
    onnx::SequenceProto seq;
    if (!seq.ParseFromString(bytes))
      throw CliError("value file '" + path + "' is not a valid ONNX SequenceProto (protobuf parse failed)");
    return {seq.name(), sequence_value(seq, path)};
  }
  if (kind != ONYX_VALUE_OPTIONAL) throw CliError("value file '" + path + "': maps are not supported");
  onnx::OptionalProto opt;
  if (!opt.ParseFromString(bytes))
    throw CliError("value file '" + path + "' is not a valid ONNX OptionalProto (protobuf parse failed)");
  if (opt.has_tensor_value()) {
    onyx::Value element = tensor_value(opt.tensor_value(), path);
    return {opt.name(), onyx::Value::optional(&element)};
  }
  if (opt.has_sequence_value()) {
    onyx::Value element = sequence_value(opt.sequence_value(), path);
    return {opt.name(), onyx::Value::optional(&element)};
  }
  if (opt.has_optional_value() || opt.has_map_value())
    throw CliError("value file '" + path + "': optionals of optionals or maps are not supported");
  return {opt.name(), onyx::Value::optional(nullptr)};
}

namespace {

void fill_sequence(const onyx::Value& value, const std::string& name, onnx::SequenceProto& seq) {
  seq.set_name(name);
  seq.set_elem_type(onnx::SequenceProto::TENSOR);
  for (size_t k = 0; k < value.count(); ++k) {
    onyx::Tensor t = value.item(k).as_tensor();
    if (!seq.add_tensor_values()->ParseFromString(tensor_proto_bytes(name, t)))
      throw CliError("cannot encode item " + std::to_string(k) + " of output '" + name + "'");
  }
}

}  // namespace

void write_value_proto_file(const std::string& path, const std::string& name, const onyx::Value& value) {
  std::string bytes;
  if (value.kind() == ONYX_VALUE_SEQUENCE) {
    onnx::SequenceProto seq;
    fill_sequence(value, name, seq);
    seq.SerializeToString(&bytes);
  } else if (value.kind() == ONYX_VALUE_OPTIONAL) {
    onnx::OptionalProto opt;
    opt.set_name(name);
    opt.set_elem_type(onnx::OptionalProto::UNDEFINED);
    if (value.count()) {
      onyx::Value element = value.item(0);
      if (element.kind() == ONYX_VALUE_SEQUENCE) {
        opt.set_elem_type(onnx::OptionalProto::SEQUENCE);
        fill_sequence(element, name, *opt.mutable_sequence_value());
      } else {
        opt.set_elem_type(onnx::OptionalProto::TENSOR);
        onyx::Tensor t = element.as_tensor();
        if (!opt.mutable_tensor_value()->ParseFromString(tensor_proto_bytes(name, t)))
          throw CliError("cannot encode output '" + name + "'");
      }
    }
    opt.SerializeToString(&bytes);
  } else {
    throw CliError("output '" + name + "' is not a sequence or optional");
  }
  write_file_atomically(path, bytes);
}

std::string value_summary(const onyx::Value& value) {
  switch (value.kind()) {
    case ONYX_VALUE_TENSOR: return tensor_summary(value.as_tensor());
    case ONYX_VALUE_SEQUENCE: {
      std::string text = "sequence of " + std::to_string(value.count()) + " tensors";
      for (size_t k = 0; k < value.count() && k < 4; ++k) text += (k ? ", " : ": ") + tensor_summary(value.item(k).as_tensor());
      return text + (value.count() > 4 ? ", ..." : "");
    }
    case ONYX_VALUE_OPTIONAL:
      return value.count() ? "optional holding a " + value_summary(value.item(0)) : std::string("empty optional");
    default: return "map";
  }
}

}  // namespace onyx::cli
