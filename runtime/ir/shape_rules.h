// shape_rules.h: internals of shape inference (ir/shape_inference.h).
// Each ONNX op has a rule, written from the ONNX operator spec, that reads
// its inputs' types and constant values through an InferContext and states
// what it knows about its outputs. Unknown dims are -1, unknown rank -1.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"

namespace onyx::runtime::ir::shape {

inline constexpr int64_t kUnknown = -1;

// What a rule infers about one output.
struct TypeShape {
  int32_t dtype = ONYX_DTYPE_UNDEFINED;
  int32_t rank = -1;
  Shape dims;
  bool rank_known() const { return rank >= 0; }
};

class InferContext {
 public:
  InferContext(const Graph& graph, const Node& node);

  const Node& node() const { return node_; }
  int64_t opset() const { return opset_; }
  size_t input_count() const { return node_.inputs.size(); }
  size_t output_count() const { return node_.outputs.size(); }
  // False for an omitted optional input or one past the end.
  bool has_input(size_t i) const;
  bool has_output(size_t i) const { return i < node_.outputs.size() && node_.outputs[i] >= 0; }
  int32_t dtype(size_t i) const;
  int32_t rank(size_t i) const;          // -1 when unknown or absent
  const Shape& dims(size_t i) const;     // empty when the rank is unknown
  TypeShape input_type(size_t i) const;
  // The input's value when known ahead of time: initializers and folded
  // values, but not graph inputs (whose initializer is only a default).
  const Tensor* constant(size_t i) const;
  // A constant integer input (any integer dtype) as int64 values.
  std::optional<std::vector<int64_t>> ints(size_t i) const;
  // A constant numeric input (integer, float32 or float64) as doubles.
  std::optional<std::vector<double>> reals(size_t i) const;

  // Attributes, with the spec's defaults.
  const Attribute* attr(const std::string& name) const { return node_.attr(name); }
  int64_t attr_int(const std::string& name, int64_t fallback) const;
  float attr_float(const std::string& name, float fallback) const;
  std::string attr_string(const std::string& name, const std::string& fallback) const;
  std::optional<std::vector<int64_t>> attr_ints(const std::string& name) const;

  // Results, one per node output.
  std::vector<TypeShape>& outputs() { return outputs_; }
  void set_output(size_t i, int32_t dtype, Shape dims);
  void set_output_rank(size_t i, int32_t dtype, int32_t rank);  // dims unknown
  void set_output_dtype(size_t i, int32_t dtype);               // rank unknown
  void set_output(size_t i, const TypeShape& t);

  // "invalid_argument: Op 'name': message"
  Status error(const std::string& message) const;
  // Normalizes a possibly negative axis against `rank`, or fails naming it.
  StatusOr<int64_t> axis(int64_t value, int64_t rank, const std::string& what = "axis") const;
  // Dim arithmetic on values a model chose (pads of 2^62, strides of 2^40):
  // the result, or an error naming the node and `what` when int64 overflows.
  StatusOr<int64_t> sum(std::span<const int64_t> terms, const std::string& what) const;
  StatusOr<int64_t> product(std::span<const int64_t> factors, const std::string& what) const;
  // A dim computed in floating point (Range's count, Resize's scales, OneHot's
  // depth): refused naming `what` unless finite and in [0, 2^63).
  StatusOr<int64_t> dim_from_real(double value, const std::string& what) const;

 private:
  const Graph& graph_;
  const Node& node_;
  int64_t opset_;
  std::vector<TypeShape> outputs_;
};

using Rule = Status (*)(InferContext&);
using RuleTable = std::unordered_map<std::string, Rule>;

// Each family file adds its ops.
void add_elementwise_rules(RuleTable& table);
void add_nn_rules(RuleTable& table);
void add_tensor_rules(RuleTable& table);
void add_reduce_rules(RuleTable& table);
// com.microsoft rules by op_type (ONNX Runtime's contrib ops that Onyx runs).
void add_microsoft_rules(RuleTable& table);
// ai.onyx rules by op_type (the ops autodiff writes, shape_rules_training.cpp).
void add_training_rules(RuleTable& table);
// ai.onnx rules by op_type.
const RuleTable& rules();
const RuleTable& microsoft_rules();
const RuleTable& training_rules();

// Shared by ai.onnx ops and their com.microsoft quantized forms
// (shape_rules_nn.cpp): numpy matmul of inputs ia and ib; Gemm's [M, N] from
// ia, ib (transA/transB attributes) with ic broadcast to it when present; a
// convolution's output from input ix and weights iw.
Status matmul_shape(InferContext& ctx, size_t ia, size_t ib, int32_t dtype);
Status gemm_shape(InferContext& ctx, size_t ia, size_t ib, size_t ic, int32_t dtype);
// With `channels_last`, input and output are N x spatial... x C (ONNX
// Runtime's NHWC QLinearConv); the weights keep ONNX's layout.
Status conv_shape(InferContext& ctx, size_t ix, size_t iw, int32_t dtype, bool channels_last = false);
// Concat's output from inputs first, first + step, ... along axis_attr
// (shape_rules_tensor.cpp; QLinearConcat interleaves scales and zero points).
Status concat_shape(InferContext& ctx, size_t first, size_t step, int64_t axis_attr, int32_t dtype);

// AveragePool's output shape, for N x C x D1 x ... or, with channels_last,
// N x D1 x ... x C (shape_rules_nn.cpp).
Status pool_shape(InferContext& ctx, bool channels_last);

// Multidirectional (numpy) broadcasting of several shapes. An input of
// unknown rank makes the result's rank unknown.
StatusOr<TypeShape> broadcast(const InferContext& ctx, std::span<const TypeShape> shapes);
// Output 0: the broadcast of `a` and `b`, of type `dtype`.
Status set_broadcast(InferContext& ctx, const TypeShape& a, const TypeShape& b, int32_t dtype);
// Dim helpers: -1 stays unknown.
// The element count of `dims`; kUnknown for an unknown dim or an overflow.
inline int64_t dim_product(std::span<const int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims)
    if (d < 0 || __builtin_mul_overflow(p, d, &p)) return kUnknown;
  return p;
}
// "[1, -1, 0]": a list of attribute or input values (shape_string would
// print -1 as "?").
std::string list_string(std::span<const int64_t> values);
// Same shape and type as input `from` (most unary ops).
void same_as_input(InferContext& ctx, size_t out, size_t from);

// Constant folding of small integer/float "shape arithmetic" (constant_folding.cpp):
// returns the output values of `ctx.node()` when all it needs is known, else
// nothing. Never fails: folding is an optimisation.
std::vector<std::optional<Tensor>> fold_constants(const InferContext& ctx,
                                                  const std::vector<TypeShape>& inferred);

}  // namespace onyx::runtime::ir::shape
