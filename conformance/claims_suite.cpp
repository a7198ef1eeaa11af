// claims_suite.cpp: checking get_capability answers against kernels.
#include "claims_suite.h"

#include <cstring>
#include <map>
#include <memory>

#include "abi_host.h"
#include "graph_view.h"
#include "kernel_case.h"

namespace onyx::conformance {

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

void run_case(const std::string& path, const NodeCase& c, RunResult& result) {
  const PluginUnderTest& p = plugin_for(path);
  const onnx::ModelProto model = read_case_model(c);
  auto graph = OwnedGraph::from_onnx(model.graph(), opsets_of(model));

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
    result.status = RunStatus::kDeclined;
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
    run_claimed_node(*p.plugin, *p.device, *graph, model, c, result.op, KernelCaseOptions{}, result);
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
