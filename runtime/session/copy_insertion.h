// copy_insertion.h: the pass that moves values between memories.
//
// Given the steps in execution order, each reading values where their
// producers left them (graph inputs and constants live in host memory), it
// inserts a copy step right before the first step that reads a value on a
// device that cannot read the memory the value is in, and one at the end
// for each graph output the host cannot read. memory_copy moves bytes
// between one device and host memory only, so the copy is done by the
// device whose memory the host cannot read: host-to-device by the
// destination, device-to-host by the source (also into the memory of a
// host-readable device such as the CPU provider's), and a value going from
// one such device to another is staged through host memory (two copies,
// the second reading the first's host value). A value copied to a device
// once is read from that copy by every later step on the device. Each copy
// adds one value to the graph, named "<value>@<device or host>"; the
// model's own values keep their names and roles.
#pragma once

#include <vector>

#include "ir/graph.h"
#include "session/device.h"
#include "session/partition.h"
#include "session/step.h"

namespace onyx::runtime {

struct CopyInsertion {
  std::vector<Step> steps;          // the input steps with copies between them
  std::vector<int> output_values;   // per graph output: the value the host reads it from
  std::vector<CopyRecord> copies;   // for the partition report
};

CopyInsertion insert_copies(ir::Graph& graph, const DeviceList& devices, std::vector<Step> steps);

}  // namespace onyx::runtime
