// com.microsoft MultiHeadAttention: query, key, value and an optional
// attention_bias (input 5), as the core's attention fusion writes it
// (optimize/attention_fusion.cpp): per batch and head,
// softmax(scale * Q K^T + bias) V, on three oneDNN primitives
// that read the heads in place: Q, K and V stay [B, S, H * d] and the
// matmuls see them through strided descriptors ([B, H, S, d] with strides
// [S * H * d, d, H * d, 1], K transposed by its strides alone), and the
// second matmul writes the output the same way, already merged. So no head
// split or merge is ever copied, and a transformer's attention is three
// kernels instead of ten.
//
// The bias (a mask) may broadcast on any axis of [B, H, S, L]; BERT's
// padding mask [B, 1, 1, L] and full [B, H, S, L] biases are a binary
// post-op of Q K^T (oneDNN's JIT kernels take those broadcasts), others
// (a causal [S, L]) a binary primitive in place on the scores before the
// softmax (oneDNN would run the matmul on its reference kernel otherwise).
#include <cmath>

#include "ops.h"

namespace onyx::onednn {
namespace {

using dt = dnnl::memory::data_type;

struct AttentionPrepared {
  int64_t batch = 0, heads = 0, q_len = 0, kv_len = 0, head = 0, v_head = 0;
  dnnl::matmul::primitive_desc scores_pd, context_pd;
  dnnl::matmul scores, context;
  dnnl::softmax_v2_forward::primitive_desc softmax_pd;
  dnnl::softmax_v2_forward softmax;
  bool bias_post_op = false;  // the bias is Q K^T's post-op, else `add_bias` adds it
  std::optional<dnnl::binary::primitive_desc> add_bias_pd;
  dnnl::binary add_bias;
  mutable BoundPool<BoundArgs> scores_calls, add_bias_calls, softmax_calls, context_calls;
};

// The bias's dims right-aligned to rank 4, or empty when it does not
// broadcast to `scores` without growing it.
dims_t bias_dims(const sdk::Tensor& bias, const dims_t& scores) {
  if (bias.rank() > 4) return {};
  dims_t d(4, 1);
  for (size_t i = 0; i < bias.rank(); ++i) d[4 - bias.rank() + i] = bias.dim(i);
  for (size_t i = 0; i < 4; ++i)
    if (d[i] != 1 && d[i] != scores[i]) return {};
  return d;
}

std::string dims_text(std::span<const int64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// [B, H, len, size] over a [B, len, H * size] buffer; with `transposed`,
// the last two dims swapped ([B, H, size, len]).
dnnl::memory::desc heads_md(int64_t b, int64_t h, int64_t len, int64_t size, bool transposed = false) {
  const int64_t row = h * size;
  if (transposed) return strided_md({b, h, size, len}, {len * row, size, 1, row});
  return strided_md({b, h, len, size}, {len * row, size, row, 1});
}

class AttentionKernel : public sdk::Kernel {
 public:
  AttentionKernel(int64_t heads, std::optional<float> scale, const DeviceConfig& config)
      : heads_(heads), scale_(scale), engine_(config.engine) {}

  OnyxStatus* compute(ComputeContext& ctx) override {
    sdk::Tensor q = ctx.in(0), k = ctx.in(1), v = ctx.in(2);
    std::optional<sdk::Tensor> bias = ctx.input(5);
    if (q.rank() != 3 || k.rank() != 3 || v.rank() != 3 || k.dim(0) != q.dim(0) || v.dim(0) != q.dim(0) ||
        k.dim(1) != v.dim(1) || k.dim(2) != q.dim(2) || q.dim(2) % heads_ != 0 || v.dim(2) % heads_ != 0)
      return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT,
                              "MultiHeadAttention: query %s, key %s and value %s must be [B, S, D], [B, L, D] and "
                              "[B, L, Dv] with D and Dv multiples of num_heads %lld",
                              dims_text(q.dims).c_str(), dims_text(k.dims).c_str(),
                              dims_text(v.dims).c_str(), (long long)heads_);
    sdk::Tensor y;
    const std::vector<int64_t> out = {q.dim(0), q.dim(1), v.dim(2)};
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_FLOAT32, out, &y));
    if (y.size() == 0) return nullptr;
    if (k.dim(1) == 0 || q.dim(2) == 0)  // softmax over no keys; oneDNN has no empty products
      return sdk::make_status(ONYX_STATUS_UNIMPLEMENTED, "MultiHeadAttention: no keys or an empty head (key %s)",
                              dims_text(k.dims).c_str());
    const dims_t scores = {q.dim(0), heads_, q.dim(1), k.dim(1)};
    if (bias && bias_dims(*bias, scores).empty())
      return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT,
                              "MultiHeadAttention: attention_bias %s does not broadcast to the scores %s",
                              dims_text(bias->dims).c_str(), dims_text(scores).c_str());
    const double work = 2.0 * double(q.dim(0) * q.dim(1) * k.dim(1)) * double(q.dim(2) + v.dim(2));
    use_threads_for(ctx, work);
    auto p = cache_.get(shape_key(ctx), [&] { return prepare(q, k, v, bias); });
    void* buf = nullptr;
    const size_t score_bytes = size_t(p->batch * p->heads * p->q_len * p->kv_len) * sizeof(float);
    ONYX_SDK_RETURN_IF_ERROR(ctx.scratch(score_bytes, &buf));
    if (p->bias_post_op)
      execute_bound(p->scores_calls, p->scores, p->scores_pd,
                    {{DNNL_ARG_SRC, q.raw}, {DNNL_ARG_WEIGHTS, k.raw}, {DNNL_ARG_DST, buf},
                     {DNNL_ARG_ATTR_MULTIPLE_POST_OP(1) | DNNL_ARG_SRC_1, bias->raw}});
    else
      execute_bound(p->scores_calls, p->scores, p->scores_pd,
                    {{DNNL_ARG_SRC, q.raw}, {DNNL_ARG_WEIGHTS, k.raw}, {DNNL_ARG_DST, buf}});
    if (p->add_bias_pd)
      execute_bound(p->add_bias_calls, p->add_bias, *p->add_bias_pd,
                    {{DNNL_ARG_SRC_0, buf}, {DNNL_ARG_SRC_1, bias->raw}, {DNNL_ARG_DST, buf}});
    execute_bound(p->softmax_calls, p->softmax, p->softmax_pd, {{DNNL_ARG_SRC, buf}, {DNNL_ARG_DST, buf}});
    execute_bound(p->context_calls, p->context, p->context_pd,
                  {{DNNL_ARG_SRC, buf}, {DNNL_ARG_WEIGHTS, v.raw}, {DNNL_ARG_DST, y.raw}});
    return nullptr;
  }

 private:
  std::shared_ptr<AttentionPrepared> prepare(const sdk::Tensor& q, const sdk::Tensor& k, const sdk::Tensor& v,
                                             const std::optional<sdk::Tensor>& bias) const {
    auto p = std::make_shared<AttentionPrepared>();
    p->batch = q.dim(0), p->heads = heads_, p->q_len = q.dim(1), p->kv_len = k.dim(1);
    p->head = q.dim(2) / heads_, p->v_head = v.dim(2) / heads_;
    const int64_t b = p->batch, h = p->heads, s = p->q_len, l = p->kv_len;
    dnnl::memory::desc scores_md = plain_md({b, h, s, l});
    dnnl::primitive_attr scaled = base_attr();
    dnnl::post_ops ops;
    ops.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, scale_.value_or(1.f / std::sqrt(float(p->head))), 0.f);
    const dnnl::matmul::desc qk(heads_md(b, h, s, p->head), heads_md(b, h, l, p->head, true), scores_md);
    scaled.set_post_ops(ops);
    if (bias) {
      const dnnl::memory::desc bias_md = plain_md(bias_dims(*bias, {b, h, s, l}));
      dnnl::primitive_attr with_bias = base_attr();
      dnnl::post_ops both = ops;
      both.append_binary(dnnl::algorithm::binary_add, bias_md);
      with_bias.set_post_ops(both);
      dnnl::matmul::primitive_desc pd(qk, with_bias, engine_);
      if (std::string(pd.impl_info_str()).rfind("ref", 0) != 0) {
        p->scores_pd = pd;
        p->bias_post_op = true;
      } else {
        p->add_bias_pd = dnnl::binary::primitive_desc(
            dnnl::binary::desc(dnnl::algorithm::binary_add, scores_md, bias_md, scores_md), base_attr(), engine_);
        p->add_bias = dnnl::binary(*p->add_bias_pd);
      }
    }
    if (!p->bias_post_op) p->scores_pd = dnnl::matmul::primitive_desc(qk, scaled, engine_);
    p->scores = dnnl::matmul(p->scores_pd);
    p->softmax_pd = dnnl::softmax_v2_forward::primitive_desc(
        dnnl::softmax_v2_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::softmax_accurate,
                                       scores_md, scores_md, 3),
        base_attr(), engine_);
    p->softmax = dnnl::softmax_v2_forward(p->softmax_pd);
    p->context_pd = dnnl::matmul::primitive_desc(
        dnnl::matmul::desc(scores_md, heads_md(b, h, l, p->v_head), heads_md(b, h, s, p->v_head)), base_attr(),
        engine_);
    p->context = dnnl::matmul(p->context_pd);
    return p;
  }

  int64_t heads_;
  std::optional<float> scale_;  // none: 1 / sqrt(head size)
  dnnl::engine engine_;
  ShapeCache<AttentionPrepared> cache_;
};

std::string attention_supports(const NodeInfo& n) {
  RETURN_IF_REASON(require_f32(n, {0, 1, 2}));
  for (size_t k = 3; k < n.inputs.size(); ++k)
    if (n.input_present(k) && k != 5)
      return "input " + std::to_string(k) + " (bias, key_padding_mask or past) is not supported";
  if (n.input_present(5)) {
    RETURN_IF_REASON(require_f32(n, {5}));
    if (n.inputs[5].rank > 4) return "attention_bias has rank above 4";
  }
  for (size_t k = 1; k < n.outputs.size(); ++k)
    if (n.outputs[k].present) return "output " + std::to_string(k) + " (present key or value) is not supported";
  if (n.get_int("num_heads", 0) <= 0) return "num_heads must be positive";
  if (n.get_int("unidirectional", 0) != 0) return "unidirectional (causal) attention is not supported";
  for (size_t k = 0; k < 3; ++k)
    if (n.inputs[k].rank != 3) return "input " + std::to_string(k) + " is not 3-D [batch, sequence, hidden]";
  return {};
}

}  // namespace

void add_attention_ops(OpRegistry& ops) {
  ops.add(OpBuilder("MultiHeadAttention").domain("com.microsoft").since(1).check(attention_supports).create(
      [](const NodeInfo& n, const DeviceConfig& c) {
        std::optional<float> scale;
        if (n.has("scale")) scale = float(n.get_float("scale", 0));
        return std::unique_ptr<sdk::Kernel>(new AttentionKernel(n.get_int("num_heads", 0), scale, c));
      }));
}

}  // namespace onyx::onednn
