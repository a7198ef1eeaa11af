// onnx_node_coverage_test.cpp: every ONNX backend node test of the ops added
// for operator coverage (losses, ...) against ONNX's expected outputs
// (runner tolerance). Cast's float8/4-bit cases run in onnx_node_shape_test.
#include <gtest/gtest.h>

#include "onnx_node_suite.h"

namespace onyx::test {
namespace {

TEST(OnnxNodeTests, LossOps) {
  run_onnx_suite("loss", {"NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"});
}

TEST(OnnxNodeTests, AttentionOps) { run_onnx_suite("attention", {"Attention", "FlexAttention"}); }

TEST(OnnxNodeTests, ResizeOps) { run_onnx_suite("resize", {"Resize", "Upsample"}); }

TEST(OnnxNodeTests, QuantizeOps) {
  run_onnx_suite("quantize", {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"});
}

TEST(OnnxNodeTests, GridSampleAndOptimizerOps) {
  run_onnx_suite("grid sample, optimizers", {"GridSample", "Adagrad", "Adam", "Momentum"});
}

TEST(OnnxNodeTests, SpectralAndImageOps) {
  run_onnx_suite("spectral, image", {"STFT", "HannWindow", "HammingWindow", "BlackmanWindow", "CenterCropPad",
                                     "Col2Im", "AffineGrid", "RotaryEmbedding", "RoiAlign"});
}

// DFT: the expected outputs come from float32 FFTs, whose round-off leaves
// ~1e-7 * n * max|x| where the exact value is 0 (we sum in double); atol
// 1e-5 covers that for these inputs (n <= 10, |x| <= ~10), rtol as the runner.
TEST(OnnxNodeTests, DftOps) {
  int passed = 0;
  for (const std::string& name : list_onnx_node_tests("test_dft")) {
    OnnxCaseResult r = run_onnx_node_test(name, {.rtol = 1e-3, .atol = 1e-5});
    EXPECT_EQ(r.outcome, OnnxCaseResult::kPass) << name << ": " << r.message;
    passed += r.outcome == OnnxCaseResult::kPass;
  }
  if (passed == 0 && onnx_case_ops().empty()) GTEST_SKIP() << "no ONNX node tests";
  EXPECT_GE(passed, 10);
}

TEST(OnnxNodeTests, RecurrentOps) { run_onnx_suite("recurrent", {"RNN", "GRU", "LSTM"}); }

TEST(OnnxNodeTests, SelectionAndEinsumOps) {
  run_onnx_suite("selection, einsum", {"NonMaxSuppression", "Unique", "Einsum", "TfIdfVectorizer"});
}

TEST(OnnxNodeTests, IntegerAndUnpoolOps) {
  run_onnx_suite("integer, unpool, deform",
                 {"ConvInteger", "QLinearConv", "MatMulInteger", "QLinearMatMul", "MaxUnpool", "DeformConv"});
}

TEST(OnnxNodeTests, RecurrentStateOps) {
  run_onnx_suite("causal conv, linear attention", {"CausalConvWithState", "LinearAttention"});
}

TEST(OnnxNodeTests, SmallOps) {
  run_onnx_suite("small", {"SwiGLU", "TensorScatter", "OptionalHasElement", "OptionalGetElement", "Binarizer",
                           "ArrayFeatureExtractor", "MelWeightMatrix", "TreeEnsemble"});
}

TEST(OnnxNodeTests, MiscOps) {
  run_onnx_suite("misc", {"RMSNormalization", "LpNormalization", "Shrink", "Swish", "BitCast", "Compress",
                          "DepthToSpace", "SpaceToDepth", "ReverseSequence", "Det", "CumProd"});
}

}  // namespace
}  // namespace onyx::test
