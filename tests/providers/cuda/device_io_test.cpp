// Device-resident values on a GPU provider (onyx_c_api.h, "device-resident
// values and I/O binding"), through the public C++ API: device tensors,
// copies, and a loop of runs whose inputs and outputs stay on the device.
// On the emulated device ("gpuemu") the plugin's own counters
// (onyx_gpuemu_stats) prove what crossed between host and device; on a real
// GPU the counting checks are skipped and the results are still compared.
#include <gtest/gtest.h>
#include <onyx/onyx.hpp>

#include <array>
#include <span>

#include "emulation_stats.h"
#include "test_models.h"

namespace {

namespace tm = onyx::test_models;
const std::string kGpu = ONYX_TEST_GPU_PROVIDER;

using namespace onyx::gpu_test;

StatsFn stats_function() { return onyx::gpu_test::stats_function(ONYX_GPU_PLUGIN_DIR, kGpu); }

struct Fixture {
  onyx::Env env;
  std::unique_ptr<onyx::Session> session;
  std::string skip;  // why the device tests cannot run here
};

// The MLP all on the GPU provider (fallback "fail"), or the reason it is unavailable.
Fixture mlp_on_gpu() {
  Fixture f;
  f.env.add_provider_dir(ONYX_PROVIDER_DIR);
  f.env.add_provider_dir(ONYX_GPU_PLUGIN_DIR);
  onyx::SessionOptions options;
  options.provider(kGpu).fallback(ONYX_FALLBACK_FAIL).threads(1);
  const std::string bytes = tm::build_mlp(tm::make_mlp_weights()).SerializeAsString();
  try {
    f.session = std::make_unique<onyx::Session>(f.env, std::as_bytes(std::span(bytes.data(), bytes.size())), options);
  } catch (const onyx::Error& e) {
    if (e.code() != ONYX_STATUS_UNAVAILABLE) throw;
    f.skip = e.what();
  }
  return f;
}

onyx::Tensor host_input(int64_t batch) {
  std::vector<float> x = tm::random_input(size_t(batch * 784), 7);
  return onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, {batch, 784}, x);
}

void expect_equal(onyx::Tensor& got, onyx::Tensor& want) {
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < want.size(); ++i) EXPECT_EQ(got.data<float>()[i], want.data<float>()[i]) << i;
}

TEST(DeviceIo, DeviceTensorsRoundTripThroughCopies) {
  Fixture f = mlp_on_gpu();
  if (!f.skip.empty()) GTEST_SKIP() << f.skip;
  onyx::Tensor x = host_input(2);
  onyx::Tensor on_device = f.session->tensor_on_device(kGpu, ONYX_DTYPE_FLOAT32, {2, 784});
  EXPECT_EQ(on_device.device(), kGpu);
  EXPECT_EQ(x.device(), "");
  on_device.copy_from(x);
  onyx::Tensor back = onyx::Tensor::zeros(ONYX_DTYPE_FLOAT32, {2, 784});
  back.copy_from(on_device);
  expect_equal(back, x);
  onyx::Tensor wrong = onyx::Tensor::zeros(ONYX_DTYPE_FLOAT32, {3, 784});
  EXPECT_THROW(wrong.copy_from(on_device), onyx::Error);
  EXPECT_THROW(f.session->tensor_on_device("no-such-provider", ONYX_DTYPE_FLOAT32, {1}), onyx::Error);
  // A plain run accepts a device input and returns host outputs.
  std::vector<onyx::Tensor> from_device = f.session->run({{"x", &on_device}});
  std::vector<onyx::Tensor> from_host = f.session->run({{"x", &x}});
  expect_equal(from_device[0], from_host[0]);
}

// The acceptance test of issue 14: 100 runs with device-bound input and
// output make no copy between host and device at all (the weights were
// uploaded at session creation), and compute what a host run computes; the
// bound input is read and the bound output written in place, not copied.
TEST(DeviceIo, HundredRunLoopWithDeviceBoundIoMakesNoHostCopies) {
  Fixture f = mlp_on_gpu();
  if (!f.skip.empty()) GTEST_SKIP() << f.skip;
  onyx::Tensor x = host_input(8);
  onyx::Tensor x_device = f.session->tensor_on_device(kGpu, ONYX_DTYPE_FLOAT32, {8, 784});
  onyx::Tensor y_device = f.session->tensor_on_device(kGpu, ONYX_DTYPE_FLOAT32, {8, 10});
  x_device.copy_from(x);
  onyx::IoBinding binding(*f.session);
  binding.input("x", x_device).output("logits", y_device);
  StatsFn stats = stats_function();
  const Stats before = stats ? read_stats(stats) : Stats{};
  for (int run = 0; run < 100; ++run) binding.run();
  if (stats) {
    const Stats after = read_stats(stats);
    EXPECT_EQ(after[kH2D] - before[kH2D], 0u) << "host-to-device copies in 100 runs";
    EXPECT_EQ(after[kD2H] - before[kD2H], 0u) << "device-to-host copies in 100 runs";
    // Nor within the device: the first kernel reads the bound input in
    // place (nothing writes over it) and the last writes the bound output.
    EXPECT_EQ(after[kD2D] - before[kD2D], 0u) << "copies within the device in 100 runs";
  } else {
    std::printf("no emulation counters in the %s plugin: copies not counted\n", kGpu.c_str());
  }
  onyx::Tensor result = binding.result("logits");
  EXPECT_EQ(result.device(), kGpu);
  onyx::Tensor y = onyx::Tensor::zeros(ONYX_DTYPE_FLOAT32, {8, 10});
  y.copy_from(result);
  std::vector<onyx::Tensor> want = f.session->run({{"x", &x}});
  expect_equal(y, want[0]);
}

TEST(DeviceIo, OutputsBoundToNewDeviceTensorsHostTensorsAndWrongShapes) {
  Fixture f = mlp_on_gpu();
  if (!f.skip.empty()) GTEST_SKIP() << f.skip;
  onyx::Tensor x = host_input(4);
  std::vector<onyx::Tensor> want = f.session->run({{"x", &x}});
  onyx::IoBinding to_device(*f.session);
  to_device.input("x", x).output_to_device("logits", kGpu);
  EXPECT_THROW(to_device.result("logits"), onyx::Error);  // not run yet
  to_device.run();
  onyx::Tensor made = to_device.result("logits");
  EXPECT_EQ(made.device(), kGpu);
  onyx::Tensor y = onyx::Tensor::zeros(ONYX_DTYPE_FLOAT32, {4, 10});
  y.copy_from(made);
  expect_equal(y, want[0]);

  onyx::Tensor host_out = onyx::Tensor::zeros(ONYX_DTYPE_FLOAT32, {4, 10});
  onyx::IoBinding to_host(*f.session);
  to_host.input("x", x).output("logits", host_out);
  to_host.run();
  expect_equal(host_out, want[0]);  // written in place

  onyx::Tensor wrong = f.session->tensor_on_device(kGpu, ONYX_DTYPE_FLOAT32, {5, 10});
  onyx::IoBinding mismatched(*f.session);
  mismatched.input("x", x).output("logits", wrong);
  try {
    mismatched.run();
    FAIL() << "a [5, 10] tensor was accepted for a [4, 10] output";
  } catch (const onyx::Error& e) {
    EXPECT_EQ(e.code(), ONYX_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("[4, 10]"), std::string::npos) << e.what();
  }
}

}  // namespace
