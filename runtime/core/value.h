// value.h: what a graph value holds at run time: a tensor, a sequence, an
// optional or a map (ai.onnx.ml).
//
// Sequences, optionals and maps live in host memory only (the ABI carries
// tensors; see onyx_provider.h, "Values that are not numeric tensors").
// A Value is immutable once made and cheap to copy: copies share the
// tensors and the composite. Thread-safety: as Tensor (distinct Values may
// be used concurrently; they never change).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace onyx::runtime {

class Value {
 public:
  enum class Kind { kTensor, kSequence, kOptional, kMap };

  // An empty tensor value (Tensor::empty()): "not given".
  Value() = default;
  Value(Tensor tensor) : tensor_(std::move(tensor)) {}  // NOLINT: a tensor is a value

  // A sequence of values of one type. `elem_dtype` is the element type of
  // its tensors (UNDEFINED: not known, or the items are not tensors); every
  // tensor item must have it, and every item the kind of the first: else an
  // INVALID_ARGUMENT naming the first item that differs.
  static StatusOr<Value> sequence(int32_t elem_dtype, std::vector<Value> items);
  // An optional: `element` is the value, or nullptr for an empty optional.
  // `elem_kind`/`elem_dtype` describe what it holds (or would hold).
  static Value optional(const Value* element, Kind elem_kind, int32_t elem_dtype);
  // A map (ai.onnx.ml's map(K, V)) as two 1-D tensors of equal length: keys
  // (int64 or STRING, each at most once) and their values (float32,
  // float64, int64 or STRING). Two columns rather than a node per entry:
  // the ops that read maps (DictVectorizer, CastMap) walk them whole, and
  // tensors already carry every element type. An INVALID_ARGUMENT names a
  // repeated key or a wrong type.
  static StatusOr<Value> map(Tensor keys, Tensor values);

  Kind kind() const { return composite_ ? composite_->kind : Kind::kTensor; }
  bool is_tensor() const { return !composite_; }
  // kTensor: the tensor (an empty one when not given).
  const Tensor& tensor() const { return tensor_; }
  // kSequence: the items; kOptional: none or the element.
  const std::vector<Value>& items() const;
  // kSequence: its tensors' element type; kOptional: the element's; kMap: its values'.
  int32_t elem_dtype() const { return composite_ ? composite_->elem_dtype : tensor_.dtype(); }
  // kOptional: what the element is (or would be).
  Kind elem_kind() const { return composite_ ? composite_->elem_kind : Kind::kTensor; }
  bool has_element() const { return kind() == Kind::kOptional && !items().empty(); }
  // kMap: the keys and values columns (see map()).
  const Tensor& map_keys() const { return items()[0].tensor(); }
  const Tensor& map_values() const { return items()[1].tensor(); }

  // "float32 tensor [2, 3]", "sequence of 3 float32 tensors", "empty
  // optional": for error messages.
  std::string describe() const;

 private:
  struct Composite {
    Kind kind = Kind::kSequence;
    Kind elem_kind = Kind::kTensor;
    int32_t elem_dtype = ONYX_DTYPE_UNDEFINED;
    std::vector<Value> items;
  };
  Tensor tensor_;
  std::shared_ptr<const Composite> composite_;
};

const char* value_kind_name(Value::Kind kind);

}  // namespace onyx::runtime
