// training_model.h: turns a forward ONNX model plus a loss into a training
// model (loss, forward outputs, one gradient per trainable parameter) and an
// eval model (loss, forward outputs). Both are ordinary ONNX ModelProtos that
// any session runs on any provider. The conventions are in docs/training.md.
//
// Thread-safety: build_training_models is reentrant (it touches only its
// arguments and the read-only ONNX schema registry).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "autodiff/autocast.h"
#include "core/status.h"

namespace onyx::runtime::autodiff {

enum class LossKind { kMse, kL1, kCrossEntropy, kBceWithLogits, kNll, kCustom };
enum class Reduction { kMean, kSum };

struct LossSpec {
  LossKind kind = LossKind::kCrossEntropy;
  Reduction reduction = Reduction::kMean;
  // crossentropy and nll: targets equal to it contribute nothing (and are not
  // counted by the mean).
  std::optional<int64_t> ignore_index;
  // crossentropy and nll: ONNX element type of "labels", INT64 (7) or INT32 (6).
  int32_t label_dtype = ONNX_NAMESPACE::TensorProto::INT64;
  // Which forward output the built-in losses read (default: the first).
  std::string output;
  // kCustom: a model whose graph inputs are forward outputs (matched by name)
  // and label inputs (any other name), and whose single output is the loss.
  ONNX_NAMESPACE::ModelProto custom;
  // crossentropy and nll: where the scores keep their classes. 1 is ONNX's
  // [N, C, d1...]; -1 is the last axis, [N, d1..., C], as sequence models
  // write them (PyTorch users flatten those to [-1, C] before the loss).
  int64_t class_axis = 1;
};

// Parses "mse", "l1", "crossentropy", "bcewithlogits", "nll" (the CLI's names).
StatusOr<LossKind> parse_loss_kind(const std::string& name);

struct TrainingSpec {
  // Initializer names that get gradients; empty means every floating-point
  // initializer that is not listed in `frozen`.
  std::vector<std::string> requires_grad;
  // Initializers that become parameters without gradients.
  std::vector<std::string> frozen;
  LossSpec loss;
  // Mixed precision (autocast.h): bf16 and fp16 rewrite the training model's
  // forward part; the eval model stays float32. fp16 also gives the training
  // model a float32 scalar input "loss_scale" that seeds the backward pass
  // (d loss / d loss = loss_scale), so every gradient comes out multiplied
  // by it: the session's dynamic loss scaling (training_session.h).
  Precision precision = Precision::kFp32;
  // Which forward outputs the training and eval models return beside the
  // loss: all of them when unset (Onyx's default), only these when set (an
  // empty list gives the loss alone, as ONNX Runtime's artifacts do).
  std::optional<std::vector<std::string>> forward_outputs{};
};

// The training model input that carries fp16's loss scale.
inline constexpr const char* kLossScaleInput = "loss_scale";

struct Parameter {
  std::string name;
  int32_t dtype = 0;  // ONNX TensorProto element type
  std::vector<int64_t> shape;
  bool requires_grad = false;
};

struct TrainingModels {
  ONNX_NAMESPACE::ModelProto training;
  ONNX_NAMESPACE::ModelProto eval;
  std::vector<Parameter> parameters;  // trainable first, then frozen
  // The forward model's initializer for each parameter, same order.
  std::vector<ONNX_NAMESPACE::TensorProto> initial_values;
  std::vector<std::string> label_inputs;  // "labels" for the built-in losses
};

// Graph inputs of both models: the forward data inputs, the labels, then the
// parameters (no initializers); with fp16 the training model's last input is
// "loss_scale". Training outputs: "loss", the forward
// outputs, then "<param>_grad" per trainable parameter. Eval outputs: "loss",
// the forward outputs. Errors name the parameter, node or op at fault; ops
// without a gradient rule are all listed in one error.
StatusOr<TrainingModels> build_training_models(const ONNX_NAMESPACE::ModelProto& forward,
                                               const TrainingSpec& spec);

// A model computing vector-Jacobian products of `forward` (what a framework's
// autograd calls in its backward pass, e.g. onyx.torch.OnyxModule). Inputs:
// the forward inputs (initializers stay initializers), then "<output>_grad"
// for each floating-point forward output, the upstream gradient of its shape
// and type. Outputs: the forward outputs, then "<name>_grad" for each name in
// `wrt` (graph inputs or initializers, floating point). Built as the gradient
// of sum_k ReduceSum(output_k * output_k_grad), so every gradient rule of the
// training models applies. Errors name the value or op at fault.
StatusOr<ONNX_NAMESPACE::ModelProto> build_gradient_model(const ONNX_NAMESPACE::ModelProto& forward,
                                                          const std::vector<std::string>& wrt);

}  // namespace onyx::runtime::autodiff
