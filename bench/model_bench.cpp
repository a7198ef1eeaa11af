// model_bench.cpp: end-to-end latency and throughput of the test models (MLP
// and CNN from tests/models) on the CPU provider, through the public C++ API.
//
//   onyx_model_bench [--threads N] [--iterations N] [--batch B ...]
//
// For each model and batch size: warm-up runs, then timed runs; prints
// nearest-rank p50/p90/p99, min and mean latency, and samples per second.
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

struct Options {
  size_t threads = 0;  // 0: one per core
  int iterations = 200;
  std::vector<int64_t> batches;
};

[[noreturn]] void usage_error(const std::string& what) {
  std::fprintf(stderr, "onyx_model_bench: %s\nusage: onyx_model_bench [--threads N] [--iterations N] [--batch B ...]\n",
               what.c_str());
  std::exit(1);
}

long parse_positive(const char* text, const char* option) {
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (!end || *end || v <= 0) usage_error(std::string(option) + " expects a positive integer, got '" + text + "'");
  return v;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int k = 1; k < argc; ++k) {
    std::string a = argv[k];
    if (k + 1 >= argc) usage_error("unknown or incomplete option '" + a + "'");
    if (a == "--threads") o.threads = size_t(parse_positive(argv[++k], "--threads"));
    else if (a == "--iterations") o.iterations = int(parse_positive(argv[++k], "--iterations"));
    else if (a == "--batch") o.batches.push_back(parse_positive(argv[++k], "--batch"));
    else usage_error("unknown option '" + a + "'");
  }
  if (o.batches.empty()) o.batches = {1, 8, 64};
  return o;
}

double percentile(const std::vector<double>& sorted, double p) {
  size_t rank = size_t(std::ceil(p / 100.0 * double(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

void bench(onyx::Env& env, const char* name, const onnx::ModelProto& proto, std::vector<int64_t> sample_dims,
           const Options& o) {
  std::string bytes;
  if (!proto.SerializeToString(&bytes)) usage_error("cannot serialize the model");
  onyx::SessionOptions options;
  options.provider("cpu").fallback(ONYX_FALLBACK_FAIL);
  if (o.threads) options.threads(o.threads);
  onyx::Session session(env, std::as_bytes(std::span<const char>(bytes.data(), bytes.size())), options);

  for (int64_t batch : o.batches) {
    std::vector<int64_t> dims = sample_dims;
    dims[0] = batch;
    std::vector<float> x = tm::random_input(size_t(batch * 784), 1);
    onyx::Tensor input = onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, dims, x);
    for (int k = 0; k < std::max(3, o.iterations / 10); ++k) session.run({{"x", &input}});

    std::vector<double> ms;
    auto total_start = std::chrono::steady_clock::now();
    for (int k = 0; k < o.iterations; ++k) {
      auto start = std::chrono::steady_clock::now();
      session.run({{"x", &input}});
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - total_start).count();
    std::sort(ms.begin(), ms.end());
    double mean = 0;
    for (double v : ms) mean += v / double(ms.size());
    std::printf("%-4s batch %3lld: p50 %8.3f ms  p90 %8.3f  p99 %8.3f  min %8.3f  mean %8.3f  %10.1f samples/s\n", name,
                static_cast<long long>(batch), percentile(ms, 50), percentile(ms, 90), percentile(ms, 99), ms.front(),
                mean, double(batch) * o.iterations / total_s);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  try {
    onyx::Env env;
    std::printf("onyx %s, %d timed runs per case, threads %s\n", onyx_version(), o.iterations,
                o.threads ? std::to_string(o.threads).c_str() : "default");
    bench(env, "mlp", tm::build_mlp(tm::make_mlp_weights()), {0, 784}, o);
    bench(env, "cnn", tm::build_cnn(tm::make_cnn_weights()), {0, 1, 28, 28}, o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "onyx_model_bench: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
