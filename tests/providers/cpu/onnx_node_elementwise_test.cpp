// onnx_node_elementwise_test.cpp: every ONNX backend node test of an
// element-wise op runs through the kernel harness and must match ONNX's
// expected outputs (the runner's default tolerance, rtol 1e-3 / atol 1e-7).
#include <gtest/gtest.h>

#include "onnx_node_suite.h"

namespace onyx::test {
namespace {

TEST(OnnxNodeTests, ElementwiseOps) {
  run_onnx_suite("element-wise",
                 {"Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Exp", "Log", "Neg", "Abs",
                  "Reciprocal", "Relu", "LeakyRelu", "Sigmoid", "Tanh", "Erf", "Gelu", "Equal",
                  "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Where", "Not", "And", "Or",
                  "Xor", "Min", "Max", "Sum", "Mean", "Clip", "Floor", "Ceil", "Round", "Sign",
                  "Elu", "Selu", "HardSigmoid", "HardSwish", "Softplus", "Softsign", "Sin", "Cos",
                  "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
                  "IsNaN", "IsInf", "Mod", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor",
                  "BitwiseNot", "PRelu", "ThresholdedRelu", "Celu", "Mish"});
}

}  // namespace
}  // namespace onyx::test
