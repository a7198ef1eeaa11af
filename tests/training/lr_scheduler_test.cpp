// Learning-rate schedules: values at known points, computed by hand.
#include <gtest/gtest.h>

#include "training/lr_scheduler.h"

namespace onyx::runtime::training {
namespace {

TEST(LrSchedule, ConstantWithWarmup) {
  LrSchedule s;
  s.base_lr = 0.1;
  s.warmup_steps = 4;
  EXPECT_DOUBLE_EQ(s.lr_at(0), 0.025);
  EXPECT_DOUBLE_EQ(s.lr_at(3), 0.1);
  EXPECT_DOUBLE_EQ(s.lr_at(100), 0.1);
}

TEST(LrSchedule, LinearDecaysToTheFinalFactor) {
  auto s = parse_lr_schedule("linear:warmup=10,total=110,final=0.5");
  ASSERT_TRUE(s.ok());
  s->base_lr = 1.0;
  EXPECT_DOUBLE_EQ(s->lr_at(10), 1.0);
  EXPECT_DOUBLE_EQ(s->lr_at(60), 0.75);
  EXPECT_DOUBLE_EQ(s->lr_at(110), 0.5);
  EXPECT_DOUBLE_EQ(s->lr_at(500), 0.5);
}

TEST(LrSchedule, CosineHalfwayIsTheMidpoint) {
  auto s = parse_lr_schedule("cosine:total=100");
  ASSERT_TRUE(s.ok());
  s->base_lr = 2.0;
  EXPECT_DOUBLE_EQ(s->lr_at(0), 2.0);
  EXPECT_NEAR(s->lr_at(50), 1.0, 1e-12);
  EXPECT_NEAR(s->lr_at(100), 0.0, 1e-12);
}

TEST(LrSchedule, StepMultipliesByGammaEveryStepSize) {
  auto s = parse_lr_schedule("step:step_size=3,gamma=0.5");
  ASSERT_TRUE(s.ok());
  s->base_lr = 1.0;
  EXPECT_DOUBLE_EQ(s->lr_at(2), 1.0);
  EXPECT_DOUBLE_EQ(s->lr_at(3), 0.5);
  EXPECT_DOUBLE_EQ(s->lr_at(7), 0.25);
}

TEST(LrSchedule, BadTextAndRangesAreRejected) {
  EXPECT_FALSE(parse_lr_schedule("exponential").ok());
  EXPECT_FALSE(parse_lr_schedule("cosine:total=x").ok());
  EXPECT_FALSE(parse_lr_schedule("cosine:colour=1").ok());
  auto s = parse_lr_schedule("cosine:warmup=10,total=5");
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->validate().ok());
}

}  // namespace
}  // namespace onyx::runtime::training
