// training_session.h: runs the training, eval and optimizer models against
// checkpoint state that lives apart from the session.
//
// The models follow docs/training.md: the training and eval models take the
// data inputs, the labels, then every parameter as a graph input (fed here
// from the checkpoint, so weights live once); the training model returns
// "loss", the forward outputs and "<p>_grad" per trainable parameter. The
// optimizer model is optimizer_model.h's.
//
// A step:   lazy_reset_grad();  train_step(batch) [x k: gradients add up];
//           optimizer_step();   scheduler_step();
// Memory: gradients are one buffer per trainable parameter, kept across
// steps (overwritten after a reset, accumulated otherwise); optimizer state
// lives in the checkpoint and is created at the first optimizer step.
// A nominal checkpoint (no data) allocates nothing; train, eval, optimizer
// and export fail with FAILED_PRECONDITION until every parameter has data
// (copy_buffer_to_parameters, update_parameter, or load_parameters_from).
//
// On a device the host cannot read (a GPU), the session keeps parameters,
// gradients and optimizer state in the device's memory between its steps
// (device_state.h); the checkpoint's tensors are brought up to date by
// sync_state(), which every method here that reads or writes them calls
// first, as does the C API before any use of an OnyxCheckpointState. Code
// that reads the Checkpoint struct itself calls sync_state_of() first.
// Steps of a data-parallel job, of fp16 loss scaling and ones that
// accumulate or weight gradients keep the state on the host.
//
// Thread-safety: a TrainingSession is not synchronized; use it from one
// thread at a time (sync_state and sync_state_of may run concurrently with
// each other, not with a step). The checkpoint may be shared by several
// sessions used one at a time; its tensors are replaced (not written in
// place) by steps.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "distributed/communicator.h"
#include "onyx/checkpoint.h"
#include "session/session.h"
#include "training/lr_scheduler.h"
#include "training/optimizer_model.h"

namespace onyx::runtime::training {

class ShardedOptimizer;  // sharded_optimizer.h
class DeviceState;       // device_state.h

// Serialized ModelProtos; eval and optimizer may be empty (no EvalStep /
// OptimizerStep). base_dir roots external data ("" forbids it).
struct TrainingModelBytes {
  std::string training, eval, optimizer;
  std::string base_dir;
};

// Reads training.onnx, eval.onnx, optimizer.onnx from a folder (`onyx
// artifacts` output); the eval and optimizer files are optional.
StatusOr<TrainingModelBytes> read_artifacts(const std::string& dir);

// Dynamic loss scaling, for training models made with precision fp16 (their
// input "loss_scale" seeds the backward pass, so the float16 gradients of
// small losses do not flush to zero). Before the optimizer sees them the
// gradients are divided by the scale; a step whose gradients hold an inf or
// NaN is skipped instead (weights, optimizer state and step count unchanged;
// the gradients are dropped) and the scale halves; after growth_interval
// clean steps in a row it doubles. The scale and the clean-step count live
// in the checkpoint's properties (kLossScaleProperty, kCleanStepsProperty),
// so a saved checkpoint resumes where it stopped.
struct LossScaleOptions {
  double initial_scale = 65536;
  int64_t growth_interval = 2000;
};
inline constexpr const char* kLossScaleProperty = "onyx_loss_scale";
inline constexpr const char* kCleanStepsProperty = "onyx_loss_scale_clean_steps";

struct TrainingSessionOptions {
  SessionOptions session;
  double learning_rate = 1e-3;
  std::map<std::string, float> hyperparameters;  // overrides the optimizer's defaults
  float max_grad_norm = 0;                       // <= 0: no clipping
  // Accumulated gradients (several train_steps before one optimizer_step)
  // are summed, as ORT's lazy_reset_grad does; true makes the optimizer see
  // their mean instead, so that K micro-batches of B equal one batch of K*B.
  bool average_accumulated_gradients = false;
  // Used when the training model is loss-scaled and the checkpoint holds no
  // scale yet; otherwise the checkpoint's scale continues.
  LossScaleOptions loss_scale;
};

// Data parallelism: each rank trains on its own part of every global batch
// and, before each optimizer step, the gradients are averaged over the ranks
// (all-reduced in buckets of at most bucket_bytes, several in flight), so
// that every rank applies the same update to the same weights.
// With zero_stage 1 the optimizer state is sharded over the ranks instead
// (sharded_optimizer.h): gradients are reduce-scattered, each rank updates
// its slice, and the weights are all-gathered.
struct DataParallelOptions {
  size_t bucket_bytes = size_t(25) << 20;  // 0: one bucket
  int zero_stage = 0;                      // 0: plain data parallelism; 1: ZeRO stage 1
  std::vector<std::string> optimizer_search_dirs;  // ZeRO 1 loads the optimizer plugin
};

struct ExportOptions {
  // Forward outputs to keep (default: every eval output but "loss").
  std::vector<std::string> outputs;
  // Initializers go to a side file "<model file name>.data" when their total
  // size reaches this (protobuf cannot hold more than 2 GB in one message).
  size_t external_data_threshold = size_t(1) << 30;
};

class TrainingSession {
 public:
  static StatusOr<std::unique_ptr<TrainingSession>> create(ProviderRegistry& registry,
                                                           std::shared_ptr<checkpoint::Checkpoint> state,
                                                           const TrainingModelBytes& models,
                                                           const TrainingSessionOptions& options);
  ~TrainingSession();

  // Data and label inputs (no parameters) and outputs (no gradients).
  const std::vector<std::string>& train_input_names() const { return train_inputs_; }
  const std::vector<std::string>& train_output_names() const { return train_outputs_; }
  const std::vector<std::string>& eval_input_names() const { return eval_inputs_; }
  const std::vector<std::string>& eval_output_names() const { return eval_outputs_; }

  // inputs in train_input_names() order; returns train_output_names() values.
  StatusOr<std::vector<Tensor>> train_step(const std::vector<Tensor>& inputs);
  StatusOr<std::vector<Tensor>> eval_step(const std::vector<Tensor>& inputs);
  // The next train_step overwrites the gradients instead of adding to them.
  void lazy_reset_grad() { reset_grads_ = true; }
  // Applies the optimizer to the accumulated gradients; step count + 1.
  // In a data-parallel job the gradients are first averaged over the ranks.
  Status optimizer_step();

  // Makes this session one rank of a data-parallel job over `comm` (shared:
  // the caller may run its own collectives on it between steps). Checks
  // first that every rank holds the same parameters and optimizer (a hash
  // compared over the job): FAILED_PRECONDITION on this rank when they
  // differ. With one rank it changes nothing.
  Status join_data_parallel(std::shared_ptr<Communicator> comm, DataParallelOptions options = {});
  // A hash of the parameters' names, shapes and values (trainable and frozen).
  StatusOr<uint64_t> parameters_hash() const;
  // ZeRO stage 1 keeps the optimizer state in shards, not in the checkpoint:
  // this collective (every rank calls it) gathers it into the checkpoint's
  // per-parameter form before the checkpoint is saved. OK without ZeRO.
  Status gather_optimizer_state();
  // This rank's shard of the checkpoint state, as checkpoint::shard() would
  // cut the complete state for the job's world size (no collective: under
  // ZeRO 1 it is the rank's own state). Every rank writes its shard;
  // checkpoint::aggregate() joins them at any world size. Needs a job.
  StatusOr<checkpoint::Checkpoint> checkpoint_shard() const;
  // Optimizer state this rank holds, in bytes (its shard under ZeRO 1).
  size_t optimizer_state_bytes() const;

  double learning_rate() const { return lr_; }
  Status set_learning_rate(double lr);
  // Installs a schedule (its base_lr replaces the current rate) and sets lr to lr_at(0).
  Status set_lr_schedule(const LrSchedule& schedule);
  // Advances the schedule by one step and sets the learning rate from it.
  Status scheduler_step();
  Status set_hyperparameter(const std::string& name, float value);
  void set_max_grad_norm(float norm) { max_grad_norm_ = norm; }
  void set_average_accumulated_gradients(bool mean) { average_accumulated_ = mean; }
  // The weight of the next train_step's gradients in the accumulated mean
  // (default 1): with averaging on, the optimizer sees sum(w g) / sum(w). A
  // micro-batch's count of labelled tokens makes K micro-batches equal one
  // batch whose loss is the mean over all its tokens. Must be > 0 and finite.
  Status set_step_weight(double weight);
  // The gradients' global norm measured by the last optimizer step (before
  // clipping); NaN when that step did not measure it: with clipping off
  // (max_grad_norm <= 0) a fused optimizer skips the pass that would.
  float last_grad_norm() const { return last_grad_norm_; }
  // In a data-parallel job, an optimizer step whose gradients hold an inf or
  // NaN on any rank changes nothing on every rank (weights, state, step
  // count); so does one of a loss-scaled (fp16) session. This says whether
  // the last one did. (One process without loss scaling: the update runs.)
  bool last_step_skipped() const { return last_step_skipped_; }
  // fp16 dynamic loss scaling (LossScaleOptions). True when the training
  // model takes "loss_scale".
  bool loss_scaled() const { return loss_scaled_; }
  // The scale the next train_step multiplies the gradients by (1 when not
  // loss-scaled).
  double loss_scale() const { return loss_scaled_ ? loss_scale_ : 1.0; }
  // Restarts scaling at options.initial_scale with no clean steps counted
  // (replacing a scale restored from the checkpoint). FAILED_PRECONDITION on
  // a session whose training model is not loss-scaled; INVALID_ARGUMENT for
  // a scale that is not finite and > 0 or an interval < 1.
  Status set_loss_scaling(const LossScaleOptions& options);
  int64_t optimizer_steps() const;

  // Parameters in checkpoint order (trainable, then frozen unless trainable_only).
  size_t parameter_count(bool trainable_only) const;    // tensors
  size_t parameters_elements(bool trainable_only) const;
  size_t parameters_bytes(bool trainable_only) const;   // the flat buffer's size
  // The flat buffer holds each parameter's bytes in order, packed, in its
  // own dtype (any mix). `bytes` must equal parameters_bytes().
  Status copy_parameters_to_buffer(void* buffer, size_t bytes, bool trainable_only) const;
  // Also gives a nominal checkpoint its data.
  Status copy_buffer_to_parameters(const void* buffer, size_t bytes, bool trainable_only);
  StatusOr<Tensor> get_parameter(const std::string& name) const;  // a copy
  Status update_parameter(const std::string& name, const Tensor& value);
  // Takes every parameter's value from a complete checkpoint of the same schema.
  Status load_parameters_from(const checkpoint::Checkpoint& source);

  // Writes an inference model: the eval graph cut to `options.outputs`, with
  // the current parameters as initializers. Atomic (tmp + fsync + rename).
  Status export_inference_model(const std::string& path, const ExportOptions& options = {}) const;

  // Brings the checkpoint's tensors up to date from the device that holds
  // them between steps (a no-op otherwise); the next step uploads them again.
  Status sync_state() const;
  // sync_state() of every live session training `state` but `except`.
  static Status sync_state_of(const checkpoint::Checkpoint& state, const TrainingSession* except = nullptr);
  // The device that holds the state between steps, or null (host training).
  const Device* state_device() const;

  void set_seed(uint64_t seed) { seed_ = seed; }
  uint64_t seed() const { return seed_; }
  const std::shared_ptr<checkpoint::Checkpoint>& state() const { return state_; }
  const OptimizerModelInfo* optimizer_info() const { return optimizer_ ? &optimizer_info_ : nullptr; }
  // True when a provider claimed the optimizer's fused op (optimizer_model.h).
  bool optimizer_fused() const { return optimizer_fused_; }
  Session& training_graph_session() { return *train_; }
  Session* eval_graph_session() { return eval_.get(); }
  // The optimizer session the next optimizer_step runs (the fused form
  // without clipping while max_grad_norm <= 0, when there is one).
  Session* optimizer_graph_session() { return unclipped_optimizer() ? unclipped_optimizer_.get() : optimizer_.get(); }

  // Time spent in the last step's parts (seconds), for benchmarks.
  double last_train_seconds() const { return last_train_seconds_; }
  double last_optimizer_seconds() const { return last_optimizer_seconds_; }

 private:
  TrainingSession() = default;
  Status check_ready(const char* what) const;
  std::vector<checkpoint::TensorRecord*> parameters(bool trainable_only);
  std::vector<const checkpoint::TensorRecord*> parameters(bool trainable_only) const;
  // Runs `session` on the data `inputs` (named `input_names`) and every
  // parameter, from the device state when it holds them and the session
  // runs on its device. `targets` (optional): per graph output, where it
  // goes (as Session::run_bound's outputs; a host tensor is reused). Returns
  // every output in graph order.
  StatusOr<std::vector<Tensor>> run_model(Session& session, const std::vector<std::string>& input_names,
                                          const std::vector<Tensor>& inputs, const char* what,
                                          std::vector<BoundTensor> targets = {});
  // The index of the device state's device among `session`'s devices, when
  // the device holds the state; -1 otherwise.
  int state_device_index(const Session& session) const;
  // Whether the next train_step may leave its gradients on the device.
  bool gradients_stay_on_device() const;
  // A train_step's bookkeeping: its weight joins the sum (or starts it).
  void counted_step(double weight, std::chrono::steady_clock::time_point start);
  // On the device: gradients = w * g (+ gradients, when accumulating).
  Status device_gradient_math(bool accumulate, double w, const std::vector<Tensor>& g);
  // Checks the checkpoint's optimizer state against the optimizer model,
  // creating it (the slots' initial values) before the first step.
  Status prepare_optimizer_state(checkpoint::OptimizerGroup& group);
  checkpoint::OptimizerGroup& optimizer_group();
  Status average_gradients();
  // Loss scaling's part of optimizer_step: false when the step must be
  // skipped (non-finite gradients); otherwise the gradients are unscaled.
  StatusOr<bool> unscale_gradients();
  void after_scaled_step(bool skipped);
  // Loss scaling from the checkpoint's properties when it has them, else
  // from `options` (whose growth interval applies either way).
  Status restore_loss_scale(const LossScaleOptions& options);

  std::shared_ptr<checkpoint::Checkpoint> state_;
  // True when the next step runs unclipped_optimizer_.
  bool unclipped_optimizer() const { return unclipped_optimizer_ && !(max_grad_norm_ > 0); }

  std::unique_ptr<Session> train_, eval_, optimizer_;
  std::unique_ptr<Session> unclipped_optimizer_;  // the fused form without clipping; null when not fused
  std::string eval_model_bytes_;  // for export
  std::vector<std::string> train_inputs_, train_outputs_, eval_inputs_, eval_outputs_;
  // Per trainable parameter: the running sum (mutable: sync_state brings
  // the device's gradients here).
  mutable std::vector<Tensor> grads_;
  std::vector<Tensor> scratch_grads_;  // per trainable parameter: this step's, when accumulating
  std::vector<size_t> grad_output_index_;  // per trainable parameter: its training-model output
  bool reset_grads_ = true;
  bool average_accumulated_ = false;
  int64_t accumulated_steps_ = 0;  // train_steps summed into grads_ since the last reset
  double step_weight_ = 1;         // of the next train_step (set_step_weight)
  double accumulated_weight_ = 0;  // the sum of those train_steps' weights
  bool have_grads_ = false;
  bool optimizer_fused_ = false;
  OptimizerModelInfo optimizer_info_;
  std::vector<float> hyperparameters_;  // in optimizer_info_ order
  double lr_ = 1e-3;
  std::optional<LrSchedule> schedule_;
  int64_t schedule_steps_ = 0;
  float max_grad_norm_ = 0, last_grad_norm_ = 0;
  bool last_step_skipped_ = false;
  bool loss_scaled_ = false;
  double loss_scale_ = 1;
  int64_t clean_steps_ = 0, growth_interval_ = 2000;
  uint64_t seed_ = 0;
  double last_train_seconds_ = 0, last_optimizer_seconds_ = 0;
  ProviderRegistry* registry_ = nullptr;  // outlives the session (the C API's env)
  SessionOptions session_options_;
  std::shared_ptr<Communicator> comm_;
  std::unique_ptr<ShardedOptimizer> zero_;  // ZeRO stage 1, when joined with it
  DataParallelOptions data_parallel_;
  std::vector<float> flat_grads_;  // the gradients packed for their all-reduce
  // The state on a device between steps (null: host training). sync_state()
  // is logically const (it changes where the values are, not what they are),
  // so it may move them from const methods.
  std::unique_ptr<DeviceState> device_state_;
  // gradient_arithmetic_model's sessions, when they run wholly on the state's
  // device (else steps that accumulate or weight gradients take the host path).
  std::unique_ptr<Session> gradient_sum_, gradient_scale_;
  std::unique_ptr<std::mutex> sync_mutex_ = std::make_unique<std::mutex>();
};

}  // namespace onyx::runtime::training
