// harness_test.cpp: checks of the kernel harness itself (the fake host).
#include <gtest/gtest.h>

#include "kernel_harness.h"

namespace onyx::test {
namespace {

TEST(KernelHarness, UnknownOpIsDeclinedWithReason) {
  NodeSpec node("NoSuchOp");
  node.inputs = {make_tensor<float>({2}, {1, 2})};
  RunResult r = run_node(node);
  EXPECT_TRUE(r.declined);
  EXPECT_NE(r.error.find("NoSuchOp"), std::string::npos) << r.error;
}

TEST(KernelHarness, RejectsInputWhoseBytesDoNotMatchDims) {
  NodeSpec node("Relu");
  node.inputs = {make_tensor<float>({3}, {1, 2})};
  RunResult r = run_node(node);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("input 0"), std::string::npos) << r.error;
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

TEST(KernelHarness, CompareTensorsUsesTolerance) {
  HostTensor a = make_tensor<float>({2}, {1.0f, 2.0f});
  HostTensor b = make_tensor<float>({2}, {1.0f, 2.001f});
  EXPECT_EQ(compare_tensors(a, b, {1e-3, 0}), "");
  EXPECT_NE(compare_tensors(a, b, {1e-5, 0}), "");
  EXPECT_NE(compare_tensors(a, make_tensor<float>({1, 2}, {1, 2})), "");
  EXPECT_NE(compare_tensors(make_tensor<int64_t>({1}, {3}), make_tensor<int64_t>({1}, {4})), "");
}

}  // namespace
}  // namespace onyx::test
