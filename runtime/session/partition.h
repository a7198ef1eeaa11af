// partition.h: placing nodes on devices in priority order.
//
// Each device is asked (get_capability) which nodes it claims. A node goes to
// the first device, in the order the application listed the providers, that
// claims it. The fallback policy decides what happens when the first
// (preferred) device declines a node that a later one takes: kFail refuses
// the session, kWarn logs and proceeds, kAllow proceeds silently (the report
// still says so). A node no device claims always fails session creation.
#pragma once

#include <string>
#include <vector>

#include "core/log.h"
#include "core/status.h"
#include "ir/graph.h"
#include "optimize/graph_optimizer.h"

namespace onyx::runtime {

enum class FallbackPolicy { kFail, kWarn, kAllow };
const char* fallback_policy_name(FallbackPolicy policy);

struct Device;

struct NodePlacement {
  int device = -1;
  bool on_host = false;      // control flow, or an op on sequences/optionals: run by the host, device stays -1
  uint32_t fused_group = 0;  // 0: own kernel; else group id within the device
  uint32_t dissolved_group = 0;  // the group the device claimed it in, when the host dissolved it
  std::vector<std::pair<std::string, std::string>> declined;  // (device label, reason)
};

struct CopyRecord {
  std::string value;
  std::string from, to;  // device labels or "host"
  std::string reason;
};

// A listed provider that could not run here (no device, no driver) and was
// skipped because the policy allows falling back.
// A fused group the host runs as single-node kernels (session/fused_groups.h).
struct DissolvedGroup {
  std::string device;
  uint32_t group = 0;
  std::vector<std::string> nodes;  // the members left on the device
  std::string reason;
};

// How a kernel step was compiled when the session has a compiled-partition
// cache folder (session/compiled_cache.h).
struct CompiledCacheRecord {
  std::string step;     // "MatMul 'mm'"
  std::string device;
  std::string outcome;  // "hit", "stored", "rebuilt", "not stored", "not cached"
  std::string file;     // the entry's file, when there is one
  std::string reason;   // why it was rebuilt, not stored or not cached
};

struct UnavailableProvider {
  std::string name, reason;
  size_t rank = 0;  // how many opened devices were listed before it
};

// A session made under a device policy (session/device_policy.h): what
// the policy considered and chose.
struct PolicyCandidate {
  std::vector<std::string> devices;  // labels in priority order: {"gpuemu", "cpu"}
  double median_ms = -1;             // fastest: the median timed run; -1 when not measured
  std::string error;                 // why the candidate could not be built or run
};
struct DevicePolicyReport {
  std::string policy = "none";            // "none" (providers named), "prefer-gpu", "prefer-cpu", "fastest"
  std::vector<std::string> chosen;        // the devices the session opened, in priority order
  std::vector<PolicyCandidate> candidates;  // fastest: each one measured
  std::vector<UnavailableProvider> skipped;  // plugins found but unusable, with the reason
  std::string note;                       // e.g. which symbolic dims were set to 1 for measuring
};

struct PartitionReport {
  FallbackPolicy policy = FallbackPolicy::kWarn;
  std::vector<std::string> devices;     // labels in priority order
  std::vector<NodePlacement> nodes;     // per graph node
  std::vector<CopyRecord> copies;
  std::vector<UnavailableProvider> unavailable;
  std::vector<DissolvedGroup> dissolved;
  GraphOptimization optimization_level = GraphOptimization::kOff;
  OptimizationReport optimization;  // what optimize_graph did before partitioning
  std::vector<CompiledCacheRecord> compiled_cache;  // per kernel step, when the cache is on
  DevicePolicyReport device_policy;  // how the devices were chosen
  // True when a provider listed ahead of the node's device declined it or was unavailable.
  bool is_fallback(const NodePlacement& place) const;
  // Machine-readable: {"policy", "devices", "nodes": [{node, op, device, ...}],
  // "unavailable", "dissolved_groups", "copies", "graph_optimization", "compiled_cache",
  // "device_policy"}
  // (docs/architecture.md)
  std::string to_json(const ir::Graph& graph) const;
};

// Fills report.nodes; fails per the policy rules above. Fused groups the
// host cannot keep are dissolved (session/fused_groups.h). Warnings (kWarn)
// go to `logger`.
Status partition_graph(const ir::Graph& graph, const std::vector<std::shared_ptr<Device>>& devices,
                       FallbackPolicy policy, const Logger& logger, PartitionReport& report);

}  // namespace onyx::runtime
