// model_summary.h: what `onyx info` reads from the ModelProto itself (the C
// API does not expose it): IR version, producer, opsets, ops used, parameters,
// and the names of symbolic dims.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace onyx::cli {

struct ModelSummary {
  int64_t ir_version = 0;
  std::string producer;  // "name version"
  std::string graph_name;
  std::vector<std::pair<std::string, int64_t>> opsets;     // (domain, version); "" is ai.onnx
  std::vector<std::pair<std::string, int64_t>> op_counts;  // ("Gemm" or "domain::Op", count), most used first
  int64_t node_count = 0;           // in the main graph
  int64_t subgraph_node_count = 0;  // inside If/Loop/Scan bodies
  int64_t initializer_count = 0;
  int64_t parameter_count = 0;      // elements over all initializers
  int64_t parameter_bytes = 0;
  int64_t external_initializers = 0;  // stored in side files
  // Graph input/output name -> per-dim symbolic name ("" where the dim is not symbolic).
  std::map<std::string, std::vector<std::string>> dim_params;
  std::vector<std::pair<std::string, std::string>> metadata;  // metadata_props
};

// Parses the model file (not its external data). Throws CliError.
ModelSummary read_model_summary(const std::string& path);

}  // namespace onyx::cli
