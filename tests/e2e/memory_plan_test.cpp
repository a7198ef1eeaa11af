// memory_plan_test.cpp: the static memory plan of the test models stays within
// 10% of the lower bound (the peak of simultaneously live tensor bytes).
#include <gtest/gtest.h>

#include <cstdio>

#include "e2e_util.h"
#include "test_models.h"

namespace onyx::e2e {
namespace {

namespace tm = onyx::test_models;

// Planned arena bytes over the lower bound. A greedy best-fit planner lands
// within a few percent of the bound on chain-shaped graphs like these; 10%
// leaves room for alignment padding while still catching a planner that
// stops reusing memory (which gives ratios of 2 and more here).
constexpr double kMaxRatio = 1.10;

std::string memory_report(onyx::Session& session, const std::vector<int64_t>& dims) {
  const char* name = "x";
  const int64_t* dims_ptr = dims.data();
  size_t rank = dims.size();
  char* json = nullptr;
  onyx::check(onyx_session_memory_report(session.get(), &name, &dims_ptr, &rank, 1, &json));
  std::string out = json;
  onyx_string_release(json);
  return out;
}

void check_plan(const onnx::ModelProto& proto, const char* model, const std::vector<int64_t>& dims) {
  std::string bytes;
  ASSERT_TRUE(proto.SerializeToString(&bytes));
  onyx::Env env;
  onyx::SessionOptions options;
  options.provider("cpu");
  onyx::Session session(env, std::as_bytes(std::span<const char>(bytes.data(), bytes.size())), options);
  std::string json = memory_report(session, dims);

  std::vector<double> arena = json_numbers(json, "arena_bytes");
  std::vector<double> bound = json_numbers(json, "lower_bound_bytes");
  std::vector<double> ratio = json_numbers(json, "ratio");
  std::vector<double> planned = json_numbers(json, "planned_tensors");
  ASSERT_FALSE(arena.empty()) << "no device in the memory report: " << json;
  ASSERT_EQ(arena.size(), bound.size()) << json;
  ASSERT_EQ(arena.size(), ratio.size()) << json;
  for (size_t d = 0; d < arena.size(); ++d) {
    std::printf("[ memory   ] %s batch %lld device %zu: planned %.0f bytes, lower bound %.0f, ratio %.4f, %.0f planned tensors\n",
                model, static_cast<long long>(dims[0]), d, arena[d], bound[d], ratio[d],
                d < planned.size() ? planned[d] : -1.0);
    // A zero bound would make the ratio vacuous: these models have activations.
    EXPECT_GT(bound[d], 0) << json;
    EXPECT_NEAR(ratio[d], arena[d] / bound[d], 1e-9) << json;
    EXPECT_GE(arena[d], bound[d]) << "a plan smaller than the lower bound is impossible: " << json;
    EXPECT_LE(ratio[d], kMaxRatio) << model << " batch " << dims[0] << ": " << json;
  }
}

TEST(MemoryPlan, MlpWithinTenPercentOfLowerBound) {
  onnx::ModelProto mlp = tm::build_mlp(tm::make_mlp_weights());
  check_plan(mlp, "mlp", {1, 784});
  check_plan(mlp, "mlp", {8, 784});
}

TEST(MemoryPlan, CnnWithinTenPercentOfLowerBound) {
  onnx::ModelProto cnn = tm::build_cnn(tm::make_cnn_weights());
  check_plan(cnn, "cnn", {1, 1, 28, 28});
  check_plan(cnn, "cnn", {8, 1, 28, 28});
}

}  // namespace
}  // namespace onyx::e2e
