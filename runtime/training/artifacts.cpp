#include "training/artifacts.h"

#include <filesystem>

#include "ir/tensor_proto.h"
#include "onyx/checkpoint_tools.h"
#include "training/file_util.h"
#include "training/optimizer_model.h"

namespace onyx::runtime::training {

StatusOr<Artifacts> make_artifacts(const ONNX_NAMESPACE::ModelProto& forward, const std::string& model_dir,
                                   const ArtifactSpec& spec) {
  ONYX_ASSIGN_OR_RETURN(autodiff::TrainingModels models, autodiff::build_training_models(forward, spec.training));
  Artifacts a;
  a.training = std::move(models.training);
  a.eval = std::move(models.eval);
  std::vector<OptimizerParameter> trainable;
  for (size_t i = 0; i < models.parameters.size(); ++i) {
    const autodiff::Parameter& p = models.parameters[i];
    ONYX_ASSIGN_OR_RETURN(Tensor value, ir::tensor_from_proto(models.initial_values[i], model_dir, p.name));
    checkpoint::TensorRecord record{p.name, p.dtype, p.shape, value, std::nullopt, std::nullopt};
    if (value.shape() != Shape(p.shape) || value.dtype() != p.dtype)
      return internal_error("initial value of '" + p.name + "' does not match its declared type");
    if (p.requires_grad) {
      a.checkpoint.module.trainable.push_back(std::move(record));
      trainable.push_back({p.name, p.dtype, p.shape});
    } else {
      a.checkpoint.module.frozen.push_back(std::move(record));
    }
  }
  if (trainable.empty()) return invalid_argument("artifacts: no parameter requires a gradient");
  ONYX_ASSIGN_OR_RETURN(OptimizerDescription optimizer,
                        load_optimizer_plugin(spec.optimizer, spec.optimizer_search_dirs));
  std::vector<ParameterGroup> groups = {ParameterGroup{}};
  groups.insert(groups.end(), spec.parameter_groups.begin(), spec.parameter_groups.end());
  ONYX_RETURN_IF_ERROR(assign_parameter_groups(optimizer, groups, trainable));
  ONYX_ASSIGN_OR_RETURN(a.optimizer, build_optimizer_model(optimizer, trainable, groups));
  a.checkpoint.metadata.model_identity = forward.graph().name();
  return a;
}

Status write_artifacts(const Artifacts& a, const std::string& dir, bool nominal) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return data_loss("cannot create folder " + dir + ": " + ec.message());
  for (auto [name, model] : {std::pair{"training.onnx", &a.training}, std::pair{"eval.onnx", &a.eval},
                             std::pair{"optimizer.onnx", &a.optimizer}}) {
    std::string bytes;
    if (!model->SerializeToString(&bytes))
      return internal_error(std::string("cannot serialize ") + name + " (over protobuf's 2 GB limit?)");
    ONYX_RETURN_IF_ERROR(write_file_atomically((fs::path(dir) / name).string(), bytes));
  }
  fs::path ckpt = fs::path(dir) / "checkpoint.ckpt";
  return nominal ? checkpoint::save(checkpoint::make_nominal(a.checkpoint), ckpt) : checkpoint::save(a.checkpoint, ckpt);
}

}  // namespace onyx::runtime::training
