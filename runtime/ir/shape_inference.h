// shape_inference.h: element types and shapes for every value of a graph.
#pragma once

#include <map>

#include "ir/graph.h"

namespace onyx::runtime::ir {

// Fills Value::dtype/rank/dims where they can be derived. `input_shapes`
// (by graph input name) overrides the declared input dims, e.g. to make a
// symbolic batch dimension concrete. Unknown dims stay -1: the executor then
// allocates those tensors at run time. Fails only on a contradiction (e.g.
// MatMul of [2,3] by [4,5]), naming the node.
Status infer_shapes(Graph& graph, const std::map<std::string, Shape>& input_shapes = {});

}  // namespace onyx::runtime::ir
