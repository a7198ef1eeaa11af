// grad_check.cpp: see grad_check.h.
#include "grad_check.h"

#include <gtest/gtest.h>
#include <onnx/defs/tensor_proto_util.h>

#include <cmath>
#include <map>

#include "autodiff/emitter.h"
#include "ir/onnx_import.h"

namespace onyx::runtime::autodiff::testing {

namespace {

void set_type(onnx::ValueInfoProto* v, const std::string& name, const std::vector<int64_t>& dims, int32_t dtype) {
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(dtype);
  auto* shape = t->mutable_shape();
  for (int64_t d : dims) {
    auto* dim = shape->add_dim();
    if (d >= 0) dim->set_dim_value(d);
    else dim->set_dim_param("N");
  }
}

}  // namespace

Forward::Forward(int64_t opset) {
  model_.set_ir_version(8);
  model_.set_producer_name("onyx-autodiff-tests");
  auto* op = model_.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  model_.mutable_graph()->set_name("forward");
}

Forward& Forward::param(const std::string& name, std::vector<int64_t> dims, double lo, double hi) {
  std::uniform_real_distribution<double> dist(lo, hi);
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<double> values(static_cast<size_t>(n));
  for (double& v : values) v = dist(rng_);
  return param_values(name, std::move(dims), std::move(values));
}

Forward& Forward::param_values(const std::string& name, std::vector<int64_t> dims, std::vector<double> values) {
  auto* t = model_.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::DOUBLE);
  for (int64_t d : dims) t->add_dims(d);
  for (double v : values) t->add_double_data(v);
  return *this;
}

Forward& Forward::param32(const std::string& name, std::vector<int64_t> dims) {
  std::uniform_real_distribution<double> dist(-1, 1);
  auto* t = model_.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  int64_t n = 1;
  for (int64_t d : dims) {
    t->add_dims(d);
    n *= d;
  }
  for (int64_t i = 0; i < n; ++i) t->add_float_data(float(dist(rng_)));
  return *this;
}

Forward& Forward::ints(const std::string& name, std::vector<int64_t> dims, std::vector<int64_t> values) {
  auto* t = model_.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims) t->add_dims(d);
  for (int64_t v : values) t->add_int64_data(v);
  return *this;
}

Forward& Forward::input(const std::string& name, std::vector<int64_t> dims, int32_t dtype) {
  set_type(model_.mutable_graph()->add_input(), name, dims, dtype);
  return *this;
}

Forward& Forward::output(const std::string& name, std::vector<int64_t> dims, int32_t dtype) {
  set_type(model_.mutable_graph()->add_output(), name, dims, dtype);
  return *this;
}

Forward& Forward::node(const std::string& op, std::vector<std::string> inputs, std::vector<std::string> outputs,
                       std::vector<onnx::AttributeProto> attrs, const std::string& domain) {
  auto* n = model_.mutable_graph()->add_node();
  n->set_op_type(op);
  n->set_domain(domain);
  n->set_name(op + "_" + std::to_string(counter_++));
  for (auto& i : inputs) n->add_input(i);
  for (auto& o : outputs) n->add_output(o);
  for (auto& a : attrs) *n->add_attribute() = std::move(a);
  return *this;
}

onnx::ModelProto weighted_sum_loss(const onnx::ModelProto& forward, uint32_t seed) {
  Forward loss;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<std::string> terms;
  for (const auto& o : forward.graph().output()) {
    const auto& tt = o.type().tensor_type();
    const bool single = tt.elem_type() == onnx::TensorProto::FLOAT;
    if (tt.elem_type() != onnx::TensorProto::DOUBLE && !single) continue;
    std::vector<int64_t> dims;
    int64_t n = 1;
    for (const auto& d : tt.shape().dim()) {
      dims.push_back(d.dim_value());
      n *= d.dim_value();
    }
    std::vector<double> w(static_cast<size_t>(n));
    for (double& v : w) v = dist(rng);
    loss.input(o.name(), dims, tt.elem_type()).param_values("w_" + o.name(), dims, w);
    if (single) {  // the weights in the output's type
      auto* init = loss.proto().mutable_graph()->mutable_initializer(loss.proto().graph().initializer_size() - 1);
      init->clear_double_data();
      init->set_data_type(onnx::TensorProto::FLOAT);
      for (double v : w) init->add_float_data(float(v));
    }
    loss.node("Mul", {o.name(), "w_" + o.name()}, {"prod_" + o.name()});
    loss.node("ReduceSum", {"prod_" + o.name()}, {"term_" + o.name()}, {attr_int("keepdims", 0)});
    terms.push_back("term_" + o.name());
  }
  if (terms.size() == 1) {
    loss.node("Identity", {terms[0]}, {"total"});
  } else {
    loss.node("Sum", terms, {"total"});
  }
  loss.output("total", {}, forward.graph().output(0).type().tensor_type().elem_type());
  return loss.proto();
}

ProviderRegistry& test_registry() {
  static ProviderRegistry* registry = [] {
    auto* r = new ProviderRegistry();
    r->add_search_dir(ONYX_PROVIDER_DIR);
    return r;
  }();
  return *registry;
}

std::vector<Tensor> TestSession::run(const std::vector<std::pair<std::string, const Tensor*>>& inputs,
                                     const std::vector<std::string>& outputs) {
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (const auto& [name, t] : inputs) feeds.push_back({name, *t});  // shares the storage, copies no data
  auto result = session_->run(feeds, outputs);
  if (!result.ok()) throw RunError(result.status().to_string());
  return std::move(result).value();
}

std::unique_ptr<TestSession> open_session(const onnx::ModelProto& model) {
  std::string bytes;
  model.SerializeToString(&bytes);
  auto imported = ir::load_model_from_bytes(bytes.data(), bytes.size(), "");
  if (!imported.ok()) throw RunError(imported.status().to_string());
  SessionOptions options;
  options.providers.push_back({"cpu", {}});
  options.fallback = FallbackPolicy::kFail;
  auto session = Session::create(test_registry(), std::move(imported).value(), options);
  if (!session.ok()) throw RunError(session.status().to_string());
  return std::make_unique<TestSession>(std::move(session).value());
}

Tensor tensor_of(const onnx::TensorProto& t) {
  std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  switch (t.data_type()) {
    case onnx::TensorProto::DOUBLE: return tensor_from<double>(ONYX_DTYPE_FLOAT64, dims, onnx::ParseData<double>(&t));
    case onnx::TensorProto::FLOAT: return tensor_from<float>(ONYX_DTYPE_FLOAT32, dims, onnx::ParseData<float>(&t));
    case onnx::TensorProto::INT64: return tensor_from<int64_t>(ONYX_DTYPE_INT64, dims, onnx::ParseData<int64_t>(&t));
    case onnx::TensorProto::INT32: return tensor_from<int32_t>(ONYX_DTYPE_INT32, dims, onnx::ParseData<int32_t>(&t));
    default: throw std::runtime_error("tensor_of: unsupported type");
  }
}

GradCheckResult check_gradients(const onnx::ModelProto& forward, const TrainingSpec* spec_in,
                                const std::vector<std::pair<std::string, std::shared_ptr<Tensor>>>& feeds,
                                double step32) {
  TrainingSpec spec;
  if (spec_in) {
    spec = *spec_in;
  } else {
    spec.loss.kind = LossKind::kCustom;
    spec.loss.custom = weighted_sum_loss(forward);
  }
  auto built = build_training_models(forward, spec);
  if (!built.ok()) throw std::runtime_error(built.status().to_string());
  TrainingModels& m = built.value();
  auto train = open_session(m.training);
  auto eval = open_session(m.eval);

  std::vector<Tensor> params;
  for (const auto& t : m.initial_values) params.push_back(tensor_of(t));
  auto run_loss = [&](TestSession& s, std::vector<std::string> outputs) {
    std::vector<std::pair<std::string, const Tensor*>> in;
    for (const auto& [name, t] : feeds) in.push_back({name, t.get()});
    for (size_t k = 0; k < params.size(); ++k) in.push_back({m.parameters[k].name, &params[k]});
    return s.run(in, outputs);
  };
  std::vector<std::string> grad_names = {"loss"};
  for (const auto& p : m.parameters)
    if (p.requires_grad) grad_names.push_back(p.name + "_grad");
  std::vector<Tensor> analytic = run_loss(*train, grad_names);

  GradCheckResult r;
  size_t g = 1;
  for (size_t k = 0; k < params.size(); ++k) {
    if (!m.parameters[k].requires_grad) continue;
    Tensor& grad = analytic[g++];
    if (grad.size() != params[k].size()) throw std::runtime_error("gradient of " + m.parameters[k].name + " has the wrong size");
    const bool single = params[k].dtype() == ONYX_DTYPE_FLOAT32;
    const double h = single ? step32 : 1e-5;
    auto value = [single](Tensor& t, int64_t i) { return single ? double(t.data_as<float>()[i]) : t.data_as<double>()[i]; };
    auto set = [single](Tensor& t, int64_t i, double v) {
      if (single) t.data_as<float>()[i] = float(v);
      else t.data_as<double>()[i] = v;
    };
    for (int64_t i = 0; i < params[k].size(); ++i) {
      const double saved = value(params[k], i);
      set(params[k], i, saved + h);
      Tensor lp = std::move(run_loss(*eval, {"loss"})[0]);
      set(params[k], i, saved - h);
      Tensor lm = std::move(run_loss(*eval, {"loss"})[0]);
      set(params[k], i, saved);
      double numeric = (value(lp, 0) - value(lm, 0)) / (2 * h), a = value(grad, i);
      double err = std::fabs(a - numeric) / std::max(1.0, std::fabs(numeric));
      r.max_abs_gradient = std::max(r.max_abs_gradient, std::fabs(a));
      ++r.elements_checked;
      if (err >= r.worst_error) {
        r.worst_error = err;
        r.worst_place = m.parameters[k].name + "[" + std::to_string(i) + "]: analytic " + std::to_string(a) +
                        ", numeric " + std::to_string(numeric);
      }
    }
  }
  return r;
}

void expect_gradients_match(const onnx::ModelProto& forward, const std::string& what, const TrainingSpec* spec,
                            const std::vector<std::pair<std::string, std::shared_ptr<Tensor>>>& feeds,
                            double tolerance, double step32) {
  try {
    GradCheckResult r = check_gradients(forward, spec, feeds, step32);
    EXPECT_GT(r.elements_checked, 0u) << what;
    EXPECT_GT(r.max_abs_gradient, 1e-3) << what << ": every gradient is ~0, the check proves nothing";
    EXPECT_LE(r.worst_error, tolerance) << what << ": worst at " << r.worst_place;
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": " << e.what();
  }
}

}  // namespace onyx::runtime::autodiff::testing
