// kernel_case.cpp: one single-node case through the ABI host.
#include "kernel_case.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

namespace onyx::conformance {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> data_set_dirs(const std::string& dir) {
  std::vector<std::string> sets;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0)
      sets.push_back(e.path().string());
  std::sort(sets.begin(), sets.end());
  return sets;
}

std::string reason_of(const OnyxNodeClaim& c) { return std::string(c.reason, strnlen(c.reason, sizeof c.reason)); }

}  // namespace

bool carried(const onnx::TypeProto& type) {
  return type.has_tensor_type() && type.tensor_type().elem_type() != onnx::TensorProto::STRING;
}

onnx::ModelProto read_case_model(const NodeCase& c) {
  onnx::ModelProto model;
  std::ifstream in(c.dir + "/model.onnx", std::ios::binary);
  if (!in || !model.ParseFromIstream(&in)) throw CaseError("cannot read " + c.dir + "/model.onnx");
  return model;
}

std::map<std::string, int64_t> opsets_of(const onnx::ModelProto& model) {
  std::map<std::string, int64_t> opsets;
  for (const auto& o : model.opset_import()) opsets[o.domain() == "ai.onnx" ? "" : o.domain()] = o.version();
  return opsets;
}

void run_claimed_node(const LoadedPlugin& plugin, const OpenDevice& device, const OwnedGraph& graph,
                      const onnx::ModelProto& model, const NodeCase& c, const std::string& op,
                      const KernelCaseOptions& options, RunResult& result) {
  OnyxKernel* kernel = nullptr;
  const uint32_t node = 0;
  OnyxStatus* st = plugin.api()->kernel_create(device.get(), &graph.view(), &node, 1, &kernel);
  if (st) {
    std::string message = status_message_of(st);
    release_status(st);
    throw CaseError("false claim: the node was claimed but kernel_create failed: " + message);
  }
  if (!kernel) throw CaseError("false claim: kernel_create succeeded but returned no kernel");
  struct Destroy {
    const LoadedPlugin& p;
    OnyxKernel* k;
    ~Destroy() { p.api()->kernel_destroy(k); }
  } destroy{plugin, kernel};

  std::set<std::string> initializers;
  for (const auto& init : model.graph().initializer()) initializers.insert(init.name());
  std::vector<const onnx::ValueInfoProto*> inputs;
  for (const auto& in : model.graph().input())
    if (!initializers.count(in.name())) inputs.push_back(&in);
  const onnx::NodeProto& n = model.graph().node(0);

  for (const std::string& set : data_set_dirs(c.dir)) {
    std::map<std::string, HostTensor> values;
    for (size_t k = 0; k < inputs.size(); ++k) {
      const std::string file = set + "/input_" + std::to_string(k) + ".pb";
      if (!fs::exists(file)) break;
      values[inputs[k]->name()] = read_value_file(file, inputs[k]->type()).tensor;
    }
    std::vector<KernelInput> kernel_inputs;
    for (const auto& name : n.input()) {
      KernelInput in;
      if (name.empty()) {
        in.present = false;
      } else if (values.count(name)) {
        in.tensor = values[name];
      } else if (const HostTensor* constant = graph.constant(graph.value_index(name))) {
        in.tensor = *constant;
        in.constant = true;
      } else {
        in.present = false;  // an optional graph input the data set leaves out
      }
      kernel_inputs.push_back(std::move(in));
    }
    const std::vector<HostTensor> produced =
        run_kernel(plugin, device, kernel, kernel_inputs, size_t(n.output_size()), options.run).outputs;
    for (int k = 0; k < model.graph().output_size(); ++k) {
      const auto& out = model.graph().output(k);
      const std::string file = set + "/output_" + std::to_string(k) + ".pb";
      if (!fs::exists(file)) continue;
      int slot = -1;
      for (int j = 0; j < n.output_size(); ++j)
        if (n.output(j) == out.name()) slot = j;
      if (slot < 0 || produced[size_t(slot)].dtype == 0)
        throw CaseError("claimed, but output '" + out.name() + "' was not produced");
      const HostTensor expected = read_value_file(file, out.type()).tensor;
      const HostTensor& got = produced[size_t(slot)];
      const Tolerance tol = options.tolerance ? options.tolerance(op, expected.dtype) : tolerance_for(op, expected.dtype);
      Comparison cmp = compare_tensor(expected, got.dtype, got.dims.data(), got.dims.size(), got.bytes.data(), tol);
      result.max_error = std::max(result.max_error, cmp.max_error);
      if (!cmp.ok)
        throw CaseError("claimed, but output '" + out.name() + "' (" + fs::path(set).filename().string() +
                        ") is wrong: " + cmp.message);
    }
  }
}

RunResult run_kernel_case(const LoadedPlugin& plugin, const OpenDevice& device, const NodeCase& c,
                          const KernelCaseOptions& options) {
  RunResult result;
  try {
    onnx::ModelProto model = read_case_model(c);
    result.op = node_case_op(c);
    if (model.graph().node_size() != 1) {
      result.status = RunStatus::kUnsupported;
      result.error = "the model has " + std::to_string(model.graph().node_size()) + " nodes (one node runs here)";
      return result;
    }
    for (const auto* list : {&model.graph().input(), &model.graph().output()})
      for (const auto& v : *list)
        if (!carried(v.type())) {
          result.status = RunStatus::kUnsupported;
          result.error = "value '" + v.name() + "' is not a numeric tensor";
          return result;
        }
    if (options.hide_shapes) {
      onnx::GraphProto& g = *model.mutable_graph();
      for (auto* list : {g.mutable_input(), g.mutable_output()})
        for (auto& v : *list) v.mutable_type()->mutable_tensor_type()->clear_shape();
    }
    auto graph = OwnedGraph::from_onnx(model.graph(), opsets_of(model));
    OnyxNodeClaim claim{};
    claim.struct_size = sizeof claim;
    check_status(plugin.api()->get_capability(device.get(), &graph->view(), &claim), "get_capability");
    if (!claim.claimed) {
      result.status = RunStatus::kDeclined;
      result.error = "declined: " + reason_of(claim);
      return result;
    }
    run_claimed_node(plugin, device, *graph, model, c, result.op, options, result);
    result.status = RunStatus::kPassed;
  } catch (const std::exception& e) {
    result.status = RunStatus::kFailed;
    result.error = e.what();
  }
  return result;
}

}  // namespace onyx::conformance
