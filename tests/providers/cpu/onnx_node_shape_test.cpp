// onnx_node_shape_test.cpp: every ONNX backend node test of the shape and
// data-movement ops against ONNX's expected outputs (runner tolerance).
#include <gtest/gtest.h>

#include "onnx_node_suite.h"

namespace onyx::test {
namespace {

// Training-mode Dropout with ratio > 0: ONNX drew the expected mask from
// numpy's generator; shape_ops_test.cpp checks these kernels statistically.
constexpr const char* kRandom = "expected output drawn from numpy's random generator";

TEST(OnnxNodeTests, ShapeOps) {
  run_onnx_suite("shape",
                 {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Transpose", "Concat",
                  "Split", "Slice", "Gather", "GatherElements", "GatherND", "ScatterElements",
                  "Scatter", "ScatterND", "Shape", "Size", "Constant", "ConstantOfShape", "Expand",
                  "Tile", "Range", "Cast", "CastLike", "Dropout", "Pad", "OneHot", "Trilu",
                  "NonZero", "CumSum", "TopK", "EyeLike"},
                 {{"test_training_dropout", kRandom},
                  {"test_training_dropout_default", kRandom},
                  {"test_training_dropout_default_mask", kRandom},
                  {"test_training_dropout_mask", kRandom}});
}

}  // namespace
}  // namespace onyx::test
