// attention.cpp: ONNX Attention (opset 23, 24): scaled dot-product attention
// with grouped KV heads, an optional mask (bool or additive, broadcast, its
// last dim padded when shorter than the keys), causal masking offset by the
// past length (or by nonpad_kv_seqlen - q_len), a KV cache (past/present),
// softcap and the qk_matmul_output modes. 3-D inputs [B, S, heads * size]
// use q_num_heads / kv_num_heads. Computed in double for every float type.
//
// A query row whose keys are all masked gets zero weights (an output of 0)
// rather than the 0/0 NaN of a literal softmax.
#include <cinttypes>
#include <cmath>
#include <optional>
#include <vector>

#include "kernels/kernel_util.h"
#include "kernels/narrow_types.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

// A [B, H, S, D] view of a 4-D tensor or of a 3-D [B, S, H * D] one.
struct HeadView {
  const sdk::Tensor* t = nullptr;
  int64_t batch = 0, heads = 0, seq = 0, size = 0;
  bool packed = false;  // 3-D

  bool init(const sdk::Tensor& x, int64_t heads_attr) {
    t = &x;
    batch = x.dim(0);
    if (x.rank() == 4) {
      heads = x.dim(1), seq = x.dim(2), size = x.dim(3);
      return true;
    }
    packed = true;
    heads = heads_attr, seq = x.dim(1);
    if (heads <= 0 || x.dim(2) % heads) return false;
    size = x.dim(2) / heads;
    return true;
  }
  int64_t index(int64_t b, int64_t h, int64_t s, int64_t d) const {
    return packed ? ((b * seq + s) * heads + h) * size + d : ((b * heads + h) * seq + s) * size + d;
  }
  double at(int64_t b, int64_t h, int64_t s, int64_t d) const { return narrow::load(t->dtype, t->raw, index(b, h, s, d)); }
};

class AttentionKernel final : public sdk::Kernel {
 public:
  explicit AttentionKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)),
        causal_(node.get_int("is_causal", 0) != 0),
        q_heads_(node.get_int("q_num_heads", 0)),
        kv_heads_(node.get_int("kv_num_heads", 0)),
        mode_(node.get_int("qk_matmul_output_mode", 0)),
        has_scale_(node.has("scale")),
        scale_(node.get_float("scale", 0)),
        softcap_(node.get_float("softcap", 0)) {
    for (size_t k = 0; k < 4; ++k) wanted_[k] = k < node.outputs.size() && node.outputs[k].present;
  }

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor qt = ctx.in(0), kt = ctx.in(1), vt = ctx.in(2);
    if (qt.rank() != kt.rank() || qt.rank() != vt.rank() || (qt.rank() != 3 && qt.rank() != 4))
      return util::fail(label_, "Q, K and V must all be 3-D or all 4-D, got %s, %s, %s", util::dims_str(qt.dims).c_str(),
                        util::dims_str(kt.dims).c_str(), util::dims_str(vt.dims).c_str());
    HeadView q, k, v;
    if (!q.init(qt, q_heads_) || !k.init(kt, kv_heads_) || !v.init(vt, kv_heads_))
      return util::fail(label_, "3-D inputs need q_num_heads and kv_num_heads dividing their hidden sizes");
    if (k.batch != q.batch || v.batch != q.batch || k.heads != v.heads || k.seq != v.seq || k.size != q.size ||
        k.heads == 0 || q.heads % k.heads)
      return util::fail(label_, "Q %s, K %s and V %s do not fit (batch, head size, and q heads a multiple of kv heads)",
                        util::dims_str(qt.dims).c_str(), util::dims_str(kt.dims).c_str(), util::dims_str(vt.dims).c_str());
    std::optional<sdk::Tensor> mask = ctx.input(3), past_k = ctx.input(4), past_v = ctx.input(5), nonpad = ctx.input(6);
    const int64_t past = past_k ? past_k->dim(2) : 0;
    if (past_k && (past_k->rank() != 4 || !past_v || past_v->rank() != 4 || past_v->dim(2) != past ||
                   past_k->dim(3) != k.size || past_v->dim(3) != v.size))
      return util::fail(label_, "past_key and past_value must be 4-D [B, kv_heads, past, size] and match K and V");
    const int64_t B = q.batch, Hq = q.heads, Hkv = k.heads, S = q.seq, T = past + k.seq, D = q.size, Dv = v.size;
    const int64_t group = Hq / Hkv;
    const double scale = has_scale_ ? scale_ : 1.0 / std::sqrt(double(D));

    // The KV cache: present = concat(past, new) along the sequence.
    std::vector<double> keys(size_t(B * Hkv * T * D)), values(size_t(B * Hkv * T * Dv));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < Hkv; ++h)
        for (int64_t t = 0; t < T; ++t) {
          for (int64_t d = 0; d < D; ++d)
            keys[size_t(((b * Hkv + h) * T + t) * D + d)] =
                t < past ? narrow::load(past_k->dtype, past_k->raw, ((b * Hkv + h) * past + t) * D + d) : k.at(b, h, t - past, d);
          for (int64_t d = 0; d < Dv; ++d)
            values[size_t(((b * Hkv + h) * T + t) * Dv + d)] =
                t < past ? narrow::load(past_v->dtype, past_v->raw, ((b * Hkv + h) * past + t) * Dv + d) : v.at(b, h, t - past, d);
        }

    std::vector<int64_t> nonpad_len;
    if (nonpad && !util::read_ints(*nonpad, &nonpad_len))
      return util::fail(label_, "nonpad_kv_seqlen must be int64");
    if (nonpad && int64_t(nonpad_len.size()) != B)
      return util::fail(label_, "nonpad_kv_seqlen has %zu values for batch %" PRId64, nonpad_len.size(), B);
    if (mask && mask->rank() > 4) return util::fail(label_, "attn_mask of rank %zu (at most 4)", mask->rank());

    // Additive bias for (b, h, i, j).
    auto bias = [&](int64_t b, int64_t h, int64_t i, int64_t j) -> double {
      double out = 0;
      if (mask) {
        int64_t last = mask->dim(mask->rank() - 1);
        if (j >= last) return -INFINITY;  // mask shorter than the keys: padded
        int64_t full[4] = {b, h, i, j}, index = 0;
        for (size_t d = 0; d < mask->rank(); ++d) {
          int64_t size = mask->dim(d), pos = full[4 - mask->rank() + d];
          index = index * size + (size == 1 ? 0 : pos);
        }
        double m = narrow::load(mask->dtype, mask->raw, index);
        out = mask->dtype == ONYX_DTYPE_BOOL ? (m != 0 ? 0.0 : -INFINITY) : m;
      }
      if (causal_) {
        int64_t offset = past_k ? past : nonpad ? nonpad_len[size_t(b)] - S : 0;
        if (j > i + offset) out = -INFINITY;
      }
      if (nonpad && j >= nonpad_len[size_t(b)]) out = -INFINITY;
      return out;
    };

    sdk::Tensor y;
    std::vector<int64_t> y_dims = qt.rank() == 4 ? std::vector<int64_t>{B, Hq, S, Dv} : std::vector<int64_t>{B, S, Hq * Dv};
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, qt.dtype, y_dims, &y));
    HeadView yv;
    sdk::Tensor qk_out;
    bool want_qk = wanted_[3];
    if (want_qk) {
      int64_t dims[4] = {B, Hq, S, T};
      ONYX_SDK_RETURN_IF_ERROR(ctx.output(3, qt.dtype, dims, &qk_out));
    }
    std::vector<double> raw(static_cast<size_t>(T)), scores(static_cast<size_t>(T));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < Hq; ++h) {
        const int64_t kh = h / group;
        for (int64_t i = 0; i < S; ++i) {
          double top = -INFINITY;
          for (int64_t j = 0; j < T; ++j) {
            double s = 0;
            const double* kr = &keys[size_t(((b * Hkv + kh) * T + j) * D)];
            for (int64_t d = 0; d < D; ++d) s += q.at(b, h, i, d) * kr[d];
            s *= scale;
            if (softcap_ > 0) s = softcap_ * std::tanh(s / softcap_);
            raw[size_t(j)] = s;
            scores[size_t(j)] = s + bias(b, h, i, j);
            top = std::max(top, scores[size_t(j)]);
          }
          if (want_qk && mode_ <= 2)
            for (int64_t j = 0; j < T; ++j)
              narrow::store(qk_out.dtype, qk_out.raw, ((b * Hq + h) * S + i) * T + j,
                            mode_ == 2 ? scores[size_t(j)] : raw[size_t(j)], true);
          double sum = 0;
          for (int64_t j = 0; j < T; ++j) {
            scores[size_t(j)] = top == -INFINITY ? 0.0 : std::exp(scores[size_t(j)] - top);
            sum += scores[size_t(j)];
          }
          for (int64_t j = 0; j < T; ++j) {
            if (sum > 0) scores[size_t(j)] /= sum;
            if (want_qk && mode_ == 3)
              narrow::store(qk_out.dtype, qk_out.raw, ((b * Hq + h) * S + i) * T + j, scores[size_t(j)], true);
          }
          for (int64_t d = 0; d < Dv; ++d) {
            double acc = 0;
            for (int64_t j = 0; j < T; ++j) acc += scores[size_t(j)] * values[size_t(((b * Hkv + kh) * T + j) * Dv + d)];
            int64_t at = qt.rank() == 4 ? ((b * Hq + h) * S + i) * Dv + d : ((b * S + i) * Hq + h) * Dv + d;
            narrow::store(y.dtype, y.raw, at, acc, true);
          }
        }
      }
    // present_key / present_value: [B, kv_heads, T, size].
    for (size_t out = 1; out <= 2; ++out) {
      if (!wanted_[out]) continue;
      const std::vector<double>& src = out == 1 ? keys : values;
      int64_t dims[4] = {B, Hkv, T, out == 1 ? D : Dv};
      sdk::Tensor p;
      ONYX_SDK_RETURN_IF_ERROR(ctx.output(out, out == 1 ? kt.dtype : vt.dtype, dims, &p));
      for (size_t e = 0; e < src.size(); ++e) narrow::store(p.dtype, p.raw, int64_t(e), src[e], true);
    }
    return nullptr;
  }

 private:
  std::string label_;
  bool causal_;
  int64_t q_heads_, kv_heads_, mode_;
  bool has_scale_;
  double scale_, softcap_;
  bool wanted_[4] = {};  // which outputs the node has
};

}  // namespace

void register_attention_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("Attention")
                   .since(23)
                   .inputs(3, 7)
                   .input_types({0, 1, 2, 4, 5}, sdk::dtypes::kFloat | sdk::dtypes::kHalf)
                   .check([](const sdk::NodeInfo& node) {
                     if (node.input_present(3) && !util::in_set(node.input_dtype(3), util::kFloat | util::kHalf | util::kBool))
                       return std::string("attn_mask has type ") + sdk::dtype_name(node.input_dtype(3)) +
                              "; expected bool or a float type";
                     return std::string();
                   })
                   .create<AttentionKernel>());
}

}  // namespace onyx::cpu
