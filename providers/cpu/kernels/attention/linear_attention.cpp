// linear_attention.cpp: LinearAttention (opset 27), the recurrent form of
// linear attention with a state S [dk, dv] per KV head, updated per step t:
//
//   linear:       S = S + k v^T
//   gated:        S = exp(decay) * S + k v^T           (decay per key row or per head)
//   delta:        S = S + k (beta (v - S^T k))^T
//   gated_delta:  S = exp(decay) * S, then the delta update (the default)
//   output:       o = scale * S^T q for each query head (grouped onto KV heads)
//
// Inputs are [B, T, heads * size]; past_state [B, Hkv, dk, dv] (zeros when
// absent) and the final state is returned as present_state. In double.
#include <cinttypes>
#include <cmath>
#include <optional>
#include <vector>

#include "kernels/kernel_util.h"
#include "kernels/narrow_types.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

class LinearAttentionKernel final : public sdk::Kernel {
 public:
  explicit LinearAttentionKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)),
        q_heads_(node.get_int("q_num_heads", 0)),
        kv_heads_(node.get_int("kv_num_heads", 0)),
        rule_(node.get_string("update_rule", "gated_delta")),
        has_scale_(node.has("scale")),
        scale_(node.get_float("scale", 0)) {
    for (const auto& o : node.outputs) wanted_.push_back(o.present);
  }

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor q = ctx.in(0), k = ctx.in(1), v = ctx.in(2);
    std::optional<sdk::Tensor> past = ctx.input(3), decay = ctx.input(4), beta = ctx.input(5);
    const int64_t hq = q_heads_, hkv = kv_heads_;
    if (q.rank() != 3 || k.rank() != 3 || v.rank() != 3 || hq <= 0 || hkv <= 0 || hq % hkv || q.dim(2) % hq ||
        k.dim(2) % hkv || v.dim(2) % hkv)
      return util::fail(label_, "query %s, key %s, value %s must be [B, T, heads * size] for q_num_heads %" PRId64
                        " and kv_num_heads %" PRId64, util::dims_str(q.dims).c_str(), util::dims_str(k.dims).c_str(),
                        util::dims_str(v.dims).c_str(), hq, hkv);
    const int64_t B = q.dim(0), T = q.dim(1), dk = q.dim(2) / hq, dv = v.dim(2) / hkv, group = hq / hkv;
    if (k.dim(2) / hkv != dk) return util::fail(label_, "query and key head sizes differ");
    const bool gated = rule_ == "gated" || rule_ == "gated_delta", delta = rule_ == "delta" || rule_ == "gated_delta";
    if (gated && !decay) return util::fail(label_, "update_rule '%s' needs decay (input 4)", rule_.c_str());
    if (delta && !beta) return util::fail(label_, "update_rule '%s' needs beta (input 5)", rule_.c_str());
    // decay: dk values per KV head, or one; beta: one per KV head, or one.
    const int64_t decay_per = decay ? decay->size() / (B * T * hkv) : 0;
    const int64_t beta_heads = beta ? beta->size() / (B * T) : 0;
    if (decay && decay_per != dk && decay_per != 1) return util::fail(label_, "decay %s does not fit", util::dims_str(decay->dims).c_str());
    if (beta && beta_heads != hkv && beta_heads != 1) return util::fail(label_, "beta %s does not fit", util::dims_str(beta->dims).c_str());
    const double scale = has_scale_ ? scale_ : 1.0 / std::sqrt(double(dk));

    std::vector<double> state(static_cast<size_t>(B * hkv * dk * dv), 0.0);
    if (past) {
      if (past->size() != int64_t(state.size())) return util::fail(label_, "past_state %s does not fit", util::dims_str(past->dims).c_str());
      for (size_t i = 0; i < state.size(); ++i) state[i] = narrow::load(past->dtype, past->raw, int64_t(i));
    }
    sdk::Tensor y;
    int64_t y_dims[3] = {B, T, hq * dv};
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, q.dtype, y_dims, &y));
    std::vector<double> kt(static_cast<size_t>(dk)), vt(static_cast<size_t>(dv)), got(static_cast<size_t>(dv));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j < hkv; ++j) {
          double* S = &state[size_t((b * hkv + j) * dk * dv)];
          for (int64_t r = 0; r < dk; ++r) kt[size_t(r)] = narrow::load(k.dtype, k.raw, (b * T + t) * hkv * dk + j * dk + r);
          for (int64_t c = 0; c < dv; ++c) vt[size_t(c)] = narrow::load(v.dtype, v.raw, (b * T + t) * hkv * dv + j * dv + c);
          if (gated)
            for (int64_t r = 0; r < dk; ++r) {
              int64_t at = ((b * T + t) * hkv + j) * decay_per + (decay_per == 1 ? 0 : r);
              double g = std::exp(narrow::load(decay->dtype, decay->raw, at));
              for (int64_t c = 0; c < dv; ++c) S[r * dv + c] *= g;
            }
          if (delta) {
            double bt = narrow::load(beta->dtype, beta->raw, (b * T + t) * beta_heads + (beta_heads == 1 ? 0 : j));
            for (int64_t c = 0; c < dv; ++c) {
              double s = 0;
              for (int64_t r = 0; r < dk; ++r) s += S[r * dv + c] * kt[size_t(r)];
              got[size_t(c)] = bt * (vt[size_t(c)] - s);
            }
          } else {
            got = vt;
          }
          for (int64_t r = 0; r < dk; ++r)
            for (int64_t c = 0; c < dv; ++c) S[r * dv + c] += kt[size_t(r)] * got[size_t(c)];
          for (int64_t h = j * group; h < (j + 1) * group; ++h)
            for (int64_t c = 0; c < dv; ++c) {
              double o = 0;
              for (int64_t r = 0; r < dk; ++r) o += narrow::load(q.dtype, q.raw, (b * T + t) * hq * dk + h * dk + r) * S[r * dv + c];
              narrow::store(y.dtype, y.raw, (b * T + t) * hq * dv + h * dv + c, scale * o, true);
            }
        }
    if (wanted_.size() > 1 && wanted_[1]) {
      sdk::Tensor present;
      int64_t s_dims[4] = {B, hkv, dk, dv};
      ONYX_SDK_RETURN_IF_ERROR(ctx.output(1, q.dtype, s_dims, &present));
      for (size_t i = 0; i < state.size(); ++i) narrow::store(present.dtype, present.raw, int64_t(i), state[i], true);
    }
    return nullptr;
  }

 private:
  std::string label_;
  int64_t q_heads_, kv_heads_;
  std::string rule_;
  bool has_scale_;
  double scale_;
  std::vector<bool> wanted_;
};

}  // namespace

void register_linear_attention_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("LinearAttention")
                   .since(27)
                   .all_inputs(sdk::dtypes::kFloat | sdk::dtypes::kHalf)
                   .check([](const sdk::NodeInfo& n) {
                     std::string rule = n.get_string("update_rule", "gated_delta");
                     if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta")
                       return "update_rule '" + rule + "' is not linear, gated, delta or gated_delta";
                     return std::string();
                   })
                   .create<LinearAttentionKernel>());
}

}  // namespace onyx::cpu
