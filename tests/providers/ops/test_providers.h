// test_providers.h: the providers every op test runs on, as gtest parameters
// (the way IREE's CTS registry composes suites x backends): a suite declared
// with ONYX_PROVIDER_SUITE runs once per provider plugin built here whose
// device is present: cpu (the reference), onednn (where built), gpuemu (the
// GPU providers' code on an emulated device) and cuda / rocm where a GPU is.
// run_node (kernel_harness.h) loads the current test's plugin from disk and
// drives it through the conformance ABI host (conformance/abi_host.h), the
// one test host.
//
// A provider other than the reference may decline a node: run_node then
// throws ProviderDeclined and ONYX_OP_TEST skips the test with the
// provider's reason (as ggml's test-backend-ops skips what a backend does not
// support). The reference's declines come back in RunResult::declined for the
// test to judge, so a CPU kernel that stops claiming a node fails its tests.
//
//   ONYX_PROVIDER_SUITE(Softmax);
//   ONYX_OP_TEST(Softmax, LargeInputsStayFinite) { RunResult r = run_node(...); ... }
//
//   ONYX_PROVIDER_CASE_SUITE(PoolTest, Pool, cases(), case_index);   // provider x case
//   ONYX_OP_TEST(PoolTest, MatchesReference) { const Pool& c = test_case(self); ... }
//
// ONYX_TEST_PROVIDERS=cpu,gpuemu (environment) restricts the providers;
// ONYX_TEST_PROVIDER_PLUGINS=cpu=PATH,cuda=PATH replaces the plugins built
// with the test (a build carried to a GPU machine, scripts/gpu-check.sh).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <ostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "abi_host.h"

namespace onyx::test {

struct TestProvider {
  std::string name;         // "cpu", "onednn", "gpuemu", "cuda", "rocm"
  std::string plugin_path;
  bool reference = false;   // the CPU provider: every op test's baseline
};

// The providers the tests run on, in a fixed order, reference first.
const std::vector<TestProvider>& test_providers();

// The plugin of `provider`, loaded and its device 0 opened once per process.
struct LoadedProvider {
  std::unique_ptr<conformance::LoadedPlugin> plugin;
  std::unique_ptr<conformance::OpenDevice> device;
};
const LoadedProvider& load_provider(const TestProvider& provider);

// The provider of the running test (the reference outside parametrized tests).
const TestProvider& current_provider();
void set_current_provider(const TestProvider& provider);

// A non-reference provider declined the node a test runs (what() is its reason).
struct ProviderDeclined : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Runs the body of an op test: a ProviderDeclined escaping it skips the test
// with the reason. A test that known_failures.txt lists (a provider's known
// bug, with the reason) runs with its failures intercepted: if it still fails
// it is skipped with the listed reason, and if it passes it fails, so that
// the line gets removed (IREE's expected-failure lists work the same way).
void run_op_test(const std::function<void()>& body);

// Fixtures: the test's provider is current from SetUp to TearDown.
class ProviderTest : public ::testing::TestWithParam<TestProvider> {
 protected:
  void SetUp() override { set_current_provider(GetParam()); }
  void TearDown() override { set_current_provider(test_providers().front()); }
};

template <typename Case>
class ProviderCaseTest : public ::testing::TestWithParam<std::tuple<TestProvider, Case>> {
 protected:
  void SetUp() override { set_current_provider(std::get<0>(this->GetParam())); }
  void TearDown() override { set_current_provider(test_providers().front()); }
};

// The case parameter of a provider x case test.
template <typename Fixture>
const auto& test_case(const Fixture& self) {
  return std::get<1>(self.GetParam());
}

std::string provider_param_name(const ::testing::TestParamInfo<TestProvider>& info);
// gtest prints a provider parameter by its name.
void PrintTo(const TestProvider& provider, std::ostream* os);
// A case name made of its index, for ONYX_PROVIDER_CASE_SUITE.
template <typename Case>
std::string case_index(const Case&, size_t index) {
  return std::to_string(index);
}

}  // namespace onyx::test

#define ONYX_PROVIDER_SUITE(Suite)                                                 \
  class Suite : public ::onyx::test::ProviderTest {};                              \
  INSTANTIATE_TEST_SUITE_P(, Suite, ::testing::ValuesIn(::onyx::test::test_providers()), \
                           ::onyx::test::provider_param_name)

// `cases` is a std::vector<Case>; `case_name(const Case&, size_t index)`
// names a case in the test names (alphanumerics and '_').
#define ONYX_PROVIDER_CASE_SUITE(Suite, Case, cases, case_name)                                    \
  class Suite : public ::onyx::test::ProviderCaseTest<Case> {};                                    \
  INSTANTIATE_TEST_SUITE_P(                                                                        \
      , Suite,                                                                                     \
      ::testing::Combine(::testing::ValuesIn(::onyx::test::test_providers()), ::testing::ValuesIn(cases)), \
      [](const ::testing::TestParamInfo<std::tuple<::onyx::test::TestProvider, Case>>& p) {        \
        /* Combine varies the last generator fastest: the case is index % case count. */           \
        const size_t count = (cases).size();                                                       \
        return std::get<0>(p.param).name + "_" + case_name(std::get<1>(p.param), p.index % count); \
      })

// A test of `Suite` on every provider; the body sees the fixture as `self`.
#define ONYX_OP_TEST(Suite, Name)                                                      \
  static void Suite##_##Name##_Body(const Suite& self);                                \
  TEST_P(Suite, Name) {                                                                \
    ::onyx::test::run_op_test([this] { Suite##_##Name##_Body(*this); });              \
  }                                                                                    \
  static void Suite##_##Name##_Body([[maybe_unused]] const Suite& self)
