// isolation_bench.cpp: the per-run cost of the out-of-process mode
// (onyx_session_options_set_isolation) on the test MLP (784-256-128-10), CPU
// provider, batch 1 and 64: one in-process and one isolated session of the
// same model, timed alternately in the same run so that both see the same
// machine state; prints both latencies and their ratio.
//
//   onyx_isolation_bench [--threads N] [--iterations N]
#include <onyx/onyx.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "test_models.h"

namespace {

namespace tm = onyx::test_models;

[[noreturn]] void usage_error(const std::string& what) {
  std::fprintf(stderr, "onyx_isolation_bench: %s\nusage: onyx_isolation_bench [--threads N] [--iterations N]\n",
               what.c_str());
  std::exit(1);
}

long parse_positive(const char* text, const char* option) {
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (!end || *end || v <= 0) usage_error(std::string(option) + " expects a positive integer, got '" + text + "'");
  return v;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return sum / double(v.size());
}

double time_run_us(onyx::Session& session, const onyx::Tensor& input) {
  auto start = std::chrono::steady_clock::now();
  session.run({{"x", &input}});
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  size_t threads = 1;
  int iterations = 2000;
  for (int k = 1; k < argc; ++k) {
    std::string a = argv[k];
    if (k + 1 >= argc) usage_error("unknown or incomplete option '" + a + "'");
    if (a == "--threads") threads = size_t(parse_positive(argv[++k], "--threads"));
    else if (a == "--iterations") iterations = int(parse_positive(argv[++k], "--iterations"));
    else usage_error("unknown option '" + a + "'");
  }
  try {
    std::string bytes;
    if (!tm::build_mlp(tm::make_mlp_weights()).SerializeToString(&bytes)) usage_error("cannot serialize the MLP");
    const auto model = std::as_bytes(std::span<const char>(bytes.data(), bytes.size()));
    onyx::Env env;
    onyx::SessionOptions in_process, isolated;
    in_process.provider("cpu").fallback(ONYX_FALLBACK_FAIL).threads(threads);
    isolated.provider("cpu").fallback(ONYX_FALLBACK_FAIL).threads(threads).isolate(true, 60);
    onyx::Session local(env, model, in_process);
    onyx::Session worker(env, model, isolated);
    std::printf("onyx %s, mlp 784-256-128-10, cpu provider, %zu intra-op thread(s), %d timed runs per mode and batch\n",
                onyx_version(), threads, iterations);
    for (int64_t batch : {int64_t(1), int64_t(64)}) {
      std::vector<float> x = tm::random_input(size_t(batch * 784), 1);
      onyx::Tensor input = onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, {batch, 784}, x);
      for (int k = 0; k < std::max(20, iterations / 10); ++k) {
        local.run({{"x", &input}});
        worker.run({{"x", &input}});
      }
      std::vector<double> local_us, worker_us;
      for (int k = 0; k < iterations; ++k) {  // alternating: the same conditions for both
        local_us.push_back(time_run_us(local, input));
        worker_us.push_back(time_run_us(worker, input));
      }
      const double l50 = median(local_us), w50 = median(worker_us);
      std::printf("batch %3lld: in-process p50 %8.1f us mean %8.1f | isolated p50 %8.1f us mean %8.1f | "
                  "ratio p50 %.2fx mean %.2fx, +%.1f us per run\n",
                  static_cast<long long>(batch), l50, mean(local_us), w50, mean(worker_us), w50 / l50,
                  mean(worker_us) / mean(local_us), w50 - l50);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "onyx_isolation_bench: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
