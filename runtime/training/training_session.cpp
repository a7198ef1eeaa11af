#include "training/training_session.h"

#include <onnx/onnx_pb.h>
#include <onyx/util/read_file.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>
#include <variant>

#include "autodiff/training_model.h"  // kLossScaleInput
#include "ir/onnx_import.h"
#include "onyx/checkpoint_tools.h"
#include "session/device_io.h"
#include "training/device_state.h"
#include "training/sharded_optimizer.h"

namespace onyx::runtime::training {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

StatusOr<std::string> read_whole_file(const fs::path& path) {
  std::string bytes;
  int error = 0;
  std::string failure = util::read_regular_file(path, &bytes, &error);
  if (failure.empty()) return bytes;
  return error == ENOENT ? not_found(failure) : invalid_argument(failure);
}

StatusOr<std::unique_ptr<Session>> make_session(ProviderRegistry& registry, const std::string& bytes,
                                                const std::string& base_dir, const SessionOptions& options,
                                                const char* what) {
  auto model = ir::load_model_from_bytes(bytes.data(), bytes.size(), base_dir);
  if (!model.ok()) return model.status().with_context(std::string(what) + " model");
  auto session = Session::create(registry, std::move(model).value(), options);
  if (!session.ok()) return session.status().with_context(std::string(what) + " model");
  return std::move(session).value();
}

// Checks that a model input declared for a parameter agrees with the
// checkpoint's record (known dims only; symbolic dims match anything).
Status check_parameter_input(const ir::Value& input, const checkpoint::TensorRecord& record, const char* what) {
  if (input.dtype != ONYX_DTYPE_UNDEFINED && input.dtype != record.dtype)
    return invalid_argument(std::string(what) + " model input '" + input.name + "' is " +
                            dtype_name(input.dtype) + " but the checkpoint's parameter is " +
                            dtype_name(record.dtype));
  if (input.rank < 0) return Status();
  bool same = size_t(input.rank) == record.shape.size();
  for (size_t i = 0; same && i < record.shape.size(); ++i)
    same = input.dims[i] < 0 || input.dims[i] == record.shape[i];
  if (!same)
    return invalid_argument("shape mismatch for parameter '" + input.name + "': the checkpoint has " +
                            shape_string(record.shape) + " but the " + what + " model expects " +
                            shape_string(input.dims));
  return Status();
}

// g *= scale, in place (float32 and float64 gradients).
Status scale_gradient(Tensor& g, double scale, const std::string& parameter) {
  if (g.dtype() == ONYX_DTYPE_FLOAT32) {
    float* p = g.data_as<float>();
    for (int64_t i = 0, n = g.size(); i < n; ++i) p[i] = float(double(p[i]) * scale);
  } else if (g.dtype() == ONYX_DTYPE_FLOAT64) {
    double* p = g.data_as<double>();
    for (int64_t i = 0, n = g.size(); i < n; ++i) p[i] *= scale;
  } else {
    return unimplemented("weighting or averaging the " + std::string(dtype_name(g.dtype())) + " gradient of '" +
                         parameter + "'");
  }
  return Status();
}

// Splits a model's inputs into parameters (checked against the checkpoint)
// and data inputs (everything else, in order).
StatusOr<std::vector<std::string>> data_inputs(const Session& session, const checkpoint::Checkpoint& state,
                                               const char* what) {
  std::vector<std::string> data;
  const ir::Graph& g = session.graph();
  std::set<std::string> seen;
  for (int v : g.inputs) {
    const ir::Value& value = g.values[v];
    if (const checkpoint::TensorRecord* record = state.find_parameter(value.name)) {
      ONYX_RETURN_IF_ERROR(check_parameter_input(value, *record, what));
      seen.insert(value.name);
    } else {
      data.push_back(value.name);
    }
  }
  for (const auto* list : {&state.module.trainable, &state.module.frozen})
    for (const auto& record : *list)
      if (!seen.count(record.name))
        return invalid_argument("checkpoint parameter '" + record.name + "' is not an input of the " +
                                what + " model: the checkpoint and the model do not belong together");
  return data;
}

// The sessions holding state on a device, for sync_state_of.
std::mutex& device_sessions_mutex() {
  static std::mutex mutex;
  return mutex;
}
std::vector<const TrainingSession*>& device_sessions() {
  static std::vector<const TrainingSession*> sessions;
  return sessions;
}

// Runs `session` with inputs and outputs (`targets`, per graph output, may
// be short) on the host or a device; Session::run when all are on the host.
StatusOr<std::vector<Tensor>> run_placed(Session& session, const std::vector<std::pair<std::string, BoundTensor>>& inputs,
                                         const std::vector<BoundTensor>& targets) {
  const auto on_device = [](const BoundTensor& t) { return t.device >= 0; };
  const ir::Graph& g = session.graph();
  if (std::none_of(inputs.begin(), inputs.end(), [&](const auto& in) { return on_device(in.second); }) &&
      std::none_of(targets.begin(), targets.end(), on_device)) {
    std::vector<std::pair<std::string, Tensor>> feed;
    feed.reserve(inputs.size());
    for (const auto& [name, bound] : inputs) feed.emplace_back(name, bound.tensor);
    std::vector<Tensor> reuse;
    reuse.reserve(targets.size());
    for (const BoundTensor& t : targets) reuse.push_back(t.tensor);
    return session.run(feed, {}, targets.empty() ? nullptr : &reuse);
  }
  std::vector<std::pair<std::string, BoundTensor>> outputs;
  for (size_t i = 0; i < g.outputs.size(); ++i)
    outputs.emplace_back(g.values[size_t(g.outputs[i])].name, i < targets.size() ? targets[i] : BoundTensor{});
  ONYX_ASSIGN_OR_RETURN(std::vector<BoundTensor> results, session.run_bound(inputs, outputs));
  std::vector<Tensor> tensors;
  for (BoundTensor& r : results) tensors.push_back(std::move(r.tensor));
  return tensors;
}

}  // namespace

StatusOr<TrainingModelBytes> read_artifacts(const std::string& dir) {
  TrainingModelBytes m;
  m.base_dir = dir;
  ONYX_ASSIGN_OR_RETURN(m.training, read_whole_file(fs::path(dir) / "training.onnx"));
  for (auto [file, target] : {std::pair{"eval.onnx", &m.eval}, std::pair{"optimizer.onnx", &m.optimizer}}) {
    if (!fs::exists(fs::path(dir) / file)) continue;
    ONYX_ASSIGN_OR_RETURN(*target, read_whole_file(fs::path(dir) / file));
  }
  return m;
}

StatusOr<std::unique_ptr<TrainingSession>> TrainingSession::create(
    ProviderRegistry& registry, std::shared_ptr<checkpoint::Checkpoint> state, const TrainingModelBytes& models,
    const TrainingSessionOptions& options) {
  if (!state) return invalid_argument("training session: no checkpoint state");
  ONYX_RETURN_IF_ERROR(checkpoint::validate(*state).with_context("training session checkpoint"));
  // One rank's shard holds slices of the parameters and state: training on
  // it as if it were the whole would be silently wrong.
  if (state->metadata.shard_count > 1)
    return failed_precondition("training session checkpoint: it is shard " +
                               std::to_string(state->metadata.shard_index) + " of " +
                               std::to_string(state->metadata.shard_count) +
                               ", not a complete state: aggregate the shards first (onyx checkpoint aggregate, "
                               "onyx_checkpoint_aggregate), or resume from the folder of all shards");
  // Another session may hold this state on a device (device_state.h).
  ONYX_RETURN_IF_ERROR(sync_state_of(*state).with_context("training session"));
  std::unique_ptr<TrainingSession> s(new TrainingSession());
  s->state_ = std::move(state);
  s->lr_ = options.learning_rate;
  s->max_grad_norm_ = options.max_grad_norm;
  s->average_accumulated_ = options.average_accumulated_gradients;
  s->registry_ = &registry;
  s->session_options_ = options.session;
  // One intra-op pool for the training, eval and optimizer sessions: a step
  // runs them in turn, and pools of their own would leave one's workers
  // spinning on the cores the next one needs (MLP, batch 64, 2 threads: the
  // eval step 0.27 ms, as slow as on 1 thread, behind the optimizer's pool).
  if (!s->session_options_.thread_pool)
    s->session_options_.thread_pool = std::make_shared<ThreadPool>(s->session_options_.intra_op_threads);
  // One device per provider for all of them, so that state one leaves in
  // device memory is memory of the next one's device (device_state.h).
  if (!s->session_options_.shared_devices) s->session_options_.shared_devices = std::make_shared<SharedDevices>();
  const SessionOptions& session_options = s->session_options_;
  const checkpoint::Checkpoint& ck = *s->state_;

  ONYX_ASSIGN_OR_RETURN(s->train_, make_session(registry, models.training, models.base_dir, session_options, "training"));
  ONYX_ASSIGN_OR_RETURN(s->train_inputs_, data_inputs(*s->train_, ck, "training"));
  // The state stays between steps on the device that runs most of the
  // training model's kernels, when the host cannot read its memory.
  {
    std::vector<size_t> kernels(s->train_->devices().size());
    for (const Step& step : s->train_->steps())
      if (step.kind == Step::kKernel) ++kernels[size_t(step.device)];
    const size_t busiest = size_t(std::max_element(kernels.begin(), kernels.end()) - kernels.begin());
    if (!kernels.empty() && kernels[busiest] > 0 && !s->train_->devices()[busiest]->host_readable())
      s->device_state_ = std::make_unique<DeviceState>(s->train_->devices()[busiest]);
  }
  // Outputs: loss, forward outputs, then exactly one gradient per trainable parameter.
  std::set<std::string> grads_expected;
  for (const auto& p : ck.module.trainable) grads_expected.insert(gradient_name(p.name));
  const ir::Graph& tg = s->train_->graph();
  for (int v : tg.outputs) {
    const std::string& name = tg.values[v].name;
    if (grads_expected.erase(name)) continue;
    if (name.size() > 5 && name.ends_with("_grad") && ck.find_parameter(name.substr(0, name.size() - 5)))
      return invalid_argument("training model output '" + name + "' is the gradient of a parameter the " +
                              "checkpoint lists as frozen");
    s->train_outputs_.push_back(name);
  }
  if (!grads_expected.empty())
    return invalid_argument("training model has no output '" + *grads_expected.begin() +
                            "' for a trainable parameter of the checkpoint");
  for (const auto& p : ck.module.trainable)
    for (size_t i = 0; i < tg.outputs.size(); ++i)
      if (tg.values[tg.outputs[i]].name == gradient_name(p.name)) s->grad_output_index_.push_back(i);
  if (s->train_outputs_.empty() || s->train_outputs_.front() != "loss")
    return invalid_argument("training model: the first output must be \"loss\" (docs/training.md)");
  // fp16 artifacts: the session feeds "loss_scale" itself (dynamic loss scaling).
  auto scale_input = std::find(s->train_inputs_.begin(), s->train_inputs_.end(), autodiff::kLossScaleInput);
  if (scale_input != s->train_inputs_.end()) {
    s->train_inputs_.erase(scale_input);
    s->loss_scaled_ = true;
    ONYX_RETURN_IF_ERROR(s->restore_loss_scale(options.loss_scale));
  }

  if (!models.eval.empty()) {
    ONYX_ASSIGN_OR_RETURN(s->eval_, make_session(registry, models.eval, models.base_dir, session_options, "eval"));
    ONYX_ASSIGN_OR_RETURN(s->eval_inputs_, data_inputs(*s->eval_, ck, "eval"));
    const ir::Graph& eg = s->eval_->graph();
    for (int v : eg.outputs) s->eval_outputs_.push_back(eg.values[v].name);
    s->eval_model_bytes_ = models.eval;
  }
  if (!models.optimizer.empty()) {
    ONNX_NAMESPACE::ModelProto proto;
    if (!proto.ParseFromString(models.optimizer)) return invalid_argument("optimizer model does not parse as ONNX");
    ONYX_ASSIGN_OR_RETURN(s->optimizer_info_, read_optimizer_model_info(proto));
    std::vector<std::string> trainable;
    for (const auto& p : ck.module.trainable) trainable.push_back(p.name);
    if (s->optimizer_info_.parameters != trainable)
      return invalid_argument("optimizer model updates " + std::to_string(s->optimizer_info_.parameters.size()) +
                              " parameters that differ from the checkpoint's " + std::to_string(trainable.size()) +
                              " trainable ones (or their order)");
    // A provider that implements the plugin's fused op gets it; otherwise
    // (nobody claims it) the inlined function bodies run.
    if (!s->optimizer_info_.fused_op_type.empty()) {
      auto fused = fuse_optimizer_model(proto);
      if (fused.ok()) {
        SessionOptions fused_options = session_options;
        fused_options.fallback = FallbackPolicy::kAllow;
        auto session = make_session(registry, fused->SerializeAsString(), "", fused_options, "optimizer");
        if (session.ok()) {
          s->optimizer_ = std::move(session).value();
          s->optimizer_fused_ = true;
          // Without clipping too: steps with max_grad_norm <= 0 run it.
          auto unclipped = fuse_optimizer_model(proto, /*clipping=*/false);
          if (!unclipped.ok()) return unclipped.status().with_context("optimizer model without clipping");
          ONYX_ASSIGN_OR_RETURN(s->unclipped_optimizer_, make_session(registry, unclipped->SerializeAsString(), "",
                                                                      fused_options, "optimizer without clipping"));
        }
      }
    }
    if (!s->optimizer_) {
      ONYX_ASSIGN_OR_RETURN(s->optimizer_,
                            make_session(registry, models.optimizer, models.base_dir, session_options, "optimizer"));
    }
    for (const auto& p : ck.module.trainable) {
      const ir::Graph& og = s->optimizer_->graph();
      for (int v : og.inputs)
        if (og.values[v].name == p.name) ONYX_RETURN_IF_ERROR(check_parameter_input(og.values[v], p, "optimizer"));
    }
    for (const auto& h : s->optimizer_info_.hyperparameters) s->hyperparameters_.push_back(h.default_value);
    for (const auto& [name, value] : options.hyperparameters) ONYX_RETURN_IF_ERROR(s->set_hyperparameter(name, value));
  } else if (!options.hyperparameters.empty()) {
    return invalid_argument("optimizer hyperparameters given but there is no optimizer model");
  }
  if (s->device_state_) {
    // Accumulating and weighted steps keep their gradients on the device
    // when its provider runs the arithmetic (float32 gradients).
    const bool float32 = std::all_of(ck.module.trainable.begin(), ck.module.trainable.end(),
                                     [](const auto& p) { return p.dtype == ONYX_DTYPE_FLOAT32; });
    for (bool accumulate : {true, false}) {
      if (!float32 || ck.module.trainable.empty()) break;
      SessionOptions math_options = session_options;
      math_options.fallback = FallbackPolicy::kAllow;
      auto math = make_session(registry, gradient_arithmetic_model(ck.module.trainable, accumulate), "",
                               math_options, "gradient arithmetic");
      if (!math.ok()) continue;
      const int d = math.value()->device_index(s->device_state_->device().get());
      const auto& steps = math.value()->steps();
      if (d < 0 || std::any_of(steps.begin(), steps.end(),
                               [d](const Step& st) { return st.kind == Step::kKernel && st.device != d; }))
        continue;
      (accumulate ? s->gradient_sum_ : s->gradient_scale_) = std::move(math).value();
    }
    std::lock_guard<std::mutex> lock(device_sessions_mutex());
    device_sessions().push_back(s.get());
  }
  return s;
}

TrainingSession::~TrainingSession() {
  if (!device_state_) return;
  std::lock_guard<std::mutex> lock(device_sessions_mutex());
  auto& sessions = device_sessions();
  sessions.erase(std::remove(sessions.begin(), sessions.end(), this), sessions.end());
}

Status TrainingSession::sync_state() const {
  if (!device_state_) return Status();
  std::lock_guard<std::mutex> lock(*sync_mutex_);
  std::vector<checkpoint::TensorRecord*> records;
  for (auto* list : {&state_->module.trainable, &state_->module.frozen})
    for (auto& p : *list) records.push_back(&p);
  checkpoint::OptimizerGroup* group = nullptr;
  for (auto& g : state_->optimizer)
    if (g.name == optimizer_info_.optimizer) group = &g;
  return device_state_->download(records, group, grads_).with_context("bringing the training state to the host");
}

Status TrainingSession::sync_state_of(const checkpoint::Checkpoint& state, const TrainingSession* except) {
  std::lock_guard<std::mutex> lock(device_sessions_mutex());
  for (const TrainingSession* session : device_sessions())
    if (session->state_.get() == &state && session != except) ONYX_RETURN_IF_ERROR(session->sync_state());
  return Status();
}

const Device* TrainingSession::state_device() const { return device_state_ ? device_state_->device().get() : nullptr; }

int TrainingSession::state_device_index(const Session& session) const {
  if (!device_state_ || !device_state_->holds_state()) return -1;
  return session.device_index(device_state_->device().get());
}

bool TrainingSession::gradients_stay_on_device() const {
  if (!device_state_ || comm_ || loss_scaled_) return false;
  if (reset_grads_) return step_weight_ == 1 || gradient_scale_;
  return gradient_sum_ && device_state_->holds_state() && device_state_->holds_gradients();
}

Status TrainingSession::device_gradient_math(bool accumulate, double w, const std::vector<Tensor>& g) {
  Session& math = accumulate ? *gradient_sum_ : *gradient_scale_;
  const int d = math.device_index(device_state_->device().get());
  std::vector<Tensor>& sums = device_state_->gradients();
  Tensor weight = Tensor::allocate(ONYX_DTYPE_FLOAT32, {});
  *weight.data_as<float>() = float(w);
  std::vector<std::pair<std::string, BoundTensor>> inputs = {{"w", {weight, -1}}};
  std::vector<std::pair<std::string, BoundTensor>> outputs;
  for (size_t k = 0; k < sums.size(); ++k) {
    const std::string i = std::to_string(k);
    inputs.emplace_back("g" + i, BoundTensor{g[k], d});
    if (accumulate) inputs.emplace_back("sum" + i, BoundTensor{sums[k], d});
    outputs.emplace_back("out" + i, BoundTensor{Tensor(), d});
  }
  auto results = math.run_bound(inputs, outputs);
  if (!results.ok()) return results.status().with_context(accumulate ? "adding gradients" : "weighting gradients");
  for (size_t k = 0; k < sums.size(); ++k) sums[k] = std::move(results.value()[k].tensor);
  return Status();
}

Status TrainingSession::check_ready(const char* what) const {
  for (const auto* list : {&state_->module.trainable, &state_->module.frozen})
    for (const auto& p : *list)
      if (!p.has_data())
        return failed_precondition(std::string(what) + ": parameter '" + p.name +
                                   "' has no data (a nominal checkpoint): copy weights in first with "
                                   "copy_buffer_to_parameters or load a complete checkpoint's parameters");
  return Status();
}

StatusOr<std::vector<Tensor>> TrainingSession::run_model(Session& session, const std::vector<std::string>& names,
                                                         const std::vector<Tensor>& inputs, const char* what,
                                                         std::vector<BoundTensor> targets) {
  ONYX_RETURN_IF_ERROR(check_ready(what));
  ONYX_RETURN_IF_ERROR(sync_state_of(*state_, this).with_context(what));  // another session's steps
  if (inputs.size() != names.size())
    return invalid_argument(std::string(what) + ": " + std::to_string(inputs.size()) + " inputs given, the model takes " +
                            std::to_string(names.size()));
  const int d = state_device_index(session);
  if (d < 0) ONYX_RETURN_IF_ERROR(sync_state().with_context(what));
  std::vector<std::pair<std::string, BoundTensor>> feed;
  for (size_t i = 0; i < names.size(); ++i) feed.emplace_back(names[i], BoundTensor{inputs[i], -1});
  size_t k = 0;
  for (const auto* list : {&state_->module.trainable, &state_->module.frozen})
    for (const auto& p : *list) {
      feed.emplace_back(p.name, d >= 0 ? BoundTensor{device_state_->parameters()[k], d} : BoundTensor{p.data, -1});
      ++k;
    }
  auto outputs = run_placed(session, feed, targets);
  if (!outputs.ok()) return outputs.status().with_context(what);
  return outputs;
}

Status TrainingSession::set_step_weight(double weight) {
  if (!(weight > 0) || !std::isfinite(weight))
    return invalid_argument("the step weight must be a finite number > 0; got " + std::to_string(weight));
  step_weight_ = weight;
  return Status();
}

StatusOr<std::vector<Tensor>> TrainingSession::train_step(const std::vector<Tensor>& inputs) {
  auto start = Clock::now();
  // Gradient buffers are reused across steps: a step that starts a new sum
  // writes straight into grads_, an accumulating step into scratch_grads_
  // (then added). Loss and forward outputs go to the caller: always fresh.
  // On a device that holds the state, the gradients stay there too, in
  // buffers of their own (device_state.h).
  const ir::Graph& g = train_->graph();
  const auto& params = state_->module.trainable;
  const bool on_device = gradients_stay_on_device();
  std::vector<Tensor>* held = nullptr;   // the device's gradients (the sum)
  std::vector<Tensor>* own = nullptr;    // an accumulating step's own, on the device
  const bool reset = reset_grads_;
  if (on_device) {
    ONYX_RETURN_IF_ERROR(check_ready("train_step"));
    ONYX_RETURN_IF_ERROR(sync_state_of(*state_, this).with_context("train_step"));  // another session's steps
    const checkpoint::OptimizerGroup* group = state_->find_group(optimizer_info_.optimizer);
    ONYX_RETURN_IF_ERROR(
        device_state_->upload(std::as_const(*this).parameters(false), group).with_context("train_step"));
    held = &device_state_->gradients();
    held->resize(params.size());
    own = &device_state_->fresh_gradients();
    own->resize(params.size());
  } else {
    // Accumulating into grads_ needs the current sum on the host.
    ONYX_RETURN_IF_ERROR(sync_state().with_context("train_step"));
  }
  const int d = on_device ? state_device_index(*train_) : -1;
  std::vector<BoundTensor> targets(g.outputs.size());
  for (size_t k = 0; k < grad_output_index_.size() && k < params.size(); ++k) {
    const std::vector<Tensor>& pool = reset_grads_ ? grads_ : scratch_grads_;
    if (on_device) targets[grad_output_index_[k]] = {(reset ? *held : *own)[k], d};
    else if (k < pool.size()) targets[grad_output_index_[k]] = {pool[k], -1};
  }
  std::vector<std::string> names = train_inputs_;
  std::vector<Tensor> feed = inputs;
  if (loss_scaled_ && inputs.size() == train_inputs_.size()) {
    Tensor scale = Tensor::allocate(ONYX_DTYPE_FLOAT32, {});
    *scale.data_as<float>() = float(loss_scale_);
    names.push_back(autodiff::kLossScaleInput);
    feed.push_back(std::move(scale));
  }
  ONYX_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, run_model(*train_, names, feed, "train_step", targets));
  if (on_device) {
    std::vector<Tensor> user;
    for (size_t i = 0; i < outputs.size(); ++i)
      if (std::find(grad_output_index_.begin(), grad_output_index_.end(), i) == grad_output_index_.end())
        user.push_back(std::move(outputs[i]));
    for (size_t k = 0; k < grad_output_index_.size() && k < params.size(); ++k)
      (reset ? *held : *own)[k] = std::move(outputs[grad_output_index_[k]]);
    const double weight = step_weight_;
    step_weight_ = 1;
    if (!reset) ONYX_RETURN_IF_ERROR(device_gradient_math(true, weight, *own).with_context("train_step"));
    else if (weight != 1) ONYX_RETURN_IF_ERROR(device_gradient_math(false, weight, *held).with_context("train_step"));
    device_state_->set_holds_gradients();
    counted_step(weight, start);
    return user;
  }
  // Outputs come in model order: loss, forward outputs and gradients
  // interleaved as the model lists them; gradients are matched by name.
  std::vector<Tensor> user;
  std::map<std::string, Tensor> grads;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string& name = g.values[g.outputs[i]].name;
    if (name.ends_with("_grad") && state_->find_parameter(name.substr(0, name.size() - 5)))
      grads.emplace(name, std::move(outputs[i]));
    else
      user.push_back(std::move(outputs[i]));
  }
  const auto& trainable = state_->module.trainable;
  grads_.resize(trainable.size());
  const double weight = step_weight_;
  step_weight_ = 1;
  for (size_t k = 0; k < trainable.size(); ++k) {
    Tensor& fresh = grads.at(gradient_name(trainable[k].name));
    if (weight != 1) ONYX_RETURN_IF_ERROR(scale_gradient(fresh, weight, trainable[k].name));
    Tensor& sum = grads_[k];
    if (reset_grads_ || sum.empty()) {
      sum = std::move(fresh);
      continue;
    }
    scratch_grads_.resize(trainable.size());
    scratch_grads_[k] = fresh;
    if (sum.shape() != fresh.shape() || sum.dtype() != fresh.dtype())
      return internal_error("gradient of '" + trainable[k].name + "' changed shape between steps");
    if (fresh.dtype() == ONYX_DTYPE_FLOAT32) {
      float* acc = sum.data_as<float>();
      const float* add = fresh.data_as<float>();
      for (int64_t i = 0, n = sum.size(); i < n; ++i) acc[i] += add[i];
    } else if (fresh.dtype() == ONYX_DTYPE_FLOAT64) {
      double* acc = sum.data_as<double>();
      const double* add = fresh.data_as<double>();
      for (int64_t i = 0, n = sum.size(); i < n; ++i) acc[i] += add[i];
    } else {
      return unimplemented(std::string("gradient accumulation for ") + dtype_name(fresh.dtype()) + " gradients");
    }
  }
  counted_step(weight, start);
  return user;
}

void TrainingSession::counted_step(double weight, std::chrono::steady_clock::time_point start) {
  accumulated_steps_ = reset_grads_ ? 1 : accumulated_steps_ + 1;
  accumulated_weight_ = reset_grads_ ? weight : accumulated_weight_ + weight;
  reset_grads_ = false;
  have_grads_ = true;
  last_train_seconds_ = seconds_since(start);
}

StatusOr<std::vector<Tensor>> TrainingSession::eval_step(const std::vector<Tensor>& inputs) {
  if (!eval_) return failed_precondition("eval_step: the session was created without an eval model");
  return run_model(*eval_, eval_inputs_, inputs, "eval_step");
}

checkpoint::OptimizerGroup& TrainingSession::optimizer_group() {
  for (auto& group : state_->optimizer)
    if (group.name == optimizer_info_.optimizer) return group;
  checkpoint::OptimizerGroup group;
  group.name = optimizer_info_.optimizer;
  group.initial_learning_rate = lr_;
  state_->optimizer.push_back(std::move(group));
  return state_->optimizer.back();
}

int64_t TrainingSession::optimizer_steps() const {
  for (const auto& group : state_->optimizer)
    if (group.name == optimizer_info_.optimizer) return group.step;
  return 0;
}

Status TrainingSession::prepare_optimizer_state(checkpoint::OptimizerGroup& group) {
  const auto& trainable = state_->module.trainable;
  // State tensors: created on first use, checked when loaded from a file.
  if (group.parameters.empty()) {
    for (const auto& p : trainable) {
      checkpoint::ParameterState ps;
      ps.parameter = p.name;
      for (const auto& slot : optimizer_info_.slots) {
        Tensor t = Tensor::allocate(p.dtype, p.shape);
        std::fill_n(t.data_as<float>(), t.size(), slot.initial_value);
        ps.tensors.push_back({slot.name, p.dtype, p.shape, t, std::nullopt, std::nullopt});
      }
      group.parameters.push_back(std::move(ps));
    }
  }
  if (group.parameters.size() != trainable.size())
    return invalid_argument("checkpoint optimizer group '" + group.name + "' holds state for " +
                            std::to_string(group.parameters.size()) + " parameters, the model trains " +
                            std::to_string(trainable.size()));
  for (size_t k = 0; k < trainable.size(); ++k) {
    const auto& p = trainable[k];
    const auto& ps = group.parameters[k];
    if (ps.parameter != p.name || ps.tensors.size() != optimizer_info_.slots.size())
      return invalid_argument("checkpoint optimizer state for '" + ps.parameter + "' does not match parameter '" +
                              p.name + "' and the optimizer's " + std::to_string(optimizer_info_.slots.size()) +
                              " slots");
    for (size_t s = 0; s < ps.tensors.size(); ++s) {
      const auto& slot = ps.tensors[s];
      if (slot.name != optimizer_info_.slots[s].name || slot.shape != p.shape || !slot.has_data())
        return invalid_argument("checkpoint optimizer state '" + slot.name + "' of '" + p.name +
                                "' does not match the optimizer's slot '" + optimizer_info_.slots[s].name +
                                "' (name, shape " + shape_string(p.shape) + ", data)");
    }
  }
  return Status();
}

Status TrainingSession::optimizer_step() {
  if (!optimizer_) return failed_precondition("optimizer_step: the session was created without an optimizer model");
  ONYX_RETURN_IF_ERROR(check_ready("optimizer_step"));
  if (!have_grads_) return failed_precondition("optimizer_step: no gradients yet (run train_step first)");
  ONYX_RETURN_IF_ERROR(sync_state_of(*state_, this).with_context("optimizer_step"));  // another session's steps
  auto start = Clock::now();
  checkpoint::OptimizerGroup& group = optimizer_group();
  auto& trainable = state_->module.trainable;
  const bool clipped = !unclipped_optimizer();
  Session& session = clipped ? *optimizer_ : *unclipped_optimizer_;
  const bool averaging = average_accumulated_ && (accumulated_steps_ > 1 || accumulated_weight_ != 1);
  // Parameters, gradients and slots stay on the device that holds them
  // when nothing below needs them on the host.
  const int d = state_device_index(session);
  const bool on_device = d >= 0 && device_state_->holds_gradients() && (!averaging || gradient_scale_) &&
                         !loss_scaled_ && !comm_ && !zero_;
  if (!on_device) ONYX_RETURN_IF_ERROR(sync_state().with_context("optimizer_step"));
  if (averaging) {
    // The weighted sum of K micro-batches' mean gradients, divided by the sum
    // of the weights (K when all are 1). Written into the session's own
    // buffers; the next train_step starts a new sum.
    if (on_device) {
      std::vector<Tensor> sums = device_state_->gradients();
      ONYX_RETURN_IF_ERROR(device_gradient_math(false, 1 / accumulated_weight_, sums).with_context("optimizer_step"));
    }
    for (size_t k = 0; k < grads_.size() && !on_device; ++k)
      ONYX_RETURN_IF_ERROR(scale_gradient(grads_[k], 1 / accumulated_weight_, trainable[k].name));
    accumulated_steps_ = 1;
    accumulated_weight_ = 1;
  }
  last_step_skipped_ = false;
  if (loss_scaled_) {
    ONYX_ASSIGN_OR_RETURN(bool finite, unscale_gradients());
    if (!finite) {
      after_scaled_step(true);
      last_optimizer_seconds_ = seconds_since(start);
      return Status();
    }
  }
  if (zero_) {
    ONYX_RETURN_IF_ERROR(zero_->step(grads_, trainable, float(lr_), group.step + 1, max_grad_norm_, hyperparameters_,
                                     &last_grad_norm_, &last_step_skipped_));
    if (!last_step_skipped_) ++group.step;
    last_optimizer_seconds_ = seconds_since(start);
    return Status();
  }
  if (comm_ && comm_->size() > 1) ONYX_RETURN_IF_ERROR(average_gradients());
  if (comm_) {
    // The averaged gradients are the same on every rank, so is this test.
    double squares = 0;
    for (const Tensor& g : grads_)
      if (g.dtype() == ONYX_DTYPE_FLOAT32)
        for (int64_t i = 0, n = g.size(); i < n; ++i) squares += double(g.data_as<float>()[i]) * g.data_as<float>()[i];
    if (!std::isfinite(squares)) {
      last_grad_norm_ = float(std::sqrt(squares));
      last_step_skipped_ = true;
      last_optimizer_seconds_ = seconds_since(start);
      return Status();
    }
  }
  const bool had_state = !group.parameters.empty();
  ONYX_RETURN_IF_ERROR(prepare_optimizer_state(group));
  if (on_device && (!had_state || device_state_->slots().size() != group.parameters.size()))
    ONYX_RETURN_IF_ERROR(device_state_->upload_slots(group).with_context("optimizer_step"));
  // Where each parameter and slot is read from, and where its new value goes.
  // A fused update reads each parameter and state tensor once, in the node
  // that writes its new value, so it may write in place instead of into fresh
  // buffers each step: on the device, or into the host tensors no one else
  // shares (a Checkpoint copy or a snapshot being saved keeps its values).
  // Counted before the feed below adds its own references. Outputs: the
  // gradient norm (when clipped), then per parameter its new value and slots.
  auto place = [&](const Tensor& host, const Tensor* held) -> BoundTensor {
    return on_device ? BoundTensor{*held, d} : BoundTensor{host, -1};
  };
  auto target = [&](const Tensor& host, const Tensor* held) -> BoundTensor {
    if (on_device) return BoundTensor{optimizer_fused_ ? *held : Tensor(), d};
    return BoundTensor{optimizer_fused_ && host.storage_users() == 1 ? host : Tensor(), -1};
  };
  std::vector<BoundTensor> targets;
  targets.reserve(1 + trainable.size() * (1 + optimizer_info_.slots.size()));
  if (clipped) targets.emplace_back();
  for (size_t k = 0; k < trainable.size(); ++k) {
    targets.push_back(target(trainable[k].data, on_device ? &device_state_->parameters()[k] : nullptr));
    for (size_t s = 0; s < group.parameters[k].tensors.size(); ++s)
      targets.push_back(target(group.parameters[k].tensors[s].data, on_device ? &device_state_->slots()[k][s] : nullptr));
  }
  auto scalar = [](float v) {
    Tensor t = Tensor::allocate(ONYX_DTYPE_FLOAT32, {});
    *t.data_as<float>() = v;
    return BoundTensor{t, -1};
  };
  std::vector<std::pair<std::string, BoundTensor>> feed;
  feed.reserve(3 + hyperparameters_.size() + optimizer_info_.groups.size() * hyperparameters_.size() +
               trainable.size() * (2 + optimizer_info_.slots.size()));
  feed.emplace_back("lr", scalar(float(lr_)));
  feed.emplace_back("step", scalar(float(group.step + 1)));
  feed.emplace_back("max_grad_norm", scalar(max_grad_norm_));
  for (size_t h = 0; h < hyperparameters_.size(); ++h)
    feed.emplace_back(optimizer_info_.hyperparameters[h].name, scalar(hyperparameters_[h]));
  for (const auto& [name, value] : group_override_inputs(optimizer_info_.groups)) feed.emplace_back(name, scalar(value));
  for (size_t k = 0; k < trainable.size(); ++k) {
    const auto& p = trainable[k];
    feed.emplace_back(p.name, place(p.data, on_device ? &device_state_->parameters()[k] : nullptr));
    feed.emplace_back(gradient_name(p.name), place(grads_.size() > k ? grads_[k] : Tensor(),
                                                   on_device ? &device_state_->gradients()[k] : nullptr));
    const auto& slots = group.parameters[k].tensors;
    for (size_t s = 0; s < slots.size(); ++s)
      feed.emplace_back(slot_name(p.name, slots[s].name),
                        place(slots[s].data, on_device ? &device_state_->slots()[k][s] : nullptr));
  }
  auto outputs = run_placed(session, feed, optimizer_fused_ || on_device ? targets : std::vector<BoundTensor>{});
  if (!outputs.ok()) return outputs.status().with_context("optimizer_step");
  std::vector<Tensor>& out = outputs.value();
  last_grad_norm_ = clipped ? *out[0].data_as<float>() : std::numeric_limits<float>::quiet_NaN();
  size_t i = clipped ? 1 : 0;
  for (size_t k = 0; k < trainable.size(); ++k) {
    (on_device ? device_state_->parameters()[k] : trainable[k].data) = std::move(out[i++]);
    for (size_t s = 0; s < group.parameters[k].tensors.size(); ++s)
      (on_device ? device_state_->slots()[k][s] : group.parameters[k].tensors[s].data) = std::move(out[i++]);
  }
  ++group.step;
  if (loss_scaled_) after_scaled_step(false);
  last_optimizer_seconds_ = seconds_since(start);
  return Status();
}

Status TrainingSession::set_loss_scaling(const LossScaleOptions& options) {
  if (!loss_scaled_)
    return failed_precondition("loss scaling: the training model has no \"loss_scale\" input; only artifacts made "
                               "with precision fp16 are loss-scaled");
  if (!(options.initial_scale > 0) || !std::isfinite(options.initial_scale))
    return invalid_argument("loss scaling: the initial scale must be finite and > 0; got " +
                            std::to_string(options.initial_scale));
  if (options.growth_interval < 1)
    return invalid_argument("loss scaling: the growth interval must be >= 1 step; got " +
                            std::to_string(options.growth_interval));
  loss_scale_ = options.initial_scale;
  growth_interval_ = options.growth_interval;
  clean_steps_ = 0;
  state_->properties[kLossScaleProperty] = loss_scale_;
  state_->properties[kCleanStepsProperty] = clean_steps_;
  return Status();
}

Status TrainingSession::restore_loss_scale(const LossScaleOptions& options) {
  // Read the checkpoint's values before set_loss_scaling writes the options'.
  std::optional<double> scale;
  int64_t clean = 0;
  if (auto it = state_->properties.find(kLossScaleProperty); it != state_->properties.end()) {
    const double* value = std::get_if<double>(&it->second);
    if (!value || !(*value > 0) || !std::isfinite(*value))
      return invalid_argument(std::string("checkpoint property '") + kLossScaleProperty +
                              "' must be a finite number > 0 (the fp16 loss scale)");
    scale = *value;
  }
  if (auto it = state_->properties.find(kCleanStepsProperty); scale && it != state_->properties.end()) {
    const int64_t* steps = std::get_if<int64_t>(&it->second);
    if (!steps || *steps < 0)
      return invalid_argument(std::string("checkpoint property '") + kCleanStepsProperty +
                              "' must be an integer >= 0 (clean steps since the loss scale last changed)");
    clean = *steps;
  }
  ONYX_RETURN_IF_ERROR(set_loss_scaling(options));
  if (!scale) return Status();
  loss_scale_ = *scale;
  clean_steps_ = clean;
  state_->properties[kLossScaleProperty] = loss_scale_;
  state_->properties[kCleanStepsProperty] = clean_steps_;
  return Status();
}

StatusOr<bool> TrainingSession::unscale_gradients() {
  const auto& trainable = state_->module.trainable;
  for (size_t k = 0; k < grads_.size(); ++k) {
    const Tensor& g = grads_[k];
    if (g.dtype() != ONYX_DTYPE_FLOAT32)
      return unimplemented(std::string("loss scaling of ") + dtype_name(g.dtype()) + " gradients ('" +
                           trainable[k].name + "'): fp16 training keeps float32 master weights");
    const float* p = g.data_as<float>();
    for (int64_t i = 0, n = g.size(); i < n; ++i)
      if (!std::isfinite(p[i])) return false;
  }
  // The default scales are powers of two: the division is then exact
  // (short of subnormals) and adds no rounding of its own.
  for (size_t k = 0; k < grads_.size(); ++k)
    ONYX_RETURN_IF_ERROR(scale_gradient(grads_[k], 1 / loss_scale_, trainable[k].name));
  return true;
}

void TrainingSession::after_scaled_step(bool skipped) {
  last_step_skipped_ = skipped;
  if (skipped) {
    loss_scale_ /= 2;
    clean_steps_ = 0;
    last_grad_norm_ = std::numeric_limits<float>::infinity();
    reset_grads_ = true;  // an overflowed sum must not carry into the next step
  } else if (++clean_steps_ >= growth_interval_) {
    loss_scale_ *= 2;
    clean_steps_ = 0;
  }
  state_->properties[kLossScaleProperty] = loss_scale_;
  state_->properties[kCleanStepsProperty] = clean_steps_;
}

StatusOr<uint64_t> TrainingSession::parameters_hash() const {
  ONYX_RETURN_IF_ERROR(sync_state().with_context("parameters_hash"));
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  auto mix = [&h](const void* data, size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  };
  for (const auto* list : {&state_->module.trainable, &state_->module.frozen})
    for (const auto& p : *list) {
      mix(p.name.data(), p.name.size() + 1);
      mix(p.shape.data(), p.shape.size() * sizeof(int64_t));
      if (p.has_data()) mix(p.data.data(), p.data.bytes());
    }
  mix(optimizer_info_.optimizer.data(), optimizer_info_.optimizer.size());
  return h;
}

Status TrainingSession::join_data_parallel(std::shared_ptr<Communicator> comm, DataParallelOptions options) {
  if (!comm) return invalid_argument("join_data_parallel: no communicator");
  if (comm_) return failed_precondition("join_data_parallel: the session already belongs to a job");
  if (loss_scaled_)
    return unimplemented("join_data_parallel: fp16 training with dynamic loss scaling is not supported "
                         "data-parallel yet (the ranks would have to agree on every skipped step); use bf16");
  // Every rank must start from the same model, weights and optimizer, with
  // the same settings (ranks that disagree would run different collectives):
  // each hash's minimum and maximum over the job agree only then.
  uint64_t settings = 1469598103934665603ull;  // FNV-1a over the values below
  auto mix = [&settings](const void* data, size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < bytes; ++i) settings = (settings ^ p[i]) * 1099511628211ull;
  };
  const uint64_t bucket = options.bucket_bytes;
  const int64_t zero = options.zero_stage, averaging = average_accumulated_;
  mix(&bucket, sizeof bucket);
  mix(&zero, sizeof zero);
  mix(&averaging, sizeof averaging);
  mix(&lr_, sizeof lr_);
  mix(&max_grad_norm_, sizeof max_grad_norm_);
  mix(hyperparameters_.data(), hyperparameters_.size() * sizeof(float));
  ONYX_ASSIGN_OR_RETURN(const uint64_t model, parameters_hash());
  uint64_t range[4] = {model, ~model, settings, ~settings};  // the max of ~h is ~(the min of h)
  ONYX_RETURN_IF_ERROR(comm->all_reduce(range, range, 4, ONYX_DTYPE_UINT64, ONYX_REDUCE_MAX,
                                        "data-parallel start-up: comparing the ranks' models and settings"));
  const std::string who = "data-parallel training: rank " + std::to_string(comm->rank()) + " of " +
                          std::to_string(comm->size());
  if (range[0] != ~range[1])
    return failed_precondition(who + " holds other parameters or another optimizer than some other rank: every "
                                     "rank must load the same model and checkpoint");
  if (range[2] != ~range[3])
    return failed_precondition(who + " was given other settings than some other rank (ZeRO stage, bucket bytes, "
                                     "learning rate, clipping, optimizer hyperparameters or gradient averaging): "
                                     "every rank must be started with the same options");
  if (options.zero_stage == 1) {
    if (!optimizer_) return failed_precondition("ZeRO stage 1: the session has no optimizer model");
    ONYX_ASSIGN_OR_RETURN(OptimizerDescription optimizer,
                          load_optimizer_plugin(optimizer_info_.optimizer, options.optimizer_search_dirs));
    checkpoint::OptimizerGroup* saved = nullptr;
    for (auto& group : state_->optimizer)
      if (group.name == optimizer_info_.optimizer && !group.parameters.empty()) saved = &group;
    ONYX_ASSIGN_OR_RETURN(zero_, ShardedOptimizer::create(*registry_, session_options_, comm, optimizer,
                                                          optimizer_info_.groups, optimizer_info_.parameter_groups,
                                                          state_->module.trainable, saved, options.bucket_bytes));
    // The state now lives in the shards; gather_optimizer_state() puts it back.
    if (saved) saved->parameters.clear();
  } else if (options.zero_stage != 0) {
    return invalid_argument("ZeRO stage " + std::to_string(options.zero_stage) + " is not supported (0 or 1)");
  }
  comm_ = std::move(comm);
  data_parallel_ = options;
  return Status();
}

Status TrainingSession::gather_optimizer_state() {
  ONYX_RETURN_IF_ERROR(sync_state().with_context("gather_optimizer_state"));
  if (!zero_) return Status();
  return zero_->gather_state(state_->module.trainable, optimizer_group());
}

StatusOr<checkpoint::Checkpoint> TrainingSession::checkpoint_shard() const {
  ONYX_RETURN_IF_ERROR(sync_state().with_context("checkpoint_shard"));
  if (!comm_) return failed_precondition("checkpoint_shard: the session has not joined a job");
  if (zero_) {
    const checkpoint::OptimizerGroup* group = state_->find_group(optimizer_info_.optimizer);
    checkpoint::OptimizerGroup empty;
    empty.name = optimizer_info_.optimizer;
    empty.initial_learning_rate = lr_;
    return zero_->shard(*state_, group ? *group : empty);
  }
  ONYX_ASSIGN_OR_RETURN(std::vector<checkpoint::Checkpoint> shards,
                        checkpoint::shard(*state_, uint32_t(comm_->size())));
  return std::move(shards[size_t(comm_->rank())]);
}

size_t TrainingSession::optimizer_state_bytes() const {
  if (zero_) return zero_->state_bytes();
  size_t bytes = 0;
  for (const auto& group : state_->optimizer)
    for (const auto& ps : group.parameters)
      for (const auto& t : ps.tensors) bytes += t.data.bytes();
  return bytes;
}

Status TrainingSession::average_gradients() {
  const auto& trainable = state_->module.trainable;
  size_t total = 0;
  for (size_t k = 0; k < trainable.size(); ++k) {
    if (grads_[k].dtype() != ONYX_DTYPE_FLOAT32)
      return unimplemented(std::string("data-parallel training of ") + dtype_name(grads_[k].dtype()) +
                           " gradients ('" + trainable[k].name + "')");
    total += size_t(grads_[k].size());
  }
  flat_grads_.resize(total);
  size_t at = 0;
  for (const Tensor& g : grads_) {
    std::memcpy(flat_grads_.data() + at, g.data_as<float>(), size_t(g.size()) * sizeof(float));
    at += size_t(g.size());
  }
  // Buckets in flight together: the plugin overlaps their transfers.
  const size_t bucket = data_parallel_.bucket_bytes / sizeof(float);
  const size_t per_bucket = bucket == 0 ? std::max<size_t>(total, 1) : bucket;
  const std::string step = "step " + std::to_string(optimizer_steps() + 1);
  std::vector<PendingCollective> pending;
  for (size_t begin = 0, b = 0; begin < total; begin += per_bucket, ++b) {
    size_t count = std::min(per_bucket, total - begin);
    ONYX_ASSIGN_OR_RETURN(PendingCollective p,
                          comm_->start_all_reduce(flat_grads_.data() + begin, flat_grads_.data() + begin, count,
                                                  ONYX_DTYPE_FLOAT32, ONYX_REDUCE_SUM,
                                                  step + ", gradient bucket " + std::to_string(b)));
    pending.push_back(std::move(p));
  }
  for (PendingCollective& p : pending) ONYX_RETURN_IF_ERROR(p.wait());
  const float scale = 1.0f / float(comm_->size());
  at = 0;
  for (Tensor& g : grads_) {  // the session's own buffers (train_step's outputs)
    float* out = g.data_as<float>();
    for (int64_t i = 0, n = g.size(); i < n; ++i) out[i] = flat_grads_[at + size_t(i)] * scale;
    at += size_t(g.size());
  }
  return Status();
}

Status TrainingSession::set_learning_rate(double lr) {
  if (!(lr >= 0) || !std::isfinite(lr)) return invalid_argument("learning rate must be finite and >= 0");
  lr_ = lr;
  return Status();
}

Status TrainingSession::set_lr_schedule(const LrSchedule& schedule) {
  ONYX_RETURN_IF_ERROR(schedule.validate());
  schedule_ = schedule;
  schedule_steps_ = 0;
  lr_ = schedule.lr_at(0);
  return Status();
}

Status TrainingSession::scheduler_step() {
  if (!schedule_) return failed_precondition("scheduler_step: no learning-rate schedule registered");
  lr_ = schedule_->lr_at(++schedule_steps_);
  return Status();
}

Status TrainingSession::set_hyperparameter(const std::string& name, float value) {
  std::string known;
  for (size_t h = 0; h < optimizer_info_.hyperparameters.size(); ++h) {
    if (optimizer_info_.hyperparameters[h].name == name) {
      hyperparameters_[h] = value;
      return Status();
    }
    known += (known.empty() ? "" : ", ") + optimizer_info_.hyperparameters[h].name;
  }
  return invalid_argument("optimizer '" + optimizer_info_.optimizer + "' has no hyperparameter '" + name +
                          "' (it has: " + (known.empty() ? std::string("none") : known) + ")");
}

}  // namespace onyx::runtime::training
