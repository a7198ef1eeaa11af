// fused_groups.h: keeping the ABI's promises about fused groups
// (OnyxNodeClaim.fused_group), and the order the steps run in.
//
// A device claims nodes as fused group k to have them compiled into one
// kernel, which computes the group's outputs from its inputs and need not
// write the values passed between its nodes. After every device has
// claimed, the host keeps a group only where that is sound; otherwise its
// nodes run as single-node kernels on the same device, and the partition
// report says why (NodePlacement::dissolved_group, PartitionReport::
// dissolved). A group is dissolved when
//  1. a member was pre-empted: a device listed ahead claimed it, or the
//     host runs it (control flow);
//  2. a value passed between its members is also read outside it (by
//     another device, by a node outside the group, or as a graph output),
//     since the kernel need not write it;
//  3. it is not convex: a path leaves the group and re-enters it, so no
//     single step could run it;
//  4. it cannot be ordered: fused groups that are convex one by one may
//     still depend on each other in a cycle; one of them is dissolved.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "session/partition.h"

namespace onyx::runtime {

// A claim that lost its node to a device listed ahead (or to the host).
struct PreemptedClaim {
  int node = -1;
  int device = -1;  // the claiming device
  uint32_t group = 0;
  int taken_by = -1;  // the device that has the node; -1: the host
};

// Applies rules 1-4 to report.nodes (device labels from report.devices),
// recording each dissolved group in report.dissolved.
void dissolve_unsound_groups(const ir::Graph& graph, const std::vector<PreemptedClaim>& preempted,
                             PartitionReport& report);

// The nodes of each step, in an order where every step comes after the
// steps producing what it reads: the graph's topological order, with each
// fused group (after dissolve_unsound_groups) as one unit.
StatusOr<std::vector<std::vector<int>>> step_order(const ir::Graph& graph, const PartitionReport& report);

}  // namespace onyx::runtime
