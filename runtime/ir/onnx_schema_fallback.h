// onnx_schema_fallback.h: onnx's own type and shape inference, for ops that
// have no Onyx rule (ai.onnx.ml, rarely used ai.onnx ops).
#pragma once

#include <vector>

#include "ir/graph.h"
#include "ir/shape_rules.h"

namespace onyx::runtime::ir {

// Runs the onnx 1.12 schema's inference function for `node` and writes what
// it finds into `outputs` (one per node output). Does nothing when libonnx
// does not know the op at the model's opset (it knows ai.onnx up to opset 17:
// for a newer opset it could pick an outdated version of the op), when an
// input's type is unknown or not a tensor, when the node has subgraphs, or
// when onnx's inference throws: the outputs then stay unknown.
void onnx_schema_fallback(const Graph& graph, const Node& node, std::vector<shape::TypeShape>& outputs);

}  // namespace onyx::runtime::ir
