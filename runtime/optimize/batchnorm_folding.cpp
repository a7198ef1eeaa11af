// batchnorm_folding.cpp: Conv -> BatchNormalization (inference) becomes one
// Conv. Per output channel m, with f = scale[m] / sqrt(var[m] + epsilon):
//   W'[m, ...] = W[m, ...] * f      B'[m] = (B[m] - mean[m]) * f + bias[m]
// computed in float64 and rounded once to the weights' type, so the folded
// Conv differs from Conv-then-BatchNormalization only by float rounding.
#include <cmath>

#include "optimize/graph_rewrite.h"

namespace onyx::runtime::optimize {
namespace {

double element(const Tensor& t, int64_t i) {
  return t.dtype() == ONYX_DTYPE_FLOAT64 ? t.data_as<double>()[i] : double(t.data_as<float>()[i]);
}

void set_element(Tensor& t, int64_t i, double x) {
  if (t.dtype() == ONYX_DTYPE_FLOAT64) t.data_as<double>()[i] = x;
  else t.data_as<float>()[i] = float(x);
}

bool per_channel(const Tensor* t, int32_t dtype, int64_t channels) {
  return t && t->dtype() == dtype && t->shape().size() == 1 && t->shape()[0] == channels;
}

// Folds BatchNormalization node `b` into the Conv producing its input when
// every condition holds; true when it did.
bool fold_one(GraphRewrite& rw, int b) {
  ir::Graph& g = rw.graph;
  const ir::Node& bn = g.nodes[size_t(b)];
  if (!bn.domain.empty() || bn.op_type != "BatchNormalization" || bn.inputs.size() != 5 || bn.outputs.empty() ||
      bn.outputs[0] < 0)
    return false;
  if (bn.attr_int("training_mode", 0) != 0 || bn.attr_int("spatial", 1) != 1) return false;
  for (size_t k = 1; k < bn.outputs.size(); ++k)  // running statistics are only written in training
    if (bn.outputs[k] >= 0 && (rw.readers[size_t(bn.outputs[k])] > 0 || rw.pinned[size_t(bn.outputs[k])]))
      return false;
  const int x = bn.inputs[0];
  if (x < 0 || rw.pinned[size_t(x)] || rw.readers[size_t(x)] != 1) return false;
  const int c = g.values[size_t(x)].producer;
  if (c < 0 || rw.removed[size_t(c)]) return false;
  ir::Node& conv = g.nodes[size_t(c)];
  if (!conv.domain.empty() || conv.op_type != "Conv" || conv.outputs.size() != 1 || conv.inputs.size() < 2)
    return false;

  const Tensor* w = rw.fixed_constant(conv.inputs[1]);
  if (!w || (w->dtype() != ONYX_DTYPE_FLOAT32 && w->dtype() != ONYX_DTYPE_FLOAT64) || w->shape().empty()) return false;
  const int32_t dtype = w->dtype();
  const int64_t channels = w->shape()[0];
  const bool has_bias = conv.inputs.size() > 2 && conv.inputs[2] >= 0;
  const Tensor* bias = has_bias ? rw.fixed_constant(conv.inputs[2]) : nullptr;
  if (has_bias && !per_channel(bias, dtype, channels)) return false;
  const Tensor* scale = rw.fixed_constant(bn.inputs[1]);
  const Tensor* shift = rw.fixed_constant(bn.inputs[2]);
  const Tensor* mean = rw.fixed_constant(bn.inputs[3]);
  const Tensor* var = rw.fixed_constant(bn.inputs[4]);
  if (!per_channel(scale, dtype, channels) || !per_channel(shift, dtype, channels) ||
      !per_channel(mean, dtype, channels) || !per_channel(var, dtype, channels))
    return false;
  const ir::Attribute* eps_attr = bn.attr("epsilon");
  const double epsilon = eps_attr ? double(eps_attr->f) : 1e-5;

  Tensor new_w = Tensor::allocate(dtype, w->shape());
  Tensor new_b = Tensor::allocate(dtype, {channels});
  const int64_t per_m = channels ? w->size() / channels : 0;
  for (int64_t m = 0; m < channels; ++m) {
    const double f = element(*scale, m) / std::sqrt(element(*var, m) + epsilon);
    for (int64_t i = m * per_m; i < (m + 1) * per_m; ++i) set_element(new_w, i, element(*w, i) * f);
    const double b0 = bias ? element(*bias, m) : 0.0;
    set_element(new_b, m, (b0 - element(*mean, m)) * f + element(*shift, m));
  }

  const std::string base = conv.name.empty() ? g.values[size_t(x)].name : conv.name;
  const int w_index = add_initializer(rw, base + "_bn_folded_weight", std::move(new_w));
  const int b_index = add_initializer(rw, base + "_bn_folded_bias", std::move(new_b));
  ir::Node& folded = g.nodes[size_t(c)];  // add_value may not move nodes, but stay explicit
  --rw.readers[size_t(folded.inputs[1])];
  folded.inputs[1] = w_index;
  ++rw.readers[size_t(w_index)];
  if (has_bias) --rw.readers[size_t(folded.inputs[2])];
  folded.inputs.resize(3, -1);
  folded.inputs[2] = b_index;
  ++rw.readers[size_t(b_index)];

  const int y = g.nodes[size_t(b)].outputs[0];
  rw.remove_node(b);             // x loses its reader
  folded.outputs[0] = y;         // the Conv now writes the normalized value
  g.values[size_t(y)].producer = c;
  g.values[size_t(x)].producer = -1;  // unread and unproduced: compacted away
  return true;
}

}  // namespace

int fold_batchnorms(GraphRewrite& rw) {
  int folded = 0;
  for (size_t n = 0; n < rw.graph.nodes.size(); ++n)
    if (!rw.removed[n] && fold_one(rw, int(n))) ++folded;
  return folded;
}

}  // namespace onyx::runtime::optimize
