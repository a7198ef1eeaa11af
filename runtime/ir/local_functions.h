// local_functions.h: a model's own functions (ModelProto.functions, ONNX IR 8
// and later) expanded in place. A node whose (domain, op_type[, overload])
// names one of them is replaced by the function's body, with the body's
// formal inputs and outputs bound to the node's, its other values renamed
// apart, and attribute references (ref_attr_name) resolved against the node
// and the function's declared defaults; calls inside bodies expand in turn.
// Exporters such as onnxscript and torch.onnx (dynamo) write them.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

#include "core/status.h"

namespace onyx::runtime::ir {

// Calls nested deeper than this, or a function that reaches itself, are
// refused; so is an expansion past kMaxInlinedNodes nodes (a function that
// calls another twice, thirty levels deep, is a few bytes of file and a
// billion nodes).
constexpr int kMaxFunctionDepth = 64;
constexpr int64_t kMaxInlinedNodes = 1'000'000;

// Expands every call of a local function in `model`'s graph and its
// subgraphs, then drops the functions. Errors name the function and the
// chain of calls (`what` names the model). A function that imports an opset
// version the model imports differently is refused (its body would be read
// in the wrong opset).
Status inline_local_functions(ONNX_NAMESPACE::ModelProto& model, const std::string& what);

}  // namespace onyx::runtime::ir
