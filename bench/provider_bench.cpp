// provider_bench.cpp: a provider (oneDNN by default, or --provider cuda)
// against the CPU provider on the MLP, the CNN (tests/models) and a
// transformer encoder block (tests/models/transformer_block.h), in one run.
//
//   onyx_provider_bench [--provider NAME] [--threads N] [--iterations N] [--batch B ...] [--bf16]
//
// For each model and batch: one session on "cpu", one on the provider (cpu
// fallback for the ops it does not run), optionally one with
// allow_reduced_precision=1. Inputs and outputs are host tensors, so a GPU
// provider's times include the copies to and from the device. Runs of the sessions alternate so that
// drift of this shared machine hits all alike; prints median latencies and
// the ratio cpu / onednn (> 1: oneDNN is faster), and each session's first
// run at each batch separately (oneDNN creates its primitives and prepacks
// weights then; steady-state runs never do).
#include <onyx/onyx.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "test_models.h"
#include "transformer_block.h"

namespace {

namespace tm = onyx::test_models;

struct Options {
  size_t threads = 0;  // 0: one per core
  int iterations = 100;
  std::vector<int64_t> batches;
  bool bf16 = false;
  std::string provider = "onednn";
};

[[noreturn]] void usage_error(const std::string& what) {
  std::fprintf(stderr,
               "onyx_provider_bench: %s\nusage: onyx_provider_bench [--provider NAME] [--threads N] [--iterations N] [--batch B ...] "
               "[--bf16]\n",
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
    if (a == "--bf16") {
      o.bf16 = true;
      continue;
    }
    if (k + 1 >= argc) usage_error("unknown or incomplete option '" + a + "'");
    if (a == "--threads") o.threads = size_t(parse_positive(argv[++k], "--threads"));
    else if (a == "--iterations") o.iterations = int(parse_positive(argv[++k], "--iterations"));
    else if (a == "--provider") o.provider = argv[++k];
    else if (a == "--batch") o.batches.push_back(parse_positive(argv[++k], "--batch"));
    else usage_error("unknown option '" + a + "'");
  }
  if (o.batches.empty()) o.batches = {1, 16};
  return o;
}

struct Contender {
  std::string label;
  std::unique_ptr<onyx::Session> session;
  std::vector<double> ms;
  double first_ms = 0;  // the first run at this batch: primitives created, weights prepacked
};

std::unique_ptr<onyx::Session> open(onyx::Env& env, const std::string& bytes, const Options& o, bool provider,
                                    bool bf16) {
  onyx::SessionOptions options;
  if (provider) {
    std::vector<std::pair<std::string, std::string>> device;
    if (bf16) device.push_back({"allow_reduced_precision", "1"});
    options.provider(o.provider, device).provider("cpu").fallback(ONYX_FALLBACK_ALLOW);
  } else {
    options.provider("cpu").fallback(ONYX_FALLBACK_FAIL);
  }
  if (o.threads) options.threads(o.threads);
  return std::make_unique<onyx::Session>(env, std::as_bytes(std::span<const char>(bytes.data(), bytes.size())),
                                         options);
}

// Nodes the provider's session placed on it, out of all nodes.
std::string placement(onyx::Session& session, const std::string& provider) {
  std::string report = session.partition_report();
  int on_provider = 0, total = 0;
  for (size_t at = report.find("\"fallback\":"); at != std::string::npos; at = report.find("\"fallback\":", at + 1)) {
    ++total;
    if (report.compare(at + 11, 5, "false") == 0) ++on_provider;
  }
  return std::to_string(on_provider) + "/" + std::to_string(total) + " nodes on " + provider;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void bench(onyx::Env& env, const char* name, const onnx::ModelProto& proto, std::vector<int64_t> sample_dims,
           const Options& o) {
  std::string bytes;
  if (!proto.SerializeToString(&bytes)) usage_error("cannot serialize the model");
  std::vector<Contender> contenders;
  contenders.push_back({"cpu", open(env, bytes, o, false, false), {}});
  contenders.push_back({o.provider, open(env, bytes, o, true, false), {}});
  if (o.bf16) contenders.push_back({o.provider + "-bf16", open(env, bytes, o, true, true), {}});
  std::printf("%s: %s\n", name, placement(*contenders[1].session, o.provider).c_str());
  for (int64_t batch : o.batches) {
    std::vector<int64_t> dims = sample_dims;
    dims[0] = batch;
    int64_t count = 1;
    for (int64_t d : dims) count *= d;
    std::vector<float> x = tm::random_input(size_t(count), 1);
    onyx::Tensor input = onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, dims, x);
    for (Contender& c : contenders) {
      c.ms.clear();
      auto start = std::chrono::steady_clock::now();
      c.session->run({{"x", &input}});
      c.first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      for (int k = 1; k < std::max(3, o.iterations / 10); ++k) c.session->run({{"x", &input}});
    }
    for (int k = 0; k < o.iterations; ++k) {
      for (Contender& c : contenders) {
        auto start = std::chrono::steady_clock::now();
        c.session->run({{"x", &input}});
        c.ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
      }
    }
    double cpu_ms = median(contenders[0].ms);
    std::printf("  %-11s batch %3lld: median %8.3f ms   (first run %8.3f ms)\n", "cpu", (long long)batch, cpu_ms,
                contenders[0].first_ms);
    for (size_t k = 1; k < contenders.size(); ++k) {
      double ms = median(contenders[k].ms);
      std::printf("  %-11s batch %3lld: median %8.3f ms   (first run %8.3f ms)   ratio cpu/%s = %.2fx\n",
                  contenders[k].label.c_str(), (long long)batch, ms, contenders[k].first_ms,
                  contenders[k].label.c_str(), cpu_ms / ms);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  try {
    onyx::Env env;
    std::printf("onyx %s: %s provider vs CPU provider, %d alternating timed runs per case, threads %s\n",
                onyx_version(), o.provider.c_str(), o.iterations, o.threads ? std::to_string(o.threads).c_str() : "default");
    bench(env, "mlp", tm::build_mlp(tm::make_mlp_weights()), {0, 784}, o);
    bench(env, "cnn", tm::build_cnn(tm::make_cnn_weights()), {0, 1, 28, 28}, o);
    bench(env, "transformer block (seq 128, dim 256)", onyx::test_models::build_transformer_block(128, 256),
          {0, 128, 256}, o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "onyx_provider_bench: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
