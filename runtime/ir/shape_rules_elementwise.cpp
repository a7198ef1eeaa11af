// shape_rules_elementwise.cpp: ops whose output has the shape of an input
// or of several inputs broadcast together (ONNX multidirectional rules).
#include <iterator>
#include <vector>

#include "ir/shape_rules.h"

namespace onyx::runtime::ir::shape {

namespace {

// Output 0 = input 0 (activations, unary math, normalizations per element).
Status unary(InferContext& ctx) {
  same_as_input(ctx, 0, 0);
  return Status();
}

// Output 0: the broadcast of all present inputs, typed like input 0.
Status broadcast_all(InferContext& ctx, int32_t dtype) {
  std::vector<TypeShape> shapes;
  for (size_t i = 0; i < ctx.input_count(); ++i)
    if (ctx.has_input(i)) shapes.push_back(ctx.input_type(i));
  if (shapes.empty()) return ctx.error("needs at least one input");
  ONYX_ASSIGN_OR_RETURN(TypeShape out, broadcast(ctx, shapes));
  out.dtype = dtype;
  ctx.set_output(0, out);
  return Status();
}

Status arithmetic(InferContext& ctx) { return broadcast_all(ctx, ctx.dtype(0)); }
Status comparison(InferContext& ctx) { return broadcast_all(ctx, ONYX_DTYPE_BOOL); }

// Same shape as input 0 but a different element type.
Status to_bool(InferContext& ctx) {
  ctx.set_output(0, {ONYX_DTYPE_BOOL, ctx.rank(0), ctx.dims(0)});
  return Status();
}

Status where(InferContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1) || !ctx.has_input(2))
    return ctx.error("needs condition, X and Y");
  return broadcast_all(ctx, ctx.dtype(1));
}

Status cast(InferContext& ctx) {
  const Attribute* to = ctx.attr("to");
  if (!to) return ctx.error("has no 'to' attribute");
  // Cast-1 spelled 'to' as the enum's name ("FLOAT"); later versions use its value.
  static const char* const names[] = {"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16",
                                      "INT32", "INT64", "STRING", "BOOL", "FLOAT16", "DOUBLE",
                                      "UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16"};
  int32_t dtype = ONYX_DTYPE_UNDEFINED;
  if (to->type == ONYX_ATTR_INT) dtype = int32_t(to->i);
  for (int32_t k = 0; to->type == ONYX_ATTR_STRING && k < int32_t(std::size(names)); ++k)
    if (to->s == names[k]) dtype = k;
  if (dtype == ONYX_DTYPE_UNDEFINED) return ctx.error("'to' names no known element type");
  ctx.set_output(0, {dtype, ctx.rank(0), ctx.dims(0)});
  return Status();
}

Status cast_like(InferContext& ctx) {
  ctx.set_output(0, {ctx.dtype(1), ctx.rank(0), ctx.dims(0)});
  return Status();
}

// Dropout: output, and mask (bool since opset 10; X's type before).
Status dropout(InferContext& ctx) {
  same_as_input(ctx, 0, 0);
  ctx.set_output(1, {ctx.opset() >= 10 ? ONYX_DTYPE_BOOL : ctx.dtype(0), ctx.rank(0), ctx.dims(0)});
  return Status();
}

Status quantize_linear(InferContext& ctx) {
  // Output type: output_dtype (opset 21+), else y_zero_point's, else uint8.
  int32_t dtype = int32_t(ctx.attr_int("output_dtype", 0));
  if (dtype == ONYX_DTYPE_UNDEFINED) dtype = ctx.has_input(2) ? ctx.dtype(2) : ONYX_DTYPE_UINT8;
  ctx.set_output(0, {dtype, ctx.rank(0), ctx.dims(0)});
  return Status();
}

Status dequantize_linear(InferContext& ctx) {
  int32_t dtype = int32_t(ctx.attr_int("output_dtype", 0));
  if (dtype == ONYX_DTYPE_UNDEFINED) dtype = ctx.dtype(1);
  ctx.set_output(0, {dtype, ctx.rank(0), ctx.dims(0)});
  return Status();
}

}  // namespace

void add_elementwise_rules(RuleTable& table) {
  for (const char* op :
       {"Abs", "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "BitwiseNot", "Ceil", "Celu",
        "Clip", "Cos", "Cosh", "CumProd", "CumSum", "Elu", "Erf", "Exp", "Floor", "Gelu", "HardSigmoid",
        "HardSwish", "Hardmax", "Identity", "LeakyRelu", "Log", "LogSoftmax", "LpNormalization",
        "LRN", "MeanVarianceNormalization", "Mish", "Neg", "Not", "Reciprocal", "Relu", "Round",
        "Selu", "Shrink", "Sigmoid", "Sign", "Sin", "Sinh", "Softmax", "Softplus", "Softsign",
        "Sqrt", "Swish", "Tan", "Tanh", "ThresholdedRelu", "Trilu", "InstanceNormalization",
        "ReverseSequence", "ScatterElements", "Scatter", "ScatterND"})
    table[op] = unary;
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Mod", "BitShift", "BitwiseAnd",
                         "BitwiseOr", "BitwiseXor", "Max", "Min", "Sum", "Mean", "PRelu"})
    table[op] = arithmetic;
  for (const char* op :
       {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor"})
    table[op] = comparison;
  table["IsNaN"] = to_bool;
  table["IsInf"] = to_bool;
  table["Where"] = where;
  table["Cast"] = cast;
  table["CastLike"] = cast_like;
  table["Dropout"] = dropout;
  table["QuantizeLinear"] = quantize_linear;
  table["DequantizeLinear"] = dequantize_linear;
}

}  // namespace onyx::runtime::ir::shape
