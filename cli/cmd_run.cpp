// cmd_run.cpp: `onyx run`: one inference, outputs summarized and optionally saved.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <thread>

#include "commands.h"
#include "run_inputs.h"
#include "session_setup.h"
#include "tensor_io.h"
#include "tensor_values.h"
#include "value_io.h"

namespace onyx::cli {
namespace {

namespace fs = std::filesystem;

// Output names may hold characters a file name cannot ('/', ':'); keep the
// portable ones so that "<name>.pb" stays inside the output folder.
std::string file_stem(const std::string& name) {
  std::string stem;
  for (char c : name) {
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                 c == '-' || c == '.';
    stem += plain ? c : '_';
  }
  if (stem.empty() || stem == "." || stem == "..") stem = "output" + stem;
  return stem;
}

// Runs once; with `timeout_s` > 0 a watchdog cancels the run after that many
// seconds (a valid model may loop for years: Loop nested 25 deep).
std::vector<onyx::Value> run_once(onyx::Session& session, const RunInputs& inputs, long long timeout_s) {
  std::vector<std::pair<std::string, const onyx::Value*>> named;
  for (size_t k = 0; k < inputs.names.size(); ++k) named.emplace_back(inputs.names[k], &inputs.values[k]);
  std::mutex mutex;
  std::condition_variable finished_cv;
  bool finished = false;
  std::thread watchdog;
  if (timeout_s > 0)
    watchdog = std::thread([&] {
      std::unique_lock lock(mutex);
      if (!finished_cv.wait_for(lock, std::chrono::seconds(timeout_s), [&] { return finished; }))
        session.cancel_runs();
    });
  auto stop_watchdog = [&] {
    {
      std::lock_guard lock(mutex);
      finished = true;
    }
    finished_cv.notify_all();
    if (watchdog.joinable()) watchdog.join();
  };
  try {
    std::vector<onyx::Value> outputs = session.run_values(named);
    stop_watchdog();
    return outputs;
  } catch (const onyx::Error& e) {
    stop_watchdog();
    std::string message = std::string("run failed: ") + e.what();
    if (message.find("run cancelled") != std::string::npos)
      message += " (--timeout " + std::to_string(timeout_s) + " s)";
    throw CliError(message);
  }
}

// The first strings of a STRING tensor, quoted.
std::string strings_text(const onyx::Tensor& t) {
  if (t.size() == 0) return "(empty)";
  std::string text = "first: [";
  for (int64_t k = 0; k < t.size() && k < 8; ++k) {
    std::string s = t.string_at(k);
    if (s.size() > 40) s = s.substr(0, 40) + "...";
    text += (k ? ", \"" : "\"") + s + "\"";
  }
  return text + (t.size() > 8 ? ", ...]" : "]");
}

int run_run(const ParsedArgs& args) {
  std::string path = model_path_from(args, "run");
  std::string format = args.last("--output-format").value_or("pb");
  if (format != "pb" && format != "npy") throw CliError("--output-format must be pb or npy, got '" + format + "'");
  std::optional<std::string> output_dir = args.last("--output-dir");
  if (output_dir && output_dir->empty()) throw CliError("--output-dir needs a folder");

  onyx::Env env;
  std::unique_ptr<onyx::Session> session = open_session(env, path, session_options_from(args));
  RunInputs inputs = prepare_inputs(*session, args);
  for (const std::string& note : inputs.notes) std::cout << note << "\n";
  std::optional<std::string> profile = args.last("--profile");
  if (profile) session->start_profiling();

  auto start = std::chrono::steady_clock::now();
  std::vector<onyx::Value> outputs = run_once(*session, inputs, args.integer("--timeout", 0, 0, 365LL * 24 * 3600));
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("ran in %.3f ms\n", ms);
  std::fflush(stdout);
  if (profile) write_profile(*session, *profile);

  std::vector<onyx::ValueMetadata> declared = session->outputs();
  if (output_dir) {
    std::error_code ec;
    fs::create_directories(*output_dir, ec);
    if (ec) throw CliError("cannot create output folder '" + *output_dir + "': " + ec.message());
  }
  for (size_t k = 0; k < outputs.size(); ++k) {
    std::string name = k < declared.size() ? declared[k].name : "output" + std::to_string(k);
    if (outputs[k].kind() != ONYX_VALUE_TENSOR) {  // a SequenceProto / OptionalProto / MapProto
      std::cout << name << "  " << value_summary(outputs[k]) << "\n";
      if (!output_dir) continue;
      if (format != "pb") throw CliError("output '" + name + "' is not a tensor: only --output-format pb can hold it");
      fs::path file = fs::path(*output_dir) / (file_stem(name) + ".pb");
      write_value_proto_file(file.string(), name, outputs[k]);
      std::cout << "    wrote " << file.string() << "\n";
      continue;
    }
    onyx::Tensor t = outputs[k].as_tensor();
    std::vector<int64_t> shape = t.shape();
    std::cout << name << "  " << dtype_name(t.dtype()) << "  " << shape_text(shape, int32_t(shape.size())) << "\n"
              << "    " << (t.dtype() == ONYX_DTYPE_STRING ? strings_text(t) : summary_text(summarize(t), t.dtype()))
              << "\n";
    if (!output_dir) continue;
    if (t.dtype() == ONYX_DTYPE_STRING && format != "pb")
      throw CliError("output '" + name + "' is a string tensor: only --output-format pb can hold it");
    fs::path file = fs::path(*output_dir) / (file_stem(name) + "." + format);
    if (format == "pb") write_tensor_proto_file(file.string(), name, t);
    else write_npy_file(file.string(), t);
    std::cout << "    wrote " << file.string() << "\n";
  }
  return 0;
}

}  // namespace

Command run_command() {
  std::vector<OptionSpec> options = session_option_specs();
  for (OptionSpec& o : isolation_option_specs()) options.push_back(std::move(o));
  for (OptionSpec& o : input_option_specs()) options.push_back(std::move(o));
  options.push_back({"--output-dir", "DIR", "write each output to DIR/<output name>.pb (created if missing)"});
  options.push_back({"--output-format", "pb|npy",
                     "file format for --output-dir (default pb: an ONNX TensorProto, or a SequenceProto/OptionalProto/MapProto "
                     "for a sequence, optional or map output)"});
  options.push_back(profile_option_spec());
  options.push_back({"--timeout", "SECONDS", "cancel the run after SECONDS (default: no limit)"});
  return {"run",
          "run a model once and summarize (or save) its outputs",
          "onyx run MODEL [--provider P ...] [--input NAME=FILE ...] [--output-dir DIR] [--threads N]",
          "Inputs not given with --input are filled with deterministic random values of their\n"
          "declared shape (symbolic dims = 1, or --shape); the tool says which.",
          options,
          run_run};
}

}  // namespace onyx::cli
