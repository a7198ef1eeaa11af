#include "model_summary.h"

#include <onnx/onnx_pb.h>
#include <onyx/util/model_parse.h>
#include <onyx/util/read_file.h>

#include <algorithm>
#include <cerrno>
#include <limits>

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
  // A regular file only (a FIFO would block), and the weights are not copied
  // into the proto (onyx/util/model_parse.h): the summary needs their dims.
  std::string bytes;
  int error = 0;
  if (std::string failure = util::read_regular_file(path, &bytes, &error); !failure.empty())
    throw CliError(error == ENOENT ? "cannot open model file '" + path + "'" : "model file: " + failure);
  onnx::ModelProto model;
  std::vector<std::string_view> raw_data;
  if (!util::parse_model_proto(bytes, model, raw_data))
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
    // Saturating: a hostile file may declare dims whose product overflows.
    constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
    auto times = [](int64_t a, int64_t b) { return b != 0 && a > kMax / b ? kMax : a * b; };
    int64_t count = 1;
    for (int64_t d : init.dims()) count = times(count, std::max<int64_t>(d, 0));
    s.parameter_count = std::min(kMax - count, s.parameter_count) + count;
    const int64_t bytes_of = times(count, int64_t(dtype_size(init.data_type())));
    s.parameter_bytes = std::min(kMax - bytes_of, s.parameter_bytes) + bytes_of;
    if (init.data_location() == onnx::TensorProto::EXTERNAL) ++s.external_initializers;
  }
  for (const onnx::ValueInfoProto& v : model.graph().input()) record_dim_params(v, s);
  for (const onnx::ValueInfoProto& v : model.graph().output()) record_dim_params(v, s);
  for (const onnx::StringStringEntryProto& p : model.metadata_props()) s.metadata.emplace_back(p.key(), p.value());
  return s;
}

}  // namespace onyx::cli
