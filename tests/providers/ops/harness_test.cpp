// harness_test.cpp: checks of the kernel harness itself, on the reference
// provider.
#include <gtest/gtest.h>

#include "kernel_harness.h"
#include "test_providers.h"

namespace onyx::test {
namespace {

TEST(KernelHarness, UnknownOpIsDeclinedWithReason) {
  NodeSpec node("NoSuchOp");
  node.inputs = {make_tensor<float>({2}, {1, 2})};
  RunResult r = run_node(node);
  EXPECT_TRUE(r.declined);
  EXPECT_ERROR_MENTIONS(r, "NoSuchOp");
}

TEST(KernelHarness, RejectsInputWhoseBytesDoNotMatchDims) {
  NodeSpec node("Relu");
  node.inputs = {make_tensor<float>({3}, {1, 2})};
  RunResult r = run_node(node);
  EXPECT_FALSE(r.ok());
  EXPECT_ERROR_MENTIONS(r, "input 0");
}

TEST(KernelHarness, HalfAndBfloat16Conversions) {
  EXPECT_EQ(float_to_half(1.0f), 0x3C00);
  EXPECT_EQ(float_to_half(-2.0f), 0xC000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_half(1e6f), 0x7C00);
  EXPECT_EQ(float_to_half(5.960464477539063e-08f), 0x0001);  // smallest subnormal
  EXPECT_EQ(half_to_float(0x0001), 5.960464477539063e-08f);
  EXPECT_EQ(half_to_float(0x3555), 0.333251953125f);
  // 1 + 2^-11 is halfway between 1 and the next half: ties to even (1).
  EXPECT_EQ(float_to_half(1.0f + 1.0f / 2048), 0x3C00);
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3F80);
  EXPECT_EQ(bfloat16_to_float(0x4049), 3.140625f);
}

}  // namespace
}  // namespace onyx::test
