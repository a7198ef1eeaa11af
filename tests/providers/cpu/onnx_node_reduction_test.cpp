// onnx_node_reduction_test.cpp: every ONNX backend node test of Reduce* and
// ArgMax/ArgMin against ONNX's expected outputs (runner tolerance).
#include <gtest/gtest.h>

#include "onnx_node_suite.h"

namespace onyx::test {
namespace {

TEST(OnnxNodeTests, ReductionOps) {
  run_onnx_suite("reduction",
                 {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                  "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "ArgMax",
                  "ArgMin"});
}

}  // namespace
}  // namespace onyx::test
