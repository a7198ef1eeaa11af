// cmd_info.cpp: `onyx info`: what a model contains and how a session would
// place it (partition report) and lay out its memory (memory report).
#include <cstdio>
#include <iostream>
#include <map>

#include "commands.h"
#include "json.h"
#include "model_summary.h"
#include "session_setup.h"

namespace onyx::cli {
namespace {

std::string bytes_text(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
  return buf;
}

std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t k = 0; k < digits.size(); ++k) {
    if (k && (digits.size() - k) % 3 == 0 && digits[k - 1] != '-') out += ',';
    out += digits[k];
  }
  return out;
}

std::string pad(const std::string& s, size_t width) {
  return s.size() >= width ? s + "  " : s + std::string(width - s.size() + 2, ' ');
}

// The shape with symbolic dims shown by name ("batch") where the model names them.
std::string shape_with_params(const onyx::ValueMetadata& v, const ModelSummary& summary) {
  if (v.rank < 0) return "[?]";
  auto params = summary.dim_params.find(v.name);
  std::string text = "[";
  for (size_t k = 0; k < v.dims.size(); ++k) {
    if (k) text += ", ";
    if (v.dims[k] >= 0) text += std::to_string(v.dims[k]);
    else if (params != summary.dim_params.end() && k < params->second.size() && !params->second[k].empty())
      text += params->second[k];
    else text += "?";
  }
  return text + "]";
}

std::string memory_json(onyx::Session& session, const std::map<std::string, std::vector<int64_t>>& shapes) {
  std::vector<const char*> names;
  std::vector<const int64_t*> dims;
  std::vector<size_t> ranks;
  for (const auto& [name, d] : shapes) {
    names.push_back(name.c_str());
    dims.push_back(d.data());
    ranks.push_back(d.size());
  }
  char* json = nullptr;
  OnyxStatus* status = onyx_session_memory_report(session.get(), names.data(), dims.data(), ranks.data(),
                                                  names.size(), &json);
  if (status) {
    std::string message = onyx_status_message(status);
    onyx_status_release(status);
    throw CliError("memory plan failed: " + message);
  }
  std::string out = json ? json : "[]";
  onyx_string_release(json);
  return out;
}

void print_values(const char* title, const std::vector<onyx::ValueMetadata>& values, const ModelSummary& summary) {
  std::cout << title << ":\n";
  size_t width = 0;
  for (const auto& v : values) width = std::max(width, v.name.size());
  for (const auto& v : values)
    std::cout << "  " << pad(v.name, width) << pad(dtype_name(v.dtype), 8) << shape_with_params(v, summary) << "\n";
}

void print_model(const std::string& path, const ModelSummary& s) {
  std::cout << "model: " << path << "\n";
  std::cout << "  ir version " << s.ir_version << (s.producer.empty() ? "" : ", produced by " + s.producer) << "\n";
  std::string opsets;
  for (const auto& [domain, version] : s.opsets)
    opsets += (opsets.empty() ? "" : ", ") + (domain.empty() ? std::string("ai.onnx") : domain) + " " + std::to_string(version);
  std::cout << "  opsets: " << (opsets.empty() ? "none" : opsets) << "\n";
  std::cout << "  nodes: " << s.node_count;
  if (s.subgraph_node_count) std::cout << " (+" << s.subgraph_node_count << " in subgraphs)";
  std::cout << ", initializers: " << s.initializer_count << " (" << with_commas(s.parameter_count) << " parameters, "
            << bytes_text(double(s.parameter_bytes));
  if (s.external_initializers) std::cout << ", " << s.external_initializers << " in external files";
  std::cout << ")\n";
  for (const auto& [key, value] : s.metadata) std::cout << "  " << key << ": " << value << "\n";
}

void print_ops(const ModelSummary& s) {
  std::cout << "ops:\n";
  size_t width = 0;
  for (const auto& [op, n] : s.op_counts) width = std::max(width, op.size());
  for (const auto& [op, n] : s.op_counts) std::cout << "  " << pad(op, width) << n << "\n";
}

void print_placement(const Json& report) {
  std::map<std::string, int> per_device;
  for (const Json& n : report["nodes"].items()) ++per_device[n["device"].str("(none)")];
  std::string devices;
  for (const Json& d : report["devices"].items()) devices += (devices.empty() ? "" : ", ") + d.str();
  // fused_group 0 means the node has its own kernel; > 0 names a group fused into one kernel.
  std::cout << "placement (fallback policy " << report["policy"].str("?") << ", devices " << devices << "):\n";
  for (const auto& [device, count] : per_device)
    std::cout << "  " << device << ": " << count << (count == 1 ? " node\n" : " nodes\n");
  size_t name_width = 4, op_width = 2, device_width = 6;
  const Json::Array& nodes = report["nodes"].items();
  for (size_t k = 0; k < nodes.size(); ++k) {
    name_width = std::max(name_width, nodes[k]["node"].str().empty() ? 4 : nodes[k]["node"].str().size());
    op_width = std::max(op_width, nodes[k]["op"].str().size());
    device_width = std::max(device_width, nodes[k]["device"].str().size());
  }
  std::cout << "  " << pad("node", name_width) << pad("op", op_width) << pad("device", device_width) << "notes\n";
  for (size_t k = 0; k < nodes.size(); ++k) {
    const Json& n = nodes[k];
    std::string name = n["node"].str().empty() ? "#" + std::to_string(k) : n["node"].str();
    std::string op = n["domain"].str().empty() ? n["op"].str() : n["domain"].str() + "::" + n["op"].str();
    std::string notes;
    if (n["fused_group"].num() > 0) notes += "fused group " + std::to_string(int64_t(n["fused_group"].num()));
    for (const Json& d : n["declined_by"].items())
      notes += (notes.empty() ? "" : "; ") + std::string("declined by ") + d["device"].str() + ": " + d["reason"].str();
    std::string line = "  " + pad(name, name_width) + pad(op, op_width) + pad(n["device"].str("-"), device_width) + notes;
    std::cout << line.substr(0, line.find_last_not_of(' ') + 1) << "\n";
  }
  // QDQ groups the optimizer rewrote into operator-form quantized ops (the
  // --json report's graph_optimization.qdq_fused_ops has them all).
  const Json& optimized = report["graph_optimization"];
  if (optimized["qdq_groups_fused"].num() > 0) {
    std::string per_op;
    for (const char* op : {"QLinearConv", "QLinearMatMul", "QGemm", "QLinearAdd", "QLinearMul", "QLinearAveragePool",
                           "QLinearGlobalAveragePool", "QLinearConcat", "QLinearSigmoid", "QLinearLeakyRelu", "MaxPool", "Reshape",
                           "Transpose", "Squeeze", "Unsqueeze", "Flatten"})
      if (double n = optimized["qdq_fused_ops"][op].num(); n > 0)
        per_op += (per_op.empty() ? "" : ", ") + std::string(op) + " " + std::to_string(int64_t(n));
    std::cout << "QDQ groups fused: " << int64_t(optimized["qdq_groups_fused"].num())
              << (per_op.empty() ? "" : " (" + per_op + ")") << "\n";
  }
  if (optimized["patterns_fused"].num() > 0) {
    std::string per_op;
    for (const auto& [op, count] : optimized["fused_patterns"].members())
      if (double n = count.num(); n > 0) per_op += (per_op.empty() ? "" : ", ") + op + " " + std::to_string(int64_t(n));
    std::cout << "op-by-op patterns fused: " << int64_t(optimized["patterns_fused"].num())
              << (per_op.empty() ? "" : " (" + per_op + ")") << "\n";
  }
  if (double n = optimized["relu_grads_reordered"].num(); n > 0)
    std::cout << "Relu gradients masked on the pooled side of a MaxPool: " << int64_t(n) << "\n";
  if (double n = optimized["channel_sums_reused"].num(); n > 0)
    std::cout << "per-channel sums of a scaled gradient taken from its plain sum: " << int64_t(n) << "\n";
  if (double n = optimized["nodes_channels_last"].num(); n > 0)
    std::cout << "quantized nodes in channels-last layout: " << int64_t(n) << "\n";
  const Json::Array& copies = report["copies"].items();
  if (!copies.empty()) {
    std::cout << "copies between devices:\n";
    for (const Json& c : copies)
      std::cout << "  " << c["value"].str() << ": " << c["from"].str() << " -> " << c["to"].str()
                << (c["reason"].str().empty() ? "" : " (" + c["reason"].str() + ")") << "\n";
  }
}

void print_memory(const Json& report, const std::map<std::string, std::vector<int64_t>>& shapes) {
  std::string given;
  for (const auto& [name, dims] : shapes) given += (given.empty() ? "" : ", ") + name + "=" + shape_text(dims, int32_t(dims.size()));
  std::cout << "memory plan (" << (given.empty() ? "declared shapes, symbolic dims = 1" : given) << "):\n";
  std::cout << "  " << pad("device", 8) << pad("planned", 11) << pad("lower bound", 11) << pad("ratio", 6)
            << pad("planned", 7) << pad("dynamic", 7) << pad("in-place", 8) << "aliased\n";
  for (const Json& d : report.items()) {
    char ratio[16];
    std::snprintf(ratio, sizeof ratio, "%.3f", d["ratio"].num());
    std::cout << "  " << pad(d["device"].str(), 8) << pad(bytes_text(d["arena_bytes"].num()), 11)
              << pad(bytes_text(d["lower_bound_bytes"].num()), 11) << pad(ratio, 6)
              << pad(std::to_string(int64_t(d["planned_tensors"].num())), 7)
              << pad(std::to_string(int64_t(d["dynamic_tensors"].num())), 7)
              << pad(std::to_string(int64_t(d["in_place"].num())), 8) << int64_t(d["aliased"].num()) << "\n";
  }
  std::cout << "  (planned/lower bound: arena bytes over the peak of simultaneously live tensor bytes)\n";
}

void write_values_json(JsonWriter& out, const std::vector<onyx::ValueMetadata>& values, const ModelSummary& s) {
  out.begin_array();
  for (const auto& v : values) {
    out.begin_object().key("name").value(v.name).key("dtype").value(dtype_name(v.dtype)).key("shape");
    if (v.rank < 0) {
      out.null();
    } else {
      out.begin_array();
      auto params = s.dim_params.find(v.name);
      for (size_t k = 0; k < v.dims.size(); ++k) {
        if (v.dims[k] >= 0) out.value(v.dims[k]);
        else if (params != s.dim_params.end() && k < params->second.size() && !params->second[k].empty())
          out.value(params->second[k]);
        else out.null();
      }
      out.end_array();
    }
    out.end_object();
  }
  out.end_array();
}

int run_info(const ParsedArgs& args) {
  std::string path = model_path_from(args, "info");
  if (args.has("--shape") && !args.has("--memory")) throw CliError("--shape only applies with --memory");
  ModelSummary summary = read_model_summary(path);
  onyx::SessionOptions options = session_options_from(args);
  bool json = args.has("--json");
  if (!json) print_model(path, summary);

  onyx::Env env;
  std::unique_ptr<onyx::Session> session;
  try {
    session = open_session(env, path, options);
  } catch (const CliError&) {
    if (!json) {  // what the file says is still useful when no session can be made
      print_ops(summary);
      std::cout.flush();
    }
    throw;
  }
  std::vector<onyx::ValueMetadata> inputs = session->inputs(), outputs = session->outputs();
  std::map<std::string, std::vector<int64_t>> shapes = parse_shapes(args.all("--shape"), inputs);
  std::string partition = session->partition_report();
  std::string memory = args.has("--memory") ? memory_json(*session, shapes) : "";
  session.reset();  // what follows reads the reports only: a big graph is not held twice

  if (json) {
    JsonWriter out;
    out.begin_object();
    out.key("path").value(path).key("ir_version").value(summary.ir_version).key("producer").value(summary.producer);
    out.key("opsets").begin_object();
    for (const auto& [domain, version] : summary.opsets) out.key(domain.empty() ? "ai.onnx" : domain).value(version);
    out.end_object();
    out.key("inputs");
    write_values_json(out, inputs, summary);
    out.key("outputs");
    write_values_json(out, outputs, summary);
    out.key("ops").begin_object();
    for (const auto& [op, n] : summary.op_counts) out.key(op).value(n);
    out.end_object();
    out.key("parameters").value(summary.parameter_count);
    out.key("partition").raw(partition);
    if (!memory.empty()) out.key("memory").raw(memory);
    out.end_object();
    std::cout << out.str() << "\n";
    return 0;
  }
  print_values("inputs", inputs, summary);
  print_values("outputs", outputs, summary);
  print_ops(summary);
  print_placement(Json::parse(partition));
  if (!memory.empty()) print_memory(Json::parse(memory), shapes);
  return 0;
}

}  // namespace

Command info_command() {
  std::vector<OptionSpec> options = session_option_specs();
  options.push_back({"--memory", "", "also print the static memory plan per device"});
  options.push_back({"--shape", "NAME=D1,D2,...", "input shape for the memory plan (repeatable; default: symbolic dims = 1)"});
  options.push_back({"--json", "", "print everything as one JSON object"});
  return {"info",
          "describe a model: inputs, outputs, opsets, ops, node placement, memory plan",
          "onyx info MODEL [--provider P ...] [--fallback fail|warn|allow] [--memory] [--shape NAME=DIMS ...] [--json]",
          "",
          options,
          run_info};
}

}  // namespace onyx::cli
