// Conv and ConvTranspose (1-D to 3-D) on oneDNN's convolution and
// deconvolution primitives. A Conv may be fused with an inference
// BatchNormalization (folded into its weights and bias at kernel creation)
// and an activation (a post-op).
#include <cmath>
#include <cstring>
#include <optional>

#include "ops.h"
#include "spatial.h"

namespace onyx::onednn {

using dt = dnnl::memory::data_type;

dims_t dense_strides(const dims_t& d) {
  dims_t s(d.size(), 1);
  for (size_t k = d.size() - 1; k > 0; --k) s[k - 1] = s[k] * std::max<int64_t>(d[k], 1);
  return s;
}

ConvAttrs read_conv_attrs(const NodeInfo& n) {
  ConvAttrs a;
  a.transposed = n.op_type == "ConvTranspose";
  a.auto_pad = n.get_string("auto_pad", "NOTSET");
  a.strides = n.get_ints("strides");
  a.dilations = n.get_ints("dilations");
  a.pads = n.get_ints("pads");
  a.kernel_shape = n.get_ints("kernel_shape");
  a.output_padding = n.get_ints("output_padding");
  a.output_shape = n.get_ints("output_shape");
  a.group = n.get_int("group", 1);
  return a;
}

bool conv_geometry(const ConvAttrs& a, const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                   ConvGeometry* g, std::string* err) {
  size_t spatial = x.size() - 2;
  if (w.size() != x.size()) return *err = "weights and input ranks differ", false;
  int64_t n = x[0], c = x[1], groups = a.group;
  // Conv weights: [M, C/group, k...]; ConvTranspose weights: [C, M/group, k...].
  int64_t in_per_group = a.transposed ? w[0] / groups : w[1];
  int64_t out_per_group = a.transposed ? w[1] : w[0] / groups;
  if (groups < 1 || c != in_per_group * groups || w[0] % groups != 0)
    return *err = "channels do not match the weights and group", false;
  auto at = [](const std::vector<int64_t>& v, size_t i, int64_t fallback) {
    return i < v.size() ? v[i] : fallback;
  };
  g->onnx_out = {n, out_per_group * groups};
  for (size_t i = 0; i < spatial; ++i) {
    int64_t in = x[2 + i], k = w[2 + i], s = at(a.strides, i, 1), d = at(a.dilations, i, 1);
    if (!a.kernel_shape.empty() && at(a.kernel_shape, i, k) != k)
      return *err = "kernel_shape does not match the weights", false;
    int64_t dk = (k - 1) * d + 1;
    int64_t pb = at(a.pads, i, 0), pe = at(a.pads, i + spatial, 0), out;
    if (!a.transposed) {
      if (a.auto_pad == "VALID") pb = pe = 0;
      if (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") {
        int64_t target = (in + s - 1) / s;
        int64_t total = std::max<int64_t>(0, (target - 1) * s + dk - in);
        pb = a.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
        pe = total - pb;
      }
      if (in + pb + pe < dk) return *err = "the kernel is larger than the padded input", false;
      out = (in + pb + pe - dk) / s + 1;
    } else {
      int64_t op = at(a.output_padding, i, 0);
      int64_t full = s * (in - 1) + op + dk;
      if (!a.output_shape.empty() || a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") {
        int64_t target = !a.output_shape.empty()
                             ? a.output_shape[a.output_shape.size() - spatial + i]
                             : in * s;
        // A negative total (output_shape larger than the input covers) pads
        // with bias-only rows, as in ONNX's reference.
        int64_t total = full - target;
        int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);  // floor(total / 2)
        // As ONNX's reference: the larger half goes first unless SAME_UPPER.
        pb = a.auto_pad == "SAME_UPPER" ? half : total - half;
        pe = total - pb;
      } else if (a.auto_pad == "VALID") {
        pb = pe = 0;
      }
      out = full - pb - pe;
      // oneDNN has no output_padding: it is the same as padding less at the end.
      pe -= op;
    }
    if (out <= 0) return *err = "the output would be empty", false;
    g->onnx_out.push_back(out);
    g->strides.push_back(s);
    g->dilates.push_back(d - 1);
    g->pad_begin.push_back(pb);
    g->pad_end.push_back(pe);
  }
  g->src.assign(x.begin(), x.end());
  g->dst.assign(g->onnx_out.begin(), g->onnx_out.end());
  dims_t kernel(w.begin() + 2, w.end());
  int64_t kernel_size = 1;
  for (int64_t k : kernel) kernel_size *= k;
  dims_t kernel_strides = dense_strides(kernel);
  if (groups > 1) g->weights = {groups, out_per_group, in_per_group};
  else g->weights = {out_per_group, in_per_group};
  g->weights.insert(g->weights.end(), kernel.begin(), kernel.end());
  // Strides of ONNX's layout over oneDNN's (g, oc, ic, k...) dims.
  dims_t s;
  if (!a.transposed) {
    if (groups > 1) s = {out_per_group * in_per_group * kernel_size, in_per_group * kernel_size, kernel_size};
    else s = {in_per_group * kernel_size, kernel_size};
  } else {  // ONNX [C_in, M/group, k...]: input channel outermost
    if (groups > 1) s = {in_per_group * out_per_group * kernel_size, kernel_size, out_per_group * kernel_size};
    else s = {kernel_size, out_per_group * kernel_size};
  }
  s.insert(s.end(), kernel_strides.begin(), kernel_strides.end());
  g->user_weight_strides = s;
  return true;
}

double conv_work(const std::vector<int64_t>& x, const std::vector<int64_t>& w) {
  if (x.size() < 3 || x[1] == 0) return 0;
  double spatial = double(sdk::element_count(x)) / double(x[1]);  // batch * input positions
  return 2.0 * spatial * double(sdk::element_count(w));
}

std::vector<float> constant_floats(const NodeInfo& n, size_t k) {
  const sdk::ConstantTensor& c = *n.inputs[k].constant;
  return std::vector<float>(c.data<float>(), c.data<float>() + c.size());
}

// In double: w' = w * scale / sqrt(var + eps), b' = (b - mean) * scale / sqrt(var + eps) + bn_bias.
void fold_batch_norm(const NodeInfo& bn, std::vector<float>* weights, std::optional<std::vector<float>>* bias) {
  std::vector<float> scale = constant_floats(bn, 1), shift = constant_floats(bn, 2),
                     mean = constant_floats(bn, 3), var = constant_floats(bn, 4);
  double eps = bn.get_float("epsilon", 1e-5);
  size_t channels = scale.size();
  size_t per_channel = weights->size() / channels;
  std::vector<float> folded = bias->value_or(std::vector<float>(channels, 0.f));
  for (size_t c = 0; c < channels; ++c) {
    double factor = double(scale[c]) / std::sqrt(double(var[c]) + eps);
    for (size_t i = 0; i < per_channel; ++i) {
      float& w = (*weights)[c * per_channel + i];
      w = float(double(w) * factor);
    }
    folded[c] = float((double(folded[c]) - double(mean[c])) * factor + double(shift[c]));
  }
  *bias = std::move(folded);
}

namespace {

struct ConvSpec {
  ConvAttrs attrs;
  std::optional<std::vector<float>> weights;  // constant (maybe BN-folded) weights, ONNX layout
  std::vector<int64_t> weight_dims;
  std::optional<std::vector<float>> bias;     // constant (maybe BN-folded) bias
  bool runtime_bias = false;                  // the bias is an input that is not constant
  std::vector<Activation> activations;
  size_t output_index = 0;
  bool use_bf16 = false;
};

// What one call binds (BoundArgs): the convolution's arguments, the bf16
// conversions of X and of weights that are not constant, the reorder of a
// blocked output to the plain one; and the indices of the arguments each
// call points at its tensors (kNone: not bound).
struct ConvCall {
  static constexpr size_t kNone = SIZE_MAX;
  ConvertedArgs io;  // X (to bf16), the convolution, Y (to the plain layout)
  BoundArgs w_to_bf16;
  size_t w = kNone, bias = kNone;
};

struct ConvPrepared {
  ConvGeometry geo;
  std::vector<int64_t> x_dims;  // X's shape
  dnnl::primitive_desc pd;
  dnnl::primitive prim;
  dnnl::memory weights, bias;  // constant, in oneDNN's layout (empty: from inputs)
  std::optional<dnnl::reorder> src_to_bf16, weights_to_bf16;
  std::optional<dnnl::reorder> dst_to_plain;  // when oneDNN writes a blocked layout
  mutable BoundPool<ConvCall> calls;
};

class ConvKernel : public sdk::Kernel {
 public:
  ConvKernel(ConvSpec spec, const DeviceConfig& config) : spec_(std::move(spec)), engine_(config.engine) {}

  OnyxStatus* compute(ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    std::vector<int64_t> w_dims = spec_.weights ? spec_.weight_dims : ctx.in(1).shape();
    const char* op = spec_.attrs.transposed ? "ConvTranspose" : "Conv";
    ConvGeometry geo;
    std::string err;
    if (!conv_geometry(spec_.attrs, x.shape(), w_dims, &geo, &err))
      return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "%s: %s", op, err.c_str());
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(spec_.output_index, ONYX_DTYPE_FLOAT32, geo.onnx_out, &y));
    if (y.size() == 0) return nullptr;
    if (x.size() == 0 || sdk::element_count(w_dims) == 0)  // oneDNN has no empty reductions
      return sdk::make_status(ONYX_STATUS_UNIMPLEMENTED, "%s with no input channels or an empty kernel", op);
    use_threads_for(ctx, conv_work(x.shape(), w_dims));
    auto p = cache_.get(shape_key(ctx), [&] { return prepare(x.shape(), w_dims, &err); });
    if (!p) return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "%s: %s", op, err.c_str());
    std::unique_ptr<ConvCall> call = p->calls.take([&] { return bind(*p); });
    dnnl::stream& stream = thread_stream();
    if (p->weights_to_bf16) {
      call->w_to_bf16.point(call->w, ctx.in(1).raw);
      call->w_to_bf16.execute(*p->weights_to_bf16, stream);
    } else if (!p->weights) {
      call->io.main.point(call->w, ctx.in(1).raw);
    }
    if (call->bias != ConvCall::kNone) call->io.main.point(call->bias, ctx.in(2).raw);
    call->io.execute(p->prim, p->src_to_bf16, p->dst_to_plain, x.raw, y.raw, stream);
    stream.wait();
    p->calls.give_back(std::move(call));
    return nullptr;
  }

 private:
  // The arguments of one call, made once per concurrent caller.
  std::unique_ptr<ConvCall> bind(const ConvPrepared& p) const {
    auto call = std::make_unique<ConvCall>();
    const ConvGeometry& g = p.geo;
    BoundArgs& c = call->io.main;
    const dnnl::memory::desc user_x = plain_md(p.x_dims), user_w(g.weights, dt::f32, g.user_weight_strides);
    call->io.x = bind_input(c, call->io.in, DNNL_ARG_SRC, user_x, p.pd.src_desc(), p.src_to_bf16.has_value(), engine_);
    if (p.weights)
      c.add(DNNL_ARG_WEIGHTS, p.weights);
    else
      call->w = bind_input(c, call->w_to_bf16, DNNL_ARG_WEIGHTS, user_w, p.pd.weights_desc(),
                           p.weights_to_bf16.has_value(), engine_);
    if (p.bias)
      c.add(DNNL_ARG_BIAS, p.bias);
    else if (spec_.runtime_bias)
      call->bias = c.add(DNNL_ARG_BIAS, plain_md({g.dst[1]}), engine_);
    call->io.y = bind_output(c, call->io.out, DNNL_ARG_DST, plain_md(g.onnx_out), p.pd.dst_desc(),
                             p.dst_to_plain.has_value(), engine_);
    c.add_owned(DNNL_ARG_SCRATCHPAD, p.pd.scratchpad_desc(), engine_);
    return call;
  }

  std::shared_ptr<ConvPrepared> prepare(const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                                        std::string* err) const {
    auto p = std::make_shared<ConvPrepared>();
    if (!conv_geometry(spec_.attrs, x, w, &p->geo, err)) return nullptr;
    p->x_dims = x;
    const ConvGeometry& g = p->geo;
    dt type = spec_.use_bf16 ? dt::bf16 : dt::f32;
    auto any = dnnl::memory::format_tag::any;
    dnnl::memory::desc src_md = spec_.use_bf16 ? plain_md(x, dt::bf16) : plain_md(x);
    dnnl::memory::desc user_w_md(g.weights, dt::f32, g.user_weight_strides);
    dnnl::memory::desc w_md = spec_.weights    ? dnnl::memory::desc(g.weights, type, any)
                              : spec_.use_bf16 ? dnnl::memory::desc(g.weights, dt::bf16, dense_strides(g.weights))
                                               : user_w_md;
    // The output's layout is oneDNN's choice: its blocked-channel kernels
    // beat the plain-layout ones (im2col + GEMM) ~3x on 8 -> 16 channels even
    // with the reorder back to the plain layout.
    dnnl::memory::desc dst_md(g.dst, dt::f32, any);
    bool has_bias = spec_.bias.has_value() || spec_.runtime_bias;
    dnnl::memory::desc bias_md = has_bias ? plain_md({g.dst[1]}) : dnnl::memory::desc();
    dnnl::primitive_attr attr = base_attr();
    dnnl::post_ops ops;
    for (const Activation& act : spec_.activations) ops.append_eltwise(1.f, act.algorithm, act.alpha, act.beta);
    attr.set_post_ops(ops);
    auto prop = dnnl::prop_kind::forward_inference;
    if (!spec_.attrs.transposed) {
      dnnl::convolution_forward::desc desc(prop, dnnl::algorithm::convolution_direct, src_md, w_md, bias_md,
                                           dst_md, g.strides, g.dilates, g.pad_begin, g.pad_end);
      auto pd = dnnl::convolution_forward::primitive_desc(desc, attr, engine_);
      p->prim = dnnl::convolution_forward(pd);
      p->pd = pd;
    } else {
      dnnl::deconvolution_forward::desc desc(prop, dnnl::algorithm::deconvolution_direct, src_md, w_md,
                                             bias_md, dst_md, g.strides, g.dilates, g.pad_begin, g.pad_end);
      auto pd = dnnl::deconvolution_forward::primitive_desc(desc, attr, engine_);
      p->prim = dnnl::deconvolution_forward(pd);
      p->pd = pd;
    }
    if (p->pd.dst_desc() != plain_md(g.onnx_out))
      p->dst_to_plain = make_reorder(p->pd.dst_desc(), plain_md(g.onnx_out), engine_);
    if (spec_.use_bf16) {
      p->src_to_bf16 = make_reorder(plain_md(x), p->pd.src_desc(), engine_);
      if (!spec_.weights) p->weights_to_bf16 = make_reorder(user_w_md, p->pd.weights_desc(), engine_);
    }
    dnnl::stream& stream = thread_stream();
    if (spec_.weights) {
      p->weights = dnnl::memory(p->pd.weights_desc(), engine_);
      dnnl::memory user(user_w_md, engine_, const_cast<float*>(spec_.weights->data()));
      dnnl::reorder(user, p->weights).execute(stream, user, p->weights);
    }
    if (spec_.bias) {
      p->bias = dnnl::memory(bias_md, engine_);
      std::memcpy(p->bias.get_data_handle(), spec_.bias->data(), spec_.bias->size() * sizeof(float));
    }
    stream.wait();
    return p;
  }

  ConvSpec spec_;
  dnnl::engine engine_;
  mutable ShapeCache<ConvPrepared> cache_;
};

}  // namespace

std::string conv_supports(const NodeInfo& n) {
  RETURN_IF_REASON(require_f32(n, {0, 1, 2}));
  RETURN_IF_REASON(require_rank(n, 0, 3, 5));
  RETURN_IF_REASON(require_rank(n, 1, 3, 5));
  return conv_attributes_supported(n);
}

std::string conv_attributes_supported(const NodeInfo& n) {
  std::string pad = n.get_string("auto_pad", "NOTSET");
  if (pad != "NOTSET" && pad != "VALID" && pad != "SAME_UPPER" && pad != "SAME_LOWER")
    return "unknown auto_pad '" + pad + "'";
  if (n.op_type == "ConvTranspose" && pad == "VALID" && n.has("output_shape"))
    return "ConvTranspose with both output_shape and auto_pad VALID";
  for (int64_t d : n.get_ints("dilations"))
    if (d < 1) return "dilations must be >= 1";
  for (int64_t s : n.get_ints("strides"))
    if (s < 1) return "strides must be >= 1";
  return {};
}

namespace {

ConvSpec spec_of(const NodeInfo& conv, const DeviceConfig& config) {
  ConvSpec s;
  s.attrs = read_conv_attrs(conv);
  if (is_constant(conv, 1)) {
    s.weights = constant_floats(conv, 1);
    s.weight_dims = conv.inputs[1].constant->dims;
  }
  if (is_constant(conv, 2)) s.bias = constant_floats(conv, 2);
  s.runtime_bias = conv.input_present(2) && !is_constant(conv, 2);
  s.use_bf16 = config.use_bf16;
  return s;
}

std::unique_ptr<sdk::Kernel> make_kernel(ConvSpec spec, const DeviceConfig& config) {
  return std::make_unique<ConvKernel>(std::move(spec), config);
}

void fold_into(const NodeInfo& bn, ConvSpec* s) { fold_batch_norm(bn, &*s->weights, &s->bias); }

}  // namespace

std::string conv_group_supports(const Chain& chain) {
  const NodeInfo& conv = chain[0].info;
  if (conv.op_type != "Conv") return "only Conv heads a fused convolution group";
  RETURN_IF_REASON(conv_supports(conv));
  for (size_t k = 1; k < chain.size(); ++k) {
    const NodeInfo& node = chain[k].info;
    if (node.outputs.size() != 1) return node.op_type + " has several outputs";
    if (chain[k].from_previous != 0) return node.op_type + " does not read the Conv's output first";
    if (node.op_type == "BatchNormalization" && k == 1) {
      if (node.get_int("training_mode", 0) != 0) return "BatchNormalization in training mode";
      if (!is_constant(conv, 1) || (conv.input_present(2) && !is_constant(conv, 2)))
        return "Conv weights or bias are not constants (needed to fold BatchNormalization)";
      int64_t channels = conv.inputs[1].constant->dims[0];
      for (size_t i = 1; i <= 4; ++i) {
        if (!is_constant(node, i) || node.inputs[i].dtype != ONYX_DTYPE_FLOAT32)
          return "BatchNormalization parameters are not float32 constants";
        if (node.inputs[i].constant->size() != channels)
          return "BatchNormalization parameters do not match the Conv's channels";
      }
      continue;
    }
    Activation act;
    std::string why;
    if (!activation_of(node, &act, &why)) return why;
    if (k + 1 != chain.size()) return "only one activation is fused";
  }
  return {};
}

std::unique_ptr<sdk::Kernel> create_conv_group(const Chain& chain, const DeviceConfig& config) {
  const NodeInfo& conv = chain[0].info;
  ConvSpec spec = spec_of(conv, config);
  for (size_t k = 1; k < chain.size(); ++k) {
    const NodeInfo& node = chain[k].info;
    if (node.op_type == "BatchNormalization" && k == 1) {
      fold_into(node, &spec);
    } else {
      Activation act;
      std::string why;
      activation_of(node, &act, &why);
      spec.activations.push_back(act);
    }
  }
  spec.output_index = chain.size() - 1;
  return make_kernel(std::move(spec), config);
}

void add_conv_ops(OpRegistry& ops) {
  for (const char* op : {"Conv", "ConvTranspose"}) {
    ops.add(OpBuilder(op).check(conv_supports).create([](const NodeInfo& n, const DeviceConfig& c) {
      return make_kernel(spec_of(n, c), c);
    }));
  }
}

}  // namespace onyx::onednn
