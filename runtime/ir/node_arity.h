// node_arity.h: a node's input and output counts checked against its op's
// ONNX schema when the model is loaded, so that no kernel, shape rule or
// pass meets a MatMul with one input or a Conv whose weight is an empty name.
#pragma once

#include <string>

#include "core/status.h"
#include "ir/graph.h"

namespace onyx::runtime::ir {

// OK, or INVALID_ARGUMENT naming the node, its counts and the schema's: too
// few or too many inputs or outputs, or a required input left empty. Checked
// where onnx 1.12's schemas know the op at `opset` (ai.onnx up to opset 17,
// ai.onnx.ml up to 3; a newer opset may have changed the op's inputs, so it
// is not judged by an older version). Elsewhere kernels guard themselves
// (the SDK's NodeInfo refuses to index past a node's inputs).
Status check_node_arity(const Node& node, int64_t opset, const std::string& scope);

}  // namespace onyx::runtime::ir
