// optimizer_model.h: the optimizer model, an ordinary ONNX model that applies
// one optimizer step to every trainable parameter, built from an optimizer
// plugin's update function (inlined once per parameter) plus gradient
// clipping by global norm. It runs on any provider like any other model.
//
// Inputs, in order: "lr", "step", "max_grad_norm" (float32 scalars; step
// counts updates from 1; max_grad_norm <= 0 turns clipping off), then the
// plugin's hyperparameters (float32 scalars, declared order), then for each
// parameter: "<p>", "<p>_grad", then one "<p>.<slot>" per state slot.
// Outputs: "grad_norm" (the global norm before clipping), then for each
// parameter "<p>.updated" and "<p>.<slot>.updated".
// The model describes itself in metadata_props (read_optimizer_model_info),
// so a session needs no plugin to run it. When the plugin names a fused op,
// the session first tries the fused form (fuse_optimizer_model) and keeps it
// if a provider claims every update, else runs the inlined function bodies.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "training/optimizer_plugin.h"

namespace onyx::runtime::training {

struct OptimizerParameter {
  std::string name;
  int32_t dtype = ONYX_DTYPE_FLOAT32;
  Shape shape;
  size_t group = 0;  // index into the model's parameter groups; 0: the default group
};

// A parameter group: the parameters whose names match `pattern` (an
// ECMAScript regular expression, searched) take `overrides` instead of the
// session's hyperparameters, e.g. BERT's biases and LayerNorm weights with
// weight_decay 0. Group 0 is the default group (no pattern, no overrides);
// a parameter belongs to the first group whose pattern matches it.
struct ParameterGroup {
  std::string pattern;
  std::vector<std::pair<std::string, float>> overrides;
};

// Parses "PATTERN:NAME=VALUE[,NAME=VALUE...]" (the CLI's --param-group and the
// "param_group" artifact option), the pattern being what precedes the last ':'.
StatusOr<ParameterGroup> parse_parameter_group(const std::string& text);

// Assigns each parameter its group (the first of groups[1..] whose pattern it
// matches, else 0). Errors: a pattern that does not compile, an override that
// names no hyperparameter of `optimizer`, a group that matches no parameter.
Status assign_parameter_groups(const OptimizerDescription& optimizer, const std::vector<ParameterGroup>& groups,
                               std::vector<OptimizerParameter>& params);

// The inputs that carry the groups' overrides, with their values, as the
// session feeds them.
std::vector<std::pair<std::string, float>> group_override_inputs(const std::vector<ParameterGroup>& groups);

// The input that carries hyperparameter `name` for `group`: "name" where the
// group does not override it, else "name@group".
std::string hyperparameter_input(const std::vector<ParameterGroup>& groups, size_t group, const std::string& name);

struct OptimizerModelInfo {
  std::string optimizer;  // "adamw"
  std::vector<OptimizerSlotInfo> slots;
  std::vector<OptimizerHyperparameterInfo> hyperparameters;  // with defaults
  std::vector<std::string> parameters;
  std::vector<ParameterGroup> groups = {ParameterGroup{}};  // [0]: the default group
  std::vector<size_t> parameter_groups;                     // per parameter
  std::string fused_op_domain, fused_op_type;  // empty: the plugin names no fused op
};

inline std::string gradient_name(const std::string& param) { return param + "_grad"; }
inline std::string slot_name(const std::string& param, const std::string& slot) { return param + "." + slot; }
inline std::string updated_name(const std::string& value) { return value + ".updated"; }

// Errors: a parameter that is not float32, an update function that does not
// parse or whose signature does not match the plugin's declarations.
// `groups` (with [0] the default group; empty means just that) adds one input
// per group override, fed by the session with the override's value.
StatusOr<ONNX_NAMESPACE::ModelProto> build_optimizer_model(const OptimizerDescription& optimizer,
                                                           const std::vector<OptimizerParameter>& params,
                                                           const std::vector<ParameterGroup>& groups = {});

// The same model with each parameter's update as one node of the plugin's
// fused op (a provider that implements it claims it; see the session).
// Without `clipping` the updates read the gradients as they are and the
// model has no "grad_norm" output: two passes over every gradient fewer (its
// norm, then its scaling by 1), for sessions whose max_grad_norm is <= 0.
// Errors when the optimizer names no fused op.
StatusOr<ONNX_NAMESPACE::ModelProto> fuse_optimizer_model(const ONNX_NAMESPACE::ModelProto& inlined,
                                                          bool clipping = true);

// Reads the description back from a model made by build_optimizer_model.
StatusOr<OptimizerModelInfo> read_optimizer_model_info(const ONNX_NAMESPACE::ModelProto& model);

}  // namespace onyx::runtime::training
