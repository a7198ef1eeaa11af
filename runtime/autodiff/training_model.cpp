// training_model.cpp: build_training_models (see training_model.h and
// docs/training.md for the conventions).
#include "autodiff/training_model.h"

#include <algorithm>
#include <map>
#include <set>

#include "autodiff/gradient_builder.h"
#include "autodiff/losses.h"

namespace onyx::runtime::autodiff {

namespace onnx = ONNX_NAMESPACE;

namespace {

constexpr int64_t kMinOpset = 13;  // the rules emit ops in their opset-13+ form

bool is_float(int32_t t) {
  return t == onnx::TensorProto::FLOAT || t == onnx::TensorProto::DOUBLE ||
         t == onnx::TensorProto::FLOAT16 || t == onnx::TensorProto::BFLOAT16;
}

int64_t onnx_opset(const onnx::ModelProto& m) {
  for (const auto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") return o.version();
  return 0;
}

onnx::ValueInfoProto value_info_of(const onnx::TensorProto& t) {
  onnx::ValueInfoProto v;
  v.set_name(t.name());
  auto* tt = v.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(t.data_type());
  auto* shape = tt->mutable_shape();
  for (int64_t d : t.dims()) shape->add_dim()->set_dim_value(d);
  return v;
}

struct ParameterSplit {
  std::vector<const onnx::TensorProto*> trainable, frozen;
};

StatusOr<ParameterSplit> split_parameters(const onnx::GraphProto& g, const TrainingSpec& spec) {
  std::map<std::string, const onnx::TensorProto*> inits;
  for (const auto& t : g.initializer()) inits[t.name()] = &t;
  auto lookup = [&](const std::string& name, const char* role) -> StatusOr<const onnx::TensorProto*> {
    auto it = inits.find(name);
    if (it != inits.end()) return it->second;
    std::string known;
    int shown = 0;
    for (const auto& [n, t] : inits) {
      if (!is_float(t->data_type())) continue;
      if (shown++ == 12) {
        known += ", ...";
        break;
      }
      known += (known.empty() ? "" : ", ") + n;
    }
    return not_found(std::string(role) + " parameter '" + name +
                     "' does not exist: it is not an initializer of the model (float initializers: " +
                     (known.empty() ? "none" : known) + ")");
  };
  ParameterSplit s;
  std::set<std::string> frozen(spec.frozen.begin(), spec.frozen.end()), taken;
  for (const auto& name : spec.frozen)
    if (auto t = lookup(name, "frozen"); !t.ok()) return t.status();
  if (spec.requires_grad.empty()) {
    for (const auto& t : g.initializer())
      if (is_float(t.data_type()) && !frozen.count(t.name())) s.trainable.push_back(&t);
  } else {
    for (const auto& name : spec.requires_grad) {
      ONYX_ASSIGN_OR_RETURN(const onnx::TensorProto* t, lookup(name, "requires-grad"));
      if (frozen.count(name)) return invalid_argument("parameter '" + name + "' is listed both as requiring gradients and as frozen");
      if (!is_float(t->data_type()))
        return invalid_argument("parameter '" + name + "' cannot require gradients: its type is not floating point");
      if (!taken.insert(name).second) return invalid_argument("parameter '" + name + "' is listed twice");
      s.trainable.push_back(t);
    }
  }
  // Frozen: the ones named, in model order. Other initializers (with
  // requires_grad given: the float ones not listed) stay in the models as
  // constants, as ORT Training's generate_artifacts keeps them: an exporter's
  // epsilon, sqrt(2) or attention scale, which graph rewrites (LayerNorm,
  // GELU fusion) and kernels (Pow by 2) need to see as values.
  for (const auto& t : g.initializer())
    if (frozen.count(t.name())) s.frozen.push_back(&t);
  return s;
}

// Training-mode Dropout nodes need their mask for the backward pass.
void expose_dropout_masks(onnx::GraphProto* g, Emitter& e) {
  for (auto& n : *g->mutable_node())
    if (n.op_type() == "Dropout" && n.input_size() >= 3 && !n.input(2).empty() &&
        (n.output_size() < 2 || n.output(1).empty())) {
      if (n.output_size() < 2) n.add_output("");
      n.set_output(1, e.fresh("dropout_mask"));
    }
}

void set_outputs(onnx::GraphProto* g, const std::vector<onnx::ValueInfoProto>& outs) {
  g->clear_output();
  for (const auto& o : outs) *g->add_output() = o;
}

onnx::ValueInfoProto scalar_output(const std::string& name, int32_t dtype) {
  onnx::ValueInfoProto v;
  v.set_name(name);
  auto* t = v.mutable_type()->mutable_tensor_type();
  t->set_elem_type(dtype);
  t->mutable_shape();  // rank 0
  return v;
}

// ONNX shape inference does not know ai.onyx ops: declare their outputs'
// types so that the ops downstream of them are typed.
void declare_onyx_outputs(onnx::GraphProto* g, const Emitter& e) {
  g->clear_value_info();
  std::set<std::string> graph_outputs;
  for (const auto& o : g->output()) graph_outputs.insert(o.name());
  for (const auto& n : g->node()) {
    if (n.domain() != kOnyxDomain) continue;
    for (const auto& o : n.output()) {
      auto t = e.type(o);
      if (!t || graph_outputs.count(o)) continue;
      onnx::ValueInfoProto* v = g->add_value_info();
      v->set_name(o);
      auto* tt = v->mutable_type()->mutable_tensor_type();
      tt->set_elem_type(t->dtype);
      if (t->rank < 0) continue;
      auto* shape = tt->mutable_shape();
      for (int64_t d : t->dims) {
        auto* dim = shape->add_dim();
        if (d >= 0) dim->set_dim_value(d);
      }
    }
  }
}

// Makes gradient k available as graph value `target`: renames the value when
// it is ours alone (emitted, not shared with another parameter), otherwise
// copies it with an Identity.
void name_gradient(onnx::GraphProto* g, Emitter& e, const std::vector<std::string>& grads, size_t k,
                   const std::string& target) {
  const std::string& grad = grads[k];
  if (grad.rfind("onyx/", 0) == 0 && std::count(grads.begin(), grads.end(), grad) == 1) {
    rename_value(g, grad, target);
    return;
  }
  onnx::NodeProto* n = g->add_node();
  n->set_op_type("Identity");
  n->set_name(e.fresh("grad_copy"));
  n->add_input(grad);
  n->add_output(target);
}

void import_onyx_domain_if_used(onnx::ModelProto* model) {
  bool used = false, imported = false;
  for (const auto& n : model->graph().node()) used = used || n.domain() == kOnyxDomain;
  for (const auto& o : model->opset_import()) imported = imported || o.domain() == kOnyxDomain;
  if (!used || imported) return;
  auto* o = model->add_opset_import();
  o->set_domain(kOnyxDomain);
  o->set_version(1);
}

}  // namespace

StatusOr<TrainingModels> build_training_models(const onnx::ModelProto& forward, const TrainingSpec& spec) {
  const int64_t opset = onnx_opset(forward);
  if (opset < kMinOpset)
    return invalid_argument("building a training model needs ai.onnx opset >= " + std::to_string(kMinOpset) +
                            "; the forward model imports opset " + std::to_string(opset));
  ONYX_ASSIGN_OR_RETURN(ParameterSplit params, split_parameters(forward.graph(), spec));

  TrainingModels out;
  onnx::ModelProto m = forward;
  onnx::GraphProto* g = m.mutable_graph();
  const std::vector<onnx::ValueInfoProto> forward_outputs(g->output().begin(), g->output().end());
  std::set<std::string> taken_names;
  for (const auto& n : g->node())
    for (const auto& o : n.output()) taken_names.insert(o);
  for (const auto& i : g->input()) taken_names.insert(i.name());
  for (const auto& t : g->initializer()) taken_names.insert(t.name());

  // Parameters leave the initializers and become inputs.
  std::set<std::string> param_names;
  for (auto* list : {&params.trainable, &params.frozen})
    for (const onnx::TensorProto* t : *list) {
      out.parameters.push_back({t->name(), t->data_type(), {t->dims().begin(), t->dims().end()},
                                list == &params.trainable});
      out.initial_values.push_back(*t);
      param_names.insert(t->name());
    }
  std::vector<onnx::ValueInfoProto> data_inputs;
  for (const auto& i : g->input())
    if (!param_names.count(i.name())) {
      bool initialized = false;
      for (const auto& t : g->initializer()) initialized = initialized || t.name() == i.name();
      if (!initialized) data_inputs.push_back(i);
    }
  std::vector<onnx::TensorProto> kept;
  for (const auto& t : g->initializer())
    if (!param_names.count(t.name())) kept.push_back(t);
  g->clear_initializer();
  for (auto& t : kept) *g->add_initializer() = std::move(t);

  // Parameters are inputs from here on (shape inference must see them).
  g->clear_input();
  for (const auto& i : data_inputs) *g->add_input() = i;
  for (const auto& p : out.initial_values) *g->add_input() = value_info_of(p);

  Emitter e(g, opset, "onyx/");
  expose_dropout_masks(g, e);
  e.infer_types(*g);

  const int forward_nodes = g->node_size();  // the loss's nodes follow: autocast leaves them float32
  ONYX_ASSIGN_OR_RETURN(LossNodes loss, add_loss(g, e, spec.loss));
  e.infer_types(*g);  // the loss nodes' types
  std::vector<std::string> reserved = {"loss"};
  if (spec.precision == Precision::kFp16) reserved.push_back(kLossScaleInput);
  for (const auto& l : loss.label_inputs) reserved.push_back(l.name());
  for (const auto* t : params.trainable) reserved.push_back(t->name() + "_grad");
  for (const auto& name : reserved)
    if (taken_names.count(name))
      return invalid_argument("the forward model already has a value named '" + name +
                              "', a name the training model needs for its own input or output");
  for (const auto& l : loss.label_inputs) out.label_inputs.push_back(l.name());
  const int32_t loss_dtype = e.dtype(loss.loss);
  rename_value(g, loss.loss, "loss");
  e.set_type("loss", {loss_dtype, 0, {}});

  // Inputs: data, labels, trainable parameters, frozen parameters.
  g->clear_input();
  for (const auto& i : data_inputs) *g->add_input() = i;
  for (const auto& l : loss.label_inputs) *g->add_input() = l;
  for (const auto& p : out.initial_values) *g->add_input() = value_info_of(p);

  std::vector<onnx::ValueInfoProto> eval_outputs = {scalar_output("loss", loss_dtype)};
  if (spec.forward_outputs) {
    for (const auto& name : *spec.forward_outputs) {
      auto it = std::find_if(forward_outputs.begin(), forward_outputs.end(),
                             [&](const onnx::ValueInfoProto& o) { return o.name() == name; });
      if (it == forward_outputs.end()) return not_found("forward output '" + name + "' does not exist in the model");
      eval_outputs.push_back(*it);
    }
  } else {
    eval_outputs.insert(eval_outputs.end(), forward_outputs.begin(), forward_outputs.end());
  }
  out.eval = m;
  set_outputs(out.eval.mutable_graph(), eval_outputs);

  // Only the training model computes in 16 bits: eval (and so the exported
  // inference model, cut from it) is the user's float32 graph.
  ONYX_RETURN_IF_ERROR(autocast(g, e, spec.precision, forward_nodes).status());
  std::string seed;
  if (spec.precision != Precision::kFp32) {
    auto* meta = m.add_metadata_props();
    meta->set_key("onyx.precision");
    meta->set_value(precision_name(spec.precision));
    e.infer_types(*g);  // the casts' types, for the rules
  }
  if (spec.precision == Precision::kFp16) {
    if (loss_dtype != onnx::TensorProto::FLOAT)
      return invalid_argument("fp16 training scales a float32 loss; this model's loss is element type " +
                              std::to_string(loss_dtype));
    *g->add_input() = scalar_output(kLossScaleInput, loss_dtype);
    e.set_type(kLossScaleInput, {loss_dtype, 0, {}});
    seed = kLossScaleInput;
  }
  std::vector<std::string> wrt;
  for (const auto* t : params.trainable) wrt.push_back(t->name());
  ONYX_ASSIGN_OR_RETURN(std::vector<std::string> grads, build_gradients(g, e, wrt, "loss", seed));
  std::vector<onnx::ValueInfoProto> train_outputs = eval_outputs;
  for (size_t k = 0; k < wrt.size(); ++k) {
    onnx::ValueInfoProto v = value_info_of(*params.trainable[k]);
    v.set_name(wrt[k] + "_grad");
    name_gradient(g, e, grads, k, v.name());
    train_outputs.push_back(std::move(v));
  }
  set_outputs(g, train_outputs);
  out.training = std::move(m);
  for (auto* model : {&out.training, &out.eval}) {
    import_onyx_domain_if_used(model);
    declare_onyx_outputs(model->mutable_graph(), e);
  }
  return out;
}

StatusOr<onnx::ModelProto> build_gradient_model(const onnx::ModelProto& forward, const std::vector<std::string>& wrt) {
  const int64_t opset = onnx_opset(forward);
  if (opset < kMinOpset)
    return invalid_argument("building a gradient model needs ai.onnx opset >= " + std::to_string(kMinOpset) +
                            "; the forward model imports opset " + std::to_string(opset));
  onnx::ModelProto m = forward;
  onnx::GraphProto* g = m.mutable_graph();
  const std::vector<onnx::ValueInfoProto> outputs(g->output().begin(), g->output().end());
  std::set<std::string> taken;
  for (const auto& n : g->node())
    for (const auto& o : n.output()) taken.insert(o);
  for (const auto& i : g->input()) taken.insert(i.name());
  for (const auto& t : g->initializer()) taken.insert(t.name());
  for (const auto& name : wrt)
    if (!taken.count(name)) return not_found("gradient with respect to '" + name + "': the model has no such value");

  Emitter e(g, opset, "onyx/");
  expose_dropout_masks(g, e);
  e.infer_types(*g);
  // The scalar whose gradient is the vector-Jacobian product.
  std::string total;
  for (const auto& o : outputs) {
    const int32_t dtype = o.type().tensor_type().elem_type();
    if (!is_float(dtype)) continue;  // indices, masks: no gradient flows back through them
    const std::string seed = o.name() + "_grad";
    if (taken.count(seed))
      return invalid_argument("the model already has a value named '" + seed +
                              "', the name of the gradient input of output '" + o.name() + "'");
    onnx::ValueInfoProto in = o;
    in.set_name(seed);
    *g->add_input() = in;
    if (auto t = e.type(o.name())) e.set_type(seed, *t);
    std::string term = e.reduce("ReduceSum", e.op("Mul", {o.name(), seed}), {}, false);
    if (dtype != onnx::TensorProto::FLOAT) term = e.op("Cast", {term}, {attr_int("to", onnx::TensorProto::FLOAT)});
    total = total.empty() ? term : e.op("Add", {total, term});
  }
  if (total.empty()) return invalid_argument("the model has no floating-point output to differentiate");
  e.infer_types(*g);
  ONYX_ASSIGN_OR_RETURN(std::vector<std::string> grads, build_gradients(g, e, wrt, total));
  std::vector<onnx::ValueInfoProto> grad_outputs = outputs;
  for (size_t k = 0; k < wrt.size(); ++k) {
    onnx::ValueInfoProto v;
    v.set_name(wrt[k] + "_grad");
    if (taken.count(v.name()))
      return invalid_argument("the model already has a value named '" + v.name() + "', the name of a gradient output");
    if (auto t = e.type(wrt[k])) {
      auto* tt = v.mutable_type()->mutable_tensor_type();
      tt->set_elem_type(t->dtype);
      if (t->rank >= 0) {
        auto* shape = tt->mutable_shape();
        for (int64_t d : t->dims) {
          auto* dim = shape->add_dim();
          if (d >= 0) dim->set_dim_value(d);
        }
      }
    }
    name_gradient(g, e, grads, k, v.name());
    grad_outputs.push_back(std::move(v));
  }
  set_outputs(g, grad_outputs);
  import_onyx_domain_if_used(&m);
  declare_onyx_outputs(g, e);
  return m;
}

}  // namespace onyx::runtime::autodiff
