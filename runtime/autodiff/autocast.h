// autocast.h: mixed-precision training's graph rewrite. The ops of one
// allowlist (kAutocastOps: the matrix products, where 16-bit arithmetic pays)
// read their float32 inputs through a Cast to bfloat16 or float16 and their
// results are cast back to float32, so every other op (Softmax,
// LayerNormalization, reductions, the loss) keeps computing in float32.
// Parameters stay float32 graph inputs: they are the master weights, and
// their gradients come back float32 through the Cast's gradient rule.
#pragma once

#include <onnx/onnx_pb.h>

#include <array>
#include <string>
#include <string_view>

#include "autodiff/emitter.h"
#include "core/status.h"

namespace onyx::runtime::autodiff {

enum class Precision { kFp32, kBf16, kFp16 };

// "fp32", "bf16", "fp16"; anything else is INVALID_ARGUMENT naming the value.
StatusOr<Precision> parse_precision(const std::string& name);
const char* precision_name(Precision p);

// The one list of ops that compute in 16 bits under autocast.
inline constexpr std::array<std::string_view, 4> kAutocastOps = {"MatMul", "Gemm", "Conv", "ConvTranspose"};

// Rewrites nodes [0, node_count) of `graph` (the forward part: nodes after
// it, such as the loss, stay untouched) for precision `p` (kFp32: nothing).
// A node of kAutocastOps whose floating-point inputs are all float32 reads
// each through one Cast per distinct value (shared by every consumer;
// a value that is itself a cast-back of a 16-bit result reuses that result),
// and its float32 outputs keep their names as Casts of the 16-bit results.
// Node order stays topological. New values are named `onyx/autocast...`
// through `e`, which also learns their types. Returns how many nodes were
// rewritten.
StatusOr<int> autocast(ONNX_NAMESPACE::GraphProto* graph, Emitter& e, Precision p, int node_count);

}  // namespace onyx::runtime::autodiff
