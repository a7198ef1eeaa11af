// required_inputs_test.cpp: a node that omits an input its op requires (an
// empty name in its inputs) fails with an error naming that input on every
// provider that claims it, and never reads an absent tensor. Found by the
// model_run fuzz harness: a Resize with no X read a rank from nowhere and
// allocated until it ran out of memory (tests/fuzz/corpus/model_run/
// found_resize_without_x.onnx).
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

}  // namespace
}  // namespace onyx::test
