// value_c_api.cpp: OnyxValue (tensors, sequences, optionals, maps) and
// onyx_session_run_values (see onyx_c_api.h).
#include "api/c_api_internal.h"

using onyx::runtime::Status;
using onyx::runtime::Value;
using onyx::runtime::capi::guarded;
using onyx::runtime::capi::null_arg;

extern "C" {

OnyxStatus* onyx_value_create_tensor(const OnyxTensor* tensor, OnyxValue** out) {
  return guarded([&] {
    if (!tensor || !out) return null_arg("onyx_value_create_tensor", "argument");
    if (tensor->device)
      return onyx::runtime::invalid_argument("onyx_value_create_tensor: values hold host memory; the tensor is on device '" +
                              tensor->device->label + "' (copy it with onyx_tensor_copy)");
    *out = new OnyxValue{Value(tensor->tensor)};
    return Status();
  });
}

OnyxStatus* onyx_value_create_sequence(int32_t elem_dtype, const OnyxValue* const* items, size_t count,
                                       OnyxValue** out) {
  return guarded([&] {
    if (!out || (count && !items)) return null_arg("onyx_value_create_sequence", "argument");
    std::vector<Value> values;
    for (size_t k = 0; k < count; ++k) {
      if (!items[k]) return null_arg("onyx_value_create_sequence", "item");
      if (!items[k]->value.is_tensor() && items[k]->value.kind() != Value::Kind::kMap)
        return onyx::runtime::invalid_argument("onyx_value_create_sequence: item " + std::to_string(k) + " is a " +
                                               items[k]->value.describe() + "; sequence items are tensors or maps");
      values.push_back(items[k]->value);
    }
    auto seq = Value::sequence(elem_dtype, std::move(values));
    if (!seq.ok()) return seq.status().with_context("onyx_value_create_sequence");
    *out = new OnyxValue{std::move(seq).value()};
    return Status();
  });
}

OnyxStatus* onyx_value_create_optional(const OnyxValue* element, OnyxValue** out) {
  return guarded([&] {
    if (!out) return null_arg("onyx_value_create_optional", "out");
    if (element && element->value.kind() == Value::Kind::kOptional)
      return onyx::runtime::invalid_argument("onyx_value_create_optional: an optional cannot hold an optional");
    *out = new OnyxValue{element ? Value::optional(&element->value, element->value.kind(), element->value.elem_dtype())
                                 : Value::optional(nullptr, Value::Kind::kTensor, ONYX_DTYPE_UNDEFINED)};
    return Status();
  });
}

void onyx_value_release(OnyxValue* value) { delete value; }

int32_t onyx_value_kind(const OnyxValue* value) {
  if (!value) return ONYX_VALUE_TENSOR;
  switch (value->value.kind()) {
    case Value::Kind::kSequence: return ONYX_VALUE_SEQUENCE;
    case Value::Kind::kOptional: return ONYX_VALUE_OPTIONAL;
    case Value::Kind::kMap: return ONYX_VALUE_MAP;
    default: return ONYX_VALUE_TENSOR;
  }
}

int32_t onyx_value_elem_dtype(const OnyxValue* value) { return value ? value->value.elem_dtype() : 0; }

size_t onyx_value_count(const OnyxValue* value) {
  if (!value) return 0;
  if (value->value.kind() == Value::Kind::kMap) return size_t(value->value.map_keys().size());
  return value->value.items().size();
}

OnyxStatus* onyx_value_create_map(const OnyxTensor* keys, const OnyxTensor* values, OnyxValue** out) {
  return guarded([&] {
    if (!keys || !values || !out) return null_arg("onyx_value_create_map", "argument");
    auto map = Value::map(keys->tensor, values->tensor);
    if (!map.ok()) return map.status().with_context("onyx_value_create_map");
    *out = new OnyxValue{std::move(map).value()};
    return Status();
  });
}

OnyxStatus* onyx_value_map_columns(const OnyxValue* value, OnyxTensor** keys, OnyxTensor** values) {
  return guarded([&] {
    if (!value || !keys || !values) return null_arg("onyx_value_map_columns", "argument");
    if (value->value.kind() != Value::Kind::kMap)
      return onyx::runtime::invalid_argument("onyx_value_map_columns: the value is a " + value->value.describe());
    *keys = new OnyxTensor{value->value.map_keys()};
    *values = new OnyxTensor{value->value.map_values()};
    return Status();
  });
}

OnyxStatus* onyx_value_item(const OnyxValue* value, size_t index, OnyxValue** out) {
  return guarded([&] {
    if (!value || !out) return null_arg("onyx_value_item", "argument");
    if (value->value.kind() == Value::Kind::kMap)
      return onyx::runtime::invalid_argument("onyx_value_item: the value is a map: read it with onyx_value_map_columns");
    const std::vector<Value>& items = value->value.items();
    if (index >= items.size())
      return onyx::runtime::invalid_argument("onyx_value_item: index " + std::to_string(index) + " is out of range for a " +
                                             value->value.describe());
    *out = new OnyxValue{items[index]};
    return Status();
  });
}

OnyxStatus* onyx_value_tensor(const OnyxValue* value, OnyxTensor** out) {
  return guarded([&] {
    if (!value || !out) return null_arg("onyx_value_tensor", "argument");
    if (!value->value.is_tensor())
      return onyx::runtime::invalid_argument("onyx_value_tensor: the value is a " + value->value.describe());
    *out = new OnyxTensor{value->value.tensor()};
    return Status();
  });
}

OnyxStatus* onyx_session_run_values(OnyxSession* s, const char* const* input_names, const OnyxValue* const* inputs,
                                    size_t input_count, const char* const* output_names, size_t output_count,
                                    OnyxValue** outputs) {
  return guarded([&] {
    if (!s || (input_count && (!input_names || !inputs)) || (output_count && !outputs))
      return null_arg("onyx_session_run_values", "argument");
    std::vector<std::pair<std::string, Value>> in;
    for (size_t k = 0; k < input_count; ++k) {
      if (!input_names[k] || !inputs[k]) return null_arg("onyx_session_run_values", "input");
      in.emplace_back(input_names[k], inputs[k]->value);
    }
    std::vector<std::string> names;
    if (output_names) {
      for (size_t k = 0; k < output_count; ++k) {
        if (!output_names[k]) return null_arg("onyx_session_run_values", "output name");
        names.emplace_back(output_names[k]);
      }
    } else if (output_count != s->session->graph().outputs.size()) {
      return onyx::runtime::invalid_argument("onyx_session_run_values: output_count is " +
                                             std::to_string(output_count) + " but the model has " +
                                             std::to_string(s->session->graph().outputs.size()) + " outputs");
    }
    if (s->worker) {  // isolated: tensors only cross to the worker
      std::vector<std::pair<std::string, onyx::runtime::Tensor>> tensors;
      for (auto& [name, value] : in) {
        if (!value.is_tensor())
          return onyx::runtime::invalid_argument("isolated mode: input '" + name + "' is a " + value.describe() +
                                                 "; only tensors cross to the worker");
        tensors.emplace_back(name, value.tensor());
      }
      auto result = s->worker->run(tensors, names);
      if (!result.ok()) return result.status();
      if (result.value().size() != output_count)  // a worker's reply is not trusted
        return onyx::runtime::internal_error("onyx_session_run_values: the isolated worker returned " +
                                             std::to_string(result.value().size()) + " outputs, not " +
                                             std::to_string(output_count));
      for (size_t k = 0; k < output_count; ++k) outputs[k] = new OnyxValue{Value(result.value()[k])};
      return Status();
    }
    auto result = s->session->run_values(in, names);
    if (!result.ok()) return result.status();
    for (size_t k = 0; k < output_count; ++k) outputs[k] = new OnyxValue{result.value()[k]};
    return Status();
  });
}

OnyxStatus* onyx_session_run_values_with_options(OnyxSession* s, const OnyxRunOptions* options,
                                                 const char* const* input_names, const OnyxValue* const* inputs,
                                                 size_t input_count, const char* const* output_names,
                                                 size_t output_count, OnyxValue** outputs) {
  // The executor finds them on this thread (session/run_options.h).
  onyx::runtime::RunOptionsScope scope(options ? &options->options : nullptr);
  return onyx_session_run_values(s, input_names, inputs, input_count, output_names, output_count, outputs);
}

}  // extern "C"

