// training.cpp: CheckpointState, TrainingSession, artifacts and gradient
// models of the _onyx module (onyx_training_c_api.h, onyx_checkpoint_c_api.h).
// onyx/training/ builds the onnxruntime.training.api-compatible API on them,
// onyx/torch.py the PyTorch module wrapper.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include <variant>

#include "bindings.h"

namespace onyx::python {

namespace {

using StatePtr = std::shared_ptr<OnyxCheckpointState>;
using Property = std::variant<int64_t, double, std::string>;

class CheckpointState {
 public:
  explicit CheckpointState(OnyxCheckpointState* raw) : state_(raw, onyx_checkpoint_release) {}

  static CheckpointState load(const std::string& path) {
    OnyxCheckpointState* raw = nullptr;
    OnyxStatus* status;
    {
      nb::gil_scoped_release unlocked;
      status = onyx_checkpoint_load(path.c_str(), &raw);
    }
    check(status);
    return CheckpointState(raw);
  }
  static CheckpointState load_bytes(nb::bytes data) {
    OnyxCheckpointState* raw = nullptr;
    check(onyx_checkpoint_load_from_buffer(data.c_str(), data.size(), &raw));
    return CheckpointState(raw);
  }
  static CheckpointState import_onnx(const std::string& model_path, const std::vector<std::string>& trainable) {
    std::vector<const char*> names;
    for (const auto& n : trainable) names.push_back(n.c_str());
    OnyxCheckpointState* raw = nullptr;
    check(onyx_checkpoint_import_onnx(model_path.c_str(), names.data(), names.size(), &raw));
    return CheckpointState(raw);
  }
  void save(const std::string& path, bool include_optimizer_state) const {
    OnyxStatus* status;
    {
      nb::gil_scoped_release unlocked;
      status = onyx_checkpoint_save(state_.get(), path.c_str(), include_optimizer_state);
    }
    check(status);
  }
  bool is_nominal() const { return onyx_checkpoint_is_nominal(state_.get()); }
  CheckpointState make_nominal() const {
    OnyxCheckpointState* raw = nullptr;
    check(onyx_checkpoint_make_nominal(state_.get(), &raw));
    return CheckpointState(raw);
  }

  // (name, dtype, dims, requires_grad) per parameter, trainable ones first.
  std::vector<std::tuple<std::string, int32_t, std::vector<int64_t>, bool>> parameters() const {
    std::vector<std::tuple<std::string, int32_t, std::vector<int64_t>, bool>> out;
    for (size_t k = 0; k < onyx_checkpoint_parameter_count(state_.get()); ++k) {
      OnyxValueMetadata m{};
      m.struct_size = sizeof m;
      bool requires_grad = false;
      check(onyx_checkpoint_parameter_info(state_.get(), k, &m, &requires_grad));
      out.emplace_back(m.name, m.dtype, std::vector<int64_t>(m.dims, m.dims + std::max(m.rank, 0)), requires_grad);
    }
    return out;
  }
  nb::object get_parameter(const std::string& name) const {
    OnyxTensor* t = nullptr;
    check(onyx_checkpoint_get_parameter(state_.get(), name.c_str(), &t));
    return to_numpy(TensorPtr(t));
  }
  void update_parameter(const std::string& name, nb::handle value) {
    BorrowedInputs in;
    borrow_input(in, name, value, 0);
    check(onyx_checkpoint_update_parameter(state_.get(), name.c_str(), in.tensors[0].get()));
  }

  std::vector<std::pair<std::string, Property>> properties() const {
    std::vector<std::pair<std::string, Property>> out;
    for (size_t k = 0; k < onyx_checkpoint_property_count(state_.get()); ++k) {
      OnyxCheckpointProperty p{};
      p.struct_size = sizeof p;
      check(onyx_checkpoint_property_at(state_.get(), k, &p));
      if (p.type == ONYX_PROPERTY_INT) out.emplace_back(p.name, p.int_value);
      else if (p.type == ONYX_PROPERTY_FLOAT) out.emplace_back(p.name, p.float_value);
      else out.emplace_back(p.name, std::string(p.string_value, p.string_size));
    }
    return out;
  }
  void set_property(const std::string& name, const Property& value) {
    if (auto* i = std::get_if<int64_t>(&value)) check(onyx_checkpoint_set_property_int(state_.get(), name.c_str(), *i));
    else if (auto* f = std::get_if<double>(&value)) check(onyx_checkpoint_set_property_float(state_.get(), name.c_str(), *f));
    else check(onyx_checkpoint_set_property_string(state_.get(), name.c_str(), std::get<std::string>(value).c_str()));
  }
  const StatePtr& get() const { return state_; }

 private:
  StatePtr state_;
};

class TrainingSession {
 public:
  TrainingSession(Env& env, CheckpointState& state, const std::string& training, std::optional<std::string> eval,
                  std::optional<std::string> optimizer, const ProviderList& providers, int fallback, size_t threads)
      : env_(env.get()), state_(state.get()) {
    OptionsPtr options = make_session_options(providers, fallback, threads, false);
    OnyxTrainingSession* raw = nullptr;
    OnyxStatus* status;
    {
      nb::gil_scoped_release unlocked;
      status = onyx_training_session_create(env_.get(), state_.get(), training.c_str(), eval ? eval->c_str() : nullptr,
                                            optimizer ? optimizer->c_str() : nullptr, options.get(), &raw);
    }
    check(status);
    session_.reset(raw);
  }

  std::vector<std::string> names(bool eval, bool inputs) const {
    std::vector<std::string> out;
    OnyxTrainingSession* s = session_.get();
    size_t n = inputs ? onyx_training_session_input_count(s, eval) : onyx_training_session_output_count(s, eval);
    for (size_t k = 0; k < n; ++k)
      out.push_back(inputs ? onyx_training_session_input_name(s, eval, k) : onyx_training_session_output_name(s, eval, k));
    return out;
  }

  // One TrainStep (eval false) or EvalStep on arrays given in input order.
  nb::list step(bool eval, nb::sequence arrays) {
    std::vector<std::string> input_names = names(eval, true);
    if (nb::len(arrays) != input_names.size()) {
      std::string list;
      for (const auto& n : input_names) list += (list.empty() ? "" : ", ") + n;
      fail(ONYX_STATUS_INVALID_ARGUMENT, std::string(eval ? "eval" : "training") + " step: " +
                                             std::to_string(nb::len(arrays)) + " inputs given, the model takes " +
                                             std::to_string(input_names.size()) + " (" + list + ")");
    }
    BorrowedInputs inputs;
    size_t k = 0;
    for (nb::handle a : arrays) borrow_input(inputs, input_names[k++], a, 0);
    std::vector<OnyxTensor*> outputs(onyx_training_session_output_count(session_.get(), eval), nullptr);
    std::vector<const OnyxTensor*> in = inputs.raw();
    OnyxStatus* status;
    {
      nb::gil_scoped_release unlocked;
      status = eval ? onyx_training_session_eval_step(session_.get(), in.data(), in.size(), outputs.data(), outputs.size())
                    : onyx_training_session_train_step(session_.get(), in.data(), in.size(), outputs.data(), outputs.size());
    }
    check(status);
    std::vector<TensorPtr> owned;
    for (OnyxTensor* t : outputs) owned.emplace_back(t);
    nb::list result;
    for (auto& t : owned) result.append(to_numpy(std::move(t)));
    return result;
  }

  void optimizer_step() {
    OnyxStatus* status;
    {
      nb::gil_scoped_release unlocked;
      status = onyx_training_session_optimizer_step(session_.get());
    }
    check(status);
  }
  void lazy_reset_grad() { check(onyx_training_session_lazy_reset_grad(session_.get())); }
  double learning_rate() const {
    double lr = 0;
    check(onyx_training_session_get_learning_rate(session_.get(), &lr));
    return lr;
  }
  void set_learning_rate(double lr) { check(onyx_training_session_set_learning_rate(session_.get(), lr)); }
  void set_lr_schedule(const std::string& schedule, double base) {
    check(onyx_training_session_set_lr_schedule(session_.get(), schedule.c_str(), base));
  }
  void scheduler_step() { check(onyx_training_session_scheduler_step(session_.get())); }
  void set_hyperparameter(const std::string& name, float value) {
    check(onyx_training_session_set_hyperparameter(session_.get(), name.c_str(), value));
  }
  void set_max_grad_norm(float norm) { check(onyx_training_session_set_max_grad_norm(session_.get(), norm)); }
  void set_seed(uint64_t seed) { check(onyx_training_session_set_seed(session_.get(), seed)); }

  std::pair<size_t, size_t> parameters_size(bool trainable_only) const {
    size_t elements = 0, bytes = 0;
    check(onyx_training_session_parameters_size(session_.get(), trainable_only, &elements, &bytes));
    return {elements, bytes};
  }
  // The parameters' bytes, packed in checkpoint order (uint8, 1-D).
  nb::object copy_parameters_to_buffer(bool trainable_only) const {
    auto [elements, bytes] = parameters_size(trainable_only);
    int64_t dims[1] = {int64_t(bytes)};
    OnyxTensor* t = nullptr;
    check(onyx_tensor_create(ONYX_DTYPE_UINT8, dims, 1, &t));
    TensorPtr owned(t);
    check(onyx_training_session_copy_parameters_to_buffer(session_.get(), onyx_tensor_data(t), bytes, trainable_only));
    return to_numpy(std::move(owned));
  }
  void copy_buffer_to_parameters(nb::handle buffer, bool trainable_only) {
    BorrowedInputs in;
    borrow_input(in, "buffer", buffer, 0);
    check(onyx_training_session_copy_buffer_to_parameters(session_.get(), in.arrays[0].data(), in.arrays[0].nbytes(),
                                                          trainable_only));
  }
  void export_model(const std::string& path, const std::vector<std::string>& outputs) const {
    std::vector<const char*> names;
    for (const auto& n : outputs) names.push_back(n.c_str());
    check(onyx_training_session_export_model(session_.get(), path.c_str(), names.data(), names.size()));
  }

 private:
  EnvPtr env_;
  StatePtr state_;  // outlives the session
  std::unique_ptr<OnyxTrainingSession, void (*)(OnyxTrainingSession*)> session_{nullptr, onyx_training_session_release};
};

void generate_artifacts(const std::string& model_path, const std::vector<std::pair<std::string, std::string>>& options,
                        const std::string& out_dir) {
  std::vector<const char*> keys, values;
  for (const auto& [k, v] : options) {
    keys.push_back(k.c_str());
    values.push_back(v.c_str());
  }
  OnyxStatus* status;
  {
    nb::gil_scoped_release unlocked;
    status = onyx_training_generate_artifacts(model_path.c_str(), keys.data(), values.data(), keys.size(), out_dir.c_str());
  }
  check(status);
}

void build_gradient_model(const std::string& model_path, const std::vector<std::string>& wrt, const std::string& out_path) {
  std::vector<const char*> names;
  for (const auto& n : wrt) names.push_back(n.c_str());
  OnyxStatus* status;
  {
    nb::gil_scoped_release unlocked;
    status = onyx_training_build_gradient_model(model_path.c_str(), names.data(), names.size(), out_path.c_str());
  }
  check(status);
}

}  // namespace

void bind_training(nb::module_& m) {
  nb::class_<CheckpointState>(m, "CheckpointState")
      .def_static("load", &CheckpointState::load, nb::arg("path"))
      .def_static("load_bytes", &CheckpointState::load_bytes, nb::arg("data"))
      .def_static("import_onnx", &CheckpointState::import_onnx, nb::arg("model_path"), nb::arg("trainable"))
      .def("save", &CheckpointState::save, nb::arg("path"), nb::arg("include_optimizer_state"))
      .def("is_nominal", &CheckpointState::is_nominal)
      .def("make_nominal", &CheckpointState::make_nominal)
      .def("parameters", &CheckpointState::parameters)
      .def("get_parameter", &CheckpointState::get_parameter, nb::arg("name"))
      .def("update_parameter", &CheckpointState::update_parameter, nb::arg("name"), nb::arg("value"))
      .def("properties", &CheckpointState::properties)
      .def("set_property", &CheckpointState::set_property, nb::arg("name"), nb::arg("value"));
  nb::class_<TrainingSession>(m, "TrainingSession")
      .def(nb::init<Env&, CheckpointState&, const std::string&, std::optional<std::string>, std::optional<std::string>,
                    const ProviderList&, int, size_t>(),
           nb::arg("env"), nb::arg("state"), nb::arg("training"), nb::arg("eval").none(), nb::arg("optimizer").none(),
           nb::arg("providers"), nb::arg("fallback"), nb::arg("threads"))
      .def("names", &TrainingSession::names, nb::arg("eval"), nb::arg("inputs"))
      .def("step", &TrainingSession::step, nb::arg("eval"), nb::arg("arrays"))
      .def("optimizer_step", &TrainingSession::optimizer_step)
      .def("lazy_reset_grad", &TrainingSession::lazy_reset_grad)
      .def("learning_rate", &TrainingSession::learning_rate)
      .def("set_learning_rate", &TrainingSession::set_learning_rate, nb::arg("lr"))
      .def("set_lr_schedule", &TrainingSession::set_lr_schedule, nb::arg("schedule"), nb::arg("base_lr"))
      .def("scheduler_step", &TrainingSession::scheduler_step)
      .def("set_hyperparameter", &TrainingSession::set_hyperparameter, nb::arg("name"), nb::arg("value"))
      .def("set_max_grad_norm", &TrainingSession::set_max_grad_norm, nb::arg("max_norm"))
      .def("set_seed", &TrainingSession::set_seed, nb::arg("seed"))
      .def("parameters_size", &TrainingSession::parameters_size, nb::arg("trainable_only"))
      .def("copy_parameters_to_buffer", &TrainingSession::copy_parameters_to_buffer, nb::arg("trainable_only"))
      .def("copy_buffer_to_parameters", &TrainingSession::copy_buffer_to_parameters, nb::arg("buffer"),
           nb::arg("trainable_only"))
      .def("export_model", &TrainingSession::export_model, nb::arg("path"), nb::arg("outputs"));
  m.def("generate_artifacts", &generate_artifacts, nb::arg("model_path"), nb::arg("options"), nb::arg("out_dir"));
  m.def("build_gradient_model", &build_gradient_model, nb::arg("model_path"), nb::arg("wrt"), nb::arg("out_path"));
}

}  // namespace onyx::python
