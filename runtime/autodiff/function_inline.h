// function_inline.h: expands ops whose ONNX schema defines a function body
// into that body, so that ops without their own gradient rule are
// differentiated through the ops they are defined by.
#pragma once

#include <onnx/onnx_pb.h>

#include <vector>

#include "autodiff/emitter.h"
#include "core/status.h"

namespace onyx::runtime::autodiff {

// True when the op's schema (at the emitter's opset) defines a function body,
// static or built for the node's attributes and input types.
bool has_function_body(const ONNX_NAMESPACE::NodeProto& node, const Emitter& e);

// Replaces the nodes at `indices` by their function bodies, in place. Body
// values get fresh names; attribute references take the node's attribute or
// the schema's default.
Status inline_nodes(ONNX_NAMESPACE::GraphProto* graph, const std::vector<int>& indices, Emitter& e);

}  // namespace onyx::runtime::autodiff
