// onyx_training.hpp: a thin header-only C++ wrapper over
// onyx_training_c_api.h. RAII handles; failures throw onyx::Error.
// Lifetime: a CheckpointState must outlive the TrainingSessions made with it.
// Thread-safety: as the C API (one thread at a time per state and its sessions).
#pragma once

#include <onyx/onyx.hpp>
#include <onyx/onyx_checkpoint.hpp>  // CheckpointState
#include <onyx/onyx_training_c_api.h>

#include <map>
#include <string>
#include <vector>

namespace onyx {

// Writes training/eval/optimizer models and a checkpoint into out_dir; the
// options are those of onyx_training_generate_artifacts (repeat keys freely).
inline void generate_artifacts(const std::string& model_path,
                               const std::vector<std::pair<std::string, std::string>>& options,
                               const std::string& out_dir) {
  std::vector<const char*> keys, values;
  for (const auto& [k, v] : options) {
    keys.push_back(k.c_str());
    values.push_back(v.c_str());
  }
  check(onyx_training_generate_artifacts(model_path.c_str(), keys.data(), values.data(), keys.size(),
                                         out_dir.c_str()));
}

// One process's place in a data-parallel job (onyx_distributed_job_join).
class DistributedJob {
 public:
  explicit DistributedJob(const std::string& collectives, double timeout_seconds = 0) {
    OnyxDistributedJob* j = nullptr;
    check(onyx_distributed_job_join(collectives.c_str(), timeout_seconds, &j));
    raw_.reset(j);
  }
  int rank() const { return onyx_distributed_job_rank(raw_.get()); }
  int size() const { return onyx_distributed_job_size(raw_.get()); }
  // Sums each value over the ranks (every rank calls it with as many values).
  void sum(std::vector<double>& values) { check(onyx_distributed_job_sum(raw_.get(), values.data(), values.size())); }
  std::string counters() const {
    char* text = nullptr;
    check(onyx_distributed_job_counters(raw_.get(), &text));
    return detail::take_string(text);
  }
  OnyxDistributedJob* get() const { return raw_.get(); }

 private:
  std::unique_ptr<OnyxDistributedJob, detail::Deleter<OnyxDistributedJob, onyx_distributed_job_release>> raw_;
};

class TrainingSession {
 public:
  // eval_path / optimizer_path may be empty.
  TrainingSession(Env& env, CheckpointState& state, const std::string& training_path, const std::string& eval_path,
                  const std::string& optimizer_path, const SessionOptions& options = SessionOptions()) {
    OnyxTrainingSession* s = nullptr;
    check(onyx_training_session_create(env.get(), state.get(), training_path.c_str(),
                                       eval_path.empty() ? nullptr : eval_path.c_str(),
                                       optimizer_path.empty() ? nullptr : optimizer_path.c_str(), options.get(), &s));
    raw_.reset(s);
  }
  std::vector<std::string> input_names(bool eval = false) const {
    std::vector<std::string> names;
    for (size_t i = 0; i < onyx_training_session_input_count(raw_.get(), eval); ++i)
      names.push_back(onyx_training_session_input_name(raw_.get(), eval, i));
    return names;
  }
  std::vector<std::string> output_names(bool eval = false) const {
    std::vector<std::string> names;
    for (size_t i = 0; i < onyx_training_session_output_count(raw_.get(), eval); ++i)
      names.push_back(onyx_training_session_output_name(raw_.get(), eval, i));
    return names;
  }
  std::vector<Tensor> train_step(const std::vector<const Tensor*>& inputs) { return step(inputs, false); }
  std::vector<Tensor> eval_step(const std::vector<const Tensor*>& inputs) { return step(inputs, true); }
  void lazy_reset_grad() { check(onyx_training_session_lazy_reset_grad(raw_.get())); }
  void optimizer_step() { check(onyx_training_session_optimizer_step(raw_.get())); }
  double learning_rate() const {
    double lr = 0;
    check(onyx_training_session_get_learning_rate(raw_.get(), &lr));
    return lr;
  }
  void set_learning_rate(double lr) { check(onyx_training_session_set_learning_rate(raw_.get(), lr)); }
  void set_lr_schedule(const std::string& schedule, double base_lr) {
    check(onyx_training_session_set_lr_schedule(raw_.get(), schedule.c_str(), base_lr));
  }
  void scheduler_step() { check(onyx_training_session_scheduler_step(raw_.get())); }
  void set_hyperparameter(const std::string& name, float value) {
    check(onyx_training_session_set_hyperparameter(raw_.get(), name.c_str(), value));
  }
  void set_max_grad_norm(float norm) { check(onyx_training_session_set_max_grad_norm(raw_.get(), norm)); }
  // fp16 dynamic loss scaling (onyx_training_session_set_loss_scaling).
  void set_loss_scaling(double initial_scale, int64_t growth_interval = 2000) {
    check(onyx_training_session_set_loss_scaling(raw_.get(), initial_scale, growth_interval));
  }
  double loss_scale() const {
    double scale = 1;
    check(onyx_training_session_get_loss_scale(raw_.get(), &scale));
    return scale;
  }
  bool last_step_skipped() const {
    bool skipped = false;
    check(onyx_training_session_last_step_skipped(raw_.get(), &skipped));
    return skipped;
  }
  size_t parameters_bytes(bool trainable_only = false) const {
    size_t bytes = 0;
    check(onyx_training_session_parameters_size(raw_.get(), trainable_only, nullptr, &bytes));
    return bytes;
  }
  std::vector<unsigned char> parameters_to_buffer(bool trainable_only = false) const {
    std::vector<unsigned char> buffer(parameters_bytes(trainable_only));
    check(onyx_training_session_copy_parameters_to_buffer(raw_.get(), buffer.data(), buffer.size(), trainable_only));
    return buffer;
  }
  void buffer_to_parameters(const std::vector<unsigned char>& buffer, bool trainable_only = false) {
    check(onyx_training_session_copy_buffer_to_parameters(raw_.get(), buffer.data(), buffer.size(), trainable_only));
  }
  void export_model(const std::string& path, const std::vector<std::string>& outputs = {}) const {
    std::vector<const char*> names;
    for (const auto& o : outputs) names.push_back(o.c_str());
    check(onyx_training_session_export_model(raw_.get(), path.c_str(), names.data(), names.size()));
  }
  void set_seed(uint64_t seed) { check(onyx_training_session_set_seed(raw_.get(), seed)); }
  // Data-parallel training (onyx_training_session_join): options "zero_stage",
  // "bucket_bytes", "optimizer_dir" (repeatable).
  void join(DistributedJob& job, const std::vector<std::pair<std::string, std::string>>& options = {}) {
    std::vector<const char*> keys, values;
    for (const auto& [k, v] : options) {
      keys.push_back(k.c_str());
      values.push_back(v.c_str());
    }
    check(onyx_training_session_join(raw_.get(), job.get(), keys.data(), values.data(), keys.size()));
  }
  void gather_optimizer_state() { check(onyx_training_session_gather_optimizer_state(raw_.get())); }
  void save_checkpoint_shard(const std::string& path) const {
    check(onyx_training_session_save_checkpoint_shard(raw_.get(), path.c_str()));
  }
  void set_step_weight(double weight) { check(onyx_training_session_set_step_weight(raw_.get(), weight)); }
  void set_gradient_accumulation_mean(bool mean) {
    check(onyx_training_session_set_gradient_accumulation_mean(raw_.get(), mean));
  }
  OnyxTrainingSession* get() const { return raw_.get(); }

 private:
  std::vector<Tensor> step(const std::vector<const Tensor*>& inputs, bool eval) {
    std::vector<const OnyxTensor*> in;
    for (const Tensor* t : inputs) in.push_back(t->get());
    std::vector<OnyxTensor*> out(onyx_training_session_output_count(raw_.get(), eval), nullptr);
    OnyxStatus* status = eval ? onyx_training_session_eval_step(raw_.get(), in.data(), in.size(), out.data(), out.size())
                              : onyx_training_session_train_step(raw_.get(), in.data(), in.size(), out.data(), out.size());
    check(status);
    std::vector<Tensor> result;
    for (OnyxTensor* t : out) result.emplace_back(t);
    return result;
  }
  std::unique_ptr<OnyxTrainingSession, detail::Deleter<OnyxTrainingSession, onyx_training_session_release>> raw_;
};

}  // namespace onyx
