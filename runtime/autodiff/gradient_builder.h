// gradient_builder.h: reverse-mode differentiation over an ONNX graph.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "autodiff/emitter.h"
#include "core/status.h"

namespace onyx::runtime::autodiff {

// Expands, in place, every node on a path from `wrt` to `loss` whose op has
// no gradient rule but whose ONNX schema defines a function body, into that
// body (repeatedly, for bodies that use such ops themselves).
Status inline_function_ops(ONNX_NAMESPACE::GraphProto* graph, Emitter& e,
                           const std::vector<std::string>& wrt, const std::string& loss);

// Appends to `graph` (through `e`) the nodes computing d loss / d wrt[k] for
// each k and returns their value names, in order. `loss` must be a scalar.
// Walks the nodes in reverse topological order, asks each node's rule for its
// inputs' gradients and sums gradients that reach one value. Every op on a
// path from wrt to loss without a rule is listed in one error. A wrt that
// the loss does not depend on gets zeros. `seed` names the value d loss / d
// loss starts from (a scalar of the loss's type, e.g. fp16 training's
// "loss_scale" input); empty means the constant 1.
StatusOr<std::vector<std::string>> build_gradients(ONNX_NAMESPACE::GraphProto* graph, Emitter& e,
                                                   const std::vector<std::string>& wrt,
                                                   const std::string& loss, const std::string& seed = "");

// Renames value `from` to `to` everywhere in the graph's nodes and outputs.
void rename_value(ONNX_NAMESPACE::GraphProto* graph, const std::string& from, const std::string& to);

}  // namespace onyx::runtime::autodiff
