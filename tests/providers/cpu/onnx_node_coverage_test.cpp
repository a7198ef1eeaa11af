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

}  // namespace
}  // namespace onyx::test
