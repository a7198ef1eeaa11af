#include "model_summary.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "command.h"
#include "session_setup.h"

namespace onyx::cli {

namespace {

void count_nodes(const onnx::GraphProto& graph, bool nested, ModelSummary& summary,
                 std::map<std::string, int64_t>& ops) {
  for (const onnx::NodeProto& node : graph.node()) {
    bool standard = node.domain().empty() || node.domain() == "ai.onnx";
    ++ops[standard ? node.op_type() : node.domain() + "::" + node.op_type()];
    ++(nested ? summary.subgraph_node_count : summary.node_count);
    for (const onnx::AttributeProto& attr : node.attribute()) {
      if (attr.has_g()) count_nodes(attr.g(), true, summary, ops);
      for (const onnx::GraphProto& g : attr.graphs()) count_nodes(g, true, summary, ops);
    }
  }
}

void record_dim_params(const onnx::ValueInfoProto& value, ModelSummary& summary) {
  if (!value.type().has_tensor_type() || !value.type().tensor_type().has_shape()) return;
  std::vector<std::string> params;
  bool any = false;
  for (const auto& dim : value.type().tensor_type().shape().dim()) {
    params.push_back(dim.has_dim_param() ? dim.dim_param() : "");
    any = any || dim.has_dim_param();
  }
  if (any) summary.dim_params[value.name()] = std::move(params);
}

}  // namespace

ModelSummary read_model_summary(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CliError("cannot open model file '" + path + "'");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes.str()))
    throw CliError("model file '" + path + "' is not a valid ONNX model (protobuf parse failed; truncated or not ONNX?)");
  if (!model.has_graph()) throw CliError("model file '" + path + "' has no graph");

  ModelSummary s;
  s.ir_version = model.ir_version();
  s.producer = model.producer_name();
  if (!model.producer_version().empty()) s.producer += " " + model.producer_version();
  s.graph_name = model.graph().name();
  for (const onnx::OperatorSetIdProto& opset : model.opset_import())
    s.opsets.emplace_back(opset.domain() == "ai.onnx" ? "" : opset.domain(), opset.version());

  std::map<std::string, int64_t> ops;
  count_nodes(model.graph(), false, s, ops);
  s.op_counts.assign(ops.begin(), ops.end());
  std::stable_sort(s.op_counts.begin(), s.op_counts.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });

  for (const onnx::TensorProto& init : model.graph().initializer()) {
    ++s.initializer_count;
    int64_t count = 1;
    for (int64_t d : init.dims()) count *= std::max<int64_t>(d, 0);
    s.parameter_count += count;
    s.parameter_bytes += count * int64_t(dtype_size(init.data_type()));
    if (init.data_location() == onnx::TensorProto::EXTERNAL) ++s.external_initializers;
  }
  for (const onnx::ValueInfoProto& v : model.graph().input()) record_dim_params(v, s);
  for (const onnx::ValueInfoProto& v : model.graph().output()) record_dim_params(v, s);
  for (const onnx::StringStringEntryProto& p : model.metadata_props()) s.metadata.emplace_back(p.key(), p.value());
  return s;
}

}  // namespace onyx::cli
