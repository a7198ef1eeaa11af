// value_io.cpp: SequenceProto / OptionalProto / MapProto files (value_io.h).
#include "value_io.h"

#include <onnx/onnx-data_pb.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "command.h"
#include "session_setup.h"
#include "tensor_io.h"

namespace onyx::cli {
namespace {

onyx::Value tensor_value(const onnx::TensorProto& proto, const std::string& path) {
  return onyx::Value::tensor(tensor_proto_from_bytes(proto.SerializeAsString(), path).tensor);
}

// A MapProto: keys (int64, or another integer type read as int64) or
// string_keys, and one single-element tensor per key in `values`.
onyx::Value map_value(const onnx::MapProto& map, const std::string& path) {
  const std::string where = "value file '" + path + "': map '" + map.name() + "'";
  const bool string_keys = map.key_type() == onnx::TensorProto::STRING;
  const int count = string_keys ? map.string_keys_size() : map.keys_size();
  if (map.values().tensor_values_size() != count)
    throw CliError(where + " has " + std::to_string(count) + " keys but " +
                   std::to_string(map.values().tensor_values_size()) + " values");
  std::vector<onyx::Tensor> cells;
  for (const onnx::TensorProto& t : map.values().tensor_values()) {
    cells.push_back(tensor_proto_from_bytes(t.SerializeAsString(), path).tensor);
    if (cells.back().size() != 1 || cells.back().dtype() != cells[0].dtype())
      throw CliError(where + ": value " + std::to_string(cells.size() - 1) + " must be one " +
                     dtype_name(cells[0].dtype()) + " element");
  }
  const OnyxDataType value_type = cells.empty() ? ONYX_DTYPE_FLOAT32 : cells[0].dtype();
  onyx::Tensor values;
  if (value_type == ONYX_DTYPE_STRING) {
    std::vector<std::string> texts;
    for (onyx::Tensor& c : cells) texts.push_back(c.string_at(0));
    values = onyx::Tensor::strings(texts, {int64_t(count)});
  } else {
    values = onyx::Tensor::zeros(value_type, {int64_t(count)});
    for (int k = 0; k < count; ++k)
      std::memcpy(values.data<char>() + size_t(k) * cells[size_t(k)].byte_size(), cells[size_t(k)].data<char>(),
                  cells[size_t(k)].byte_size());
  }
  onyx::Tensor keys;
  if (string_keys) {
    keys = onyx::Tensor::strings({map.string_keys().begin(), map.string_keys().end()}, {int64_t(count)});
  } else {
    keys = onyx::Tensor::zeros(ONYX_DTYPE_INT64, {int64_t(count)});
    std::copy(map.keys().begin(), map.keys().end(), keys.data<int64_t>());
  }
  try {
    return onyx::Value::map(keys, values);
  } catch (const onyx::Error& e) {
    throw CliError(where + ": " + e.what());  // e.g. a key that appears twice
  }
}

onyx::Value sequence_value(const onnx::SequenceProto& seq, const std::string& path) {
  std::vector<onyx::Value> items;
  if (seq.elem_type() == onnx::SequenceProto::MAP) {
    for (const onnx::MapProto& m : seq.map_values()) items.push_back(map_value(m, path));
  } else if (seq.elem_type() != onnx::SequenceProto::TENSOR && seq.elem_type() != onnx::SequenceProto::UNDEFINED) {
    throw CliError("value file '" + path + "': only sequences of tensors or maps are supported");
  }
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
  if (kind == ONYX_VALUE_MAP) {
    onnx::MapProto map;
    if (!map.ParseFromString(bytes))
      throw CliError("value file '" + path + "' is not a valid ONNX MapProto (protobuf parse failed)");
    return {map.name(), map_value(map, path)};
  }
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

void fill_map(const onyx::Value& value, const std::string& name, onnx::MapProto& map) {
  auto [keys, values] = value.map_columns();
  map.set_name(name);
  map.set_key_type(keys.dtype());
  for (int64_t k = 0; k < keys.size(); ++k) {
    if (keys.dtype() == ONYX_DTYPE_STRING) map.add_string_keys(keys.string_at(k));
    else map.add_keys(keys.data<int64_t>()[k]);
  }
  map.mutable_values()->set_elem_type(onnx::SequenceProto::TENSOR);
  for (int64_t k = 0; k < values.size(); ++k) {  // one 0-d tensor per value, as onnx's numpy_helper writes them
    onyx::Tensor cell = values.dtype() == ONYX_DTYPE_STRING
                            ? onyx::Tensor::strings({values.string_at(k)}, {})
                            : onyx::Tensor::zeros(values.dtype(), {});
    if (values.dtype() != ONYX_DTYPE_STRING)
      std::memcpy(cell.data<char>(), values.data<char>() + size_t(k) * cell.byte_size(), cell.byte_size());
    if (!map.mutable_values()->add_tensor_values()->ParseFromString(tensor_proto_bytes(name, cell)))
      throw CliError("cannot encode value " + std::to_string(k) + " of output '" + name + "'");
  }
}

void fill_sequence(const onyx::Value& value, const std::string& name, onnx::SequenceProto& seq) {
  seq.set_name(name);
  if (value.count() && value.item(0).kind() == ONYX_VALUE_MAP) {
    seq.set_elem_type(onnx::SequenceProto::MAP);
    for (size_t k = 0; k < value.count(); ++k) fill_map(value.item(k), name, *seq.add_map_values());
    return;
  }
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
  } else if (value.kind() == ONYX_VALUE_MAP) {
    onnx::MapProto map;
    fill_map(value, name, map);
    map.SerializeToString(&bytes);
  } else {
    throw CliError("output '" + name + "' is not a sequence, optional or map");
  }
  write_file_atomically(path, bytes);
}

std::string value_summary(const onyx::Value& value) {
  switch (value.kind()) {
    case ONYX_VALUE_TENSOR: return tensor_summary(value.as_tensor());
    case ONYX_VALUE_SEQUENCE: {
      const bool maps = value.count() && value.item(0).kind() == ONYX_VALUE_MAP;
      std::string text = "sequence of " + std::to_string(value.count()) + (maps ? " maps" : " tensors");
      for (size_t k = 0; k < value.count() && k < 4; ++k)
        text += (k ? ", " : ": ") + (maps ? value_summary(value.item(k)) : tensor_summary(value.item(k).as_tensor()));
      return text + (value.count() > 4 ? ", ..." : "");
    }
    case ONYX_VALUE_OPTIONAL:
      return value.count() ? "optional holding a " + value_summary(value.item(0)) : std::string("empty optional");
    default: {
      auto [keys, values] = value.map_columns();
      std::string text = std::string("map(") + dtype_name(keys.dtype()) + ", " + dtype_name(values.dtype()) + ") of " +
                         std::to_string(keys.size()) + " entries";
      if (values.dtype() != ONYX_DTYPE_FLOAT32 || keys.size() == 0) return text;
      for (int64_t k = 0; k < keys.size() && k < 4; ++k) {  // ZipMap's scores: the first few
        text += k ? ", " : ": ";
        text += keys.dtype() == ONYX_DTYPE_STRING ? keys.string_at(k) : std::to_string(keys.data<int64_t>()[k]);
        char score[32];
        std::snprintf(score, sizeof score, " %.4g", double(values.data<float>()[k]));
        text += score;
      }
      return text + (keys.size() > 4 ? ", ..." : "");
    }
  }
}

}  // namespace onyx::cli
