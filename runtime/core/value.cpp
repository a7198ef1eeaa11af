// value.cpp: run-time values that are not plain tensors (see value.h).
#include "core/value.h"

#include <set>

#include "core/string_tensor.h"

namespace onyx::runtime {

namespace {
const std::vector<Value>& no_items() {
  static const std::vector<Value> none;
  return none;
}
}  // namespace

const char* value_kind_name(Value::Kind kind) {
  switch (kind) {
    case Value::Kind::kTensor: return "tensor";
    case Value::Kind::kSequence: return "sequence";
    case Value::Kind::kOptional: return "optional";
    case Value::Kind::kMap: return "map";
  }
  return "value";
}

StatusOr<Value> Value::sequence(int32_t elem_dtype, std::vector<Value> items) {
  for (size_t k = 0; k < items.size(); ++k) {
    const Value& item = items[k];
    if (item.kind() != items[0].kind())
      return invalid_argument("a sequence holds values of one type: item " + std::to_string(k) + " is a " +
                              item.describe() + " but item 0 is a " + items[0].describe());
    if (!item.is_tensor()) continue;
    if (item.tensor().empty()) return invalid_argument("sequence item " + std::to_string(k) + " is not given");
    if (elem_dtype == ONYX_DTYPE_UNDEFINED) elem_dtype = item.tensor().dtype();
    if (item.tensor().dtype() != elem_dtype)
      return invalid_argument(std::string("a sequence holds tensors of one element type: item ") +
                              std::to_string(k) + " is " + dtype_name(item.tensor().dtype()) + ", the sequence's is " +
                              dtype_name(elem_dtype));
  }
  auto c = std::make_shared<Composite>();
  c->kind = Kind::kSequence;
  c->elem_kind = items.empty() ? Kind::kTensor : items[0].kind();
  c->elem_dtype = elem_dtype;
  c->items = std::move(items);
  Value v;
  v.composite_ = std::move(c);
  return v;
}

Value Value::optional(const Value* element, Kind elem_kind, int32_t elem_dtype) {
  auto c = std::make_shared<Composite>();
  c->kind = Kind::kOptional;
  c->elem_kind = element ? element->kind() : elem_kind;
  c->elem_dtype = element ? element->elem_dtype() : elem_dtype;
  if (element) c->items.push_back(*element);
  Value v;
  v.composite_ = std::move(c);
  return v;
}

StatusOr<Value> Value::map(Tensor keys, Tensor values) {
  const int32_t k = keys.dtype(), v = values.dtype();
  if (k != ONYX_DTYPE_INT64 && k != ONYX_DTYPE_STRING)
    return invalid_argument(std::string("map keys are int64 or string, not ") + dtype_name(k));
  if (v != ONYX_DTYPE_FLOAT32 && v != ONYX_DTYPE_FLOAT64 && v != ONYX_DTYPE_INT64 && v != ONYX_DTYPE_STRING)
    return invalid_argument(std::string("map values are float32, float64, int64 or string, not ") + dtype_name(v));
  if (keys.shape().size() != 1 || values.shape().size() != 1 || keys.shape()[0] != values.shape()[0])
    return invalid_argument("a map's keys and values are 1-D and of one length, not " + shape_string(keys.shape()) +
                            " and " + shape_string(values.shape()));
  if (k == ONYX_DTYPE_STRING) {
    std::set<std::string> seen;
    for (const std::string& key : strings_of(keys))
      if (!seen.insert(key).second) return invalid_argument("map key '" + key + "' appears twice");
  } else {
    std::set<int64_t> seen;
    for (int64_t i = 0; i < keys.size(); ++i)
      if (!seen.insert(keys.data_as<int64_t>()[i]).second)
        return invalid_argument("map key " + std::to_string(keys.data_as<int64_t>()[i]) + " appears twice");
  }
  auto c = std::make_shared<Composite>();
  c->kind = Kind::kMap;
  c->elem_dtype = v;
  c->items = {Value(std::move(keys)), Value(std::move(values))};
  Value out;
  out.composite_ = std::move(c);
  return out;
}

const std::vector<Value>& Value::items() const { return composite_ ? composite_->items : no_items(); }

std::string Value::describe() const {
  switch (kind()) {
    case Kind::kTensor:
      if (tensor_.empty()) return "missing tensor";
      return std::string(dtype_name(tensor_.dtype())) + " tensor " + shape_string(tensor_.shape());
    case Kind::kSequence:
      return "sequence of " + std::to_string(items().size()) + " " +
             (elem_dtype() != ONYX_DTYPE_UNDEFINED ? std::string(dtype_name(elem_dtype())) + " " : std::string()) +
             value_kind_name(elem_kind()) + "s";
    case Kind::kOptional:
      return has_element() ? "optional holding a " + items()[0].describe() : std::string("empty optional");
    case Kind::kMap:
      return std::string("map(") + dtype_name(map_keys().dtype()) + ", " + dtype_name(elem_dtype()) + ") of " +
             std::to_string(map_keys().size()) + " entries";
  }
  return "value";
}

}  // namespace onyx::runtime
