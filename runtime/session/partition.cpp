#include "session/partition.h"

#include <onyx/util/json_writer.h>

#include "core/abi_status.h"
#include "core/step_observer.h"
#include "plugin/write_guard.h"
#include "session/control_flow.h"
#include "session/host_kernels.h"
#include "session/device.h"
#include "session/fused_groups.h"
#include "session/graph_view.h"

namespace onyx::runtime {

const char* fallback_policy_name(FallbackPolicy policy) {
  switch (policy) {
    case FallbackPolicy::kFail: return "fail";
    case FallbackPolicy::kWarn: return "warn";
    case FallbackPolicy::kAllow: return "allow";
  }
  return "?";
}

Status partition_graph(const ir::Graph& graph, const std::vector<std::shared_ptr<Device>>& devices,
                       FallbackPolicy policy, const Logger& logger, PartitionReport& report) {
  report.policy = policy;
  report.devices.clear();
  report.nodes.assign(graph.nodes.size(), NodePlacement{});
  report.dissolved.clear();
  for (size_t n = 0; n < graph.nodes.size(); ++n)
    report.nodes[n].on_host = is_control_flow(graph.nodes[n]) || runs_on_host_kernels(graph, graph.nodes[n]);
  GraphView view(graph);
  // Unavailable providers decline every node still unplaced at their rank.
  auto decline_unavailable = [&](size_t rank) {
    for (const UnavailableProvider& u : report.unavailable) {
      if (u.rank != rank) continue;
      for (NodePlacement& place : report.nodes)
        if (place.device < 0 && !place.on_host) place.declined.emplace_back(u.name, "provider unavailable: " + u.reason);
    }
  };
  std::vector<PreemptedClaim> preempted;
  for (size_t d = 0; d < devices.size(); ++d) {
    decline_unavailable(d);
    const Device& device = *devices[d];
    report.devices.push_back(device.label);
    WriteGuarded<OnyxNodeClaim> claims(graph.nodes.size());
    for (size_t n = 0; n < claims.size(); ++n) claims[n].struct_size = sizeof(OnyxNodeClaim);
    ProviderActivity activity(device.label, "asking which nodes it claims");
    Status st = take_status(
        device.provider->api().get_capability(device.handle, view.get(), claims.data()));
    if (st.ok()) st = claims.check(device.label, "get_capability's " + std::to_string(claims.size()) + " node claims");
    if (!st.ok()) return st.with_context("capability query of " + device.label);
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
      NodePlacement& place = report.nodes[n];
      if (place.device >= 0 || place.on_host) {
        if (claims[n].claimed && claims[n].fused_group != 0)
          preempted.push_back({int(n), int(d), claims[n].fused_group, place.device});
        continue;
      }
      if (claims[n].claimed) {
        place.device = int(d);
        place.fused_group = claims[n].fused_group;
      } else {
        claims[n].reason[ONYX_REASON_CAPACITY - 1] = '\0';
        place.declined.emplace_back(device.label, claims[n].reason[0] ? claims[n].reason
                                                                      : "declined (no reason given)");
      }
    }
  }
  decline_unavailable(devices.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const NodePlacement& place = report.nodes[n];
    const ir::Node& node = graph.nodes[n];
    auto reasons = [&] {
      std::string s;
      for (const auto& [label, why] : place.declined) s += "\n  " + label + ": " + why;
      return s;
    };
    if (place.on_host) continue;
    if (place.device < 0)
      return unimplemented("no provider supports op " + node.op_type + " (node '" + node.name +
                           "', opset " + std::to_string(graph.opset(node.domain)) + "):" + reasons());
    if (report.is_fallback(place)) {
      const std::string msg = "node '" + node.name + "' (op " + node.op_type + ") falls back to " +
                              devices[place.device]->label + ":" + reasons();
      if (policy == FallbackPolicy::kFail)
        return failed_precondition("fallback policy is 'fail' and " + msg);
      // A node declined only by unavailable providers was warned about once,
      // when the session skipped them.
      bool only_unavailable = true;
      for (const auto& [label, why] : place.declined) {
        bool skipped = false;
        for (const UnavailableProvider& u : report.unavailable) skipped = skipped || u.name == label;
        only_unavailable = only_unavailable && skipped;
      }
      if (policy == FallbackPolicy::kWarn && !only_unavailable)
        logger.warning(msg);
    }
  }
  dissolve_unsound_groups(graph, preempted, report);
  if (policy == FallbackPolicy::kWarn)
    for (const DissolvedGroup& g : report.dissolved) {
      std::string nodes;
      for (const std::string& name : g.nodes) nodes += (nodes.empty() ? "" : ", ") + name;
      logger.warning("fused group " + std::to_string(g.group) + " of " + g.device + " (" + nodes +
                     ") runs as single-node kernels: " + g.reason);
    }
  return Status();
}

bool PartitionReport::is_fallback(const NodePlacement& place) const {
  if (place.device < 0) return false;
  if (place.device > 0) return true;
  for (const UnavailableProvider& u : unavailable)
    if (u.rank == 0) return true;
  return false;
}

std::string PartitionReport::to_json(const ir::Graph& graph) const {
  util::JsonWriter w;
  w.begin_object();
  w.key("policy").value(fallback_policy_name(policy));
  w.key("devices").begin_array();
  for (const std::string& d : devices) w.value(d);
  w.end_array();
  w.key("nodes").begin_array();
  for (size_t n = 0; n < nodes.size(); ++n) {
    const NodePlacement& p = nodes[n];
    w.begin_object();
    w.key("node").value(graph.nodes[n].name);
    w.key("op").value(graph.nodes[n].op_type);
    w.key("domain").value(graph.nodes[n].domain);
    w.key("device").value(p.on_host ? std::string("host") : p.device >= 0 ? devices[p.device] : std::string());
    w.key("fused_group").value(int64_t(p.fused_group));
    w.key("dissolved_group").value(int64_t(p.dissolved_group));
    w.key("fallback").value(is_fallback(p));
    w.key("declined_by").begin_array();
    for (const auto& [label, why] : p.declined) {
      w.begin_object();
      w.key("device").value(label);
      w.key("reason").value(why);
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.key("unavailable").begin_array();
  for (const UnavailableProvider& u : unavailable) {
    w.begin_object();
    w.key("provider").value(u.name);
    w.key("reason").value(u.reason);
    w.end_object();
  }
  w.end_array();
  w.key("dissolved_groups").begin_array();
  for (const DissolvedGroup& g : dissolved) {
    w.begin_object();
    w.key("device").value(g.device);
    w.key("group").value(int64_t(g.group));
    w.key("nodes").begin_array();
    for (const std::string& name : g.nodes) w.value(name);
    w.end_array();
    w.key("reason").value(g.reason);
    w.end_object();
  }
  w.end_array();
  w.key("copies").begin_array();
  for (const CopyRecord& c : copies) {
    w.begin_object();
    w.key("value").value(c.value);
    w.key("from").value(c.from);
    w.key("to").value(c.to);
    w.key("reason").value(c.reason);
    w.end_object();
  }
  w.end_array();
  w.key("graph_optimization").begin_object();
  w.key("level").value(optimization_level == GraphOptimization::kOff     ? "off"
                       : optimization_level == GraphOptimization::kBasic ? "basic"
                                                                         : "all");
  w.key("constants_hoisted").value(int64_t(optimization.constants_hoisted));
  w.key("nodes_bypassed").value(int64_t(optimization.nodes_bypassed));
  w.key("batchnorms_folded").value(int64_t(optimization.batchnorms_folded));
  w.key("relu_grads_reordered").value(int64_t(optimization.relu_grads_reordered));
  w.key("channel_sums_reused").value(int64_t(optimization.channel_sums_reused));
  w.key("nodes_removed").value(int64_t(optimization.nodes_removed));
  w.key("qdq_groups_fused").value(int64_t(optimization.qdq_groups_fused));
  w.key("qdq_fused_ops").begin_object();  // operator-form op -> groups
  for (const auto& [op, count] : optimization.qdq_fused_ops) w.key(op).value(int64_t(count));
  w.end_object();
  w.key("nodes_channels_last").value(int64_t(optimization.nodes_channels_last));
  w.key("patterns_fused").value(int64_t(optimization.patterns_fused));
  w.key("fused_patterns").begin_object();  // fused op -> op-by-op groups it replaced
  for (const auto& [op, count] : optimization.fused_patterns) w.key(op).value(int64_t(count));
  w.end_object();
  w.end_object();
  w.key("compiled_cache").begin_array();  // empty unless the session has a cache folder
  for (const CompiledCacheRecord& r : compiled_cache) {
    w.begin_object();
    w.key("step").value(r.step);
    w.key("device").value(r.device);
    w.key("outcome").value(r.outcome);
    w.key("file").value(r.file);
    w.key("reason").value(r.reason);
    w.end_object();
  }
  w.end_array();
  w.key("device_policy").begin_object();
  w.key("policy").value(device_policy.policy);
  w.key("chosen").begin_array();
  for (const std::string& d : device_policy.chosen) w.value(d);
  w.end_array();
  w.key("candidates").begin_array();
  for (const PolicyCandidate& c : device_policy.candidates) {
    w.begin_object();
    w.key("devices").begin_array();
    for (const std::string& d : c.devices) w.value(d);
    w.end_array();
    w.key("median_ms").value(c.median_ms, 6);  // a timing: more digits are noise
    w.key("error").value(c.error);
    w.end_object();
  }
  w.end_array();
  w.key("skipped").begin_array();
  for (const UnavailableProvider& u : device_policy.skipped) {
    w.begin_object();
    w.key("provider").value(u.name);
    w.key("reason").value(u.reason);
    w.end_object();
  }
  w.end_array();
  w.key("note").value(device_policy.note);
  w.end_object();
  w.end_object();
  return w.str();
}

}  // namespace onyx::runtime
