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

TEST(OnnxNodeTests, AttentionOps) { run_onnx_suite("attention", {"Attention"}); }

TEST(OnnxNodeTests, ResizeOps) { run_onnx_suite("resize", {"Resize", "Upsample"}); }

TEST(OnnxNodeTests, QuantizeOps) {
  run_onnx_suite("quantize", {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"});
}

TEST(OnnxNodeTests, GridSampleAndOptimizerOps) {
  run_onnx_suite("grid sample, optimizers", {"GridSample", "Adagrad", "Adam", "Momentum"});
}

TEST(OnnxNodeTests, SpectralAndImageOps) {
  run_onnx_suite("spectral, image", {"DFT", "STFT", "HannWindow", "HammingWindow", "BlackmanWindow", "CenterCropPad",
                                     "Col2Im", "AffineGrid", "RotaryEmbedding"});
}

TEST(OnnxNodeTests, MiscOps) {
  run_onnx_suite("misc", {"RMSNormalization", "LpNormalization", "Shrink", "Swish", "BitCast", "Compress",
                          "DepthToSpace", "SpaceToDepth", "ReverseSequence", "Det", "CumProd"});
}

}  // namespace
}  // namespace onyx::test
