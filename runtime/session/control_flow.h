// control_flow.h: If, Loop, Scan and SequenceMap, run by the host rather
// than a provider.
//
// The partitioner places these nodes on the host (no provider is asked);
// each becomes a Step of kind kControlFlow whose inputs are the node's inputs
// followed by the enclosing values its subgraphs capture (Graph::outer_refs,
// in control_flow_captures() order). At session creation every subgraph is
// compiled once into a child Session over the same providers and fallback
// policy; its captured values become extra graph inputs. At run time the
// step runs the children per branch / iteration / scan slice / sequence
// item on host values: tensors, sequences and optionals (core/value.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "ir/graph.h"

namespace onyx::runtime {

class Session;
struct RunState;
struct Step;

bool is_control_flow(const ir::Node& node);

// Enclosing value indices that the node's subgraphs read, deduplicated, in
// the order of its subgraph attributes and their outer_refs.
std::vector<int> control_flow_captures(const ir::Graph& graph, const ir::Node& node);

// A control-flow node's compiled subgraphs (then/else, or body).
struct CompiledSubgraph {
  std::string attribute;               // "then_branch", "body", ...
  std::shared_ptr<Session> session;
  // Per extra child input (after the subgraph's own inputs): the index into
  // the step's inputs that feeds it.
  std::vector<size_t> capture_inputs;
};
struct ControlFlow {
  std::vector<CompiledSubgraph> subgraphs;
};

// Runs one kControlFlow step: reads its inputs from `run`, writes host tensors.
Status run_control_flow(RunState& run, const Step& step);

}  // namespace onyx::runtime
