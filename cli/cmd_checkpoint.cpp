// cmd_checkpoint.cpp: `onyx checkpoint ACTION ...`: inspect, compare, make
// nominal, aggregate and reshard ZeRO-1 shards, and move parameters between
// checkpoints and ONNX models. Everything is the checkpoint C API's
// (onyx/onyx_checkpoint.hpp, in libonyx); this file parses and prints.
#include <onyx/onyx_checkpoint.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>
#include <vector>

#include "commands.h"
#include "json.h"
#include "session_setup.h"

namespace onyx::cli {
namespace {

namespace fs = std::filesystem;

void expect_positionals(const ParsedArgs& args, size_t min, size_t max, const std::string& usage) {
  size_t n = args.positionals.size() - 1;  // after the action
  if (n < min || n > max) throw CliError("usage: onyx checkpoint " + usage);
}

// Read, never mapped: another process may truncate the file while we look at
// it, and a mapped file that shrinks faults (SIGBUS) instead of failing.
CheckpointState load_checked(const std::string& path) {
  return CheckpointState::load(path, {.memory_map = false, .verify_data = true});
}

std::string shape_string(const std::vector<int64_t>& dims) { return shape_text(dims, int32_t(dims.size())); }

std::string property_text(const CheckpointProperty& v) {
  std::ostringstream out;
  out.precision(17);
  if (auto* i = std::get_if<int64_t>(&v)) out << *i << " (int64)";
  if (auto* d = std::get_if<double>(&v)) out << *d << " (double)";
  if (auto* s = std::get_if<std::string>(&v)) out << '"' << *s << "\" (string)";
  return out.str();
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

std::string slice_text(const CheckpointTensor& t) {
  if (!t.slice) return "";
  return "elements [" + std::to_string(t.slice->offset) + ", " + std::to_string(t.slice->offset + t.shape[0]) +
         ") of " + shape_string(t.slice->full_shape);
}

// Prints tensors as aligned columns: name, dtype and shape, bytes, checksum, slice.
void print_tensors(const std::vector<CheckpointTensor>& list, const std::string& indent) {
  std::vector<std::array<std::string, 5>> rows;
  for (const CheckpointTensor& t : list)
    rows.push_back({t.name, std::string(dtype_name(t.dtype)) + " " + shape_string(t.shape),
                    std::to_string(t.bytes) + " bytes", t.checksum ? "crc32c " + hex32(*t.checksum) : "",
                    slice_text(t)});
  std::array<size_t, 5> width{};
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  for (const auto& row : rows) {
    std::string line = indent;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(width[c] - row[c].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::cout << line << "\n";
  }
}

void json_tensor(JsonWriter& j, const CheckpointTensor& t) {
  j.begin_object().key("name").value(t.name).key("dtype").value(dtype_name(t.dtype)).key("shape").begin_array();
  for (int64_t d : t.shape) j.value(d);
  j.end_array().key("bytes").value(int64_t(t.bytes));
  if (t.checksum) j.key("crc32c").value(hex32(*t.checksum));
  if (t.slice) {
    j.key("slice").begin_object().key("offset").value(t.slice->offset).key("full_shape").begin_array();
    for (int64_t d : t.slice->full_shape) j.value(d);
    j.end_array().end_object();
  }
  j.end_object();
}

void json_property(JsonWriter& j, const CheckpointProperty& v) {
  if (auto* i = std::get_if<int64_t>(&v)) j.value(*i);
  if (auto* d = std::get_if<double>(&v)) j.value(*d);
  if (auto* s = std::get_if<std::string>(&v)) j.value(*s);
}

int inspect(const ParsedArgs& args) {
  expect_positionals(args, 1, 1, "inspect FILE [--json]");
  const std::string& path = args.positionals[1];
  CheckpointState c = load_checked(path);
  const CheckpointMetadata m = c.metadata();
  const bool nominal = c.nominal();
  const std::vector<CheckpointTensor> trainable = c.trainable(), frozen = c.frozen();
  const std::vector<CheckpointGroup> groups = c.optimizer_groups();
  const std::map<std::string, CheckpointProperty> properties = c.properties();
  uintmax_t file_bytes = fs::file_size(path);
  if (args.has("--json")) {
    JsonWriter j;
    j.begin_object().key("file").value(path).key("bytes").value(int64_t(file_bytes));
    j.key("format_version").value(int64_t(m.format_version)).key("producer").value(m.producer);
    j.key("model_identity").value(m.model_identity).key("nominal").value(nominal);
    j.key("shard_index").value(int64_t(m.shard_index)).key("shard_count").value(int64_t(m.shard_count));
    for (auto [key, list] : {std::pair{"trainable", &trainable}, std::pair{"frozen", &frozen}}) {
      j.key(key).begin_array();
      for (const CheckpointTensor& t : *list) json_tensor(j, t);
      j.end_array();
    }
    j.key("optimizer_groups").begin_array();
    for (const CheckpointGroup& g : groups) {
      j.begin_object().key("name").value(g.name).key("step").value(g.step);
      j.key("initial_learning_rate").value(g.initial_learning_rate).key("parameters").begin_array();
      for (const CheckpointParameterState& p : g.parameters) {
        j.begin_object().key("parameter").value(p.parameter).key("state").begin_array();
        for (const CheckpointTensor& t : p.tensors) json_tensor(j, t);
        j.end_array().end_object();
      }
      j.end_array().end_object();
    }
    j.end_array().key("properties").begin_object();
    for (const auto& [name, value] : properties) {
      j.key(name);
      json_property(j, value);
    }
    j.end_object().end_object();
    std::cout << j.str() << "\n";
    return 0;
  }
  std::cout << path << ": Onyx checkpoint, format version " << m.format_version << ", " << file_bytes << " bytes\n"
            << "  producer        " << m.producer << "\n"
            << "  model identity  " << (m.model_identity.empty() ? "(none)" : m.model_identity) << "\n"
            << "  kind            " << (nominal ? "nominal (names, dtypes and shapes only)" : "complete")
            << (nominal ? "" : ", every checksum verified") << "\n";
  if (m.shard_count > 1) std::cout << "  shard           rank " << m.shard_index << " of " << m.shard_count << "\n";
  for (auto [label, list] : {std::pair{"trainable parameters", &trainable}, std::pair{"frozen parameters", &frozen}}) {
    size_t bytes = 0;
    for (const CheckpointTensor& t : *list) bytes += t.bytes;
    std::cout << label << " (" << list->size() << ", " << bytes << " bytes):\n";
    print_tensors(*list, "  ");
  }
  std::cout << "optimizer groups (" << groups.size() << "):\n";
  for (const CheckpointGroup& g : groups) {
    std::ostringstream lr;
    lr.precision(17);
    lr << g.initial_learning_rate;
    std::cout << "  " << g.name << ": step " << g.step << ", initial learning rate " << lr.str() << ", state of "
              << g.parameters.size() << " parameters\n";
    for (const CheckpointParameterState& p : g.parameters) {
      std::cout << "    " << p.parameter << ":\n";
      print_tensors(p.tensors, "      ");
    }
  }
  std::cout << "properties (" << properties.size() << "):\n";
  for (const auto& [name, value] : properties) std::cout << "  " << name << " = " << property_text(value) << "\n";
  return 0;
}

int nominal(const ParsedArgs& args) {
  expect_positionals(args, 2, 2, "nominal IN OUT");
  load_checked(args.positionals[1]).make_nominal().save(args.positionals[2]);
  std::cout << "wrote nominal checkpoint " << args.positionals[2] << " (" << fs::file_size(args.positionals[2])
            << " bytes)\n";
  return 0;
}

std::string required_output(const ParsedArgs& args, const std::string& usage) {
  for (auto it = args.options.rbegin(); it != args.options.rend(); ++it)
    if (it->first == "--output" || it->first == "-o") return it->second;
  throw CliError("--output (-o) is required: onyx checkpoint " + usage);
}

std::vector<CheckpointState> load_all(const ParsedArgs& args) {
  std::vector<CheckpointState> states;
  for (size_t k = 1; k < args.positionals.size(); ++k) states.push_back(load_checked(args.positionals[k]));
  return states;
}

CheckpointState aggregate_all(const std::vector<CheckpointState>& shards, bool weights_only) {
  std::vector<const CheckpointState*> list;
  for (const CheckpointState& s : shards) list.push_back(&s);
  return CheckpointState::aggregate(list, weights_only);
}

int aggregate(const ParsedArgs& args) {
  const std::string usage = "aggregate SHARD... -o OUT [--weights-only]";
  expect_positionals(args, 1, size_t(-1), usage);
  std::string out = required_output(args, usage);
  std::vector<CheckpointState> shards = load_all(args);
  aggregate_all(shards, args.has("--weights-only")).save(out);
  std::cout << "aggregated " << shards.size() << " shards into " << out << "\n";
  return 0;
}

int reshard(const ParsedArgs& args) {
  const std::string usage = "reshard IN... --world-size N -o OUT";
  expect_positionals(args, 1, size_t(-1), usage);
  std::string out = required_output(args, usage);
  if (!args.has("--world-size")) throw CliError("--world-size is required: onyx checkpoint " + usage);
  uint32_t world = uint32_t(args.integer("--world-size", 1, 1, 1 << 16));
  std::vector<CheckpointState> inputs = load_all(args);
  // Shards are aggregated first, so any world size can become any other.
  CheckpointState complete = inputs.size() == 1 && inputs[0].metadata().shard_count == 1
                                 ? std::move(inputs[0])
                                 : aggregate_all(inputs, args.has("--weights-only"));
  std::vector<CheckpointState> shards = complete.shard(world);
  if (world == 1) {
    shards[0].save(out);
    std::cout << "wrote the complete checkpoint " << out << "\n";
    return 0;
  }
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) throw CliError("cannot create folder '" + out + "': " + ec.message());
  for (uint32_t r = 0; r < world; ++r) {
    fs::path path = fs::path(out) / ("rank" + std::to_string(r) + ".ckpt");
    shards[r].save(path.string());
    std::cout << "wrote " << path.string() << "\n";
  }
  return 0;
}

int diff(const ParsedArgs& args) {
  expect_positionals(args, 2, 2, "diff A B");
  std::vector<std::string> lines =
      CheckpointState::diff(load_checked(args.positionals[1]), load_checked(args.positionals[2]));
  for (const std::string& line : lines) std::cout << line << "\n";
  if (lines.empty()) std::cout << "the checkpoints are identical\n";
  return lines.empty() ? 0 : 1;
}

int import_model(const ParsedArgs& args) {
  expect_positionals(args, 2, 2, "import MODEL OUT [--trainable NAME ...] [--nominal]");
  CheckpointState c = CheckpointState::import_onnx(args.positionals[1], args.all("--trainable"));
  if (args.has("--nominal")) c = c.make_nominal();
  c.save(args.positionals[2]);
  std::cout << "wrote " << args.positionals[2] << ": " << c.trainable().size() << " trainable and "
            << c.frozen().size() << " frozen parameters\n";
  return 0;
}

int export_model(const ParsedArgs& args) {
  expect_positionals(args, 3, 3, "export CHECKPOINT MODEL OUT [--add-missing] [--external-data FILE]");
  load_checked(args.positionals[1])
      .export_onnx(args.positionals[2], args.positionals[3], args.has("--add-missing"),
                   args.last("--external-data").value_or(""));
  std::cout << "wrote " << args.positionals[3] << "\n";
  return 0;
}

int run_checkpoint(const ParsedArgs& args) {
  if (args.positionals.empty()) throw CliError("onyx checkpoint needs an action (see onyx checkpoint --help)");
  const std::string& action = args.positionals[0];
  if (action == "inspect") return inspect(args);
  if (action == "nominal") return nominal(args);
  if (action == "aggregate") return aggregate(args);
  if (action == "reshard") return reshard(args);
  if (action == "diff") return diff(args);
  if (action == "import") return import_model(args);
  if (action == "export") return export_model(args);
  throw CliError("unknown checkpoint action '" + action + "' (see onyx checkpoint --help)");
}

}  // namespace

Command checkpoint_command() {
  return {"checkpoint",
          "inspect, compare, shard and convert training checkpoints",
          "onyx checkpoint ACTION ARGS [options]",
          "actions:\n"
          "  inspect FILE [--json]           version, tensors (dtype, shape, bytes, CRC32C), groups, properties\n"
          "  diff A B                        every difference; exit status 0 when identical, 1 otherwise\n"
          "  nominal IN OUT                  the same schema without data (for federated clients)\n"
          "  aggregate SHARD... -o OUT       merge ZeRO-1 shards (one per rank, any order)\n"
          "  reshard IN... --world-size N -o OUT\n"
          "                                  split for N ranks into OUT/rankR.ckpt (N = 1: OUT is one file);\n"
          "                                  IN may be one complete checkpoint or all shards of one\n"
          "  import MODEL OUT                a checkpoint from an ONNX model's initializers\n"
          "  export CHECKPOINT MODEL OUT     MODEL with its initializers replaced by the parameters\n"
          "Every checkpoint read is checked (header, table and data checksums) first.",
          {{"--json", "", "inspect: print JSON"},
           {"--output", "PATH", "aggregate, reshard: where to write"},
           {"-o", "PATH", "the same as --output"},
           {"--world-size", "N", "reshard: the number of ranks"},
           {"--weights-only", "", "aggregate, reshard: drop optimizer state"},
           {"--trainable", "NAME", "import: a trainable initializer (repeatable; default all floating-point)"},
           {"--nominal", "", "import: write a nominal checkpoint"},
           {"--add-missing", "", "export: add parameters the model has no initializer for"},
           {"--external-data", "FILE", "export: store weights in FILE beside OUT (no 2 GiB limit)"}},
          run_checkpoint};
}

}  // namespace onyx::cli
