// provider_probe.h: asks a session's devices whether they would claim one
// node that is not (yet) in the graph, for the graph optimizer's
// ProviderRank (optimize/graph_optimizer.h): a rewrite into a node no
// provider runs must not happen.
#pragma once

#include "ir/graph.h"
#include "session/device.h"

namespace onyx::runtime {

// The index in `devices` (priority order) of the first device whose
// get_capability claims `node`, shown alone in a one-node graph view: its
// inputs as graph inputs or constants (with their values), its outputs as
// graph outputs, with the types and shapes `graph` knows. -1: none claims it.
int first_claiming_device(const DeviceList& devices, const ir::Graph& graph, const ir::Node& node);

}  // namespace onyx::runtime
