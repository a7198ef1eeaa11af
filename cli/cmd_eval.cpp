// cmd_eval.cpp: `onyx eval`: how well a trained model's scores match a
// split's labels: accuracy (over the labels that are not --ignore-index),
// mean cross-entropy and perplexity (its exponential).
#include <chrono>
#include <cmath>
#include <cstdio>

#include "commands.h"
#include "dataset.h"
#include "scores.h"
#include "session_setup.h"

namespace onyx::cli {
namespace {

constexpr const char* kDefaultData = "/usr/share/datasets/fashion-mnist";

int run_eval(const ParsedArgs& args) {
  std::string model = model_path_from(args, "eval");
  std::string data_dir = args.last("--data").value_or(kDefaultData);
  const bool arrays = is_array_dataset(data_dir, "train") || is_array_dataset(data_dir, "valid");
  std::string split = args.last("--split").value_or(arrays ? "valid" : "t10k");
  int64_t batch = args.integer("--batch-size", 500, 1, 1 << 20);
  const int64_t class_axis = args.integer("--class-axis", 1, -1, 1);
  std::optional<int64_t> ignore;
  if (args.has("--ignore-index")) ignore = args.integer("--ignore-index", 0, INT64_MIN, INT64_MAX);
  ModelInterface interface = read_model_interface(model);
  Dataset data = load_dataset(data_dir, split, interface.first_input, interface.first_input_rank);
  onyx::Env env;
  auto session = open_session(env, model, session_options_from(args));
  auto model_inputs = session->inputs();
  std::vector<int64_t> indices(static_cast<size_t>(batch));
  ScoreTally tally;
  auto start = std::chrono::steady_clock::now();
  for (int64_t first = 0; first < data.count; first += batch) {
    const int64_t n = std::min(batch, data.count - first);
    for (int64_t k = 0; k < n; ++k) indices[size_t(k)] = first + k;
    std::vector<onyx::Tensor> inputs;
    std::vector<std::pair<std::string, const onyx::Tensor*>> feeds;
    for (const auto& input : model_inputs) inputs.push_back(data.batch_for(input.name, n));
    for (size_t k = 0; k < model_inputs.size(); ++k) {
      data.gather(model_inputs[k].name, indices.data(), n, inputs[k]);
      feeds.emplace_back(model_inputs[k].name, &inputs[k]);
    }
    onyx::Tensor labels = data.batch_for("labels", n);
    data.gather("labels", indices.data(), n, labels);
    auto out = session->run(feeds);
    tally.add(out[0], labels, class_axis, ignore, data.source + " (the model's first output against labels)");
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("accuracy: %.2f%% (%lld/%lld) on %s, cross-entropy %.4f (perplexity %.2f), %.0f samples/s\n",
              100.0 * tally.accuracy(), (long long)tally.correct, (long long)tally.counted, data.source.c_str(),
              tally.mean_nll(), std::exp(tally.mean_nll()), double(data.count) / seconds);
  return 0;
}

}  // namespace

Command eval_command() {
  Command c;
  c.name = "eval";
  c.summary = "accuracy, cross-entropy and perplexity of a model on a split of a dataset";
  c.usage = "onyx eval MODEL [--data DIR] [--split NAME] [--batch-size N] [--class-axis 1|-1] [--ignore-index N]";
  c.details =
      "Runs MODEL on every sample of the split (IDX images, or NumPy arrays DIR/SPLIT/<input>.npy as for\n"
      "onyx train) and compares its first output's scores with the labels: the argmax's accuracy and the\n"
      "mean cross-entropy of the softmax, over the labels that are not --ignore-index (a masked language\n"
      "model's masked tokens).\n";
  c.options = {
      {"--data", "DIR", std::string("IDX files or split folders of .npy arrays (default ") + kDefaultData + ")"},
      {"--split", "NAME", "t10k (default for IDX), valid (default for arrays), train, ..."},
      {"--batch-size", "N", "samples per run (default 500)"},
      {"--class-axis", "1|-1", "where the output keeps its classes: [N, C, ...] (1, default) or [..., C] (-1)"},
      {"--ignore-index", "N", "labels with this value are not counted"},
  };
  auto session_specs = session_option_specs();
  c.options.insert(c.options.end(), session_specs.begin(), session_specs.end());
  c.handler = run_eval;
  return c;
}

}  // namespace onyx::cli
