// fused_optimizers.cpp: fused optimizer updates in the ai.onyx.optimizers
// domain (provider_api/onyx_optimizer.h): one pass over the parameter, its
// gradient and state instead of the ~20 elementwise ops of the update
// function the optimizer plugins define. Same signature and the same float32
// formulas, in the same order, as those functions (optimizers/*.c):
//   AdamW (param, grad, m, v, lr, step, beta1, beta2, epsilon, weight_decay) => (param', m', v')
//   SGD   (param, grad, buf, lr, step, momentum, nesterov, weight_decay)    => (param', buf')
#include <algorithm>
#include <cmath>

#include "kernels/kernel_util.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

constexpr const char* kOptimizerDomain = "ai.onyx.optimizers";

class FusedUpdateKernel : public sdk::Kernel {
 public:
  FusedUpdateKernel(const sdk::NodeInfo& node, size_t tensors, size_t scalars)
      : label_(util::node_label(node)), tensors_(tensors), scalars_(scalars) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    const sdk::Tensor param = ctx.in(0);
    std::vector<const float*> in;
    for (size_t i = 0; i < tensors_; ++i) {
      const sdk::Tensor t = ctx.in(i);
      if (!std::ranges::equal(t.dims, param.dims))
        return util::fail(label_, "input %zu has shape %s, the parameter %s", i, util::dims_str(t.dims).c_str(),
                          util::dims_str(param.dims).c_str());
      in.push_back(t.data<float>());
    }
    std::vector<float> scalar;
    for (size_t i = 0; i < scalars_; ++i) {
      const sdk::Tensor t = ctx.in(tensors_ + i);
      if (t.size() != 1) return util::fail(label_, "input %zu must be a scalar", tensors_ + i);
      scalar.push_back(t.data<float>()[0]);
    }
    std::vector<float*> out;
    for (size_t i = 0; i + 1 < tensors_; ++i) {  // every tensor but the gradient comes back updated
      sdk::Tensor y;
      ONYX_SDK_RETURN_IF_ERROR(ctx.output(i, ONYX_DTYPE_FLOAT32, param.dims, &y));
      out.push_back(y.data<float>());
    }
    update(in, scalar, out, param.size());
    return nullptr;
  }

 protected:
  virtual void update(const std::vector<const float*>& in, const std::vector<float>& s, const std::vector<float*>& out,
                      int64_t n) const = 0;

 private:
  std::string label_;
  size_t tensors_, scalars_;
};

class AdamWKernel final : public FusedUpdateKernel {
 public:
  explicit AdamWKernel(const sdk::NodeInfo& node) : FusedUpdateKernel(node, 4, 6) {}

 private:
  void update(const std::vector<const float*>& in, const std::vector<float>& s, const std::vector<float*>& out,
              int64_t n) const override {
    const float lr = s[0], step = s[1], beta1 = s[2], beta2 = s[3], epsilon = s[4], weight_decay = s[5];
    const float keep = 1.0f - lr * weight_decay;
    const float bias1 = 1.0f - std::pow(beta1, step), bias2 = 1.0f - std::pow(beta2, step);
    const float one_minus_beta1 = 1.0f - beta1, one_minus_beta2 = 1.0f - beta2;
    const float *p = in[0], *g = in[1], *m = in[2], *v = in[3];
    float *p_out = out[0], *m_out = out[1], *v_out = out[2];
    for (int64_t i = 0; i < n; ++i) {
      float new_m = beta1 * m[i] + one_minus_beta1 * g[i];
      float new_v = beta2 * v[i] + one_minus_beta2 * (g[i] * g[i]);
      float denom = std::sqrt(new_v / bias2) + epsilon;
      p_out[i] = p[i] * keep - lr * ((new_m / bias1) / denom);
      m_out[i] = new_m;
      v_out[i] = new_v;
    }
  }
};

class SgdKernel final : public FusedUpdateKernel {
 public:
  explicit SgdKernel(const sdk::NodeInfo& node) : FusedUpdateKernel(node, 3, 5) {}

 private:
  void update(const std::vector<const float*>& in, const std::vector<float>& s, const std::vector<float*>& out,
              int64_t n) const override {
    const float lr = s[0], momentum = s[2], nesterov = s[3], weight_decay = s[4];
    const float *p = in[0], *g = in[1], *buf = in[2];
    float *p_out = out[0], *buf_out = out[1];
    for (int64_t i = 0; i < n; ++i) {
      float grad = g[i] + weight_decay * p[i];
      float new_buf = momentum * buf[i] + grad;
      float direction = nesterov * (grad + momentum * new_buf) + (1.0f - nesterov) * new_buf;
      p_out[i] = p[i] - lr * direction;
      buf_out[i] = new_buf;
    }
  }
};

}  // namespace

void register_fused_optimizer_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("AdamW", kOptimizerDomain)
                   .inputs(10)
                   .all_inputs(sdk::dtypes::kFloat32)
                   .create<AdamWKernel>());
  registry.add(sdk::KernelDefBuilder("SGD", kOptimizerDomain).inputs(8).all_inputs(sdk::dtypes::kFloat32).create<SgdKernel>());
}

}  // namespace onyx::cpu
