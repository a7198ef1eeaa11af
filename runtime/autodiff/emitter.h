// emitter.h: appends nodes to an ONNX graph under fresh names, and knows the
// element type and (possibly partial) shape of values from ONNX shape
// inference. Gradient rules and loss builders emit through it.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace onyx::runtime::autodiff {

// The domain of Onyx's own gradient and loss ops (kernels: providers/cpu/kernels/grad/).
inline constexpr const char* kOnyxDomain = "ai.onyx";

// Element type and shape of a value; dims of -1 are unknown, rank -1 unknown.
// symbols[d], when present and not empty, names dim d (an ONNX dim_param such
// as "batch"): two dims with the same name are equal, whatever their size.
struct ValueType {
  ValueType(int32_t dtype_ = 0, int rank_ = -1, std::vector<int64_t> dims_ = {}, std::vector<std::string> symbols_ = {})
      : dtype(dtype_), rank(rank_), dims(std::move(dims_)), symbols(std::move(symbols_)) {}
  int32_t dtype;
  int rank;
  std::vector<int64_t> dims;
  std::vector<std::string> symbols;
  bool shape_known() const;
  // Provably the same shape: same rank and, dim by dim, the same size or the same name.
  bool same_shape(const ValueType& other) const;
};

ONNX_NAMESPACE::AttributeProto attr_int(const std::string& name, int64_t v);
ONNX_NAMESPACE::AttributeProto attr_float(const std::string& name, float v);
ONNX_NAMESPACE::AttributeProto attr_ints(const std::string& name, const std::vector<int64_t>& v);
ONNX_NAMESPACE::AttributeProto attr_string(const std::string& name, const std::string& v);

class Emitter {
 public:
  // `graph` receives the nodes; `opset` is the model's ai.onnx version (ops
  // are emitted in the form that version defines).
  Emitter(ONNX_NAMESPACE::GraphProto* graph, int64_t opset, std::string prefix);

  // Records the types found by shape inference over a model.
  void learn_types(const ONNX_NAMESPACE::GraphProto& inferred);
  // Runs ONNX shape inference over `graph` (at opset_) and learns the types
  // it finds; ops it does not know keep unknown types.
  void infer_types(const ONNX_NAMESPACE::GraphProto& graph);
  std::optional<ValueType> type(const std::string& value) const;
  void set_type(const std::string& value, ValueType t) { types_[value] = std::move(t); }
  // The element type of `value`, or float32 when unknown.
  int32_t dtype(const std::string& value) const;
  int64_t opset() const { return opset_; }

  // Adds a node; returns its outputs (fresh names).
  std::vector<std::string> node(const std::string& op, const std::vector<std::string>& inputs,
                                size_t outputs = 1,
                                std::vector<ONNX_NAMESPACE::AttributeProto> attrs = {},
                                const std::string& domain = "");
  std::string op(const std::string& op, const std::vector<std::string>& inputs,
                 std::vector<ONNX_NAMESPACE::AttributeProto> attrs = {},
                 const std::string& domain = "") {
    return node(op, inputs, 1, std::move(attrs), domain)[0];
  }
  // Leaves output `value` of the node that produces it out (named ""): for
  // multi-output ops whose kernels skip work for omitted outputs.
  void drop_output(const std::string& value);
  // A unique value name with the emitter's prefix.
  std::string fresh(const std::string& hint);

  // Constants (Constant nodes).
  std::string ints(const std::vector<int64_t>& values);           // 1-D int64
  std::string scalar(double value, int32_t dtype);                 // rank 0
  std::string scalar_like(double value, const std::string& like) { return scalar(value, dtype(like)); }

  // Ops whose ONNX form changed across opsets, emitted for opset_.
  std::string reduce(const std::string& op, const std::string& x, const std::vector<int64_t>& axes,
                     bool keepdims);
  std::string unsqueeze(const std::string& x, const std::vector<int64_t>& axes);
  std::vector<std::string> split(const std::string& x, int64_t axis, const std::string& sizes,
                                 size_t outputs);

  // g, which has the shape of value `full`, summed back to the shape of
  // `like` after broadcasting; g itself when the shapes are provably the
  // same (ValueType::same_shape: equal sizes or the same dim names).
  std::string sum_to_shape(const std::string& g, const std::string& like, const std::string& full);
  // Zeros with the shape and type of `like`.
  std::string zeros_like(const std::string& like);

 private:
  ONNX_NAMESPACE::GraphProto* graph_;
  int64_t opset_;
  std::string prefix_;
  std::map<std::string, ValueType> types_;
  std::map<std::string, int> used_;
};

}  // namespace onyx::runtime::autodiff
