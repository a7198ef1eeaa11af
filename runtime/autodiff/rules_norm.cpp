// rules_norm.cpp: gradients of LayerNormalization and BatchNormalization,
// recomputing the statistics from X with ordinary ops. With xhat the
// normalized input, invstd = 1/sqrt(var + eps), dxhat = g * scale and means
// over the normalized axes:
//   dX = invstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
// (for BatchNormalization in inference mode the statistics are inputs and
// dX = dxhat * invstd).
#include "autodiff/rules.h"

namespace onyx::runtime::autodiff {
namespace {

struct Stats {
  std::string xhat, invstd;
};

// Batch statistics of x over `axes` (population variance, as the ops use).
Stats batch_stats(Emitter& e, const std::string& x, const std::vector<int64_t>& axes, float epsilon) {
  std::string mean = e.reduce("ReduceMean", x, axes, true);
  std::string centered = e.op("Sub", {x, mean});
  std::string var = e.reduce("ReduceMean", e.op("Mul", {centered, centered}), axes, true);
  std::string invstd = e.op("Reciprocal", {e.op("Sqrt", {e.op("Add", {var, e.scalar_like(epsilon, x)})})});
  return {e.op("Mul", {centered, invstd}), invstd};
}

std::string normalized_input_grad(Emitter& e, const Stats& s, const std::string& dxhat,
                                  const std::vector<int64_t>& axes) {
  std::string mean_d = e.reduce("ReduceMean", dxhat, axes, true);
  std::string mean_dx = e.reduce("ReduceMean", e.op("Mul", {dxhat, s.xhat}), axes, true);
  std::string inner = e.op("Sub", {e.op("Sub", {dxhat, mean_d}), e.op("Mul", {s.xhat, mean_dx})});
  return e.op("Mul", {s.invstd, inner});
}

Status layer_norm_rule(GradContext& c) {
  Emitter& e = c.e();
  ONYX_ASSIGN_OR_RETURN(int rank, c.rank_of(c.x(0)));
  int64_t axis = c.attr_int("axis", -1);
  if (axis < 0) axis += rank;
  std::vector<int64_t> axes;
  for (int64_t a = axis; a < rank; ++a) axes.push_back(a);
  Stats s = batch_stats(e, c.x(0), axes, c.attr_float("epsilon", 1e-5f));
  std::string g = c.dy(0);
  if (c.needs(0)) c.set_dx(0, normalized_input_grad(e, s, e.op("Mul", {g, c.x(1)}), axes));
  if (c.needs(1)) c.set_dx(1, e.sum_to_shape(e.op("Mul", {g, s.xhat}), c.x(1), c.y(0)));
  if (c.needs(2)) c.set_dx(2, e.sum_to_shape(g, c.x(2), c.y(0)));
  return Status();
}

// BatchNormalization(X [N, C, ...], scale, B, mean, var): per-channel
// vectors are broadcast as [C, 1, ...].
Status batch_norm_rule(GradContext& c) {
  Emitter& e = c.e();
  ONYX_ASSIGN_OR_RETURN(int rank, c.rank_of(c.x(0)));
  std::vector<int64_t> axes = {0}, trailing;
  for (int64_t a = 2; a < rank; ++a) {
    axes.push_back(a);
    trailing.push_back(a - 1);
  }
  auto per_channel = [&](const std::string& v) { return trailing.empty() ? v : e.unsqueeze(v, trailing); };
  const float epsilon = c.attr_float("epsilon", 1e-5f);
  const std::string g = c.dy(0), x = c.x(0);
  const bool training = c.attr_int("training_mode", 0) != 0;
  if (training) {
    std::string dxhat = e.op("Mul", {g, per_channel(c.x(1))});
    Stats s = batch_stats(e, x, axes, epsilon);
    if (c.needs(0)) c.set_dx(0, normalized_input_grad(e, s, dxhat, axes));
    if (c.needs(1)) c.set_dx(1, e.reduce("ReduceSum", e.op("Mul", {g, s.xhat}), axes, false));
  } else {
    // Inference mode: invstd is per channel, so the per-channel factors are
    // formed on [C] vectors and each gradient takes as few passes over the
    // activation as it can (the CNN's BatchNorm backward: 7 passes to 4).
    std::string invstd_c = e.op("Reciprocal", {e.op("Sqrt", {e.op("Add", {c.x(4), e.scalar_like(epsilon, x)})})});
    if (c.needs(0)) c.set_dx(0, e.op("Mul", {g, per_channel(e.op("Mul", {c.x(1), invstd_c}))}));
    // sum(g xhat) = sum(g (x - mean)) invstd; with the running statistics
    // as inputs, d/dmean = -sum(g) scale invstd and
    // d/dvar = -1/2 sum(g (x - mean)) scale invstd^3.
    std::string g_centered;  // sum(g (x - mean)) per channel
    if (c.needs(1) || c.needs(4))
      g_centered = e.reduce("ReduceSum", e.op("Mul", {g, e.op("Sub", {x, per_channel(c.x(3))})}), axes, false);
    if (c.needs(1)) c.set_dx(1, e.op("Mul", {g_centered, invstd_c}));
    if (c.needs(3)) {
      std::string sum_g = e.reduce("ReduceSum", g, axes, false);
      c.set_dx(3, e.op("Neg", {e.op("Mul", {sum_g, e.op("Mul", {c.x(1), invstd_c})})}));
    }
    if (c.needs(4)) {
      std::string cube = e.op("Mul", {invstd_c, e.op("Mul", {invstd_c, invstd_c})});
      c.set_dx(4, e.op("Mul", {e.op("Mul", {g_centered, e.op("Mul", {c.x(1), cube})}), e.scalar_like(-0.5, x)}));
    }
  }
  if (c.needs(2)) c.set_dx(2, e.reduce("ReduceSum", g, axes, false));
  return Status();
}

}  // namespace

void add_norm_rules(RuleTable& t) {
  t["LayerNormalization"] = layer_norm_rule;
  t["BatchNormalization"] = batch_norm_rule;
}

}  // namespace onyx::runtime::autodiff
