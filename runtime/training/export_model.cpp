// export_model.cpp: TrainingSession::export_inference_model: the eval graph
// cut down to the forward outputs, with the current parameters as
// initializers (inline, or in a side file above the threshold so that models
// over protobuf's 2 GB limit export).
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "training/file_util.h"
#include "training/training_session.h"

namespace onyx::runtime::training {
namespace {

namespace onnx = ONNX_NAMESPACE;

// Every value name a node reads, including names its subgraphs read from
// the enclosing scope.
void collect_reads(const onnx::NodeProto& node, std::set<std::string>& reads) {
  for (const auto& in : node.input())
    if (!in.empty()) reads.insert(in);
  for (const auto& a : node.attribute()) {
    if (a.has_g())
      for (const auto& n : a.g().node()) collect_reads(n, reads);
    for (const auto& g : a.graphs())
      for (const auto& n : g.node()) collect_reads(n, reads);
  }
}

}  // namespace

Status TrainingSession::export_inference_model(const std::string& path, const ExportOptions& options) const {
  ONYX_RETURN_IF_ERROR(check_ready("export_inference_model"));
  ONYX_RETURN_IF_ERROR(sync_state().with_context("export_inference_model"));
  if (eval_model_bytes_.empty())
    return failed_precondition("export_inference_model: the session has no eval model to export from");
  onnx::ModelProto model;
  if (!model.ParseFromString(eval_model_bytes_)) return internal_error("export: eval model does not parse");
  onnx::GraphProto& g = *model.mutable_graph();

  std::vector<std::string> outputs = options.outputs;
  if (outputs.empty())
    for (const auto& o : g.output())
      if (o.name() != "loss") outputs.push_back(o.name());
  if (outputs.empty()) return invalid_argument("export: the eval model has no outputs besides the loss");
  std::set<std::string> needed(outputs.begin(), outputs.end());
  {
    std::set<std::string> available;
    for (const auto& o : g.output()) available.insert(o.name());
    for (const auto& n : g.node())
      for (const auto& o : n.output()) available.insert(o);
    for (const auto& o : outputs)
      if (!available.count(o)) return invalid_argument("export: the eval model has no value named '" + o + "'");
  }
  // Keep the nodes the outputs depend on (walking back from the last node).
  std::vector<bool> keep(size_t(g.node_size()), false);
  for (int i = g.node_size() - 1; i >= 0; --i) {
    const onnx::NodeProto& n = g.node(i);
    bool used = false;
    for (const auto& o : n.output()) used = used || needed.count(o);
    if (!used) continue;
    keep[size_t(i)] = true;
    collect_reads(n, needed);
  }
  onnx::GraphProto pruned;
  pruned.set_name(g.name());
  pruned.set_doc_string("exported by onyx for inference");
  for (int i = 0; i < g.node_size(); ++i)
    if (keep[size_t(i)]) *pruned.add_node() = g.node(i);
  for (const auto& init : g.initializer())
    if (needed.count(init.name())) *pruned.add_initializer() = init;

  std::string file_name = std::filesystem::path(path).filename().string();
  std::string data_file = file_name + ".data";
  bool external = parameters_bytes(false) >= options.external_data_threshold;
  std::string side;
  for (const auto& in : g.input()) {
    if (!needed.count(in.name())) continue;  // labels, unused parameters
    const checkpoint::TensorRecord* p = state_->find_parameter(in.name());
    if (!p) {
      *pruned.add_input() = in;
      continue;
    }
    onnx::TensorProto* t = pruned.add_initializer();
    t->set_name(p->name);
    t->set_data_type(p->dtype);
    for (int64_t d : p->shape) t->add_dims(d);
    const char* bytes = static_cast<const char*>(p->data.data());
    if (!external) {
      t->set_raw_data(bytes, p->bytes());
      continue;
    }
    side.resize((side.size() + 63) / 64 * 64, '\0');  // 64-byte aligned blobs
    auto add_entry = [&](const char* key, const std::string& value) {
      auto* e = t->add_external_data();
      e->set_key(key);
      e->set_value(value);
    };
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    add_entry("location", data_file);
    add_entry("offset", std::to_string(side.size()));
    add_entry("length", std::to_string(p->bytes()));
    side.append(bytes, p->bytes());
  }
  // In the order asked for; a value inside the graph (the eval model need not
  // return it) gets its declared type where one is known.
  for (const auto& name : outputs) {
    onnx::ValueInfoProto out;
    out.set_name(name);
    for (const auto* list : {&g.output(), &g.value_info()})
      for (const auto& v : *list)
        if (v.name() == name && !out.has_type()) out = v;
    *pruned.add_output() = std::move(out);
  }
  for (const auto& vi : g.value_info())
    if (needed.count(vi.name())) *pruned.add_value_info() = vi;
  *model.mutable_graph() = std::move(pruned);

  if (external) {
    std::string side_path = (std::filesystem::path(path).parent_path() / data_file).string();
    ONYX_RETURN_IF_ERROR(write_file_atomically(side_path, side));
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    return internal_error("export: the model does not serialize (over 2 GB with external data off?)");
  return write_file_atomically(path, bytes);
}

}  // namespace onyx::runtime::training
