// cmd_bench.cpp: `onyx bench`: latency percentiles and throughput of repeated runs.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>

#include "commands.h"
#include "run_inputs.h"
#include "session_setup.h"

namespace onyx::cli {
namespace {

// Nearest-rank percentile of sorted samples: the smallest sample such that at
// least p% of the samples are <= it.
double percentile(const std::vector<double>& sorted, double p) {
  size_t rank = size_t(std::ceil(p / 100.0 * double(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

int run_bench(const ParsedArgs& args) {
  std::string path = model_path_from(args, "bench");
  long long warmup = args.integer("--warmup", 5, 0, 1'000'000);
  long long iterations = args.integer("--iterations", 50, 1, 100'000'000);

  onyx::Env env;
  std::unique_ptr<onyx::Session> session = open_session(env, path, session_options_from(args));
  RunInputs inputs = prepare_inputs(*session, args);
  for (const std::string& note : inputs.notes) std::cout << note << "\n";
  std::vector<std::pair<std::string, const onyx::Value*>> named;
  for (size_t k = 0; k < inputs.names.size(); ++k) named.emplace_back(inputs.names[k], &inputs.values[k]);

  auto run = [&] {
    try {
      session->run_values(named);
    } catch (const onyx::Error& e) {
      throw CliError(std::string("run failed: ") + e.what());
    }
  };
  for (long long k = 0; k < warmup; ++k) run();
  std::optional<std::string> profile = args.last("--profile");
  if (profile) session->start_profiling();  // the timed runs only

  std::vector<double> ms;
  ms.reserve(size_t(iterations));
  auto total_start = std::chrono::steady_clock::now();
  for (long long k = 0; k < iterations; ++k) {
    auto start = std::chrono::steady_clock::now();
    run();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - total_start).count();

  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  double mean = 0;
  for (double v : ms) mean += v;
  mean /= double(ms.size());
  std::printf("%lld iterations after %lld warm-up runs\n", iterations, warmup);
  std::printf("latency ms: p50 %.3f  p90 %.3f  p99 %.3f  min %.3f  mean %.3f  max %.3f\n", percentile(sorted, 50),
              percentile(sorted, 90), percentile(sorted, 99), sorted.front(), mean, sorted.back());
  std::printf("throughput: %.1f runs/s\n", double(iterations) / total_s);
  if (profile) write_profile(*session, *profile);
  return 0;
}

}  // namespace

Command bench_command() {
  std::vector<OptionSpec> options = session_option_specs();
  for (OptionSpec& o : isolation_option_specs()) options.push_back(std::move(o));
  for (OptionSpec& o : input_option_specs()) options.push_back(std::move(o));
  options.push_back({"--warmup", "K", "untimed runs first (default 5)"});
  options.push_back({"--iterations", "N", "timed runs (default 50)"});
  options.push_back(profile_option_spec());
  return {"bench",
          "time repeated runs: latency p50/p90/p99/min/mean and throughput",
          "onyx bench MODEL [--threads N] [--warmup K] [--iterations N] [--provider P ...] [--shape NAME=DIMS ...]",
          "Percentiles are nearest-rank over the timed runs; throughput is timed runs over their total wall time.",
          options,
          run_bench};
}

}  // namespace onyx::cli
