// bad_node_inputs_test.cpp: inputs a kernel must not trust, found by the
// model_run fuzz harness (the inputs are in tests/fuzz/corpus/model_run):
// an omitted required input (a Resize with no X read a rank from nowhere
// and allocated until it ran out of memory: found_resize_without_x.onnx) and
// an input of the wrong rank (an RNN read the last dimension of a scalar R:
// found_rnn_scalar_r.onnx). Each fails with an error naming the input on
// every provider that claims the node.
#include <gtest/gtest.h>

#include "kernel_harness.h"
#include "test_providers.h"

namespace onyx::test {
namespace {

ONYX_PROVIDER_SUITE(RequiredInputs);

ONYX_OP_TEST(RequiredInputs, AnOmittedDataInputIsAnErrorNamingIt) {
  NodeSpec node("Resize", 19);
  node.inputs = {omitted(), omitted(), make_constant<float>({4}, {1, 1, 2, 2})};
  RunResult r = run_node(node);
  EXPECT_ERROR_MENTIONS(r, "input 0 is required");
}

ONYX_PROVIDER_SUITE(WrongRankInputs);

ONYX_OP_TEST(WrongRankInputs, AScalarRecurrenceWeightIsAnErrorNamingIt) {
  NodeSpec node("RNN", 14);
  node.inputs = {make_tensor<float>({1, 1, 2}, {1, 2}), make_constant<float>({1, 1, 2}, {1, 1}),
                 make_constant<float>({}, {1})};
  RunResult r = run_node(node);
  EXPECT_ERROR_MENTIONS(r, "R must be 3-D");
}

}  // namespace
}  // namespace onyx::test
