// device_io_bench.cpp: per-run overhead of host I/O against device-bound I/O
// (onyx_io_binding_*) on the emulated GPU device ("gpuemu", the shared GPU
// provider sources over tests/providers/cuda/emulation), with the host
// driving streams (provider ABI 1.2).
//
//   onyx_device_io_bench [--iterations N] [--provider NAME]
//
// For the MLP and CNN (batch 1) and a transformer block (seq 32, dim 64):
// one session; runs alternate between onyx_session_run with host tensors
// (a host-to-device copy of the input, a device-to-host copy of the output,
// a new host tensor) and an I/O binding whose input and output stay on the
// device (copies within the device only). Prints the median of each and the
// difference, the overhead that device-bound I/O removes per run. Outputs of
// both are compared first. --provider cuda measures a real GPU the same way.
#include <onyx/onyx.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "test_models.h"
#include "transformer_block.h"

namespace {

namespace tm = onyx::test_models;
using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void bench(onyx::Env& env, const std::string& provider, const char* label, const onnx::ModelProto& model,
           std::vector<int64_t> dims, int iterations) {
  const std::string bytes = model.SerializeAsString();
  onyx::SessionOptions options;
  options.provider(provider).provider("cpu").fallback(ONYX_FALLBACK_ALLOW).threads(1);
  onyx::Session session(env, std::as_bytes(std::span(bytes.data(), bytes.size())), options);
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  onyx::Tensor x = onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, dims, tm::random_input(size_t(count), 5));
  std::vector<onyx::Tensor> host_outputs = session.run({{"x", &x}});
  onyx::Tensor& host_out = host_outputs[0];
  const std::string out_name = session.outputs()[0].name;
  onyx::Tensor x_device = session.tensor_on_device(provider, ONYX_DTYPE_FLOAT32, dims);
  onyx::Tensor y_device = session.tensor_on_device(provider, ONYX_DTYPE_FLOAT32, host_out.shape());
  x_device.copy_from(x);
  onyx::IoBinding binding(session);
  binding.input(session.inputs()[0].name, x_device).output(out_name, y_device);
  binding.run();
  onyx::Tensor check = onyx::Tensor::zeros(ONYX_DTYPE_FLOAT32, host_out.shape());
  check.copy_from(y_device);
  for (int64_t i = 0; i < check.size(); ++i)
    if (check.data<float>()[i] != host_out.data<float>()[i]) {
      std::fprintf(stderr, "%s: device-bound output differs from host output at %lld\n", label, (long long)i);
      std::exit(1);
    }
  std::vector<double> host_us, device_us;
  for (int k = 0; k < iterations; ++k) {
    auto t0 = Clock::now();
    std::vector<onyx::Tensor> y = session.run({{"x", &x}});
    auto t1 = Clock::now();
    binding.run();
    auto t2 = Clock::now();
    host_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    device_us.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
  }
  const double h = median(host_us), d = median(device_us);
  std::printf("%-36s host I/O %9.1f us  device-bound I/O %9.1f us  overhead removed %7.1f us/run (%.1f%%)\n", label,
              h, d, h - d, 100.0 * (h - d) / h);
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = 200;
  std::string provider = "gpuemu";
  for (int k = 1; k + 1 < argc; k += 2) {
    std::string a = argv[k];
    if (a == "--iterations") iterations = std::max(1, std::atoi(argv[k + 1]));
    else if (a == "--provider") provider = argv[k + 1];
  }
  try {
    onyx::Env env;
    env.add_provider_dir(ONYX_PROVIDER_DIR);
    env.add_provider_dir(ONYX_TEST_PLUGIN_DIR);
    std::printf("provider %s, %d alternating iterations, medians\n", provider.c_str(), iterations);
    bench(env, provider, "MLP (batch 1)", tm::build_mlp(tm::make_mlp_weights()), {1, 784}, iterations);
    bench(env, provider, "CNN (batch 1)", tm::build_cnn(tm::make_cnn_weights()), {1, 1, 28, 28}, iterations);
    bench(env, provider, "transformer block (seq 32, dim 64)", onyx::test_models::build_transformer_block(32, 64),
          {1, 32, 64}, iterations);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "onyx_device_io_bench: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
