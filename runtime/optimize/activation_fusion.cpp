// activation_fusion.cpp: an activation folded into the node that makes its
// input, so that it runs on each output block while the block is in cache
// instead of in a pass of its own (ONNX Runtime's com.microsoft forms):
//   Conv -> Relu / LeakyRelu / Clip (constant bounds) / Sigmoid / Tanh /
//     HardSwish / Swish or com.microsoft QuickGelu (alpha as its one
//     parameter) ->
//     FusedConv (the Conv's inputs and attributes, plus activation and
//     activation_params);
//   Gemm -> Relu -> FusedGemm (the Gemm's, plus activation "Relu");
//   BatchNormalization (inference form) -> Relu -> ai.onyx
//     FusedBatchNormalization (its inputs and epsilon, plus activation
//     "Relu"): a training graph's frozen BatchNorm, which cannot fold into
//     the Conv before it (the weights are inputs there), in one pass.
// float32 only; the producer's output must have no other reader (a training
// graph's pre-activation, read by the Relu's gradient, keeps them apart).
// Runs after BatchNormalization folding, so Conv -> BatchNormalization ->
// Relu fuses too.
#include <cfloat>
#include <cstring>

#include "optimize/pattern_match.h"

namespace onyx::runtime::optimize {
namespace {

ir::Attribute floats_attribute(const char* name, std::vector<float> v) {
  ir::Attribute a;
  a.name = name;
  a.type = ONYX_ATTR_FLOATS;
  a.floats = std::move(v);
  return a;
}

// The FusedConv activation of node `act` and its parameters, or false.
bool activation_of(const GraphRewrite& rw, const ir::Node& act, const char** name, std::vector<float>* params) {
  if (act.inputs.empty() || act.outputs.size() != 1) return false;
  // Swish as swish_fusion.cpp writes it (before this pass), under either name.
  const bool quick_gelu = act.domain == "com.microsoft" && act.op_type == "QuickGelu";
  if (quick_gelu || (act.domain.empty() && act.op_type == "Swish")) {
    const ir::Attribute* alpha = act.attr("alpha");
    *name = quick_gelu ? "QuickGelu" : "Swish";
    *params = {alpha ? alpha->f : quick_gelu ? 1.702f : 1.0f};
    return true;
  }
  if (!act.domain.empty()) return false;
  for (const char* plain : {"Relu", "Sigmoid", "Tanh", "HardSwish"})
    if (act.op_type == plain && act.inputs.size() == 1) {
      *name = plain;
      return true;
    }
  if (act.op_type == "LeakyRelu" && act.inputs.size() == 1) {
    const ir::Attribute* alpha = act.attr("alpha");
    *name = "LeakyRelu";
    *params = {alpha ? alpha->f : 0.01f};
    return true;
  }
  if (act.op_type != "Clip") return false;
  float lo = -FLT_MAX, hi = FLT_MAX;
  if (rw.graph.opset("") < 11) {
    if (const ir::Attribute* a = act.attr("min")) lo = a->f;
    if (const ir::Attribute* a = act.attr("max")) hi = a->f;
  } else {
    for (size_t k = 1; k < act.inputs.size(); ++k) {
      if (act.inputs[k] < 0) continue;
      const Tensor* t = rw.fixed_constant(act.inputs[k]);
      if (!t || t->dtype() != ONYX_DTYPE_FLOAT32 || t->size() != 1) return false;
      (k == 1 ? lo : hi) = *t->data_as<float>();
    }
  }
  *name = "Clip";
  *params = {lo, hi};
  return true;
}

// A BatchNormalization that normalizes with its given statistics and writes
// only Y: all five inputs, opset 9+ (no spatial = 0, no is_test form), and
// training_mode absent or 0.
bool inference_batch_norm(const GraphRewrite& rw, const ir::Node& bn) {
  if (bn.inputs.size() != 5 || bn.outputs.size() != 1 || rw.graph.opset("") < 9) return false;
  for (int v : bn.inputs)
    if (v < 0) return false;
  const ir::Attribute* training = bn.attr("training_mode");
  return !training || training->i == 0;
}

bool fuse_at(GraphRewrite& rw, const ProviderRank& providers, int a, ActivationFusions* made) {
  ir::Graph& g = rw.graph;
  const ir::Node& act = g.nodes[size_t(a)];
  const char* name = nullptr;
  std::vector<float> params;
  if (!activation_of(rw, act, &name, &params)) return false;
  const int v = act.inputs[0];
  const bool relu = std::strcmp(name, "Relu") == 0;
  int c = producer_of(rw, v, "Conv");
  int* count = &made->conv;
  if (c < 0 && relu && (c = producer_of(rw, v, "Gemm")) >= 0) count = &made->gemm;
  if (c < 0 && relu && (c = producer_of(rw, v, "BatchNormalization")) >= 0) count = &made->batch_norm;
  if (c < 0 || !internal(rw, v) || g.values[size_t(v)].dtype != ONYX_DTYPE_FLOAT32) return false;
  const ir::Node& producer = g.nodes[size_t(c)];
  ir::Node fused;
  fused.name = (producer.name.empty() ? g.values[size_t(act.outputs[0])].name : producer.name) + "_" + act.op_type;
  fused.inputs = producer.inputs;
  fused.outputs = act.outputs;
  if (count == &made->batch_norm) {
    if (!inference_batch_norm(rw, producer)) return false;
    fused.op_type = "FusedBatchNormalization";
    fused.domain = "ai.onyx";
    if (const ir::Attribute* eps = producer.attr("epsilon")) fused.attributes.push_back(*eps);
  } else {
    if (producer.inputs.size() < 2 || producer.inputs.size() > 3) return false;
    fused.op_type = count == &made->gemm ? "FusedGemm" : "FusedConv";
    fused.domain = "com.microsoft";
    fused.attributes = producer.attributes;
  }
  fused.attributes.push_back(string_attribute("activation", name));
  if (!params.empty()) fused.attributes.push_back(floats_attribute("activation_params", params));
  if (!claimed_in_place(rw, providers, fused, {c, a})) return false;
  commit_fusion(rw, {c, a}, std::move(fused));
  ++*count;
  return true;
}

}  // namespace

ActivationFusions fuse_activations(GraphRewrite& rw, const ProviderRank& providers) {
  ActivationFusions made;
  fuse_each_node(rw, [&](int n) { return fuse_at(rw, providers, n, &made); });
  return made;
}

}  // namespace onyx::runtime::optimize
