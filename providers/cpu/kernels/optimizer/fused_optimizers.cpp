// fused_optimizers.cpp: fused optimizer updates in the ai.onyx.optimizers
// domain (provider_api/onyx_optimizer.h): one pass over the parameter, its
// gradient and state instead of the ~20 elementwise ops of the update
// function the optimizer plugins define. Same signature and the same float32
// formulas as those functions (optimizers/*.c), AdamW's bias corrections
// applied as reciprocals (within a few ulp):
//   AdamW   (param, grad, m, v, lr, step, beta1, beta2, epsilon, weight_decay) => (param', m', v')
//   AdamWHF (the same inputs and outputs; adamw_hf.c's formulas)
//   SGD   (param, grad, buf, lr, step, momentum, nesterov, weight_decay)    => (param', buf')
//
// The loops run in chunks of 16 elements copied to locals, so that they
// vectorize even when an output is its input (the planner updates state in
// place), cloned per ISA (GCC picks the clone when the library loads), with
// sqrt as an instruction (this file is built with -fno-math-errno). Chunks
// are split over the pool.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/kernel_util.h"
#include "kernels/registry.h"
#include "target_clones.h"

namespace onyx::cpu {
namespace {

constexpr const char* kOptimizerDomain = "ai.onyx.optimizers";
constexpr int64_t kChunk = 16;

// The AdamW forms share the moment updates and differ in the parameter's.
struct Moments {
  float beta1, beta2, one_minus_beta1, one_minus_beta2;
};

// adamw (PyTorch): decoupled decay first; the bias corrections enter as
// reciprocals, one division per element instead of three (divisions bound
// this loop), within a few ulp of the function body's m / bias1 and
// sqrt(v / bias2):  p' = p * keep - step_size * m' / (sqrt(v') / sqrt(bias2) + epsilon).
struct AdamWRule {
  float step_size;       // lr / bias1
  float inv_sqrt_bias2;  // 1 / sqrt(bias2)
  float epsilon, keep;   // keep = 1 - lr * weight_decay
  static AdamWRule make(float lr, float bias1, float bias2, float epsilon, float weight_decay) {
    return {lr / bias1, 1.0f / std::sqrt(bias2), epsilon, 1.0f - lr * weight_decay};
  }
  float param(float p, float m, float v) const {
    return p * keep - step_size * m / (std::sqrt(v) * inv_sqrt_bias2 + epsilon);
  }
};

// adamw_hf (Hugging Face / ORT Training): epsilon before the second
// moment's bias correction, weight decay after the update:
//   p' = (p - step_size * m' / (sqrt(v') + epsilon)) * keep, step_size = lr * sqrt(bias2) / bias1.
struct AdamWHFRule {
  float step_size, epsilon, keep;
  static AdamWHFRule make(float lr, float bias1, float bias2, float epsilon, float weight_decay) {
    return {lr * std::sqrt(bias2) / bias1, epsilon, 1.0f - lr * weight_decay};
  }
  float param(float p, float m, float v) const { return (p - step_size * (m / (std::sqrt(v) + epsilon))) * keep; }
};

// N elements of an AdamW update, all computed before any is stored (an
// output may be its input).
template <class Rule, int64_t N>
inline void adam_chunk(const Moments& c, const Rule& rule, const float* p, const float* g, const float* m,
                       const float* v, float* p_out, float* m_out, float* v_out) {
  float np[N], nm[N], nv[N];
  for (int64_t i = 0; i < N; ++i) {
    nm[i] = c.beta1 * m[i] + c.one_minus_beta1 * g[i];
    nv[i] = c.beta2 * v[i] + c.one_minus_beta2 * (g[i] * g[i]);
    np[i] = rule.param(p[i], nm[i], nv[i]);
  }
  // One copy per output (the outputs may alias each other as far as the
  // compiler knows, so one loop storing all three would not vectorize).
  std::memcpy(p_out, np, sizeof np);
  std::memcpy(m_out, nm, sizeof nm);
  std::memcpy(v_out, nv, sizeof nv);
}

template <class Rule>
__attribute__((always_inline)) inline void adam_range(const Moments& c, const Rule& rule, const float* p,
                                                      const float* g, const float* m, const float* v, float* p_out,
                                                      float* m_out, float* v_out, int64_t lo, int64_t hi) {
  int64_t i = lo;
  for (; i + kChunk <= hi; i += kChunk)
    adam_chunk<Rule, kChunk>(c, rule, p + i, g + i, m + i, v + i, p_out + i, m_out + i, v_out + i);
  for (; i < hi; ++i) adam_chunk<Rule, 1>(c, rule, p + i, g + i, m + i, v + i, p_out + i, m_out + i, v_out + i);
}

// One clone set per form (target_clones takes no templates).
ONYX_CLONES void adam_update(const Moments& c, const AdamWRule& rule, const float* p, const float* g, const float* m,
                             const float* v, float* p_out, float* m_out, float* v_out, int64_t lo, int64_t hi) {
  adam_range(c, rule, p, g, m, v, p_out, m_out, v_out, lo, hi);
}

ONYX_CLONES void adam_update( const Moments& c, const AdamWHFRule& rule, const float* p, const float* g, const float* m, const float* v, float* p_out, float* m_out, float* v_out, int64_t lo, int64_t hi) {
  adam_range(c, rule, p, g, m, v, p_out, m_out, v_out, lo, hi);
}

struct SgdConstants {
  float lr, momentum, nesterov, weight_decay;
};

template <int64_t N>
inline void sgd_chunk(const SgdConstants& c, const float* p, const float* g, const float* buf, float* p_out,
                      float* buf_out) {
  float np[N], nb[N];
  for (int64_t i = 0; i < N; ++i) {
    float grad = g[i] + c.weight_decay * p[i];
    float new_buf = c.momentum * buf[i] + grad;
    float direction = c.nesterov * (grad + c.momentum * new_buf) + (1.0f - c.nesterov) * new_buf;
    np[i] = p[i] - c.lr * direction;
    nb[i] = new_buf;
  }
  std::memcpy(p_out, np, sizeof np);
  std::memcpy(buf_out, nb, sizeof nb);
}

ONYX_CLONES void sgd_range( const SgdConstants& c, const float* p, const float* g, const float* buf, float* p_out, float* buf_out, int64_t lo, int64_t hi) {
  int64_t i = lo;
  for (; i + kChunk <= hi; i += kChunk) sgd_chunk<kChunk>(c, p + i, g + i, buf + i, p_out + i, buf_out + i);
  for (; i < hi; ++i) sgd_chunk<1>(c, p + i, g + i, buf + i, p_out + i, buf_out + i);
}

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
    // Whole chunks per task, 8k elements (a few microseconds) at least, so
    // that a layer of 32k parameters is split too: its gradient lies half in
    // each core's cache after the backward pass.
    const size_t chunks = size_t((param.size() + kChunk - 1) / kChunk);
    ctx.parallel_for(chunks, 512, [&](size_t lo, size_t hi) {
      update(in, scalar, out, int64_t(lo) * kChunk, std::min(param.size(), int64_t(hi) * kChunk));
    });
    return nullptr;
  }

 protected:
  // Elements [lo, hi) of the update.
  virtual void update(const std::vector<const float*>& in, const std::vector<float>& s, const std::vector<float*>& out,
                      int64_t lo, int64_t hi) const = 0;

 private:
  std::string label_;
  size_t tensors_, scalars_;
};

// AdamW in one of its forms (Rule: AdamWRule or AdamWHFRule).
template <class Rule>
class AdamKernel final : public FusedUpdateKernel {
 public:
  explicit AdamKernel(const sdk::NodeInfo& node) : FusedUpdateKernel(node, 4, 6) {}

 private:
  void update(const std::vector<const float*>& in, const std::vector<float>& s, const std::vector<float*>& out,
              int64_t lo, int64_t hi) const override {
    const float lr = s[0], step = s[1], beta1 = s[2], beta2 = s[3], epsilon = s[4], weight_decay = s[5];
    const float bias1 = 1.0f - std::pow(beta1, step), bias2 = 1.0f - std::pow(beta2, step);
    const Moments c{beta1, beta2, 1.0f - beta1, 1.0f - beta2};
    adam_update(c, Rule::make(lr, bias1, bias2, epsilon, weight_decay), in[0], in[1], in[2], in[3], out[0], out[1],
                out[2], lo, hi);
  }
};

class SgdKernel final : public FusedUpdateKernel {
 public:
  explicit SgdKernel(const sdk::NodeInfo& node) : FusedUpdateKernel(node, 3, 5) {}

 private:
  void update(const std::vector<const float*>& in, const std::vector<float>& s, const std::vector<float*>& out,
              int64_t lo, int64_t hi) const override {
    const SgdConstants c{s[0], s[2], s[3], s[4]};
    sgd_range(c, in[0], in[1], in[2], out[0], out[1], lo, hi);
  }
};

}  // namespace

void register_fused_optimizer_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("AdamW", kOptimizerDomain)
                   .inputs(10)
                   .all_inputs(sdk::dtypes::kFloat32)
                   .create<AdamKernel<AdamWRule>>());
  registry.add(sdk::KernelDefBuilder("AdamWHF", kOptimizerDomain)
                   .inputs(10)
                   .all_inputs(sdk::dtypes::kFloat32)
                   .create<AdamKernel<AdamWHFRule>>());
  registry.add(sdk::KernelDefBuilder("SGD", kOptimizerDomain).inputs(8).all_inputs(sdk::dtypes::kFloat32).create<SgdKernel>());
}

}  // namespace onyx::cpu
