// training_c_api.cpp: the training C API (onyx_training_c_api.h) over
// runtime/training. Every entry point is guarded: no exception crosses.
#include <onyx/onyx_training_c_api.h>

#include <onnx/onnx_pb.h>
#include <onyx/util/read_file.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "api/c_api_internal.h"
#include "api/checkpoint_state.h"
#include "training/artifacts.h"
#include "training/file_util.h"
#include "training/training_session.h"

namespace onyx::runtime::capi {

Status sync_from_devices(const OnyxCheckpointState& state) {
  return training::TrainingSession::sync_state_of(*state.state);
}

}  // namespace onyx::runtime::capi

struct OnyxTrainingSession {
  std::unique_ptr<onyx::runtime::training::TrainingSession> session;
};
struct OnyxDistributedJob {
  std::shared_ptr<onyx::runtime::Communicator> comm;
};

namespace {

using onyx::runtime::Status;
using onyx::runtime::capi::guarded;
using onyx::runtime::capi::null_arg;
namespace tr = onyx::runtime::training;

onyx::runtime::StatusOr<std::string> read_file(const char* path) {
  std::string bytes;
  int error = 0;
  std::string failure = onyx::util::read_regular_file(path, &bytes, &error);
  if (failure.empty()) return bytes;
  return error == ENOENT ? onyx::runtime::not_found(failure) : onyx::runtime::invalid_argument(failure);
}

Status parse_artifact_options(const char* const* keys, const char* const* values, size_t count,
                              tr::ArtifactSpec& spec, bool& nominal) {
  auto& loss = spec.training.loss;
  for (size_t i = 0; i < count; ++i) {
    if (!keys[i] || !values[i]) return null_arg("onyx_training_generate_artifacts", "an option key or value");
    std::string key = keys[i], value = values[i];
    if (key == "requires_grad") {
      spec.training.requires_grad.push_back(value);
    } else if (key == "frozen") {
      spec.training.frozen.push_back(value);
    } else if (key == "loss") {
      ONYX_ASSIGN_OR_RETURN(loss.kind, onyx::runtime::autodiff::parse_loss_kind(value));
    } else if (key == "reduction") {
      if (value != "mean" && value != "sum") return onyx::runtime::invalid_argument("reduction '" + value + "': mean or sum");
      loss.reduction = value == "sum" ? onyx::runtime::autodiff::Reduction::kSum : onyx::runtime::autodiff::Reduction::kMean;
    } else if (key == "ignore_index") {
      try {
        loss.ignore_index = std::stoll(value);
      } catch (const std::exception&) {
        return onyx::runtime::invalid_argument("ignore_index '" + value + "' is not an integer");
      }
    } else if (key == "class_axis") {
      if (value != "1" && value != "-1") return onyx::runtime::invalid_argument("class_axis '" + value + "': 1 or -1");
      loss.class_axis = value == "1" ? 1 : -1;
    } else if (key == "label_dtype") {
      if (value != "int64" && value != "int32") return onyx::runtime::invalid_argument("label_dtype '" + value + "': int64 or int32");
      loss.label_dtype = value == "int32" ? ONNX_NAMESPACE::TensorProto::INT32 : ONNX_NAMESPACE::TensorProto::INT64;
    } else if (key == "loss_output") {
      loss.output = value;
    } else if (key == "optimizer") {
      spec.optimizer = value;
    } else if (key == "param_group") {
      auto group = onyx::runtime::training::parse_parameter_group(value);
      if (!group.ok()) return group.status();
      spec.parameter_groups.push_back(std::move(group).value());
    } else if (key == "optimizer_dir") {
      spec.optimizer_search_dirs.push_back(value);
    } else if (key == "precision") {
      ONYX_ASSIGN_OR_RETURN(spec.training.precision, onyx::runtime::autodiff::parse_precision(value));
    } else if (key == "nominal") {
      nominal = value == "1" || value == "true";
    } else if (key == "forward_outputs") {
      auto& kept = spec.training.forward_outputs.emplace();
      for (size_t start = 0; start < value.size();) {
        size_t end = std::min(value.find(',', start), value.size());
        if (end > start) kept.push_back(value.substr(start, end - start));
        start = end + 1;
      }
    } else {
      return onyx::runtime::invalid_argument("unknown artifact option '" + key + "'");
    }
  }
  return Status();
}

Status create_training_session(OnyxEnv* env, OnyxCheckpointState* state, const tr::TrainingModelBytes& models,
                               const OnyxSessionOptions* options, OnyxTrainingSession** out) {
  tr::TrainingSessionOptions opts;
  if (options) opts.session = options->options;
  ONYX_ASSIGN_OR_RETURN(auto session, tr::TrainingSession::create(env->registry, state->state, models, opts));
  *out = new OnyxTrainingSession{std::move(session)};
  return Status();
}

Status step(OnyxTrainingSession* s, bool eval, const OnyxTensor* const* inputs, size_t input_count,
            OnyxTensor** outputs, size_t output_count) {
  if (!s || (input_count && !inputs) || !outputs) return null_arg(eval ? "eval_step" : "train_step", "argument");
  const auto& names = eval ? s->session->eval_output_names() : s->session->train_output_names();
  if (output_count != names.size())
    return onyx::runtime::invalid_argument(std::string(eval ? "eval_step" : "train_step") + ": output_count is " +
                                  std::to_string(output_count) + ", the model has " + std::to_string(names.size()));
  std::vector<onyx::runtime::Tensor> in;
  for (size_t i = 0; i < input_count; ++i) {
    if (!inputs[i]) return null_arg("train_step", "an input tensor");
    in.push_back(inputs[i]->tensor);
  }
  auto result = eval ? s->session->eval_step(in) : s->session->train_step(in);
  if (!result.ok()) return result.status();
  for (size_t i = 0; i < output_count; ++i) outputs[i] = new OnyxTensor{std::move(result.value()[i])};
  return Status();
}

const std::vector<std::string>& names_of(const OnyxTrainingSession* s, bool eval, bool inputs) {
  if (eval) return inputs ? s->session->eval_input_names() : s->session->eval_output_names();
  return inputs ? s->session->train_input_names() : s->session->train_output_names();
}

}  // namespace

extern "C" {

OnyxStatus* onyx_training_generate_artifacts(const char* model_path, const char* const* keys,
                                             const char* const* values, size_t count, const char* out_dir) {
  return guarded([&]() -> Status {
    if (!model_path || !out_dir || (count && (!keys || !values)))
      return null_arg("onyx_training_generate_artifacts", "argument");
    tr::ArtifactSpec spec;
    bool nominal = false;
    ONYX_RETURN_IF_ERROR(parse_artifact_options(keys, values, count, spec, nominal));
    ONYX_ASSIGN_OR_RETURN(std::string bytes, read_file(model_path));
    ONNX_NAMESPACE::ModelProto forward;
    if (!forward.ParseFromString(bytes)) return onyx::runtime::invalid_argument(std::string(model_path) + " is not an ONNX model");
    std::string dir = std::filesystem::absolute(model_path).parent_path().string();
    ONYX_ASSIGN_OR_RETURN(tr::Artifacts artifacts, tr::make_artifacts(forward, dir, spec));
    return tr::write_artifacts(artifacts, out_dir, nominal);
  });
}

OnyxStatus* onyx_training_build_gradient_model(const char* model_path, const char* const* wrt, size_t count,
                                               const char* out_path) {
  return guarded([&]() -> Status {
    if (!model_path || !out_path || (count && !wrt)) return null_arg("onyx_training_build_gradient_model", "argument");
    std::vector<std::string> names;
    for (size_t i = 0; i < count; ++i) {
      if (!wrt[i]) return null_arg("onyx_training_build_gradient_model", "a wrt name");
      names.push_back(wrt[i]);
    }
    ONYX_ASSIGN_OR_RETURN(std::string bytes, read_file(model_path));
    ONNX_NAMESPACE::ModelProto forward;
    if (!forward.ParseFromString(bytes)) return onyx::runtime::invalid_argument(std::string(model_path) + " is not an ONNX model");
    for (const auto& t : forward.graph().initializer())
      if (t.data_location() == ONNX_NAMESPACE::TensorProto::EXTERNAL)
        return onyx::runtime::invalid_argument(std::string(model_path) + ": initializer '" + t.name() +
                                               "' keeps its data in an external file; the gradient model needs "
                                               "every initializer inline");
    auto model = onyx::runtime::autodiff::build_gradient_model(forward, names);
    if (!model.ok()) return model.status().with_context(model_path);
    std::string out;
    if (!model.value().SerializeToString(&out))
      return onyx::runtime::invalid_argument(std::string(model_path) + ": the gradient model does not serialize (over 2 GB?)");
    return tr::write_file_atomically(out_path, out);
  });
}

OnyxStatus* onyx_training_session_create(OnyxEnv* env, OnyxCheckpointState* state, const char* training_path,
                                         const char* eval_path, const char* optimizer_path,
                                         const OnyxSessionOptions* options, OnyxTrainingSession** out) {
  return guarded([&]() -> Status {
    if (!env || !state || !training_path || !out) return null_arg("onyx_training_session_create", "argument");
    tr::TrainingModelBytes models;
    models.base_dir = std::filesystem::absolute(training_path).parent_path().string();
    ONYX_ASSIGN_OR_RETURN(models.training, read_file(training_path));
    if (eval_path) {
      ONYX_ASSIGN_OR_RETURN(models.eval, read_file(eval_path));
    }
    if (optimizer_path) {
      ONYX_ASSIGN_OR_RETURN(models.optimizer, read_file(optimizer_path));
    }
    return create_training_session(env, state, models, options, out);
  });
}

OnyxStatus* onyx_training_session_create_from_buffers(OnyxEnv* env, OnyxCheckpointState* state, const void* training,
                                                      size_t training_size, const void* eval, size_t eval_size,
                                                      const void* optimizer, size_t optimizer_size,
                                                      const OnyxSessionOptions* options, OnyxTrainingSession** out) {
  return guarded([&]() -> Status {
    if (!env || !state || !training || !out || (eval_size && !eval) || (optimizer_size && !optimizer))
      return null_arg("onyx_training_session_create_from_buffers", "argument");
    tr::TrainingModelBytes models;
    models.training.assign(static_cast<const char*>(training), training_size);
    if (eval) models.eval.assign(static_cast<const char*>(eval), eval_size);
    if (optimizer) models.optimizer.assign(static_cast<const char*>(optimizer), optimizer_size);
    return create_training_session(env, state, models, options, out);
  });
}

void onyx_training_session_release(OnyxTrainingSession* session) { delete session; }

size_t onyx_training_session_input_count(const OnyxTrainingSession* s, bool eval) {
  return s ? names_of(s, eval, true).size() : 0;
}
size_t onyx_training_session_output_count(const OnyxTrainingSession* s, bool eval) {
  return s ? names_of(s, eval, false).size() : 0;
}
const char* onyx_training_session_input_name(const OnyxTrainingSession* s, bool eval, size_t index) {
  if (!s || index >= names_of(s, eval, true).size()) return nullptr;
  return names_of(s, eval, true)[index].c_str();
}
const char* onyx_training_session_output_name(const OnyxTrainingSession* s, bool eval, size_t index) {
  if (!s || index >= names_of(s, eval, false).size()) return nullptr;
  return names_of(s, eval, false)[index].c_str();
}

OnyxStatus* onyx_training_session_lazy_reset_grad(OnyxTrainingSession* s) {
  return guarded([&]() -> Status {
    if (!s) return null_arg("onyx_training_session_lazy_reset_grad", "session");
    s->session->lazy_reset_grad();
    return Status();
  });
}

OnyxStatus* onyx_training_session_train_step(OnyxTrainingSession* s, const OnyxTensor* const* inputs,
                                             size_t input_count, OnyxTensor** outputs, size_t output_count) {
  return guarded([&] { return step(s, false, inputs, input_count, outputs, output_count); });
}

OnyxStatus* onyx_training_session_eval_step(OnyxTrainingSession* s, const OnyxTensor* const* inputs,
                                            size_t input_count, OnyxTensor** outputs, size_t output_count) {
  return guarded([&] { return step(s, true, inputs, input_count, outputs, output_count); });
}

OnyxStatus* onyx_training_session_optimizer_step(OnyxTrainingSession* s) {
  return guarded([&]() -> Status {
    if (!s) return null_arg("onyx_training_session_optimizer_step", "session");
    return s->session->optimizer_step();
  });
}

OnyxStatus* onyx_training_session_set_learning_rate(OnyxTrainingSession* s, double lr) {
  return guarded([&]() -> Status {
    if (!s) return null_arg("onyx_training_session_set_learning_rate", "session");
    return s->session->set_learning_rate(lr);
  });
}

OnyxStatus* onyx_training_session_get_learning_rate(const OnyxTrainingSession* s, double* lr) {
  return guarded([&]() -> Status {
    if (!s || !lr) return null_arg("onyx_training_session_get_learning_rate", "argument");
    *lr = s->session->learning_rate();
    return Status();
  });
}

OnyxStatus* onyx_training_session_set_lr_schedule(OnyxTrainingSession* s, const char* schedule, double base_lr) {
  return guarded([&]() -> Status {
    if (!s || !schedule) return null_arg("onyx_training_session_set_lr_schedule", "argument");
    ONYX_ASSIGN_OR_RETURN(tr::LrSchedule parsed, tr::parse_lr_schedule(schedule));
    parsed.base_lr = base_lr;
    return s->session->set_lr_schedule(parsed);
  });
}

OnyxStatus* onyx_training_session_scheduler_step(OnyxTrainingSession* s) {
  return guarded([&]() -> Status {
    if (!s) return null_arg("onyx_training_session_scheduler_step", "session");
    return s->session->scheduler_step();
  });
}

OnyxStatus* onyx_training_session_set_hyperparameter(OnyxTrainingSession* s, const char* name, float value) {
  return guarded([&]() -> Status {
    if (!s || !name) return null_arg("onyx_training_session_set_hyperparameter", "argument");
    return s->session->set_hyperparameter(name, value);
  });
}

OnyxStatus* onyx_training_session_set_max_grad_norm(OnyxTrainingSession* s, float max_norm) {
  return guarded([&]() -> Status {
    if (!s) return null_arg("onyx_training_session_set_max_grad_norm", "session");
    s->session->set_max_grad_norm(max_norm);
    return Status();
  });
}

OnyxStatus* onyx_training_session_set_loss_scaling(OnyxTrainingSession* s, double initial_scale,
                                                   int64_t growth_interval) {
  return guarded([&]() -> Status {
    if (!s) return null_arg("onyx_training_session_set_loss_scaling", "session");
    return s->session->set_loss_scaling({initial_scale, growth_interval});
  });
}

OnyxStatus* onyx_training_session_get_loss_scale(const OnyxTrainingSession* s, double* scale) {
  return guarded([&]() -> Status {
    if (!s || !scale) return null_arg("onyx_training_session_get_loss_scale", "argument");
    *scale = s->session->loss_scale();
    return Status();
  });
}

OnyxStatus* onyx_training_session_last_step_skipped(const OnyxTrainingSession* s, bool* skipped) {
  return guarded([&]() -> Status {
    if (!s || !skipped) return null_arg("onyx_training_session_last_step_skipped", "argument");
    *skipped = s->session->last_step_skipped();
    return Status();
  });
}

OnyxStatus* onyx_training_session_parameters_size(const OnyxTrainingSession* s, bool trainable_only,
                                                  size_t* elements, size_t* bytes) {
  return guarded([&]() -> Status {
    if (!s) return null_arg("onyx_training_session_parameters_size", "session");
    if (elements) *elements = s->session->parameters_elements(trainable_only);
    if (bytes) *bytes = s->session->parameters_bytes(trainable_only);
    return Status();
  });
}

OnyxStatus* onyx_training_session_copy_parameters_to_buffer(const OnyxTrainingSession* s, void* buffer, size_t bytes,
                                                            bool trainable_only) {
  return guarded([&]() -> Status {
    if (!s || !buffer) return null_arg("onyx_training_session_copy_parameters_to_buffer", "argument");
    return s->session->copy_parameters_to_buffer(buffer, bytes, trainable_only);
  });
}

OnyxStatus* onyx_training_session_copy_buffer_to_parameters(OnyxTrainingSession* s, const void* buffer, size_t bytes,
                                                            bool trainable_only) {
  return guarded([&]() -> Status {
    if (!s || !buffer) return null_arg("onyx_training_session_copy_buffer_to_parameters", "argument");
    return s->session->copy_buffer_to_parameters(buffer, bytes, trainable_only);
  });
}

OnyxStatus* onyx_training_session_export_model(const OnyxTrainingSession* s, const char* path,
                                               const char* const* output_names, size_t count) {
  return guarded([&]() -> Status {
    if (!s || !path || (count && !output_names)) return null_arg("onyx_training_session_export_model", "argument");
    tr::ExportOptions options;
    for (size_t i = 0; i < count; ++i) {
      if (!output_names[i]) return null_arg("onyx_training_session_export_model", "an output name");
      options.outputs.push_back(output_names[i]);
    }
    return s->session->export_inference_model(path, options);
  });
}

OnyxStatus* onyx_training_session_set_seed(OnyxTrainingSession* s, uint64_t seed) {
  return guarded([&]() -> Status {
    if (!s) return null_arg("onyx_training_session_set_seed", "session");
    s->session->set_seed(seed);
    return Status();
  });
}

}  // extern "C"

// ---- data-parallel training -------------------------------------------------

OnyxStatus* onyx_distributed_job_join(const char* collectives, double timeout_seconds, OnyxDistributedJob** out) {
  return guarded([&]() -> Status {
    if (!collectives || !out) return null_arg("onyx_distributed_job_join", "argument");
    onyx::runtime::CollectiveOptions options;
    if (timeout_seconds > 0)
      options.timeout = std::chrono::milliseconds(int64_t(std::min(timeout_seconds, 86400.0) * 1000));
    auto comm = onyx::runtime::Communicator::load(collectives, {}, options);
    if (!comm.ok()) return comm.status();
    *out = new OnyxDistributedJob{std::move(comm).value()};
    return Status();
  });
}

void onyx_distributed_job_release(OnyxDistributedJob* job) { delete job; }

int32_t onyx_distributed_job_rank(const OnyxDistributedJob* job) { return job ? job->comm->rank() : -1; }
int32_t onyx_distributed_job_size(const OnyxDistributedJob* job) { return job ? job->comm->size() : -1; }

OnyxStatus* onyx_distributed_job_sum(OnyxDistributedJob* job, double* values, size_t count) {
  return guarded([&]() -> Status {
    if (!job || (!values && count)) return null_arg("onyx_distributed_job_sum", "argument");
    if (count == 0) return Status();
    return job->comm->all_reduce(values, values, count, ONYX_DTYPE_FLOAT64, ONYX_REDUCE_SUM, "a metric sum");
  });
}

OnyxStatus* onyx_distributed_job_counters(const OnyxDistributedJob* job, char** text) {
  return guarded([&]() -> Status {
    if (!job || !text) return null_arg("onyx_distributed_job_counters", "argument");
    *text = onyx::runtime::capi::copy_string(job->comm->counters().to_string());
    return Status();
  });
}

OnyxStatus* onyx_training_session_join(OnyxTrainingSession* s, OnyxDistributedJob* job, const char* const* keys,
                                       const char* const* values, size_t count) {
  return guarded([&]() -> Status {
    if (!s || !job || (count && (!keys || !values))) return null_arg("onyx_training_session_join", "argument");
    onyx::runtime::training::DataParallelOptions options;
    for (size_t k = 0; k < count; ++k) {
      if (!keys[k] || !values[k]) return null_arg("onyx_training_session_join", "option key or value");
      std::string key = keys[k], value = values[k];
      char* end = nullptr;
      unsigned long long number = std::strtoull(value.c_str(), &end, 10);
      bool is_number = !value.empty() && end && *end == 0 && value[0] != '-';
      if (key == "zero_stage" && is_number) {
        options.zero_stage = int(std::min<unsigned long long>(number, 1000));
      } else if (key == "bucket_bytes" && is_number) {
        options.bucket_bytes = size_t(number);
      } else if (key == "optimizer_dir") {
        options.optimizer_search_dirs.push_back(value);
      } else {
        return onyx::runtime::invalid_argument("onyx_training_session_join: bad option " + key + "=" + value +
                                               " (zero_stage, bucket_bytes: whole numbers; optimizer_dir)");
      }
    }
    return s->session->join_data_parallel(job->comm, options);
  });
}

OnyxStatus* onyx_training_session_gather_optimizer_state(OnyxTrainingSession* s) {
  return guarded([&]() -> Status {
    if (!s) return null_arg("onyx_training_session_gather_optimizer_state", "session");
    return s->session->gather_optimizer_state();
  });
}

OnyxStatus* onyx_training_session_set_gradient_accumulation_mean(OnyxTrainingSession* s, bool mean) {
  return guarded([&]() -> Status {
    if (!s) return null_arg("onyx_training_session_set_gradient_accumulation_mean", "session");
    s->session->set_average_accumulated_gradients(mean);
    return Status();
  });
}

OnyxStatus* onyx_training_session_set_step_weight(OnyxTrainingSession* s, double weight) {
  return guarded([&]() -> Status {
    if (!s) return null_arg("onyx_training_session_set_step_weight", "session");
    return s->session->set_step_weight(weight);
  });
}

OnyxStatus* onyx_training_session_save_checkpoint_shard(const OnyxTrainingSession* s, const char* path) {
  return guarded([&]() -> Status {
    if (!s || !path) return null_arg("onyx_training_session_save_checkpoint_shard", "argument");
    auto shard = s->session->checkpoint_shard();
    if (!shard.ok()) return shard.status();
    return onyx::checkpoint::save(shard.value(), path);
  });
}
