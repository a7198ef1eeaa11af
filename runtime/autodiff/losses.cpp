// losses.cpp: see losses.h.
#include "autodiff/losses.h"

#include <map>
#include <set>

namespace onyx::runtime::autodiff {

namespace onnx = ONNX_NAMESPACE;

namespace {

// A graph input of `dims` (-1: unknown) named by `symbols` where they have
// names, so that the labels of a [batch, ...] output are [batch, ...] too.
onnx::ValueInfoProto tensor_input(const std::string& name, int32_t dtype, const std::vector<int64_t>& dims,
                                  const std::vector<std::string>& symbols, int rank) {
  onnx::ValueInfoProto v;
  v.set_name(name);
  auto* t = v.mutable_type()->mutable_tensor_type();
  t->set_elem_type(dtype);
  if (rank < 0) return v;
  auto* shape = t->mutable_shape();
  for (size_t k = 0; k < dims.size(); ++k) {
    auto* dim = shape->add_dim();
    if (dims[k] >= 0) dim->set_dim_value(dims[k]);
    else if (k < symbols.size() && !symbols[k].empty()) dim->set_dim_param(symbols[k]);
  }
  return v;
}

std::string reduce_all(Emitter& e, const std::string& x, Reduction r) {
  return e.reduce(r == Reduction::kMean ? "ReduceMean" : "ReduceSum", x, {}, false);
}

StatusOr<LossNodes> custom_loss(onnx::GraphProto* graph, Emitter& e, const onnx::ModelProto& model) {
  const onnx::GraphProto& lg = model.graph();
  if (lg.output_size() != 1)
    return invalid_argument("the custom loss graph must have exactly one output (the loss); it has " +
                            std::to_string(lg.output_size()));
  std::set<std::string> forward_outputs;
  for (const auto& o : graph->output()) forward_outputs.insert(o.name());
  LossNodes out;
  std::map<std::string, std::string> names;  // loss graph name -> training graph name
  std::set<std::string> initialized;
  for (const auto& t : lg.initializer()) initialized.insert(t.name());
  for (const auto& in : lg.input()) {
    if (initialized.count(in.name())) continue;
    names[in.name()] = in.name();
    if (!forward_outputs.count(in.name())) out.label_inputs.push_back(in);
  }
  auto map_name = [&](const std::string& n) {
    if (n.empty()) return n;
    auto it = names.find(n);
    return it != names.end() ? it->second : (names[n] = e.fresh("custom/" + n));
  };
  for (const auto& t : lg.initializer()) {
    onnx::TensorProto copy = t;
    copy.set_name(map_name(t.name()));
    *graph->add_initializer() = std::move(copy);
  }
  for (const auto& n : lg.node()) {
    onnx::NodeProto copy = n;
    copy.set_name(e.fresh("custom/" + n.op_type()));
    for (auto& i : *copy.mutable_input()) i = map_name(i);
    for (auto& o : *copy.mutable_output()) o = map_name(o);
    *graph->add_node() = std::move(copy);
  }
  out.loss = map_name(lg.output(0).name());
  const auto& declared = lg.output(0).type().tensor_type();
  if (declared.elem_type()) e.set_type(out.loss, {declared.elem_type(), 0, {}});
  if (names.count(lg.output(0).name()) && forward_outputs.count(lg.output(0).name()))
    return invalid_argument("the custom loss graph's output '" + lg.output(0).name() +
                            "' is a forward output; the loss must be computed from it");
  return out;
}

}  // namespace

StatusOr<LossNodes> add_loss(onnx::GraphProto* graph, Emitter& e, const LossSpec& spec) {
  if (spec.kind == LossKind::kCustom) return custom_loss(graph, e, spec.custom);
  if (graph->output_size() == 0) return invalid_argument("the forward model has no outputs to put a loss on");
  std::string y = spec.output.empty() ? graph->output(0).name() : spec.output;
  bool found = false;
  for (const auto& o : graph->output()) found = found || o.name() == y;
  if (!found) return invalid_argument("the loss was asked for forward output '" + y + "', which the model does not have");
  std::optional<ValueType> yt = e.type(y);
  ValueType t = yt ? *yt : ValueType{onnx::TensorProto::FLOAT, -1, {}};
  if (t.dtype == 0) t.dtype = onnx::TensorProto::FLOAT;

  LossNodes out;
  const std::string labels = "labels";
  switch (spec.kind) {
    case LossKind::kMse:
    case LossKind::kL1:
    case LossKind::kBceWithLogits: {
      out.label_inputs.push_back(tensor_input(labels, t.dtype, t.dims, t.symbols, t.rank));
      e.set_type(labels, t);
      std::string per_element;
      if (spec.kind == LossKind::kBceWithLogits) {
        std::string one_minus_t = e.op("Sub", {e.scalar(1, t.dtype), labels});
        per_element = e.op("Add", {e.op("Mul", {one_minus_t, y}), e.op("Softplus", {e.op("Neg", {y})})});
      } else {
        std::string diff = e.op("Sub", {y, labels});
        per_element = spec.kind == LossKind::kMse ? e.op("Mul", {diff, diff}) : e.op("Abs", {diff});
      }
      out.loss = reduce_all(e, per_element, spec.reduction);
      break;
    }
    case LossKind::kCrossEntropy:
    case LossKind::kNll: {
      if (spec.label_dtype != onnx::TensorProto::INT64 && spec.label_dtype != onnx::TensorProto::INT32)
        return invalid_argument("labels of the " + std::string(spec.kind == LossKind::kNll ? "nll" : "crossentropy") +
                                " loss must be int64 or int32");
      if (t.rank >= 0 && t.rank < 2)
        return invalid_argument("the " + std::string(spec.kind == LossKind::kNll ? "nll" : "crossentropy") +
                                " loss needs scores of shape [N, C, ...]; output '" + y + "' has rank " +
                                std::to_string(t.rank));
      const bool classes_last = spec.class_axis == -1;
      if (classes_last && t.rank < 0)
        return invalid_argument("class_axis -1 needs the rank of output '" + y + "', which is unknown");
      std::vector<int64_t> label_dims = t.dims;
      std::vector<std::string> label_symbols = t.symbols;
      const size_t class_dim = size_t(classes_last ? t.rank - 1 : 1);
      if (t.rank >= 2) {
        label_dims.erase(label_dims.begin() + ptrdiff_t(class_dim));
        if (label_symbols.size() > class_dim) label_symbols.erase(label_symbols.begin() + ptrdiff_t(class_dim));
      }
      const int label_rank = t.rank < 0 ? -1 : t.rank - 1;
      out.label_inputs.push_back(tensor_input(labels, spec.label_dtype, label_dims, label_symbols, label_rank));
      e.set_type(labels, {spec.label_dtype, label_rank, label_dims, label_symbols});
      std::string log_prob = y, targets = labels;
      if (spec.kind == LossKind::kCrossEntropy) {
        log_prob = e.op("LogSoftmax", {y}, {attr_int("axis", classes_last ? -1 : 1)});
        e.set_type(log_prob, t);
      }
      if (classes_last && t.rank > 2) {
        // [..., C] -> [M, C] and labels [...] -> [M]: both are views, so the
        // loss and its gradient cost no transpose.
        std::string classes = int(t.dims.size()) == t.rank && t.dims.back() > 0
                                  ? e.ints({-1, t.dims.back()})
                                  : e.op("Concat", {e.ints({-1}), e.op("Shape", {y}, {attr_int("start", -1)})},
                                         {attr_int("axis", 0)});
        log_prob = e.op("Reshape", {log_prob, classes});
        e.set_type(log_prob, {t.dtype, 2, {}});
        targets = e.op("Reshape", {labels, e.ints({-1})});
        e.set_type(targets, {spec.label_dtype, 1, {}});
      }
      std::vector<onnx::AttributeProto> attrs = {
          attr_string("reduction", spec.reduction == Reduction::kMean ? "mean" : "sum")};
      if (spec.ignore_index) attrs.push_back(attr_int("ignore_index", *spec.ignore_index));
      out.loss = e.op("NegativeLogLikelihoodLoss", {log_prob, targets}, std::move(attrs), kOnyxDomain);
      break;
    }
    case LossKind::kCustom:
      break;
  }
  e.set_type(out.loss, {t.dtype, 0, {}});
  return out;
}

StatusOr<LossKind> parse_loss_kind(const std::string& name) {
  static const std::map<std::string, LossKind> kinds = {{"mse", LossKind::kMse},
                                                        {"l1", LossKind::kL1},
                                                        {"crossentropy", LossKind::kCrossEntropy},
                                                        {"bcewithlogits", LossKind::kBceWithLogits},
                                                        {"nll", LossKind::kNll}};
  auto it = kinds.find(name);
  if (it == kinds.end())
    return invalid_argument("unknown loss '" + name + "'; expected mse, l1, crossentropy, bcewithlogits or nll");
  return it->second;
}

}  // namespace onyx::runtime::autodiff
