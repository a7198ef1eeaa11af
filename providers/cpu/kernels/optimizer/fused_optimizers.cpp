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
// The loops run in chunks of 8 elements held in vector values (see Floats),
// cloned per ISA (GCC picks the clone when the library loads), with sqrt as
// an instruction (this file is built with -fno-math-errno). Chunks are split
// over the pool.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "kernels/kernel_util.h"
#include "kernels/registry.h"
#include "target_clones.h"

namespace onyx::cpu {
namespace {

constexpr const char* kOptimizerDomain = "ai.onyx.optimizers";

// Eight floats: one AVX2 register. The updates load a chunk of every input
// into such values, compute, then store every output, so that they vectorize
// even when an output is its input (the planner updates state in place).
// (Copies through float arrays instead were lowered by GCC through the stack
// and general registers: AdamW ran at 1.5 ns an element.)
using Floats = float __attribute__((vector_size(32)));
constexpr int64_t kChunk = int64_t(sizeof(Floats) / sizeof(float));

// (Vector values pass by reference: by value they would change the ABI
// between the clones.)
inline void load(const float* p, Floats* v) { std::memcpy(v, p, sizeof *v); }
inline void store(float* p, const Floats& v) { std::memcpy(p, &v, sizeof v); }
inline void root(float* x) { *x = std::sqrt(*x); }
inline void root(Floats* x) {
  for (int64_t i = 0; i < kChunk; ++i) (*x)[i] = std::sqrt((*x)[i]);  // one vsqrtps (-fno-math-errno)
}

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
  template <class F>  // float or Floats; root_v = sqrt(v')
  void param(const F& p, const F& m, const F& root_v, F* out) const {
    *out = p * keep - step_size * m / (root_v * inv_sqrt_bias2 + epsilon);
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
  template <class F>
  void param(const F& p, const F& m, const F& root_v, F* out) const {
    *out = (p - step_size * (m / (root_v + epsilon))) * keep;
  }
};

// One step of AdamW on values of type F (float or Floats).
template <class Rule, class F>
inline void adam_step(const Moments& c, const Rule& rule, const F& p, const F& g, const F& m, const F& v, F* p_out,
                      F* m_out, F* v_out) {
  *m_out = c.beta1 * m + c.one_minus_beta1 * g;
  *v_out = c.beta2 * v + c.one_minus_beta2 * (g * g);
  F root_v = *v_out;
  root(&root_v);
  rule.param(p, *m_out, root_v, p_out);
}

template <class Rule>
__attribute__((always_inline)) inline void adam_range(const Moments c, const Rule rule, const float* p,
                                                      const float* g, const float* m, const float* v, float* p_out,
                                                      float* m_out, float* v_out, int64_t lo, int64_t hi) {
  int64_t i = lo;
  for (; i + kChunk <= hi; i += kChunk) {
    Floats vp, vg, vm, vv, np, nm, nv;
    load(p + i, &vp), load(g + i, &vg), load(m + i, &vm), load(v + i, &vv);
    adam_step(c, rule, vp, vg, vm, vv, &np, &nm, &nv);
    store(p_out + i, np), store(m_out + i, nm), store(v_out + i, nv);
  }
  for (; i < hi; ++i) {  // copies first: an output may share an input's buffer
    const float vp = p[i], vg = g[i], vm = m[i], vv = v[i];
    float np, nm, nv;
    adam_step(c, rule, vp, vg, vm, vv, &np, &nm, &nv);
    p_out[i] = np, m_out[i] = nm, v_out[i] = nv;
  }
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

template <class F>
inline void sgd_step(const SgdConstants& c, const F& p, const F& g, const F& buf, F* p_out, F* buf_out) {
  const F grad = g + c.weight_decay * p;
  const F new_buf = c.momentum * buf + grad;
  const F direction = c.nesterov * (grad + c.momentum * new_buf) + (1.0f - c.nesterov) * new_buf;
  *p_out = p - c.lr * direction;
  *buf_out = new_buf;
}

ONYX_CLONES void sgd_range( const SgdConstants c, const float* p, const float* g, const float* buf, float* p_out, float* buf_out, int64_t lo, int64_t hi) {
  int64_t i = lo;
  for (; i + kChunk <= hi; i += kChunk) {
    Floats vp, vg, vb, np, nb;
    load(p + i, &vp), load(g + i, &vg), load(buf + i, &vb);
    sgd_step(c, vp, vg, vb, &np, &nb);
    store(p_out + i, np), store(buf_out + i, nb);
  }
  for (; i < hi; ++i) {
    const float vp = p[i], vg = g[i], vb = buf[i];
    float np, nb;
    sgd_step(c, vp, vg, vb, &np, &nb);
    p_out[i] = np, buf_out[i] = nb;
  }
}

// A fused update's operands, at most AdamW's: 4 tensors (parameter,
// gradient, 2 slots), 6 scalars, 3 updated tensors. Fixed arrays, not
// vectors: the kernel runs once per parameter per step, and a step should
// not allocate.
using Inputs = std::array<const float*, 4>;
using Scalars = std::array<float, 6>;
using Outputs = std::array<float*, 3>;

class FusedUpdateKernel : public sdk::Kernel {
 public:
  FusedUpdateKernel(const sdk::NodeInfo& node, size_t tensors, size_t scalars)
      : label_(util::node_label(node)), tensors_(tensors), scalars_(scalars) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    const sdk::Tensor param = ctx.in(0);
    Inputs in{};
    for (size_t i = 0; i < tensors_; ++i) {
      const sdk::Tensor t = ctx.in(i);
      if (!std::ranges::equal(t.dims, param.dims))
        return util::fail(label_, "input %zu has shape %s, the parameter %s", i, util::dims_str(t.dims).c_str(),
                          util::dims_str(param.dims).c_str());
      in[i] = t.data<float>();
    }
    Scalars scalar{};
    for (size_t i = 0; i < scalars_; ++i) {
      const sdk::Tensor t = ctx.in(tensors_ + i);
      if (t.size() != 1) return util::fail(label_, "input %zu must be a scalar", tensors_ + i);
      scalar[i] = t.data<float>()[0];
    }
    Outputs out{};
    for (size_t i = 0; i + 1 < tensors_; ++i) {  // every tensor but the gradient comes back updated
      sdk::Tensor y;
      ONYX_SDK_RETURN_IF_ERROR(ctx.output(i, ONYX_DTYPE_FLOAT32, param.dims, &y));
      out[i] = y.data<float>();
    }
    // Whole chunks per task, 8k elements (a few microseconds) at least, so
    // that a layer of 32k parameters is split too: its gradient lies half in
    // each core's cache after the backward pass.
    const size_t chunks = size_t((param.size() + kChunk - 1) / kChunk);
    ctx.parallel_for(chunks, size_t(8192 / kChunk), [&](size_t lo, size_t hi) {
      update(in, scalar, out, int64_t(lo) * kChunk, std::min(param.size(), int64_t(hi) * kChunk));
    });
    return nullptr;
  }

 protected:
  // Elements [lo, hi) of the update.
  virtual void update(const Inputs& in, const Scalars& s, const Outputs& out, int64_t lo, int64_t hi) const = 0;

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
  void update(const Inputs& in, const Scalars& s, const Outputs& out, int64_t lo, int64_t hi) const override {
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
  void update(const Inputs& in, const Scalars& s, const Outputs& out, int64_t lo, int64_t hi) const override {
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
