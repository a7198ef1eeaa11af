// values.cpp: sequences, optionals and string tensors between Python objects
// and OnyxValues (bindings.h). Numeric tensors inside them go through
// arrays.cpp, so they are borrowed and returned without copies as usual.
#include <cstring>
#include <string>
#include <vector>

#include "bindings.h"

namespace onyx::python {
namespace {

using namespace nb::literals;

bool is_sequence_object(nb::handle value) { return nb::isinstance<nb::list>(value) || nb::isinstance<nb::tuple>(value); }

// numpy's kind letter for the value's dtype: 'U' (str), 'S' (bytes), 'O'
// (objects); '\0' for anything without a numpy dtype.
char numpy_kind(nb::handle value) {
  nb::object dtype = nb::getattr(value, "dtype", nb::none());
  if (dtype.is_none()) return '\0';
  nb::object kind = nb::getattr(dtype, "kind", nb::none());
  if (kind.is_none() || !nb::isinstance<nb::str>(kind)) return '\0';
  std::string k = nb::cast<std::string>(kind);
  return k.empty() ? '\0' : k[0];
}

ValuePtr wrap(OnyxTensor* tensor) {
  OnyxValue* value = nullptr;
  check(onyx_value_create_tensor(tensor, &value));
  return ValuePtr(value);
}

// A STRING tensor from a numpy array of str, bytes or objects holding them
// (copied: Onyx keeps its own UTF-8 strings, and says which one is not UTF-8).
TensorPtr strings_tensor(const std::string& what, nb::handle value) {
  nb::module_ np = nb::module_::import_("numpy");
  nb::object array = np.attr("asarray")(value, "dtype"_a = nb::none());
  std::vector<int64_t> dims;
  for (nb::handle d : nb::borrow<nb::tuple>(array.attr("shape"))) dims.push_back(nb::cast<int64_t>(d));
  nb::list items = nb::borrow<nb::list>(array.attr("reshape")(-1).attr("tolist")());
  std::vector<std::string> strings;
  for (nb::handle item : items) {
    if (nb::isinstance<nb::str>(item)) strings.push_back(nb::cast<std::string>(item));
    else if (nb::isinstance<nb::bytes>(item)) strings.emplace_back(nb::borrow<nb::bytes>(item).c_str(), nb::len(item));
    else
      throw nb::type_error((what + ": element " + std::to_string(strings.size()) + " is a " +
                            std::string(nb::str(item.type()).c_str()) + "; a string tensor holds str or bytes")
                               .c_str());
  }
  std::vector<const char*> data;
  std::vector<size_t> lengths;
  for (const std::string& s : strings) {
    data.push_back(s.data());
    lengths.push_back(s.size());
  }
  OnyxTensor* tensor = nullptr;
  check(onyx_tensor_create_strings(data.data(), lengths.data(), dims.data(), dims.size(), &tensor));
  return TensorPtr(tensor);
}

ValuePtr string_tensor(const std::string& what, nb::handle value) { return wrap(strings_tensor(what, value).get()); }

// One column of a dict as a 1-D tensor (copied; maps are small): str or
// bytes -> STRING; ints -> int64; floats -> float32, or float64 when every
// value is a numpy float64 (the types ai.onnx.ml maps hold).
TensorPtr column_tensor(const std::string& what, const std::vector<nb::handle>& items, bool keys) {
  nb::module_ np = nb::module_::import_("numpy");
  nb::list list;
  for (nb::handle item : items) list.append(item);
  if (!items.empty() && (nb::isinstance<nb::str>(items[0]) || nb::isinstance<nb::bytes>(items[0])))
    return strings_tensor(what, np.attr("array")(list, "dtype"_a = "object"));
  nb::object array = np.attr("asarray")(list);
  const char kind = items.empty() ? 'f' : numpy_kind(array);
  int32_t dtype = ONYX_DTYPE_UNDEFINED;
  if (kind == 'i' || kind == 'u') {
    dtype = ONYX_DTYPE_INT64;
  } else if (kind == 'f' && !keys) {
    bool doubles = !items.empty();
    nb::object float64 = np.attr("float64"), isinstance = nb::module_::import_("builtins").attr("isinstance");
    for (nb::handle item : items) doubles = doubles && nb::cast<bool>(isinstance(item, float64));
    dtype = doubles ? ONYX_DTYPE_FLOAT64 : ONYX_DTYPE_FLOAT32;
  }
  if (dtype == ONYX_DTYPE_UNDEFINED)
    throw nb::type_error((what + ": map " + (keys ? "keys are int or str" : "values are int, float or str") +
                          ", got numpy kind '" + std::string(1, kind) + "'").c_str());
  array = np.attr("ascontiguousarray")(array, "dtype"_a = dtype == ONYX_DTYPE_INT64     ? "int64"
                                                          : dtype == ONYX_DTYPE_FLOAT64 ? "float64"
                                                                                        : "float32");
  const int64_t n = int64_t(items.size());
  OnyxTensor* tensor = nullptr;
  check(onyx_tensor_create(dtype, &n, 1, &tensor));
  TensorPtr owned(tensor);
  if (n) {
    nb::ndarray<nb::ro> view = nb::cast<nb::ndarray<nb::ro>>(array);
    std::memcpy(onyx_tensor_data(tensor), view.data(), onyx_tensor_byte_size(tensor));
  }
  return owned;
}

// A dict as a map (a repeated key cannot happen in a dict, but 1 and 1.0
// could not either; Onyx checks anyway).
ValuePtr map_value(const std::string& what, nb::handle value) {
  std::vector<nb::handle> keys, values;
  for (auto [k, v] : nb::borrow<nb::dict>(value)) {
    keys.push_back(k);
    values.push_back(v);
  }
  TensorPtr k = column_tensor(what, keys, true), v = column_tensor(what, values, false);
  OnyxValue* map = nullptr;
  check(onyx_value_create_map(k.get(), v.get(), &map));
  return ValuePtr(map);
}



nb::object strings_to_numpy(TensorPtr tensor) {
  OnyxTensor* t = tensor.get();
  nb::list items;
  for (int64_t k = 0; k < onyx_tensor_element_count(t); ++k) {
    const char* data = nullptr;
    size_t length = 0;
    check(onyx_tensor_string(t, k, &data, &length));
    items.append(nb::str(data, length));
  }
  nb::list shape;
  const int64_t* dims = onyx_tensor_dims(t);
  for (size_t k = 0; k < onyx_tensor_rank(t); ++k) shape.append(dims[k]);
  nb::module_ np = nb::module_::import_("numpy");
  nb::object array = np.attr("empty")(nb::len(items), "dtype"_a = "object");
  for (size_t k = 0; k < nb::len(items); ++k) array[nb::int_(k)] = items[k];
  return array.attr("reshape")(nb::tuple(shape));
}

}  // namespace

ValuePtr value_from_python(BorrowedInputs& inputs, const std::string& name, nb::handle value, int32_t kind,
                           int32_t dtype) {
  const std::string what = "input '" + name + "'";
  if (kind == ONYX_VALUE_OPTIONAL) {
    OnyxValue* optional = nullptr;
    if (value.is_none()) {
      check(onyx_value_create_optional(nullptr, &optional));
    } else {
      ValuePtr element = value_from_python(inputs, name, value,
                                           is_sequence_object(value) ? ONYX_VALUE_SEQUENCE : ONYX_VALUE_TENSOR, dtype);
      check(onyx_value_create_optional(element.get(), &optional));
    }
    return ValuePtr(optional);
  }
  if (kind == ONYX_VALUE_MAP || nb::isinstance<nb::dict>(value)) {
    if (!nb::isinstance<nb::dict>(value))
      throw nb::type_error((what + " is a map: pass a dict, got " + std::string(nb::str(value.type()).c_str())).c_str());
    return map_value(what, value);
  }
  if (kind == ONYX_VALUE_SEQUENCE || is_sequence_object(value)) {
    if (!is_sequence_object(value))
      throw nb::type_error((what + " is a sequence: pass a list of arrays, got " +
                            std::string(nb::str(value.type()).c_str())).c_str());
    std::vector<ValuePtr> items;
    std::vector<const OnyxValue*> raw;
    size_t k = 0;
    for (nb::handle item : value) {
      items.push_back(value_from_python(inputs, name + "[" + std::to_string(k++) + "]", item,
                                        nb::isinstance<nb::dict>(item) ? ONYX_VALUE_MAP : ONYX_VALUE_TENSOR,
                                        ONYX_DTYPE_UNDEFINED));
      raw.push_back(items.back().get());
    }
    OnyxValue* sequence = nullptr;
    check(onyx_value_create_sequence(ONYX_DTYPE_UNDEFINED, raw.data(), raw.size(), &sequence));
    return ValuePtr(sequence);
  }
  if (value.is_none()) throw nb::type_error((what + " is a tensor: None is only for optional inputs").c_str());
  const char kind_letter = numpy_kind(value);
  if (dtype == ONYX_DTYPE_STRING || kind_letter == 'U' || kind_letter == 'S' || kind_letter == 'O' ||
      nb::isinstance<nb::str>(value))
    return string_tensor(what, value);
  borrow_input(inputs, name, value, dtype);
  return wrap(inputs.tensors.back().get());
}

nb::object value_to_python(ValuePtr value) {
  switch (onyx_value_kind(value.get())) {
    case ONYX_VALUE_SEQUENCE: {
      nb::list items;
      for (size_t k = 0; k < onyx_value_count(value.get()); ++k) {
        OnyxValue* item = nullptr;
        check(onyx_value_item(value.get(), k, &item));
        items.append(value_to_python(ValuePtr(item)));
      }
      return items;
    }
    case ONYX_VALUE_MAP: {  // a dict, as ONNX Runtime returns ZipMap's rows
      OnyxTensor* k = nullptr;
      OnyxTensor* v = nullptr;
      check(onyx_value_map_columns(value.get(), &k, &v));
      TensorPtr keys(k), values(v);
      nb::object key_list = onyx_tensor_dtype(k) == ONYX_DTYPE_STRING ? strings_to_numpy(std::move(keys)).attr("tolist")()
                                                                      : to_numpy(std::move(keys)).attr("tolist")();
      nb::object value_list = onyx_tensor_dtype(v) == ONYX_DTYPE_STRING
                                  ? strings_to_numpy(std::move(values)).attr("tolist")()
                                  : to_numpy(std::move(values)).attr("tolist")();
      nb::dict dict;
      for (size_t i = 0; i < nb::len(key_list); ++i) dict[key_list[i]] = value_list[i];
      return dict;
    }
    case ONYX_VALUE_OPTIONAL: {
      if (onyx_value_count(value.get()) == 0) return nb::none();
      OnyxValue* element = nullptr;
      check(onyx_value_item(value.get(), 0, &element));
      return value_to_python(ValuePtr(element));
    }
    default: {
      OnyxTensor* tensor = nullptr;
      check(onyx_value_tensor(value.get(), &tensor));
      TensorPtr owned(tensor);
      if (onyx_tensor_dtype(tensor) == ONYX_DTYPE_STRING) return strings_to_numpy(std::move(owned));
      return to_numpy(std::move(owned));
    }
  }
}

}  // namespace onyx::python
