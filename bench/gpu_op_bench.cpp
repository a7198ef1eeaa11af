// gpu_op_bench.cpp: one MatMul or Conv node on a GPU provider, input and
// output bound on the device (onyx_io_binding_*), so a run times the kernel
// and the runtime's per-run work, not host copies. bench/gpu_baselines.py
// runs the same shapes through cuBLAS and cuDNN (PyTorch's matmul and conv2d,
// float32, TF32 off like the provider) and prints the ratios.
//
//   onyx_gpu_op_bench [--provider NAME] [--iterations N] [--case NAME ...]
//
// Prints one line per case: "case NAME median_us X gflops Y". The output of
// each case is checked once against the CPU provider (relative error of the
// largest difference, float32 accumulation order differs).
#include <onyx/onyx.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "proto_builder.h"
#include "test_models.h"

namespace {

namespace tm = onyx::test_models;
using Clock = std::chrono::steady_clock;

struct Case {
  std::string name;
  onnx::ModelProto model;
  std::vector<int64_t> x_dims;
  double flops = 0;
};

Case matmul(int64_t m, int64_t k, int64_t n) {
  Case c;
  c.name = "matmul_" + std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n);
  c.model = tm::new_model("matmul");
  onnx::GraphProto& g = *c.model.mutable_graph();
  tm::add_initializer(g, "w", {k, n}, tm::random_input(size_t(k * n), 2));
  tm::add_input(g, "x", {m, k});
  tm::add_output(g, "y", {m, n});
  tm::add_node(g, "MatMul", "matmul", {"x", "w"}, {"y"});
  c.x_dims = {m, k};
  c.flops = 2.0 * double(m) * double(k) * double(n);
  return c;
}

// Conv with `f` filters of size r x r, stride 1, "same" padding, and a bias.
Case conv(int64_t n, int64_t ch, int64_t hw, int64_t f, int64_t r) {
  Case c;
  c.name = "conv_n" + std::to_string(n) + "_c" + std::to_string(ch) + "_hw" + std::to_string(hw) + "_f" +
           std::to_string(f) + "_r" + std::to_string(r);
  c.model = tm::new_model("conv");
  onnx::GraphProto& g = *c.model.mutable_graph();
  tm::add_initializer(g, "w", {f, ch, r, r}, tm::random_input(size_t(f * ch * r * r), 3));
  tm::add_initializer(g, "b", {f}, tm::random_input(size_t(f), 4));
  tm::add_input(g, "x", {n, ch, hw, hw});
  tm::add_output(g, "y", {n, f, hw, hw});
  onnx::NodeProto& node = tm::add_node(g, "Conv", "conv", {"x", "w", "b"}, {"y"});
  tm::set_ints(node, "pads", {r / 2, r / 2, r / 2, r / 2});
  c.x_dims = {n, ch, hw, hw};
  c.flops = 2.0 * double(n) * double(f) * double(hw * hw) * double(ch * r * r);
  return c;
}

std::vector<Case> all_cases() {
  return {matmul(64, 784, 256),    matmul(512, 784, 256),  matmul(64, 256, 128),   matmul(1024, 1024, 1024),
          matmul(4096, 4096, 4096), conv(64, 1, 28, 8, 3), conv(512, 1, 28, 8, 3), conv(64, 8, 14, 16, 3),
          conv(512, 8, 14, 16, 3),  conv(32, 64, 56, 64, 3), conv(32, 256, 14, 256, 3)};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::unique_ptr<onyx::Session> open(onyx::Env& env, const std::string& bytes, const std::string& provider) {
  onyx::SessionOptions options;
  options.provider(provider).fallback(ONYX_FALLBACK_FAIL);
  return std::make_unique<onyx::Session>(env, std::as_bytes(std::span(bytes.data(), bytes.size())), options);
}

void run_case(onyx::Env& env, const std::string& provider, const Case& c, int iterations) {
  const std::string bytes = c.model.SerializeAsString();
  auto session = open(env, bytes, provider);
  auto reference = open(env, bytes, "cpu");
  int64_t count = 1;
  for (int64_t d : c.x_dims) count *= d;
  onyx::Tensor x = onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, c.x_dims, tm::random_input(size_t(count), 5));
  std::vector<onyx::Tensor> expected = reference->run({{"x", &x}});
  onyx::Tensor x_device = session->tensor_on_device(provider, ONYX_DTYPE_FLOAT32, c.x_dims);
  onyx::Tensor y_device = session->tensor_on_device(provider, ONYX_DTYPE_FLOAT32, expected[0].shape());
  x_device.copy_from(x);
  onyx::IoBinding binding(*session);
  binding.input("x", x_device).output("y", y_device);
  binding.run();
  onyx::Tensor y = onyx::Tensor::zeros(ONYX_DTYPE_FLOAT32, expected[0].shape());
  y.copy_from(y_device);
  double max_diff = 0, max_ref = 0;
  for (int64_t i = 0; i < y.size(); ++i) {
    max_diff = std::max(max_diff, double(std::fabs(y.data<float>()[i] - expected[0].data<float>()[i])));
    max_ref = std::max(max_ref, double(std::fabs(expected[0].data<float>()[i])));
  }
  // float32 sums of up to 4096 products in another order: 1e-4 of the
  // largest output bounds the difference with a wide margin.
  if (!(max_diff <= 1e-4 * std::max(1.0, max_ref))) {
    std::fprintf(stderr, "%s: %s differs from cpu by %g (largest output %g)\n", c.name.c_str(), provider.c_str(),
                 max_diff, max_ref);
    std::exit(1);
  }
  for (int k = 0; k < 5; ++k) binding.run();
  std::vector<double> us;
  for (int k = 0; k < iterations; ++k) {
    auto t0 = Clock::now();
    binding.run();
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  const double m = median(us);
  std::printf("case %s median_us %.2f gflops %.1f\n", c.name.c_str(), m, c.flops / m * 1e-3);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = 100;
  std::string provider = "cuda";
  std::vector<std::string> only;
  for (int k = 1; k + 1 < argc; k += 2) {
    std::string a = argv[k];
    if (a == "--iterations") iterations = std::max(1, std::atoi(argv[k + 1]));
    else if (a == "--provider") provider = argv[k + 1];
    else if (a == "--case") only.push_back(argv[k + 1]);
    else {
      std::fprintf(stderr, "usage: onyx_gpu_op_bench [--provider NAME] [--iterations N] [--case NAME ...]\n");
      return 2;
    }
  }
  try {
    onyx::Env env;
    for (const Case& c : all_cases())
      if (only.empty() || std::find(only.begin(), only.end(), c.name) != only.end())
        run_case(env, provider, c, iterations);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "onyx_gpu_op_bench: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
