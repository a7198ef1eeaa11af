// BatchNormalization (inference) and LayerNormalization on oneDNN's
// normalization primitives.
#include <cmath>

#include "ops.h"

namespace onyx::onednn {
namespace {

using flags = dnnl::normalization_flags;

struct BatchNormPrepared {
  dnnl::batch_normalization_forward::primitive_desc pd;
  dnnl::batch_normalization_forward prim;
  mutable BoundPool<BoundArgs> calls;
};

// y = (x - mean) / sqrt(var + epsilon) * scale + bias, per channel (axis 1).
class BatchNormKernel : public sdk::Kernel {
 public:
  BatchNormKernel(float epsilon, const DeviceConfig& config) : epsilon_(epsilon), engine_(config.engine) {}

  OnyxStatus* compute(ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_FLOAT32, x.dims, &y));
    int64_t channels = x.dim(1);
    for (size_t k = 1; k <= 4; ++k)
      if (ctx.in(k).size() != channels)
        return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT,
                                "BatchNormalization: input %zu has %lld values for %lld channels", k,
                                (long long)ctx.in(k).size(), (long long)channels);
    if (x.size() == 0) return nullptr;
    use_threads_for(ctx, 4.0 * double(x.size()));
    auto p = cache_.get(x.shape(), [&] {
      auto made = std::make_shared<BatchNormPrepared>();
      dnnl::batch_normalization_forward::desc desc(dnnl::prop_kind::forward_inference, plain_md(x.shape()),
                                                   epsilon_,
                                                   flags::use_global_stats | flags::use_scale | flags::use_shift);
      made->pd = dnnl::batch_normalization_forward::primitive_desc(desc, base_attr(), engine_);
      made->prim = dnnl::batch_normalization_forward(made->pd);
      return made;
    });
    execute_bound(p->calls, p->prim, p->pd,
                  {{DNNL_ARG_SRC, x.raw},
                   {DNNL_ARG_DST, y.raw},
                   {DNNL_ARG_SCALE, ctx.in(1).raw},
                   {DNNL_ARG_SHIFT, ctx.in(2).raw},
                   {DNNL_ARG_MEAN, ctx.in(3).raw},
                   {DNNL_ARG_VARIANCE, ctx.in(4).raw}});
    return nullptr;
  }

 private:
  float epsilon_;
  dnnl::engine engine_;
  ShapeCache<BatchNormPrepared> cache_;
};

std::string batch_norm_supports(const NodeInfo& n) {
  RETURN_IF_REASON(require_f32(n, {0, 1, 2, 3, 4}));
  RETURN_IF_REASON(require_rank(n, 0, 2, 5));
  if (n.get_int("training_mode", 0) != 0) return "training_mode=1 (batch statistics) is not run here";
  for (size_t k = 1; k < n.outputs.size(); ++k)
    if (n.outputs[k].present) return "running statistics outputs are not computed here";
  for (size_t k = 1; k <= 4; ++k)
    if (!n.input_present(k)) return "BatchNormalization needs 5 inputs";
  return {};
}

struct LayerNormPrepared {
  dnnl::layer_normalization_forward::primitive_desc pd;
  dnnl::layer_normalization_forward prim;
  mutable BoundPool<BoundArgs> calls;
};

// Normalizes over the axes from `axis` on: the input is seen as [outer, inner].
class LayerNormKernel : public sdk::Kernel {
 public:
  LayerNormKernel(int64_t axis, float epsilon, bool want_mean, bool want_inv_std, const DeviceConfig& config)
      : axis_(axis), epsilon_(epsilon), want_mean_(want_mean), want_inv_std_(want_inv_std),
        engine_(config.engine) {}

  OnyxStatus* compute(ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), scale = ctx.in(1);
    std::optional<sdk::Tensor> bias = ctx.input(2);
    int64_t rank = int64_t(x.rank());
    int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    if (axis < 0 || axis >= rank)
      return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "LayerNormalization: axis %lld out of range",
                              (long long)axis_);
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < rank; ++i) (i < axis ? outer : inner) *= x.dim(size_t(i));
    if (scale.size() != inner || (bias && bias->size() != inner))
      return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT,
                              "LayerNormalization: Scale and B must have the %lld values of the normalized axes",
                              (long long)inner);
    sdk::Tensor y, mean_out, inv_std_out;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_FLOAT32, x.dims, &y));
    std::vector<int64_t> stat_dims(x.dims.begin(), x.dims.end());
    for (int64_t i = axis; i < rank; ++i) stat_dims[size_t(i)] = 1;
    bool want_stats = want_mean_ || want_inv_std_;
    if (want_mean_) ONYX_SDK_RETURN_IF_ERROR(ctx.output(1, ONYX_DTYPE_FLOAT32, stat_dims, &mean_out));
    if (want_inv_std_) ONYX_SDK_RETURN_IF_ERROR(ctx.output(2, ONYX_DTYPE_FLOAT32, stat_dims, &inv_std_out));
    if (x.size() == 0) return nullptr;
    use_threads_for(ctx, 8.0 * double(x.size()));
    bool with_bias = bias.has_value();
    auto p = cache_.get({outer, inner, with_bias, want_stats}, [&] {
      auto made = std::make_shared<LayerNormPrepared>();
      auto f = flags::use_scale | (with_bias ? flags::use_shift : flags::none);
      auto prop = want_stats ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
      dnnl::layer_normalization_forward::desc desc(prop, plain_md({outer, inner}), epsilon_, f);
      made->pd = dnnl::layer_normalization_forward::primitive_desc(desc, base_attr(), engine_);
      made->prim = dnnl::layer_normalization_forward(made->pd);
      return made;
    });
    // The same arguments in the same order on every call of this kernel
    // (a bias and statistics or not), as execute_bound wants.
    ArgBuffer args[6] = {{DNNL_ARG_SRC, x.raw}, {DNNL_ARG_DST, y.raw}, {DNNL_ARG_SCALE, scale.raw}};
    size_t count = 3;
    if (bias) args[count++] = {DNNL_ARG_SHIFT, bias->raw};
    float* variance = nullptr;
    if (want_stats) {
      void* buf = nullptr;
      ONYX_SDK_RETURN_IF_ERROR(ctx.scratch(size_t(outer) * 2 * sizeof(float), &buf));
      float* mean = mean_out.raw ? mean_out.data<float>() : static_cast<float*>(buf);
      variance = static_cast<float*>(buf) + outer;
      args[count++] = {DNNL_ARG_MEAN, mean};
      args[count++] = {DNNL_ARG_VARIANCE, variance};
    }
    execute_bound(p->calls, p->prim, p->pd, std::span<const ArgBuffer>(args, count));
    if (inv_std_out.raw)
      for (int64_t i = 0; i < outer; ++i)
        inv_std_out.data<float>()[i] = 1.f / std::sqrt(variance[i] + epsilon_);
    return nullptr;
  }

 private:
  int64_t axis_;
  float epsilon_;
  bool want_mean_, want_inv_std_;  // the optional outputs the node has
  dnnl::engine engine_;
  ShapeCache<LayerNormPrepared> cache_;
};

std::string layer_norm_supports(const NodeInfo& n) {
  RETURN_IF_REASON(require_f32(n, {0, 1, 2}));
  if (n.inputs[0].rank < 1) return "the input's rank is unknown at session creation";
  if (n.get_int("stash_type", 1) != 1) return "stash_type other than float32";
  // Scale and B must cover the normalized axes exactly (no broadcasting).
  int64_t rank = n.inputs[0].rank, axis = n.get_int("axis", -1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return "axis out of range";
  for (size_t k = 1; k <= 2; ++k) {
    if (!n.input_present(k)) continue;
    const sdk::ValueDesc& v = n.inputs[k];
    if (v.rank != rank - axis) return "Scale/B do not have the normalized shape (broadcasting is not run here)";
    for (int64_t i = 0; i < v.rank; ++i) {
      int64_t want = n.inputs[0].dims[size_t(axis + i)];
      if (v.dims[size_t(i)] < 0 || want < 0 || v.dims[size_t(i)] != want)
        return "Scale/B shape cannot be checked against the normalized axes at session creation";
    }
  }
  return {};
}

}  // namespace

void add_norm_ops(OpRegistry& ops) {
  ops.add(OpBuilder("BatchNormalization")
              .since(9)
              .check(batch_norm_supports)
              .create([](const NodeInfo& n, const DeviceConfig& c) {
                return std::make_unique<BatchNormKernel>(float(n.get_float("epsilon", 1e-5)), c);
              }));
  ops.add(OpBuilder("LayerNormalization")
              .since(17)
              .check(layer_norm_supports)
              .create([](const NodeInfo& n, const DeviceConfig& c) {
                auto present = [&](size_t k) { return k < n.outputs.size() && n.outputs[k].present; };
                return std::make_unique<LayerNormKernel>(n.get_int("axis", -1), float(n.get_float("epsilon", 1e-5)),
                                                         present(1), present(2), c);
              }));
}

}  // namespace onyx::onednn
