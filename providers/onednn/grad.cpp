// Gradient ops of the autodiff (runtime/autodiff/rules_nn.cpp), domain
// ai.onyx, on oneDNN's backward primitives:
//   ConvGrad(dY, X, W) -> (dX, dW)     convolution backward data / weights
//   MaxPoolGrad(dY, X) -> dX           pooling forward (for the argmax
//                                      workspace) + pooling backward
//   AveragePoolGrad(dY, shape of X) -> dX
// Each takes the forward node's window attributes.
#include <cstring>

#include "ops.h"
#include "spatial.h"

namespace onyx::onednn {
namespace {

using dt = dnnl::memory::data_type;
constexpr const char* kOnyxDomain = "ai.onyx";

std::string shape_string(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

struct ConvGradPrepared {
  ConvGeometry geo;
  dnnl::convolution_backward_data::primitive_desc data_pd;
  dnnl::convolution_backward_data data;
  dnnl::convolution_backward_weights::primitive_desc weights_pd;
  dnnl::convolution_backward_weights weights;
  mutable BoundPool<BoundArgs> data_calls, weights_calls;
};

class ConvGradKernel : public sdk::Kernel {
 public:
  ConvGradKernel(ConvAttrs attrs, bool want_dx, bool want_dw, const DeviceConfig& config)
      : attrs_(std::move(attrs)), want_dx_(want_dx), want_dw_(want_dw), engine_(config.engine) {}

  OnyxStatus* compute(ComputeContext& ctx) override {
    sdk::Tensor dy = ctx.in(0), x = ctx.in(1), w = ctx.in(2);
    ConvGeometry geo;
    std::string err;
    if (!conv_geometry(attrs_, x.shape(), w.shape(), &geo, &err))
      return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "ConvGrad: %s", err.c_str());
    if (dy.shape() != geo.onnx_out)
      return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "ConvGrad: dY has shape %s, the convolution gives %s",
                              shape_string(dy.shape()).c_str(), shape_string(geo.onnx_out).c_str());
    sdk::Tensor dx, dw;
    if (want_dx_) ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_FLOAT32, x.dims, &dx));
    if (want_dw_) ONYX_SDK_RETURN_IF_ERROR(ctx.output(1, ONYX_DTYPE_FLOAT32, w.dims, &dw));
    if (dy.size() == 0 || x.size() == 0 || w.size() == 0) {  // empty sums: zero gradients
      if (dx.raw) std::memset(dx.raw, 0, size_t(dx.size()) * sizeof(float));
      if (dw.raw) std::memset(dw.raw, 0, size_t(dw.size()) * sizeof(float));
      return nullptr;
    }
    use_threads_for(ctx, conv_work(x.shape(), w.shape()));
    auto p = cache_.get(shape_key(ctx), [&] { return prepare(geo, x.shape()); });
    // The primitives were made on these plain layouts (and W's ONNX one).
    if (want_dx_)
      execute_bound(p->data_calls, p->data, p->data_pd,
                    {{DNNL_ARG_DIFF_DST, dy.raw}, {DNNL_ARG_WEIGHTS, w.raw}, {DNNL_ARG_DIFF_SRC, dx.raw}});
    if (want_dw_)
      execute_bound(p->weights_calls, p->weights, p->weights_pd,
                    {{DNNL_ARG_SRC, x.raw}, {DNNL_ARG_DIFF_DST, dy.raw}, {DNNL_ARG_DIFF_WEIGHTS, dw.raw}});
    return nullptr;
  }

 private:
  std::shared_ptr<ConvGradPrepared> prepare(const ConvGeometry& g, const std::vector<int64_t>& x) const {
    auto p = std::make_shared<ConvGradPrepared>();
    p->geo = g;
    auto src_md = plain_md(x), dst_md = plain_md(g.onnx_out);
    dnnl::memory::desc w_md(g.weights, dt::f32, g.user_weight_strides);
    auto algo = dnnl::algorithm::convolution_direct;
    dnnl::convolution_forward::desc fwd(dnnl::prop_kind::forward_training, algo, src_md, w_md, dst_md, g.strides,
                                        g.dilates, g.pad_begin, g.pad_end);
    dnnl::convolution_forward::primitive_desc hint(fwd, base_attr(), engine_);
    dnnl::convolution_backward_data::desc data(algo, src_md, w_md, dst_md, g.strides, g.dilates, g.pad_begin,
                                               g.pad_end);
    p->data_pd = dnnl::convolution_backward_data::primitive_desc(data, base_attr(), engine_, hint);
    p->data = dnnl::convolution_backward_data(p->data_pd);
    dnnl::convolution_backward_weights::desc weights(algo, src_md, w_md, dst_md, g.strides, g.dilates, g.pad_begin,
                                                     g.pad_end);
    p->weights_pd = dnnl::convolution_backward_weights::primitive_desc(weights, base_attr(), engine_, hint);
    p->weights = dnnl::convolution_backward_weights(p->weights_pd);
    return p;
  }

  ConvAttrs attrs_;
  bool want_dx_, want_dw_;
  dnnl::engine engine_;
  ShapeCache<ConvGradPrepared> cache_;
};

// One call's arguments (BoundArgs): max pooling runs forward first, into a
// pooled output and an argmax workspace of the call's own, which backward reads.
struct PoolGradCall {
  BoundArgs fwd, bwd;
};

struct PoolGradPrepared {
  PoolGeometry geo;
  dnnl::pooling_v2_forward::primitive_desc fwd_pd;  // max: to find the argmax
  dnnl::pooling_v2_forward fwd;
  dnnl::pooling_v2_backward::primitive_desc bwd_pd;
  dnnl::pooling_v2_backward bwd;
  mutable BoundPool<PoolGradCall> calls;
};

class PoolGradKernel : public sdk::Kernel {
 public:
  PoolGradKernel(PoolSpec spec, const DeviceConfig& config) : spec_(std::move(spec)), engine_(config.engine) {}

  OnyxStatus* compute(ComputeContext& ctx) override {
    sdk::Tensor dy = ctx.in(0), second = ctx.in(1);
    std::vector<int64_t> x_dims;
    if (spec_.max) {
      x_dims = second.shape();
    } else {
      if (second.dtype != ONYX_DTYPE_INT64 || second.rank() != 1)
        return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "AveragePoolGrad: input 1 must be a 1-D int64 shape");
      x_dims.assign(second.data<int64_t>(), second.data<int64_t>() + second.size());
    }
    const char* op = spec_.max ? "MaxPoolGrad" : "AveragePoolGrad";
    PoolGeometry geo;
    std::string err;
    if (x_dims.size() < 3 || x_dims.size() > 5)
      return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "%s: the pooled input has rank %zu (3..5 supported)", op,
                              x_dims.size());
    if (!pool_geometry(spec_, x_dims, &geo, &err))
      return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "%s: %s", op, err.c_str());
    if (dy.shape() != geo.out)
      return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "%s: dY has shape %s, the pooling gives %s", op,
                              shape_string(dy.shape()).c_str(), shape_string(geo.out).c_str());
    sdk::Tensor dx;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_FLOAT32, x_dims, &dx));
    if (dx.size() == 0) return nullptr;
    if (dy.size() == 0) {
      std::memset(dx.raw, 0, size_t(dx.size()) * sizeof(float));
      return nullptr;
    }
    double window = 1;
    for (int64_t k : spec_.kernel) window *= double(k);
    use_threads_for(ctx, double(dx.size()) * window);
    auto p = cache_.get(x_dims, [&] { return prepare(geo, x_dims); });
    std::unique_ptr<PoolGradCall> call = p->calls.take([&] { return bind(*p); });
    dnnl::stream& stream = thread_stream();
    if (spec_.max) {  // the forward pass records which input each output took
      call->fwd.point(0, second.raw);
      call->fwd.execute(p->fwd, stream);
    }
    call->bwd.point(0, dy.raw);
    call->bwd.point(1, dx.raw);
    call->bwd.execute(p->bwd, stream);
    stream.wait();
    p->calls.give_back(std::move(call));
    return nullptr;
  }

 private:
  // Backward's dY and dX (arguments 0 and 1) and, for max pooling,
  // forward's X (argument 0): pointed per call; the rest owned by the call.
  std::unique_ptr<PoolGradCall> bind(const PoolGradPrepared& p) const {
    auto call = std::make_unique<PoolGradCall>();
    call->bwd.add(DNNL_ARG_DIFF_DST, p.bwd_pd.diff_dst_desc(), engine_);
    call->bwd.add(DNNL_ARG_DIFF_SRC, p.bwd_pd.diff_src_desc(), engine_);
    call->bwd.add_owned(DNNL_ARG_SCRATCHPAD, p.bwd_pd.scratchpad_desc(), engine_);
    if (spec_.max) {
      call->fwd.add(DNNL_ARG_SRC, p.fwd_pd.src_desc(), engine_);
      call->fwd.add_owned(DNNL_ARG_DST, p.fwd_pd.dst_desc(), engine_);
      call->fwd.add_owned(DNNL_ARG_WORKSPACE, p.fwd_pd.workspace_desc(), engine_);
      call->fwd.add_owned(DNNL_ARG_SCRATCHPAD, p.fwd_pd.scratchpad_desc(), engine_);
      call->bwd.add(DNNL_ARG_WORKSPACE, call->fwd.memory(2));
    }
    return call;
  }

  std::shared_ptr<PoolGradPrepared> prepare(const PoolGeometry& g, const std::vector<int64_t>& x) const {
    auto p = std::make_shared<PoolGradPrepared>();
    p->geo = g;
    auto alg = spec_.max                 ? dnnl::algorithm::pooling_max
               : spec_.count_include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                         : dnnl::algorithm::pooling_avg_exclude_padding;
    auto src_md = plain_md(x), dst_md = plain_md(g.out);
    dnnl::pooling_v2_forward::desc fwd(dnnl::prop_kind::forward_training, alg, src_md, dst_md, g.strides, g.kernel,
                                       g.dilates, g.pad_begin, g.pad_end);
    p->fwd_pd = dnnl::pooling_v2_forward::primitive_desc(fwd, base_attr(), engine_);
    p->fwd = dnnl::pooling_v2_forward(p->fwd_pd);
    dnnl::pooling_v2_backward::desc bwd(alg, src_md, dst_md, g.strides, g.kernel, g.dilates, g.pad_begin, g.pad_end);
    p->bwd_pd = dnnl::pooling_v2_backward::primitive_desc(bwd, base_attr(), engine_, p->fwd_pd);
    p->bwd = dnnl::pooling_v2_backward(p->bwd_pd);
    return p;
  }

  PoolSpec spec_;
  dnnl::engine engine_;
  ShapeCache<PoolGradPrepared> cache_;
};

std::string window_attr_reason(const NodeInfo& n) {
  std::string pad = n.get_string("auto_pad", "NOTSET");
  if (pad != "NOTSET" && pad != "VALID" && pad != "SAME_UPPER" && pad != "SAME_LOWER")
    return "unknown auto_pad '" + pad + "'";
  for (const char* key : {"strides", "dilations"})
    for (int64_t v : n.get_ints(key))
      if (v < 1) return std::string(key) + " must be >= 1";
  return {};
}

std::string conv_grad_supports(const NodeInfo& n) {
  if (n.inputs.size() != 3) return "ConvGrad takes dY, X and W";
  RETURN_IF_REASON(require_f32(n, {0, 1, 2}));
  RETURN_IF_REASON(require_rank(n, 1, 3, 5));
  return window_attr_reason(n);
}

std::string pool_grad_supports(const NodeInfo& n) {
  if (n.inputs.size() != 2) return n.op_type + " takes 2 inputs";
  RETURN_IF_REASON(require_f32(n, {0}));
  RETURN_IF_REASON(require_rank(n, 0, 3, 5));
  if (n.op_type == "MaxPoolGrad") RETURN_IF_REASON(require_f32(n, {1}));
  if (n.get_ints("kernel_shape").empty()) return "attribute kernel_shape is required";
  if (size_t(n.inputs[0].rank - 2) != n.get_ints("kernel_shape").size())
    return "kernel_shape does not match the input rank";
  bool ceil_mode = n.get_int("ceil_mode", 0) != 0;
  std::string pad = n.get_string("auto_pad", "NOTSET");
  if (n.op_type == "AveragePoolGrad" && ceil_mode && n.get_int("count_include_pad", 0) != 0)
    return "AveragePool with ceil_mode and count_include_pad";
  if (ceil_mode && pad != "NOTSET" && pad != "VALID") return "ceil_mode with auto_pad SAME";
  return window_attr_reason(n);
}

}  // namespace

void add_grad_ops(OpRegistry& ops) {
  ops.add(OpBuilder("ConvGrad", kOnyxDomain)
              .check(conv_grad_supports)
              .create([](const NodeInfo& n, const DeviceConfig& c) {
                auto present = [&](size_t k) { return k < n.outputs.size() && n.outputs[k].present; };
                return std::make_unique<ConvGradKernel>(read_conv_attrs(n), present(0), present(1), c);
              }));
  for (const char* op : {"MaxPoolGrad", "AveragePoolGrad"}) {
    ops.add(OpBuilder(op, kOnyxDomain).check(pool_grad_supports).create([](const NodeInfo& n, const DeviceConfig& c) {
      PoolSpec spec = read_pool_spec(n);
      spec.max = n.op_type == "MaxPoolGrad";
      spec.global = false;
      return std::make_unique<PoolGradKernel>(spec, c);
    }));
  }
}

}  // namespace onyx::onednn
