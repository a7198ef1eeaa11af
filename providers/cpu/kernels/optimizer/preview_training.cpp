// preview_training.cpp: the ai.onnx.preview.training update ops Adagrad, Momentum
// and Adam, in double for float types. Inputs are R (learning rate), T
// (step count), then n tensors each of X, G and the state tensors; outputs
// are the new X then the new states, in the same grouping.
#include <cinttypes>
#include <cmath>
#include <optional>
#include <vector>

#include "kernels/kernel_util.h"
#include "kernels/narrow_types.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

enum class Optimizer { kAdagrad, kMomentum, kAdam };

size_t state_count(Optimizer o) { return o == Optimizer::kAdam ? 2 : 1; }

class OptimizerKernel final : public sdk::Kernel {
 public:
  OptimizerKernel(const sdk::NodeInfo& node, Optimizer kind)
      : label_(util::node_label(node)),
        kind_(kind),
        decay_(node.get_float("decay_factor", 0)),
        epsilon_(node.get_float("epsilon", kind == Optimizer::kAdam ? 1e-6 : 1e-6)),
        norm_(node.get_float("norm_coefficient", 0)),
        norm_post_(node.get_float("norm_coefficient_post", 0)),
        alpha_(node.get_float("alpha", kind == Optimizer::kAdam ? 0.9 : 0)),
        beta_(node.get_float("beta", kind == Optimizer::kAdam ? 0.999 : 0)),
        nesterov_(node.get_string("mode", "standard") == "nesterov") {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    const size_t groups = 2 + state_count(kind_);
    if ((ctx.input_count() - 2) % groups)
      return util::fail(label_, "%zu inputs do not split into R, T and %zu groups", ctx.input_count(), groups);
    const size_t n = (ctx.input_count() - 2) / groups;
    sdk::Tensor rt = ctx.in(0), tt = ctx.in(1);
    const double r = narrow::load(rt.dtype, rt.raw, 0), t = narrow::load(tt.dtype, tt.raw, 0);
    for (size_t k = 0; k < n; ++k) {
      sdk::Tensor x = ctx.in(2 + k), g = ctx.in(2 + n + k), s1 = ctx.in(2 + 2 * n + k);
      std::optional<sdk::Tensor> s2;
      if (kind_ == Optimizer::kAdam) s2 = ctx.in(2 + 3 * n + k);
      if (g.size() != x.size() || s1.size() != x.size() || (s2 && s2->size() != x.size()))
        return util::fail(label_, "tensor group %zu: X, G and the states differ in size", k);
      sdk::Tensor xo, s1o, s2o;
      ONYX_SDK_RETURN_IF_ERROR(ctx.output(k, x.dtype, x.dims, &xo));
      ONYX_SDK_RETURN_IF_ERROR(ctx.output(n + k, s1.dtype, s1.dims, &s1o));
      if (s2) ONYX_SDK_RETURN_IF_ERROR(ctx.output(2 * n + k, s2->dtype, s2->dims, &s2o));
      for (int64_t i = 0; i < x.size(); ++i) {
        double xv = narrow::load(x.dtype, x.raw, i), gv = narrow::load(g.dtype, g.raw, i) + norm_ * xv;
        double a = narrow::load(s1.dtype, s1.raw, i), b = s2 ? narrow::load(s2->dtype, s2->raw, i) : 0.0;
        switch (kind_) {
          case Optimizer::kAdagrad: {
            double rate = r / (1 + t * decay_);
            a += gv * gv;
            xv -= rate * gv / (std::sqrt(a) + epsilon_);
            break;
          }
          case Optimizer::kMomentum: {
            a = alpha_ * a + (t > 0 ? beta_ : 1.0) * gv;
            xv -= r * (nesterov_ ? gv + alpha_ * a : a);
            break;
          }
          case Optimizer::kAdam: {
            a = alpha_ * a + (1 - alpha_) * gv;
            b = beta_ * b + (1 - beta_) * gv * gv;
            double rate = t > 0 ? r * std::sqrt(1 - std::pow(beta_, t)) / (1 - std::pow(alpha_, t)) : r;
            xv = (1 - norm_post_) * (xv - rate * a / (std::sqrt(b) + epsilon_));
            break;
          }
        }
        narrow::store(xo.dtype, xo.raw, i, xv, true);
        narrow::store(s1o.dtype, s1o.raw, i, a, true);
        if (s2) narrow::store(s2o.dtype, s2o.raw, i, b, true);
      }
    }
    return nullptr;
  }

 private:
  std::string label_;
  Optimizer kind_;
  double decay_, epsilon_, norm_, norm_post_, alpha_, beta_;
  bool nesterov_;
};

}  // namespace

void register_preview_training_kernels(sdk::KernelRegistry& registry) {
  for (auto [op, kind] : {std::pair{"Adagrad", Optimizer::kAdagrad}, std::pair{"Momentum", Optimizer::kMomentum},
                          std::pair{"Adam", Optimizer::kAdam}})
    registry.add(sdk::KernelDefBuilder(op, "ai.onnx.preview.training")
                     .check([](const sdk::NodeInfo& node) {
                       if (node.inputs.size() < 4) return node.op_type + " needs R, T and at least one tensor group";
                       for (size_t k = 0; k < node.inputs.size(); ++k)
                         if (k != 1 && !util::in_set(node.input_dtype(k), util::kFloat | util::kHalf))
                           return "input " + std::to_string(k) + " has type " + sdk::dtype_name(node.input_dtype(k)) +
                                  "; expected a float type";
                       return std::string();
                     })
                     .create([kind = kind](const sdk::NodeInfo& node) { return std::make_unique<OptimizerKernel>(node, kind); }));
}

}  // namespace onyx::cpu
