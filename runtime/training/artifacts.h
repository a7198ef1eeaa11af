// artifacts.h: everything a training session needs, made from a forward
// model: the training and eval models (runtime/autodiff), the optimizer
// model (optimizer_model.h) and the initial checkpoint (the forward model's
// initializers). `onyx artifacts` writes them to a folder:
//   training.onnx  eval.onnx  optimizer.onnx  checkpoint.ckpt
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "autodiff/training_model.h"
#include "onyx/checkpoint.h"
#include "training/optimizer_model.h"

namespace onyx::runtime::training {

struct ArtifactSpec {
  autodiff::TrainingSpec training;
  std::string optimizer = "adamw";                // plugin name or path
  std::vector<std::string> optimizer_search_dirs;  // searched first
  // Hyperparameter overrides by parameter name (optimizer_model.h), in
  // priority order; the default group is implied.
  std::vector<ParameterGroup> parameter_groups;
};

struct Artifacts {
  ONNX_NAMESPACE::ModelProto training, eval, optimizer;
  checkpoint::Checkpoint checkpoint;  // complete: the forward model's initial values
};

// `model_dir` roots the forward model's external data ("" forbids it).
// Errors name what is wrong: a requested parameter that is not an
// initializer, an op without a gradient rule, an unknown optimizer.
StatusOr<Artifacts> make_artifacts(const ONNX_NAMESPACE::ModelProto& forward, const std::string& model_dir,
                                   const ArtifactSpec& spec);

// Writes the four files into `dir` (created if needed), each atomically.
// `nominal`: the checkpoint keeps names, dtypes and shapes but no data.
Status write_artifacts(const Artifacts& artifacts, const std::string& dir, bool nominal);

}  // namespace onyx::runtime::training
