#include "session_setup.h"

#include <charconv>
#include <cstdlib>
#include <cstdio>
#include <filesystem>

#include "tensor_io.h"

namespace onyx::cli {

namespace fs = std::filesystem;

onyx::SessionOptions session_options_from(const ParsedArgs& args) {
  // Providers with their options, in the order given on the command line.
  std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>> providers;
  for (const auto& [name, value] : args.options) {
    if (name == "--provider") {
      if (value.empty()) throw CliError("--provider needs a provider name or plugin path");
      providers.push_back({value, {}});
    } else if (name == "--provider-option") {
      size_t eq = value.find('=');
      if (eq == std::string::npos || eq == 0)
        throw CliError("--provider-option expects KEY=VALUE, got '" + value + "'");
      if (providers.empty()) throw CliError("--provider-option '" + value + "' must follow a --provider");
      providers.back().second.emplace_back(value.substr(0, eq), value.substr(eq + 1));
    }
  }
  onyx::SessionOptions options;
  for (const auto& [name, device_options] : providers) options.provider(name, device_options);
  if (std::optional<std::string> policy = args.last("--fallback")) {
    if (*policy == "fail") options.fallback(ONYX_FALLBACK_FAIL);
    else if (*policy == "warn") options.fallback(ONYX_FALLBACK_WARN);
    else if (*policy == "allow") options.fallback(ONYX_FALLBACK_ALLOW);
    else throw CliError("--fallback must be fail, warn or allow, got '" + *policy + "'");
  }
  if (std::optional<std::string> policy = args.last("--device-policy")) {
    if (!providers.empty()) throw CliError("--device-policy chooses the providers: drop --provider, or drop the policy");
    if (*policy == "prefer-gpu") options.device_policy(ONYX_DEVICE_POLICY_PREFER_GPU);
    else if (*policy == "prefer-cpu") options.device_policy(ONYX_DEVICE_POLICY_PREFER_CPU);
    else if (*policy == "fastest") options.device_policy(ONYX_DEVICE_POLICY_FASTEST);
    else throw CliError("--device-policy must be prefer-gpu, prefer-cpu or fastest, got '" + *policy + "'");
  }
  if (std::optional<std::string> level = args.last("--optimize")) {
    if (*level == "off") options.graph_optimization(ONYX_GRAPH_OPTIMIZATION_OFF);
    else if (*level == "basic") options.graph_optimization(ONYX_GRAPH_OPTIMIZATION_BASIC);
    else if (*level == "all") options.graph_optimization(ONYX_GRAPH_OPTIMIZATION_ALL);
    else throw CliError("--optimize must be off, basic or all, got '" + *level + "'");
  }
  if (args.has("--threads")) options.threads(size_t(args.integer("--threads", 0, 0, 4096)));
  if (std::optional<std::string> folder = args.last("--compiled-cache")) {
    if (folder->empty()) throw CliError("--compiled-cache needs a folder");
    options.compiled_cache(*folder);
  }
  if (args.has("--run-timeout") && !args.has("--isolate")) throw CliError("--run-timeout needs --isolate");
  if (args.has("--isolate")) {
    double timeout = 0;
    if (std::optional<std::string> text = args.last("--run-timeout")) {
      char* end = nullptr;
      timeout = std::strtod(text->c_str(), &end);
      if (text->empty() || *end != '\0' || !(timeout > 0))
        throw CliError("--run-timeout must be a positive number of seconds, got '" + *text + "'");
    }
    options.isolate(true, timeout);
  }
  return options;
}

std::string model_path_from(const ParsedArgs& args, const std::string& command) {
  if (args.positionals.empty()) throw CliError("onyx " + command + ": missing MODEL (see onyx " + command + " --help)");
  if (args.positionals.size() > 1)
    throw CliError("onyx " + command + ": unexpected argument '" + args.positionals[1] +
                   "' (one MODEL expected)");
  const std::string& path = args.positionals[0];
  std::error_code ec;
  if (!fs::exists(path, ec)) throw CliError("model file '" + path + "' does not exist");
  if (!fs::is_regular_file(path, ec)) throw CliError("model path '" + path + "' is not a file");
  return path;
}

std::unique_ptr<onyx::Session> open_session(onyx::Env& env, const std::string& model_path,
                                            const onyx::SessionOptions& options) {
  try {
    return std::make_unique<onyx::Session>(env, model_path, options);
  } catch (const onyx::Error& e) {
    std::string message = e.what();
    // The runtime's message usually names the file already; don't say it twice.
    if (message.find(model_path) != std::string::npos) throw CliError("cannot load model: " + message);
    throw CliError("cannot load model '" + model_path + "': " + message);
  }
}

std::vector<OptionSpec> isolation_option_specs() {
  return {
      {"--isolate", "", "run the model in a worker process: a provider that crashes or hangs fails the run, not onyx"},
      {"--run-timeout", "SECONDS", "with --isolate: kill the worker when a run takes longer (default: no limit)"},
  };
}

OptionSpec profile_option_spec() {
  return {"--profile", "FILE", "write the timed runs' Chrome trace (one event per kernel; chrome://tracing, Perfetto)"};
}

void write_profile(onyx::Session& session, const std::string& path) {
  std::string trace;
  try {
    trace = session.end_profiling();
  } catch (const onyx::Error& e) {
    throw CliError(std::string("profiling failed: ") + e.what());
  }
  write_file_atomically(path, trace);
  std::printf("wrote profile %s\n", path.c_str());
}

namespace {

std::vector<int64_t> parse_dims(const std::string& text, const std::string& where) {
  std::vector<int64_t> dims;
  if (text.empty()) return dims;  // a scalar
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    int64_t dim = -1;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), dim);
    if (ec != std::errc() || ptr != item.data() + item.size() || item.empty() || dim < 0)
      throw CliError(where + ": '" + item + "' is not a dimension (expected non-negative integers, e.g. 1,3,224,224)");
    dims.push_back(dim);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return dims;
}

}  // namespace

std::map<std::string, std::vector<int64_t>> parse_shapes(const std::vector<std::string>& values,
                                                         const std::vector<onyx::ValueMetadata>& inputs) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const std::string& value : values) {
    size_t eq = value.find('=');
    if (eq == std::string::npos || eq == 0)
      throw CliError("--shape expects NAME=D1,D2,..., got '" + value + "'");
    std::string name = value.substr(0, eq);
    bool known = false;
    for (const onyx::ValueMetadata& in : inputs) known = known || in.name == name;
    if (!known)
      throw CliError("--shape names unknown input '" + name + "' (model inputs: " + names_list(inputs) + ")");
    shapes[name] = parse_dims(value.substr(eq + 1), "--shape " + name);
  }
  return shapes;
}

std::vector<int64_t> concrete_shape(const onyx::ValueMetadata& input,
                                    const std::map<std::string, std::vector<int64_t>>& shapes,
                                    bool* assumed) {
  *assumed = false;
  auto given = shapes.find(input.name);
  if (given != shapes.end()) {
    const std::vector<int64_t>& dims = given->second;
    if (input.rank >= 0 && dims.size() != size_t(input.rank))
      throw CliError("--shape " + input.name + " has rank " + std::to_string(dims.size()) +
                     " but the model declares " + shape_text(input.dims, input.rank));
    for (size_t k = 0; input.rank >= 0 && k < dims.size(); ++k)
      if (input.dims[k] >= 0 && input.dims[k] != dims[k])
        throw CliError("--shape " + input.name + ": dim " + std::to_string(k) + " is " +
                       std::to_string(dims[k]) + " but the model fixes it to " +
                       std::to_string(input.dims[k]));
    return dims;
  }
  if (input.rank < 0)
    throw CliError("input '" + input.name + "' has an unknown rank: give its shape with --shape " +
                   input.name + "=D1,D2,...");
  std::vector<int64_t> dims = input.dims;
  for (int64_t& d : dims)
    if (d < 0) {
      d = 1;
      *assumed = true;
    }
  return dims;
}

std::string dtype_name(int32_t dtype) {
  const char* name = onyx_dtype_name(dtype);
  return name ? name : "dtype(" + std::to_string(dtype) + ")";
}

size_t dtype_size(int32_t dtype) { return onyx_dtype_size(dtype); }

std::string shape_text(const std::vector<int64_t>& dims, int32_t rank) {
  if (rank < 0) return "[?]";
  std::string text = "[";
  for (size_t k = 0; k < dims.size(); ++k) {
    if (k) text += ", ";
    text += dims[k] < 0 ? "?" : std::to_string(dims[k]);
  }
  return text + "]";
}

std::string names_list(const std::vector<onyx::ValueMetadata>& values) {
  std::string text;
  for (const onyx::ValueMetadata& v : values) text += (text.empty() ? "" : ", ") + v.name;
  return text.empty() ? "none" : text;
}

}  // namespace onyx::cli
