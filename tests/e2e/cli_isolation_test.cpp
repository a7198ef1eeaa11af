// cli_isolation_test.cpp: `onyx run --isolate` with a provider plugin whose
// Relu segfaults or hangs (tests/plugins crash_*, triggered by an input whose
// first element is 666): onyx exits 1 with an error naming the provider and
// node, not by a signal; without a fault, --isolate writes the same outputs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "e2e_util.h"
#include "model_builder.h"
#include "test_models.h"

namespace onyx::e2e {
namespace {

namespace fs = std::filesystem;
namespace tm = onyx::test_models;
using ::testing::HasSubstr;

class CliIsolation : public ::testing::Test {
 protected:
  void SetUp() override {
    tm::write_all_models(dir_.path());
    std::ofstream(dir_ / "relu.onnx", std::ios::binary) << onyx::testing::ModelBuilder()
                                                              .input("x", {2, 3})
                                                              .output("y", {2, 3})
                                                              .node("Relu", {"x"}, {"r"}, "relu0")
                                                              .node("Add", {"r", "x"}, {"y"}, "add0")
                                                              .bytes();
    write_npy_f32(dir_ / "fault.npy", {2, 3}, {666, 1, -2, 3, -4, 5});
  }
  std::string run_relu(const std::string& plugin, const std::string& extra) {
    const fs::path path = fs::path(ONYX_TEST_PLUGIN_DIR) / ("libonyx_provider_" + plugin + ".so");
    return "run " + quote(dir_ / "relu.onnx") + " --provider " + quote(path) +
           " --provider cpu --fallback allow --input x=" + quote(dir_ / "fault.npy") + " --output-dir " +
           quote(dir_ / "out") + " " + extra;
  }
  TempDir dir_;
};

TEST_F(CliIsolation, ASegfaultingProviderFailsTheRunNotOnyx) {
  CliResult r = run_cli(run_relu("crash_segv", "--isolate"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("node Relu 'relu0' of provider 'crash_segv'"));
  EXPECT_THAT(r.output, HasSubstr("signal 11"));
}

TEST_F(CliIsolation, AHangingProviderIsKilledAtTheRunTimeout) {
  // 2 s: an ASan-built worker takes over 0.5 s to start.
  CliResult r = run_cli(run_relu("crash_hang", "--isolate --run-timeout 2"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("run timeout (2 s)"));
  EXPECT_THAT(r.output, HasSubstr("provider 'crash_hang'"));
}

TEST_F(CliIsolation, BenchRunsIsolatedAndReportsAFaultingProvider) {
  CliResult ok = run_cli("bench " + quote(dir_ / "mlp.onnx") + " --isolate --run-timeout 30 --iterations 5");
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_THAT(ok.output, HasSubstr("p50"));
  const fs::path plugin = fs::path(ONYX_TEST_PLUGIN_DIR) / "libonyx_provider_crash_segv.so";
  CliResult crashed = run_cli("bench " + quote(dir_ / "relu.onnx") + " --provider " + quote(plugin) +
                              " --provider cpu --fallback allow --input x=" + quote(dir_ / "fault.npy") +
                              " --isolate --iterations 5");
  EXPECT_EQ(crashed.exit_code, 1) << crashed.output;
  EXPECT_THAT(crashed.output, HasSubstr("node Relu 'relu0' of provider 'crash_segv'"));
}

TEST_F(CliIsolation, RunTimeoutNeedsIsolate) {
  CliResult r = run_cli(run_relu("decliner", "--run-timeout 1"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--run-timeout needs --isolate"));
}

TEST_F(CliIsolation, IsolatedOutputsEqualInProcessOutputs) {
  std::vector<float> x = tm::random_input(size_t(2 * 784), 5);
  write_npy_f32(dir_ / "x.npy", {2, 784}, x);
  std::vector<std::vector<float>> logits;
  for (const std::string mode : {"", " --isolate"}) {
    const fs::path out = dir_ / ("out" + std::to_string(logits.size()));
    CliResult r = run_cli("run " + quote(dir_ / "mlp.onnx") + " --input x=" + quote(dir_ / "x.npy") +
                          " --output-dir " + quote(out) + mode);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::vector<int64_t> dims;
    std::string name;
    logits.push_back(read_tensor_pb(out / "logits.pb", &dims, &name));
  }
  EXPECT_EQ(logits[0], logits[1]);
}

}  // namespace
}  // namespace onyx::e2e
