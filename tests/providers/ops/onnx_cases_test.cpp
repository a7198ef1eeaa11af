// onnx_cases_test.cpp: the ONNX backend node tests of each op family on
// every provider (see onnx_cases.h): as given and with threads, outputs in
// place and shapes hidden, against ONNX's expected outputs.
#include <gtest/gtest.h>

#include "onnx_cases.h"
#include "test_providers.h"

namespace onyx::test {
namespace {

ONYX_PROVIDER_SUITE(OnnxNodeTests);

ONYX_OP_TEST(OnnxNodeTests, ElementwiseOps) {
  run_onnx_family("element-wise",
                  {"Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Exp", "Log", "Neg", "Abs",
                   "Reciprocal", "Relu", "LeakyRelu", "Sigmoid", "Tanh", "Erf", "Gelu", "Equal",
                   "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Where", "Not", "And", "Or",
                   "Xor", "Min", "Max", "Sum", "Mean", "Clip", "Floor", "Ceil", "Round", "Sign",
                   "Elu", "Selu", "HardSigmoid", "HardSwish", "Softplus", "Softsign", "Sin", "Cos",
                   "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
                   "IsNaN", "IsInf", "Mod", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor",
                   "BitwiseNot", "PRelu", "ThresholdedRelu", "Celu", "Mish"});
}

ONYX_OP_TEST(OnnxNodeTests, ReductionOps) {
  run_onnx_family("reduction",
                  {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                   "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin"});
}

// Training-mode Dropout's random cases are not compared (the CPU list says
// why); shape_ops_test.cpp checks those kernels statistically.
ONYX_OP_TEST(OnnxNodeTests, ShapeOps) {
  run_onnx_family("shape",
                  {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Transpose", "Concat",
                   "Split", "Slice", "Gather", "GatherElements", "GatherND", "ScatterElements",
                   "Scatter", "ScatterND", "Shape", "Size", "Constant", "ConstantOfShape", "Expand",
                   "Tile", "Range", "Cast", "CastLike", "Dropout", "Pad", "OneHot", "Trilu",
                   "NonZero", "CumSum", "TopK", "EyeLike"});
}

ONYX_OP_TEST(OnnxNodeTests, ConvOps) { run_onnx_family("convolution", {"Conv", "ConvTranspose"}); }

ONYX_OP_TEST(OnnxNodeTests, LinalgOps) { run_onnx_family("linear algebra", {"MatMul", "Gemm", "QLinearMatMul"}); }

ONYX_OP_TEST(OnnxNodeTests, NormOps) {
  run_onnx_family("normalization", {"BatchNormalization", "LayerNormalization", "InstanceNormalization",
                                    "GroupNormalization", "LRN", "MeanVarianceNormalization"});
}

ONYX_OP_TEST(OnnxNodeTests, PoolOps) {
  run_onnx_family("pooling", {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "LpPool"});
}

ONYX_OP_TEST(OnnxNodeTests, SoftmaxOps) { run_onnx_family("softmax", {"Softmax", "LogSoftmax", "Hardmax"}); }

ONYX_OP_TEST(OnnxNodeTests, LossOps) {
  run_onnx_family("loss", {"NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"});
}

ONYX_OP_TEST(OnnxNodeTests, AttentionOps) { run_onnx_family("attention", {"Attention", "FlexAttention"}); }

ONYX_OP_TEST(OnnxNodeTests, ResizeOps) { run_onnx_family("resize", {"Resize", "Upsample"}); }

ONYX_OP_TEST(OnnxNodeTests, QuantizeOps) {
  run_onnx_family("quantize", {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"});
}

ONYX_OP_TEST(OnnxNodeTests, GridSampleAndOptimizerOps) {
  run_onnx_family("grid sample, optimizers", {"GridSample", "Adagrad", "Adam", "Momentum"});
}

ONYX_OP_TEST(OnnxNodeTests, SpectralAndImageOps) {
  run_onnx_family("spectral, image", {"STFT", "HannWindow", "HammingWindow", "BlackmanWindow", "CenterCropPad",
                                      "Col2Im", "AffineGrid", "RotaryEmbedding", "RoiAlign"});
}

// DFT: the expected outputs come from float32 FFTs, whose round-off leaves
// ~1e-7 * n * max|x| where the exact value is 0 (the CPU sums in double);
// atol 1e-5 covers that for these inputs (n <= 10, |x| <= ~10).
ONYX_OP_TEST(OnnxNodeTests, DftOps) {
  OnnxFamilyOptions options;
  options.reference_atol = 1e-5;
  run_onnx_family("DFT", {"DFT"}, options);
}

ONYX_OP_TEST(OnnxNodeTests, RecurrentOps) { run_onnx_family("recurrent", {"RNN", "GRU", "LSTM"}); }

ONYX_OP_TEST(OnnxNodeTests, SelectionAndEinsumOps) {
  run_onnx_family("selection, einsum", {"NonMaxSuppression", "Unique", "Einsum", "TfIdfVectorizer"});
}

ONYX_OP_TEST(OnnxNodeTests, IntegerAndUnpoolOps) {
  run_onnx_family("integer, unpool, deform",
                  {"ConvInteger", "QLinearConv", "MatMulInteger", "QLinearMatMul", "MaxUnpool", "DeformConv"});
}

ONYX_OP_TEST(OnnxNodeTests, RecurrentStateOps) {
  run_onnx_family("causal conv, linear attention", {"CausalConvWithState", "LinearAttention"});
}

ONYX_OP_TEST(OnnxNodeTests, SmallOps) {
  run_onnx_family("small", {"SwiGLU", "TensorScatter", "OptionalHasElement", "OptionalGetElement", "Binarizer",
                            "ArrayFeatureExtractor", "MelWeightMatrix", "TreeEnsemble"});
}

ONYX_OP_TEST(OnnxNodeTests, MiscOps) {
  run_onnx_family("misc", {"RMSNormalization", "LpNormalization", "Shrink", "Swish", "BitCast", "Compress",
                           "DepthToSpace", "SpaceToDepth", "ReverseSequence", "Det", "CumProd"});
}

}  // namespace
}  // namespace onyx::test
