// cmd_artifacts.cpp: `onyx artifacts`: training, eval and optimizer models
// and the initial checkpoint for a forward model (onyx_training_generate_artifacts).
#include <onyx/onyx_training.hpp>

#include <iostream>

#include "artifact_options.h"
#include "commands.h"
#include "session_setup.h"

namespace onyx::cli {
namespace {

// The artifact options shared with `onyx train`, from the command line.
int run_artifacts(const ParsedArgs& args) {
  std::string model = model_path_from(args, "artifacts");
  std::string out = args.last("--out").value_or("");
  if (out.empty()) throw CliError("artifacts: --out DIR is required");
  std::vector<std::pair<std::string, std::string>> options = artifact_options_from(args);
  if (args.has("--nominal")) options.emplace_back("nominal", "1");
  try {
    onyx::generate_artifacts(model, options, out);
  } catch (const onyx::Error& e) {
    throw CliError("artifacts for '" + model + "': " + e.what());
  }
  std::cout << "wrote " << out << "/{training.onnx, eval.onnx, optimizer.onnx, checkpoint.ckpt}"
            << (args.has("--nominal") ? " (nominal checkpoint: no weights)" : "") << "\n";
  return 0;
}

}  // namespace

std::vector<OptionSpec> artifact_option_specs() {
  return {
      {"--requires-grad", "NAME", "initializer that gets a gradient; repeat (default: every float initializer)"},
      {"--frozen", "NAME", "initializer kept as a parameter without gradient; repeat"},
      {"--loss", "KIND", "mse | l1 | crossentropy | bcewithlogits | nll (default crossentropy)"},
      {"--reduction", "mean|sum", "how the loss reduces over the batch (default mean)"},
      {"--ignore-index", "N", "crossentropy/nll: label value that contributes nothing"},
      {"--class-axis", "1|-1", "crossentropy/nll: scores [N, C, ...] (1, default) or [..., C] (-1, language models)"},
      {"--label-dtype", "int64|int32", "crossentropy/nll label type (default int64)"},
      {"--optimizer", "NAME", "sgd | adamw | lamb, or an optimizer plugin path (default adamw)"},
      {"--param-group", "REGEX:HP=V,...", "parameters matching REGEX use these hyperparameters (e.g. 'bias$:weight_decay=0'); repeat"},
      {"--precision", "fp32|bf16|fp16", "mixed precision: matrix products in bf16/fp16, float32 master weights (default fp32)"},
  };
}

std::vector<std::pair<std::string, std::string>> artifact_options_from(const ParsedArgs& args) {
  std::vector<std::pair<std::string, std::string>> options;
  for (const auto& [name, value] : args.options) {
    if (name == "--requires-grad") options.emplace_back("requires_grad", value);
    else if (name == "--frozen") options.emplace_back("frozen", value);
    else if (name == "--loss") options.emplace_back("loss", value);
    else if (name == "--reduction") options.emplace_back("reduction", value);
    else if (name == "--ignore-index") options.emplace_back("ignore_index", value);
    else if (name == "--class-axis") options.emplace_back("class_axis", value);
    else if (name == "--label-dtype") options.emplace_back("label_dtype", value);
    else if (name == "--optimizer") options.emplace_back("optimizer", value);
    else if (name == "--param-group") options.emplace_back("param_group", value);
    else if (name == "--precision") options.emplace_back("precision", value);
  }
  return options;
}

Command artifacts_command() {
  Command c;
  c.name = "artifacts";
  c.summary = "write training, eval and optimizer models and a checkpoint for a model";
  c.usage = "onyx artifacts MODEL --out DIR [--requires-grad NAME]... [--frozen NAME]... [--loss KIND] "
            "[--optimizer NAME] [--nominal]";
  c.details =
      "Builds the training model (loss, forward outputs, one gradient per trainable parameter), the eval\n"
      "model and the optimizer model (docs/training.md), and the checkpoint holding the model's initial\n"
      "weights. With --nominal the checkpoint has names, types and shapes but no data: a device trains\n"
      "from it once weights arrive (federated learning).\n";
  c.options = artifact_option_specs();
  c.options.push_back({"--out", "DIR", "folder to write (created if needed)"});
  c.options.push_back({"--nominal", "", "write a checkpoint without weights"});
  c.handler = run_artifacts;
  return c;
}

}  // namespace onyx::cli
