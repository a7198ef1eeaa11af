// claims_suite.cpp: checking get_capability answers against kernels.
#include "claims_suite.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>

#include "abi_host.h"
#include "compare.h"
#include "graph_view.h"

namespace onyx::conformance {

namespace fs = std::filesystem;

namespace {

struct PluginUnderTest {
  std::unique_ptr<LoadedPlugin> plugin;
  std::unique_ptr<OpenDevice> device;
};

// One plugin and device per worker process, kept for all its cases.
PluginUnderTest& plugin_for(const std::string& path) {
  static std::map<std::string, PluginUnderTest> loaded;
  PluginUnderTest& p = loaded[path];
  if (!p.device) {  // load (again) until a device is open: the error is the case's
    p.device.reset();
    p.plugin = LoadedPlugin::load(path);
    p.device = std::make_unique<OpenDevice>(*p.plugin);
  }
  return p;
}

std::vector<OnyxNodeClaim> ask(const PluginUnderTest& p, const OnyxGraphView& view) {
  std::vector<OnyxNodeClaim> claims(view.node_count);
  for (auto& c : claims) c.struct_size = sizeof c;
  check_status(p.plugin->api()->get_capability(p.device->get(), &view, claims.data()), "get_capability");
  return claims;
}

std::string reason_of(const OnyxNodeClaim& c) {
  return std::string(c.reason, strnlen(c.reason, sizeof c.reason));
}

bool carried(const onnx::TypeProto& type) {
  return type.has_tensor_type() && type.tensor_type().elem_type() != onnx::TensorProto::STRING;
}

// Runs the single node of `model` on every data set and compares.
void run_single_node(const PluginUnderTest& p, const OwnedGraph& graph, const onnx::ModelProto& model,
                     const NodeCase& c, const std::string& op, RunResult& result) {
  OnyxKernel* kernel = nullptr;
  const uint32_t node = 0;
  OnyxStatus* st = p.plugin->api()->kernel_create(p.device->get(), &graph.view(), &node, 1, &kernel);
  if (st) {
    std::string message = status_message_of(st);
    release_status(st);
    throw CaseError("false claim: the node was claimed but kernel_create failed: " + message);
  }
  struct Destroy {
    const PluginUnderTest& p;
    OnyxKernel* k;
    ~Destroy() { p.plugin->api()->kernel_destroy(k); }
  } destroy{p, kernel};

  std::set<std::string> initializers;
  for (const auto& init : model.graph().initializer()) initializers.insert(init.name());
  std::vector<const onnx::ValueInfoProto*> inputs;
  for (const auto& in : model.graph().input())
    if (!initializers.count(in.name())) inputs.push_back(&in);
  const onnx::NodeProto& n = model.graph().node(0);

  std::vector<std::string> sets;
  for (const auto& e : fs::directory_iterator(c.dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0)
      sets.push_back(e.path().string());
  std::sort(sets.begin(), sets.end());
  for (const std::string& set : sets) {
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
      } else {
        in.present = false;  // an optional graph input the data set leaves out
      }
      kernel_inputs.push_back(std::move(in));
    }
    std::vector<HostTensor> produced = run_kernel(*p.plugin, *p.device, kernel, kernel_inputs, size_t(n.output_size()));
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
      Comparison cmp = compare_tensor(expected, got.dtype, got.dims.data(), got.dims.size(), got.bytes.data(),
                                      tolerance_for(op, expected.dtype));
      result.max_error = std::max(result.max_error, cmp.max_error);
      if (!cmp.ok)
        throw CaseError("claimed, but output '" + out.name() + "' (" + fs::path(set).filename().string() +
                        ") is wrong: " + cmp.message);
    }
  }
}

void run_case(const std::string& path, const NodeCase& c, RunResult& result) {
  const PluginUnderTest& p = plugin_for(path);
  onnx::ModelProto model;
  {
    std::ifstream in(c.dir + "/model.onnx", std::ios::binary);
    if (!in || !model.ParseFromIstream(&in)) throw CaseError("cannot read " + c.dir + "/model.onnx");
  }
  std::map<std::string, int64_t> opsets;
  for (const auto& o : model.opset_import()) opsets[o.domain() == "ai.onnx" ? "" : o.domain()] = o.version();
  auto graph = OwnedGraph::from_onnx(model.graph(), opsets);

  const std::vector<OnyxNodeClaim> whole = ask(p, graph->view());
  const std::vector<OnyxNodeClaim> again = ask(p, graph->view());
  size_t claimed = 0;
  for (size_t k = 0; k < graph->node_count(); ++k) {
    const std::string node = "node " + std::to_string(k) + " (" + model.graph().node(int(k)).op_type() + ")";
    if (whole[k].claimed != again[k].claimed)
      throw CaseError(node + " was claimed in one get_capability call and declined in the next");
    const std::vector<OnyxNodeClaim> alone = ask(p, graph->node_view(k));
    if (alone[0].claimed != whole[k].claimed)
      throw CaseError(node + (whole[k].claimed ? " is claimed in its graph but declined alone ('"
                                               : " is declined in its graph but claimed alone ('") +
                      reason_of(whole[k].claimed ? alone[0] : whole[k]) + "')");
    if (!whole[k].claimed && reason_of(whole[k]).empty())
      throw CaseError(node + " was declined without a reason (the partition report shows users the reason)");
    claimed += whole[k].claimed;
  }
  if (claimed == 0) {
    result.status = RunStatus::kUnsupported;
    result.error = "declined: " + (whole.empty() ? std::string("empty graph") : reason_of(whole[0]));
    return;
  }
  if (graph->node_count() == 1) {
    for (const auto* list : {&model.graph().input(), &model.graph().output()})
      for (const auto& v : *list)
        if (!carried(v.type())) {
          result.status = RunStatus::kUnsupported;
          result.error = "claimed; not run: value '" + v.name() + "' is not a numeric tensor";
          return;
        }
    run_single_node(p, *graph, model, c, result.op, result);
  }
  result.status = RunStatus::kPassed;
}

}  // namespace

RunResult run_claims_case(const std::string& path, const NodeCase& c) {
  RunResult result;
  try {
    result.op = node_case_op(c);
    run_case(path, c, result);
  } catch (const DeviceUnavailable& e) {
    result.status = RunStatus::kUnsupported;
    result.error = e.what();
  } catch (const std::exception& e) {
    result.status = RunStatus::kFailed;
    result.error = e.what();
  }
  return result;
}

}  // namespace onyx::conformance
