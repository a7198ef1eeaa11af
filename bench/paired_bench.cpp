// paired_bench.cpp: two configurations of one model, A and B, timed in one
// process in alternating short rounds, for decisions on a shared machine
// whose speed drifts (a noisy neighbour moves separate runs by 20-70%, more
// than most changes are worth). Each round times A, then B, for --round-ms
// each; the printed A/B ratio is the median over rounds of that round's
// ratio of medians, with its quartiles: drift slower than a round cancels.
//
//   onyx_paired_bench MODEL --input NAME=D1,D2,...[:LO:HI] [--input ...] [--rounds N] [--round-ms T]
//                     [--a-provider P] [--b-provider P] [--a-threads N] [--b-threads N]
//
// Uses: a change to a provider (A: a copy of the plugin before it, by path;
// B: the plugin built after), or thread scaling (--a-threads 1 --b-threads
// 2, the ratio being the speedup). Each --input names one graph input and its
// shape (none: a scalar); float values are generated (deterministic, in
// [LO, HI), by default [-0.5, 0.5): a variance input wants [0.5, 1.5); LO ==
// HI: all LO, an exponent or epsilon that is a graph input), integer ones
// are 0 (a valid class index: a training model's labels).
#include <onyx/onyx.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Input {
  std::string name;
  std::vector<int64_t> dims;
  double lo = -0.5, hi = 0.5;  // float values in [lo, hi)
};

struct Options {
  std::string model;
  std::vector<Input> inputs;
  int rounds = 30;
  double round_ms = 50;
  std::string provider[2] = {"cpu", "cpu"};
  size_t threads[2] = {1, 1};
};

[[noreturn]] void usage(const std::string& what) {
  std::fprintf(stderr,
               "onyx_paired_bench: %s\nusage: onyx_paired_bench MODEL --input NAME=D1,D2,...[:LO:HI] [--input ...] [--rounds N] "
               "[--round-ms T] [--a-provider P] [--b-provider P] [--a-threads N] [--b-threads N]\n",
               what.c_str());
  std::exit(2);
}

long positive(const std::string& text, const std::string& option) {
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end || v <= 0) usage(option + " expects a positive integer, got '" + text + "'");
  return v;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int k = 1; k < argc; ++k) {
    const std::string a = argv[k];
    if (a[0] != '-') {
      o.model = a;
      continue;
    }
    if (k + 1 >= argc) usage("option " + a + " needs a value");
    const std::string v = argv[++k];
    if (a == "--input") {
      const size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0) usage("--input expects NAME=D1,D2,..., got '" + v + "'");
      Input in{v.substr(0, eq), {}};
      std::string dims = v.substr(eq + 1);
      if (const size_t colon = dims.find(':'); colon != std::string::npos) {
        char* end = nullptr;
        const std::string range = dims.substr(colon + 1);
        in.lo = std::strtod(range.c_str(), &end);
        if (*end != ':' || !(in.hi = std::strtod(end + 1, &end), *end == 0) || !(in.lo <= in.hi))
          usage("--input " + in.name + ": expected :LO:HI with LO <= HI after the dims, got ':" + range + "'");
        dims.resize(colon);
      }
      for (const Input& seen : o.inputs)
        if (seen.name == in.name) usage("--input " + in.name + " is given twice");
      for (size_t p = 0; !dims.empty() && p <= dims.size();) {  // no dims: a scalar
        const size_t comma = std::min(dims.find(',', p), dims.size());
        in.dims.push_back(positive(dims.substr(p, comma - p), "--input dims"));
        p = comma + 1;
      }
      o.inputs.push_back(std::move(in));
    } else if (a == "--rounds") {
      o.rounds = int(positive(v, a));
    } else if (a == "--round-ms") {
      o.round_ms = double(positive(v, a));
    } else if (a == "--a-provider" || a == "--b-provider") {
      o.provider[a[2] == 'b'] = v;
    } else if (a == "--a-threads" || a == "--b-threads") {
      o.threads[a[2] == 'b'] = size_t(positive(v, a));
    } else {
      usage("unknown option " + a);
    }
  }
  if (o.model.empty() || o.inputs.empty()) usage("a model and --input are required");
  return o;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    onyx::Env env;
    std::unique_ptr<onyx::Session> session[2];
    for (int s = 0; s < 2; ++s) {
      onyx::SessionOptions options;
      options.provider(o.provider[s]).fallback(ONYX_FALLBACK_FAIL).threads(o.threads[s]);
      session[s] = std::make_unique<onyx::Session>(env, o.model, options);
    }
    std::vector<onyx::Tensor> tensors;
    const std::vector<onyx::ValueMetadata> declared = session[0]->inputs();
    for (const Input& in : o.inputs) {
      auto it = std::find_if(declared.begin(), declared.end(), [&](const auto& d) { return d.name == in.name; });
      if (it == declared.end()) usage("the model has no input '" + in.name + "'");
      if (it->dtype == ONYX_DTYPE_INT64 || it->dtype == ONYX_DTYPE_INT32) {
        tensors.push_back(onyx::Tensor::zeros(it->dtype, in.dims));
        continue;
      }
      if (it->dtype != ONYX_DTYPE_FLOAT32) usage("input '" + in.name + "' is neither float32 nor an integer");
      size_t count = 1;
      for (int64_t d : in.dims) count *= size_t(d);
      std::vector<float> values(count);
      for (size_t i = 0; i < count; ++i) values[i] = float(in.lo + (in.hi - in.lo) * double(i * 37 % 101) / 101.0);
      tensors.push_back(onyx::Tensor::from<float>(ONYX_DTYPE_FLOAT32, in.dims, std::span<const float>(values)));
    }
    std::vector<std::pair<std::string, const onyx::Tensor*>> feeds;
    for (size_t i = 0; i < o.inputs.size(); ++i) feeds.emplace_back(o.inputs[i].name, &tensors[i]);
    for (int s = 0; s < 2; ++s)
      for (int k = 0; k < 10; ++k) session[s]->run(feeds);  // warm: prepacking, arenas, pool
    std::vector<double> medians[2], ratios;
    for (int r = 0; r < o.rounds; ++r) {
      double m[2];
      for (int s = 0; s < 2; ++s) {
        std::vector<double> ms;
        const Clock::time_point start = Clock::now();
        do {
          const Clock::time_point t0 = Clock::now();
          session[s]->run(feeds);
          ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        } while (std::chrono::duration<double, std::milli>(Clock::now() - start).count() < o.round_ms);
        m[s] = median(std::move(ms));
        medians[s].push_back(m[s]);
      }
      ratios.push_back(m[0] / m[1]);
    }
    std::sort(ratios.begin(), ratios.end());
    for (int s = 0; s < 2; ++s)
      std::printf("%c: %s, %zu thread(s): median %.4f ms, best round %.4f ms\n", 'A' + s, o.provider[s].c_str(),
                  o.threads[s], median(medians[s]), *std::min_element(medians[s].begin(), medians[s].end()));
    std::printf("A/B time (> 1: B faster): %.3f, quartiles %.3f-%.3f over %d rounds\n", ratios[ratios.size() / 2],
                ratios[ratios.size() / 4], ratios[ratios.size() * 3 / 4], o.rounds);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "onyx_paired_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
