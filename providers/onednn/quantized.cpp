// QLinearConv, QLinearMatMul and com.microsoft QGemm on oneDNN's int8
// primitives, and com.microsoft QLinearAdd of same-shaped tensors. The
// primitives take uint8 or int8 activations, int8 weights, int32
// accumulation, and the requantization
//   y = saturate(round(x_scale * w_scale[c] / y_scale * (acc + B[c])) + y_zero_point)
// done inside the primitive (output scales and zero points). QDQ models get
// here too: the core's QDQ fusion (runtime/optimize/qdq_fusion.cpp) rewrites
// DQ -> Conv/MatMul/Gemm/Add -> Q into these nodes when a provider claims them.
//
// Claimed when weights, scales and zero points are constants, the form
// quantizers write: oneDNN bakes scales and zero points into the primitive
// and reorders int8 weights once (with the compensation its kernels for
// int8 activations need). Weights with a zero point (uint8 weights with 128,
// say) are shifted to int8 with zero point 0 when every value fits.
//
// Without VNNI, oneDNN multiplies with vpmaddubsw, whose int16 sums of two
// products saturate (255 * 127 * 2 > 32767) and are not corrected, so on
// such CPUs only weights within [-64, 64] are claimed (255 * 64 * 2 = 32640).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <type_traits>

#include "ops.h"
#include "spatial.h"

namespace onyx::onednn {
namespace {

using dt = dnnl::memory::data_type;

bool cpu_has_vnni() {
  static const bool vnni = [] {
    auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    auto has = [isa](unsigned bits) { return (isa & bits) == bits; };
    return has(dnnl_cpu_isa_avx512_core_vnni) || has(dnnl_cpu_isa_avx2_vnni);
  }();
  return vnni;
}

bool is_8bit(int32_t dtype) { return dtype == ONYX_DTYPE_UINT8 || dtype == ONYX_DTYPE_INT8; }
dt dnnl_type(int32_t dtype) { return dtype == ONYX_DTYPE_UINT8 ? dt::u8 : dt::s8; }

// The scale and zero point of one operand, constants: one of each, or
// (weights) one per output channel.
struct QuantParams {
  std::vector<float> scales;
  std::vector<int32_t> zeros;  // as many as scales, or one
};

// Reads scale input `s` and zero point input `z` (absent: 0) of `n`, for an
// operand of type `dtype` with `channels` output channels (1: per tensor
// only). "" or the reason it is declined.
std::string read_params(const NodeInfo& n, size_t s, size_t z, int32_t dtype, int64_t channels,
                        QuantParams* q) {
  const std::string which = "input " + std::to_string(s);
  if (!is_constant(n, s)) return "the scale (" + which + ") is not a constant";
  const sdk::ConstantTensor& scale = *n.inputs[s].constant;
  if (scale.dtype != ONYX_DTYPE_FLOAT32) return "the scale (" + which + ") is not float32";
  if (scale.dims.size() > 1 || (scale.size() != 1 && scale.size() != channels))
    return "the scale (" + which + ") is neither one value nor one per output channel";
  for (int64_t i = 0; i < scale.size(); ++i) {
    float v = scale.data<float>()[i];
    if (!(v > 0.f) || !std::isfinite(v)) return "the scale (" + which + ") is not positive and finite";
    q->scales.push_back(v);
  }
  q->zeros.assign(1, 0);
  if (!n.input_present(z)) return {};
  if (!is_constant(n, z)) return "the zero point (input " + std::to_string(z) + ") is not a constant";
  const sdk::ConstantTensor& zero = *n.inputs[z].constant;
  if (zero.dtype != dtype) return "the zero point (input " + std::to_string(z) + ") differs in type from its tensor";
  if (zero.dims.size() > 1 || (zero.size() != 1 && zero.size() != scale.size()))
    return "the zero point (input " + std::to_string(z) + ") and the scale differ in size";
  q->zeros.clear();
  for (int64_t i = 0; i < zero.size(); ++i)
    q->zeros.push_back(dtype == ONYX_DTYPE_UINT8 ? int32_t(zero.data<uint8_t>()[i]) : int32_t(zero.data<int8_t>()[i]));
  return {};
}

// Weights minus their zero points as int8: the value at flat index i
// belongs to channel (i / inner) % channel_count. "" or the reason.
std::string shift_weights(int32_t dtype, const void* data, int64_t count, const std::vector<int32_t>& zeros,
                          int64_t inner, std::vector<int8_t>* out) {
  const int limit = cpu_has_vnni() ? 127 : 64;
  const int64_t channels = int64_t(zeros.size());
  out->resize(size_t(count));
  for (int64_t i = 0; i < count; ++i) {
    int32_t v = dtype == ONYX_DTYPE_UINT8 ? int32_t(static_cast<const uint8_t*>(data)[i])
                                          : int32_t(static_cast<const int8_t*>(data)[i]);
    v -= zeros[size_t(channels == 1 ? 0 : (i / inner) % channels)];
    if (v < -128 || v > limit)
      return limit == 127 ? "weights minus their zero point leave int8's range"
                          : "weights beyond [-64, 64] on a CPU without VNNI (vpmaddubsw would saturate)";
    (*out)[size_t(i)] = int8_t(v);
  }
  return {};
}

// What the primitive does to the accumulator: x_scale * w_scale / y_scale
// (one, or per output channel) and the zero points of input and output.
struct Requant {
  std::vector<float> scales;
  int32_t x_zero = 0, y_zero = 0;
  int32_t x_type = 0, y_type = 0;
};

// The types and parameters both ops share: inputs 0-2 are X, its scale and
// zero point; `w_scale` - 1 .. + 1 the weights, theirs; then Y's scale and
// zero point. The weights' parameters go to *wq.
std::string read_requant(const NodeInfo& n, size_t w_scale, int64_t channels, Requant* r, QuantParams* wq) {
  r->x_type = n.inputs[0].dtype;
  // Y has its zero point's type (uint8 without one).
  const size_t y_zero = w_scale + 3;
  r->y_type = n.input_present(y_zero) ? n.inputs[y_zero].dtype : ONYX_DTYPE_UINT8;
  if (!is_8bit(r->x_type)) return "the input is not uint8 or int8";
  if (!is_8bit(r->y_type)) return "the output is not uint8 or int8";
  if (!is_8bit(n.inputs[w_scale - 1].dtype)) return "the weights are not uint8 or int8";
  QuantParams xq, yq;
  RETURN_IF_REASON(read_params(n, 1, 2, r->x_type, 1, &xq));
  RETURN_IF_REASON(read_params(n, w_scale, w_scale + 1, n.inputs[w_scale - 1].dtype, channels, wq));
  RETURN_IF_REASON(read_params(n, w_scale + 2, w_scale + 3, r->y_type, 1, &yq));
  r->x_zero = xq.zeros[0];
  r->y_zero = yq.zeros[0];
  for (float ws : wq->scales) r->scales.push_back(float(double(xq.scales[0]) * ws / yq.scales[0]));
  return {};
}

dnnl::primitive_attr requant_attr(const Requant& r, int channel_mask) {
  dnnl::primitive_attr attr = base_attr();
  attr.set_output_scales(r.scales.size() == 1 ? 0 : channel_mask, r.scales);
  if (r.x_zero != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {r.x_zero});
  if (r.y_zero != 0) attr.set_zero_points(DNNL_ARG_DST, 0, {r.y_zero});
  return attr;
}

// ---- QLinearConv -------------------------------------------------------------

struct QConvSpec {
  ConvAttrs attrs;
  bool channels_last = false;   // com.microsoft's form: X and Y are N x spatial... x C
  std::vector<int64_t> w_dims;
  std::vector<int8_t> weights;  // minus their zero points, ONNX layout
  std::vector<int32_t> bias;    // empty: none
  Requant requant;
};

// inputs: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, [B]
std::string parse_qconv(const NodeInfo& n, QConvSpec* s) {
  if (n.inputs.size() < 8 || n.inputs.size() > 9) return "QLinearConv takes 8 or 9 inputs";
  RETURN_IF_REASON(require_rank(n, 0, 3, 5));
  if (!is_constant(n, 3)) return "the weights are not a constant";
  const sdk::ConstantTensor& w = *n.inputs[3].constant;
  if (w.dims.size() != size_t(n.inputs[0].rank)) return "the weights and the input differ in rank";
  RETURN_IF_REASON(conv_attributes_supported(n));
  s->attrs = read_conv_attrs(n);
  s->channels_last = n.get_int("channels_last", 0) != 0;
  s->w_dims = w.dims;
  const int64_t channels = w.dims[0];
  if (channels == 0 || w.size() == 0) return "empty weights";
  QuantParams wq;
  RETURN_IF_REASON(read_requant(n, 4, channels, &s->requant, &wq));
  RETURN_IF_REASON(shift_weights(w.dtype, w.bytes.data(), w.size(), wq.zeros, w.size() / channels, &s->weights));
  if (n.input_present(8)) {
    if (!is_constant(n, 8)) return "the bias is not a constant";
    const sdk::ConstantTensor& b = *n.inputs[8].constant;
    if (b.dtype != ONYX_DTYPE_INT32 || b.dims.size() != 1 || b.size() != channels)
      return "the bias is not int32 with one value per output channel";
    s->bias.assign(b.data<int32_t>(), b.data<int32_t>() + b.size());
  }
  return {};
}


struct QConvPrepared {
  ConvGeometry geo;
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward prim;
  dnnl::memory weights, bias;
  std::optional<dnnl::reorder> x_in, y_out;  // when oneDNN's layout is not the plain one
  mutable BoundPool<ConvertedArgs> calls;  // X to oneDNN's layout, the convolution, Y back
};

// N x C x spatial... from N x spatial... x C, and back.
std::vector<int64_t> to_channels_first(std::vector<int64_t> d) {
  std::rotate(d.begin() + 1, d.end() - 1, d.end());
  return d;
}
std::vector<int64_t> to_channels_last(std::vector<int64_t> d) {
  std::rotate(d.begin() + 1, d.begin() + 2, d.end());
  return d;
}

class QConvKernel : public sdk::Kernel {
 public:
  QConvKernel(QConvSpec spec, const DeviceConfig& config) : spec_(std::move(spec)), engine_(config.engine) {}

  OnyxStatus* compute(ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    const std::vector<int64_t> x_nc = spec_.channels_last ? to_channels_first(x.shape()) : x.shape();
    ConvGeometry geo;
    std::string err;
    if (!conv_geometry(spec_.attrs, x_nc, spec_.w_dims, &geo, &err))
      return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "QLinearConv: %s", err.c_str());
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, spec_.requant.y_type,
                                        spec_.channels_last ? to_channels_last(geo.onnx_out) : geo.onnx_out, &y));
    if (y.size() == 0) return nullptr;
    use_threads_for(ctx, conv_work(x_nc, spec_.w_dims));
    auto p = cache_.get(shape_key(ctx), [&] { return prepare(x_nc); });
    std::unique_ptr<ConvertedArgs> call = p->calls.take([&] { return bind(*p); });
    dnnl::stream& stream = thread_stream();
    call->execute(p->prim, p->x_in, p->y_out, x.raw, y.raw, stream);
    stream.wait();
    p->calls.give_back(std::move(call));
    return nullptr;
  }

 private:
  // X or Y as the caller lays it out: N x C x spatial... dims, dense in
  // that order or channels last.
  dnnl::memory::desc user_md(const std::vector<int64_t>& dims_nc, int32_t dtype) const {
    if (!spec_.channels_last) return plain_md(dims_nc, dnnl_type(dtype));
    dims_t strides(dims_nc.size());
    int64_t step = 1;
    strides[1] = step;
    step *= dims_nc[1];
    for (size_t k = dims_nc.size() - 1; k >= 2; --k) {
      strides[k] = step;
      step *= dims_nc[k];
    }
    strides[0] = step;
    return dnnl::memory::desc(dims_nc, dnnl_type(dtype), strides);
  }

  std::shared_ptr<QConvPrepared> prepare(const std::vector<int64_t>& x) const {
    auto p = std::make_shared<QConvPrepared>();
    std::string err;
    conv_geometry(spec_.attrs, x, spec_.w_dims, &p->geo, &err);  // checked by compute
    const ConvGeometry& g = p->geo;
    const Requant& r = spec_.requant;
    // Channels-last activations go to oneDNN as they are (its int8 kernels'
    // layout); NCHW ones are converted in and out, to a layout of oneDNN's
    // choice: a graph of channels-last nodes (runtime/optimize/
    // channels_last.cpp) saves that.
    auto any = dnnl::memory::format_tag::any;
    const dnnl::memory::desc user_x = user_md(x, r.x_type), user_y = user_md(g.onnx_out, r.y_type);
    dnnl::memory::desc src_md = spec_.channels_last ? user_x : dnnl::memory::desc(g.src, dnnl_type(r.x_type), any);
    dnnl::memory::desc dst_md = spec_.channels_last ? user_y : dnnl::memory::desc(g.dst, dnnl_type(r.y_type), any);
    dnnl::memory::desc w_md(g.weights, dt::s8, any);
    dnnl::memory::desc bias_md = spec_.bias.empty() ? dnnl::memory::desc() : plain_md({g.dst[1]}, dt::s32);
    dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                         src_md, w_md, bias_md, dst_md, g.strides, g.dilates, g.pad_begin,
                                         g.pad_end);
    p->pd = dnnl::convolution_forward::primitive_desc(desc, requant_attr(r, 1 << 1), engine_);
    pick_faster_int8_impl(p->pd, engine_);
    p->prim = dnnl::convolution_forward(p->pd);
    if (p->pd.src_desc() != user_x) p->x_in = make_reorder(user_x, p->pd.src_desc(), engine_);
    if (p->pd.dst_desc() != user_y) p->y_out = make_reorder(p->pd.dst_desc(), user_y, engine_);
    dnnl::stream& stream = thread_stream();
    p->weights = dnnl::memory(p->pd.weights_desc(), engine_);
    dnnl::memory user_w(dnnl::memory::desc(g.weights, dt::s8, g.user_weight_strides), engine_,
                        const_cast<int8_t*>(spec_.weights.data()));
    dnnl::reorder(user_w, p->weights).execute(stream, user_w, p->weights);
    if (!spec_.bias.empty()) {
      p->bias = dnnl::memory(bias_md, engine_);
      std::memcpy(p->bias.get_data_handle(), spec_.bias.data(), spec_.bias.size() * sizeof(int32_t));
    }
    stream.wait();
    return p;
  }

  std::unique_ptr<ConvertedArgs> bind(const QConvPrepared& p) const {
    auto call = std::make_unique<ConvertedArgs>();
    const Requant& r = spec_.requant;
    BoundArgs& c = call->main;
    call->x = bind_input(c, call->in, DNNL_ARG_SRC, user_md(p.geo.src, r.x_type), p.pd.src_desc(),
                         p.x_in.has_value(), engine_);
    c.add(DNNL_ARG_WEIGHTS, p.weights);
    if (p.bias) c.add(DNNL_ARG_BIAS, p.bias);
    call->y = bind_output(c, call->out, DNNL_ARG_DST, user_md(p.geo.onnx_out, r.y_type), p.pd.dst_desc(),
                          p.y_out.has_value(), engine_);
    c.add_owned(DNNL_ARG_SCRATCHPAD, p.pd.scratchpad_desc(), engine_);
    return call;
  }

  QConvSpec spec_;
  dnnl::engine engine_;
  mutable ShapeCache<QConvPrepared> cache_;
};

// ---- QLinearMatMul -----------------------------------------------------------

struct QMatMulSpec {
  int64_t k = 0, n = 0;
  std::vector<int8_t> b;      // [K, N] minus its zero points
  std::vector<int32_t> bias;  // QGemm's C, one per column (empty: none)
  Requant requant;            // y_type float32: QGemm without y_scale
  const char* op = "QLinearMatMul";
};

// inputs: a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point
std::string parse_qmatmul(const NodeInfo& n, QMatMulSpec* s) {
  if (n.inputs.size() != 8) return "QLinearMatMul takes 8 inputs";
  RETURN_IF_REASON(require_rank(n, 0, 1, 8));
  if (!is_constant(n, 3)) return "B is not a constant";
  const sdk::ConstantTensor& b = *n.inputs[3].constant;
  if (b.dims.size() != 2) return "B is not a matrix";
  s->k = b.dims[0];
  s->n = b.dims[1];
  if (s->k == 0 || s->n == 0) return "B is empty";
  QuantParams bq;
  RETURN_IF_REASON(read_requant(n, 4, s->n, &s->requant, &bq));  // per column of B
  return shift_weights(b.dtype, b.bytes.data(), b.size(), bq.zeros, 1, &s->b);
}

// com.microsoft QGemm: Y = alpha * a_scale * b_scale[j] * ((A - a_zero)(B' - b_zero[j]) + C[j]),
// quantized with y_scale and y_zero_point when given, else float32.
// inputs: A, a_scale, a_zero_point, B, b_scale, b_zero_point, C?, y_scale?, y_zero_point?
std::string parse_qgemm(const NodeInfo& n, QMatMulSpec* s) {
  s->op = "QGemm";
  if (n.inputs.size() < 6 || n.inputs.size() > 9) return "QGemm takes 6 to 9 inputs";
  if (n.get_int("transA", 0) != 0) return "transA";
  RETURN_IF_REASON(require_rank(n, 0, 2, 2));
  if (!is_constant(n, 3)) return "B is not a constant";
  const sdk::ConstantTensor& b = *n.inputs[3].constant;
  if (b.dims.size() != 2) return "B is not a matrix";
  const bool trans_b = n.get_int("transB", 0) != 0;
  s->k = b.dims[trans_b ? 1 : 0];
  s->n = b.dims[trans_b ? 0 : 1];
  if (s->k == 0 || s->n == 0) return "B is empty";
  Requant& r = s->requant;
  r.x_type = n.inputs[0].dtype;
  if (!is_8bit(r.x_type) || !is_8bit(b.dtype)) return "A or B is not uint8 or int8";
  const bool quantized_out = n.input_present(7);
  r.y_type = !quantized_out ? ONYX_DTYPE_FLOAT32 : n.input_present(8) ? n.inputs[8].dtype : ONYX_DTYPE_UINT8;
  if (quantized_out && !is_8bit(r.y_type)) return "y_zero_point is not uint8 or int8";
  QuantParams aq, bq, yq;
  RETURN_IF_REASON(read_params(n, 1, 2, r.x_type, 1, &aq));
  RETURN_IF_REASON(read_params(n, 4, 5, b.dtype, s->n, &bq));
  if (quantized_out) RETURN_IF_REASON(read_params(n, 7, 8, r.y_type, 1, &yq));
  const double alpha = n.get_float("alpha", 1.0);
  const double y_scale = quantized_out ? yq.scales[0] : 1.0;
  r.x_zero = aq.zeros[0];
  r.y_zero = quantized_out ? yq.zeros[0] : 0;
  for (float bs : bq.scales) r.scales.push_back(float(alpha * aq.scales[0] * bs / y_scale));
  // B' as [K, N]: the weights' zero points lie along N.
  std::vector<unsigned char> kn(b.data<unsigned char>(), b.data<unsigned char>() + b.size());
  if (trans_b)
    for (int64_t i = 0; i < s->k; ++i)
      for (int64_t j = 0; j < s->n; ++j) kn[size_t(i * s->n + j)] = b.data<unsigned char>()[j * s->k + i];
  RETURN_IF_REASON(shift_weights(b.dtype, kn.data(), b.size(), bq.zeros, 1, &s->b));
  if (n.input_present(6)) {
    if (!is_constant(n, 6)) return "C is not a constant";
    const sdk::ConstantTensor& c = *n.inputs[6].constant;
    if (c.dtype != ONYX_DTYPE_INT32 || c.dims.size() > 1 || (c.size() != 1 && c.size() != s->n))
      return "C is not int32 with one value or one per column";
    for (int64_t j = 0; j < s->n; ++j) s->bias.push_back(c.data<int32_t>()[c.size() == 1 ? 0 : j]);
  }
  return {};
}

struct QMatMulPrepared {
  dims_t a, y;  // [rows, K], [rows, N]
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
  dnnl::memory b, bias;
  mutable BoundPool<BoundArgs> calls;
};

class QMatMulKernel : public sdk::Kernel {
 public:
  QMatMulKernel(QMatMulSpec spec, const DeviceConfig& config) : spec_(std::move(spec)), engine_(config.engine) {}

  OnyxStatus* compute(ComputeContext& ctx) override {
    sdk::Tensor a = ctx.in(0);
    std::vector<int64_t> out = a.shape();
    if (out.empty() || out.back() != spec_.k)
      return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "%s: A's last axis is %lld, B has %lld rows", spec_.op,
                              static_cast<long long>(out.empty() ? 0 : out.back()), static_cast<long long>(spec_.k));
    out.back() = spec_.n;
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, spec_.requant.y_type, out, &y));
    if (y.size() == 0) return nullptr;
    const int64_t rows = a.size() / spec_.k;
    use_threads_for(ctx, 2.0 * double(a.size()) * double(spec_.n));
    auto p = cache_.get({rows}, [&] { return prepare(rows); });
    if (p->bias) {
      execute_bound(p->calls, p->prim, p->pd,
                    {{DNNL_ARG_SRC, a.raw}, {DNNL_ARG_WEIGHTS, p->b.get_data_handle()},
                     {DNNL_ARG_BIAS, p->bias.get_data_handle()}, {DNNL_ARG_DST, y.raw}});
    } else {
      execute_bound(p->calls, p->prim, p->pd,
                    {{DNNL_ARG_SRC, a.raw}, {DNNL_ARG_WEIGHTS, p->b.get_data_handle()}, {DNNL_ARG_DST, y.raw}});
    }
    return nullptr;
  }

 private:
  std::shared_ptr<QMatMulPrepared> prepare(int64_t rows) const {
    auto p = std::make_shared<QMatMulPrepared>();
    const Requant& r = spec_.requant;
    p->a = {rows, spec_.k};
    p->y = {rows, spec_.n};
    dnnl::memory::desc b_md({spec_.k, spec_.n}, dt::s8, dnnl::memory::format_tag::any);
    const dt y_type = r.y_type == ONYX_DTYPE_FLOAT32 ? dt::f32 : dnnl_type(r.y_type);
    const dnnl::memory::desc bias_md = spec_.bias.empty() ? dnnl::memory::desc() : plain_md({1, spec_.n}, dt::s32);
    dnnl::matmul::desc desc(plain_md(p->a, dnnl_type(r.x_type)), b_md, bias_md, plain_md(p->y, y_type));
    p->pd = dnnl::matmul::primitive_desc(desc, requant_attr(r, 1 << 1), engine_);
    pick_faster_int8_impl(p->pd, engine_);
    p->prim = dnnl::matmul(p->pd);
    p->b = dnnl::memory(p->pd.weights_desc(), engine_);
    dnnl::memory user_b(plain_md({spec_.k, spec_.n}, dt::s8), engine_, const_cast<int8_t*>(spec_.b.data()));
    dnnl::stream& stream = thread_stream();
    dnnl::reorder(user_b, p->b).execute(stream, user_b, p->b);
    if (!spec_.bias.empty()) {
      p->bias = dnnl::memory(bias_md, engine_);
      std::memcpy(p->bias.get_data_handle(), spec_.bias.data(), spec_.bias.size() * sizeof(int32_t));
    }
    stream.wait();
    return p;
  }

  QMatMulSpec spec_;
  dnnl::engine engine_;
  mutable ShapeCache<QMatMulPrepared> cache_;
};

// ---- DynamicQuantizeMatMul ---------------------------------------------------
// com.microsoft DynamicQuantizeMatMul (what the core's dynamic quantization
// fusion makes of ONNX Runtime's quantize_dynamic output): A (float32) is
// quantized to uint8 per tensor as DynamicQuantizeLinear specifies, then
//   Y = float(sum_k (a_q - a_zero)(B - b_zero[j])) * (a_scale * b_scale[j]) + bias[j]
// in float32, as the op-by-op chain computes it. oneDNN's int8 matmul gives
// sum_k a_q (B - b_zero[j]) in int32, and a loop here subtracts a_zero times
// B's column sums and scales: oneDNN 2.6 takes a scale or zero point that
// changes per call only in its plain gemm kernel, 3x slower than its AMX one.

struct DynMatMulSpec {
  int64_t k = 0, n = 0;
  std::vector<int8_t> b;           // [K, N] minus its zero points
  std::vector<float> b_scales;     // one per column
  std::vector<float> bias;         // one per column (empty: none)
  std::vector<int32_t> b_sums;     // per column: sum_k of b
};

// inputs: A, B, b_scale, b_zero_point?, bias?
std::string parse_dyn_matmul(const NodeInfo& n, DynMatMulSpec* s) {
  if (n.inputs.size() < 3 || n.inputs.size() > 5) return "DynamicQuantizeMatMul takes 3 to 5 inputs";
  if (n.inputs[0].dtype != ONYX_DTYPE_FLOAT32) return "A is not float32";
  RETURN_IF_REASON(require_rank(n, 0, 2, 8));
  if (!is_constant(n, 1)) return "B is not a constant";
  const sdk::ConstantTensor& b = *n.inputs[1].constant;
  if (b.dims.size() != 2) return "B is not a matrix";
  if (!is_8bit(b.dtype)) return "B is not uint8 or int8";
  s->k = b.dims[0];
  s->n = b.dims[1];
  if (s->k == 0 || s->n == 0) return "B is empty";
  QuantParams bq;
  RETURN_IF_REASON(read_params(n, 2, 3, b.dtype, s->n, &bq));
  for (int64_t j = 0; j < s->n; ++j) s->b_scales.push_back(bq.scales[bq.scales.size() == 1 ? 0 : size_t(j)]);
  if (n.input_present(4)) {
    if (!is_constant(n, 4)) return "the bias is not a constant";
    const sdk::ConstantTensor& c = *n.inputs[4].constant;
    if (c.dtype != ONYX_DTYPE_FLOAT32 || c.dims.size() != 1 || c.size() != s->n)
      return "the bias is not float32 with one value per column";
    s->bias.assign(c.data<float>(), c.data<float>() + s->n);
  }
  RETURN_IF_REASON(shift_weights(b.dtype, b.bytes.data(), b.size(), bq.zeros, 1, &s->b));
  s->b_sums.assign(size_t(s->n), 0);
  for (int64_t p = 0; p < s->k; ++p)
    for (int64_t j = 0; j < s->n; ++j) s->b_sums[size_t(j)] += s->b[size_t(p * s->n + j)];
  return {};
}

// AVX-512 forms of the loops below (GCC leaves them scalar at -O2; the
// range's min/max chain then cost 4 cycles an element). Same results: no
// FMA (CMakeLists.txt), rounding half to even either way. (GCC 12 warns
// about the headers' own undefined vectors, as for add_codes_avx512.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
__attribute__((target("avx512f"))) int64_t range_avx512(const float* x, int64_t count, float* lo, float* hi) {
  __m512 vlo = _mm512_setzero_ps(), vhi = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= count; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    vlo = _mm512_min_ps(v, vlo);  // the second operand where v is NaN: NaN skipped
    vhi = _mm512_max_ps(v, vhi);
  }
  *lo = _mm512_reduce_min_ps(vlo);
  *hi = _mm512_reduce_max_ps(vhi);
  return i;
}

__attribute__((target("avx512f"))) int64_t quantize_u8_avx512(const float* x, int64_t count, float scale, float zero,
                                                             uint8_t* y) {
  const __m512 s = _mm512_set1_ps(scale), z = _mm512_set1_ps(zero), big = _mm512_set1_ps(1.0e6f),
               top = _mm512_set1_ps(255.f);
  int64_t i = 0;
  for (; i + 16 <= count; i += 16) {
    __m512 v = _mm512_div_ps(_mm512_loadu_ps(x + i), s);
    // min(big, v) keeps a NaN (its second operand), max(NaN, -big) gives -big:
    // a NaN code is 0 here as in the scalar loop.
    v = _mm512_max_ps(_mm512_min_ps(big, v), _mm512_sub_ps(_mm512_setzero_ps(), big));
    v = _mm512_add_ps(_mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), z);
    v = _mm512_min_ps(_mm512_max_ps(v, _mm512_setzero_ps()), top);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(v)));
  }
  return i;
}

__attribute__((target("avx512f"))) int64_t dequantize_row_avx512(const int32_t* sums, int64_t n, const int32_t* offsets,
                                                                const float* scales, const float* bias, float* y) {
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    const __m512i d = _mm512_sub_epi32(_mm512_loadu_si512(sums + j), _mm512_loadu_si512(offsets + j));
    __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(d), _mm512_loadu_ps(scales + j));
    if (bias) v = _mm512_add_ps(v, _mm512_loadu_ps(bias + j));
    _mm512_storeu_ps(y + j, v);
  }
  return j;
}
#pragma GCC diagnostic pop

bool has_avx512() {
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  return avx512;
}

// DynamicQuantizeLinear's parameters of `x`: the range widened to include 0
// (NaN skipped), scale = float32((hi - lo) / 255), zero = round(-lo / scale).
void dynamic_params(const float* x, int64_t count, float* scale, int32_t* zero) {
  float lo = 0.f, hi = 0.f;
  const int64_t done = has_avx512() ? range_avx512(x, count, &lo, &hi) : 0;
  for (int64_t i = done; i < count; ++i) {
    lo = x[i] < lo ? x[i] : lo;
    hi = x[i] > hi ? x[i] : hi;
  }
  *scale = float((double(hi) - double(lo)) / 255.0);
  *zero = *scale == 0.f ? 0 : int32_t(std::clamp(std::nearbyint(-double(lo) / double(*scale)), 0.0, 255.0));
}

// y = saturate(round_half_even(x / scale) + zero) in float32, as the CPU
// provider's DynamicQuantizeLinear computes it.
void quantize_u8(const float* x, int64_t count, float scale, float zero, uint8_t* y) {
  if (scale == 0.f) {
    std::memset(y, int(zero), size_t(count));
    return;
  }
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer, half to even
  for (int64_t i = has_avx512() ? quantize_u8_avx512(x, count, scale, zero, y) : 0; i < count; ++i) {
    float v = x[i] / scale;
    v = v > -1.0e6f ? (v < 1.0e6f ? v : 1.0e6f) : -1.0e6f;
    v = (v + kMagic) - kMagic + zero;
    y[i] = uint8_t(v < 0.f ? 0.f : v > 255.f ? 255.f : v);
  }
}

// The matmul of one block of rows (and of the last, shorter block).
struct DynMatMulPart {
  int64_t rows = 0;
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
  dnnl::memory b;
};

struct DynMatMulPrepared {
  DynMatMulPart block, tail;  // tail.rows == 0: none
};

using AlignedBuffer = std::unique_ptr<void, void (*)(void*)>;
AlignedBuffer aligned_buffer(size_t bytes) {
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!p) throw std::bad_alloc();
  return AlignedBuffer(p, std::free);
}

// One call's buffers (64-byte aligned: AMX tile loads and stores of 16-byte
// aligned rows ran slower): A's codes, one block's int32 sums, and each
// part's arguments bound to them once (SRC, index 0, is pointed per block).
struct DynMatMulCall {
  AlignedBuffer a{nullptr, std::free}, sums{nullptr, std::free};
  BoundArgs block, tail;
  std::shared_ptr<const DynMatMulPrepared> bound_to;  // the primitives these are bound for
};

class DynMatMulKernel : public sdk::Kernel {
 public:
  DynMatMulKernel(DynMatMulSpec spec, const DeviceConfig& config) : spec_(std::move(spec)), engine_(config.engine) {}

  OnyxStatus* compute(ComputeContext& ctx) override {
    sdk::Tensor a = ctx.in(0);
    std::vector<int64_t> out = a.shape();
    if (out.size() < 2 || out.back() != spec_.k)
      return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT,
                              "DynamicQuantizeMatMul: A's last axis is %lld, B has %lld rows",
                              static_cast<long long>(out.empty() ? 0 : out.back()), static_cast<long long>(spec_.k));
    out.back() = spec_.n;
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_FLOAT32, out, &y));
    if (y.size() == 0) return nullptr;
    const int64_t rows = a.size() / spec_.k;
    use_threads_for(ctx, 2.0 * double(kBlockRows) * double(spec_.k) * double(spec_.n));
    auto p = cache_.get({rows}, [&] { return prepare(rows); });
    std::unique_ptr<DynMatMulCall> call = take_call(p, rows);
    float a_scale = 0.f;
    int32_t a_zero = 0;
    dynamic_params(a.data<float>(), a.size(), &a_scale, &a_zero);
    auto* codes = static_cast<uint8_t*>(call->a.get());
    // In row blocks on oneDNN's threads (the matmuls' team): run alone,
    // quantizing and scaling held two threads back to 1.26x ORT's time.
    const int64_t blocks = (rows + kBlockRows - 1) / kBlockRows;
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t r0 = b * kBlockRows, r1 = std::min(rows, r0 + kBlockRows);
      quantize_u8(a.data<float>() + r0 * spec_.k, (r1 - r0) * spec_.k, a_scale, float(a_zero), codes + r0 * spec_.k);
    }
    std::vector<float> scales(static_cast<size_t>(spec_.n));
    std::vector<int32_t> offsets(static_cast<size_t>(spec_.n));
    for (int64_t j = 0; j < spec_.n; ++j) {
      scales[size_t(j)] = a_scale * spec_.b_scales[size_t(j)];
      offsets[size_t(j)] = a_zero * spec_.b_sums[size_t(j)];
    }
    // Block by block, so that each block's sums are still in cache when
    // scaled (all of them at once went out to memory and back: 2.5x slower).
    dnnl::stream& stream = thread_stream();
    for (int64_t r0 = 0; r0 < rows; r0 += p->block.rows) {
      const bool last = r0 + p->block.rows > rows;
      const DynMatMulPart& part = last ? p->tail : p->block;
      BoundArgs& args = last ? call->tail : call->block;
      args.point(0, codes + r0 * spec_.k);
      args.execute(part.prim, stream);
      stream.wait();
      dequantize_sums(static_cast<const int32_t*>(call->sums.get()), part.rows, offsets, scales,
                      y.data<float>() + r0 * spec_.n);
    }
    calls_.give_back(std::move(call));
    return nullptr;
  }

 private:
  static constexpr int64_t kBlockRows = 128;

  // Y = float(sum - a_zero * b_sums[j]) * (a_scale * b_scale[j]) + bias[j],
  // each step rounded as the chain's float32 ops round it (no FMA: see
  // CMakeLists.txt).
  void dequantize_sums(const int32_t* sums, int64_t rows, const std::vector<int32_t>& offsets,
                       const std::vector<float>& scales, float* y) const {
    const int64_t n = spec_.n;
    const float* bias = spec_.bias.empty() ? nullptr : spec_.bias.data();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < rows; ++i) {
      const int32_t* s = sums + i * n;
      float* out = y + i * n;
      for (int64_t j = has_avx512() ? dequantize_row_avx512(s, n, offsets.data(), scales.data(), bias, out) : 0; j < n;
           ++j)
        out[j] = float(s[j] - offsets[size_t(j)]) * scales[size_t(j)] + (bias ? bias[j] : 0.f);
    }
  }

  DynMatMulPart make_part(int64_t rows) const {
    DynMatMulPart part;
    part.rows = rows;
    if (rows == 0) return part;
    dnnl::matmul::desc desc(plain_md({rows, spec_.k}, dt::u8),
                            dnnl::memory::desc({spec_.k, spec_.n}, dt::s8, dnnl::memory::format_tag::any),
                            plain_md({rows, spec_.n}, dt::s32));
    part.pd = dnnl::matmul::primitive_desc(desc, base_attr(), engine_);
    pick_faster_int8_impl(part.pd, engine_);
    part.prim = dnnl::matmul(part.pd);
    part.b = dnnl::memory(part.pd.weights_desc(), engine_);
    dnnl::memory user_b(plain_md({spec_.k, spec_.n}, dt::s8), engine_, const_cast<int8_t*>(spec_.b.data()));
    dnnl::stream& stream = thread_stream();
    dnnl::reorder(user_b, part.b).execute(stream, user_b, part.b);
    stream.wait();
    return part;
  }

  std::shared_ptr<DynMatMulPrepared> prepare(int64_t rows) const {
    auto p = std::make_shared<DynMatMulPrepared>();
    p->block = make_part(std::min(rows, kBlockRows));
    p->tail = make_part(rows % p->block.rows == 0 ? 0 : rows % p->block.rows);
    return p;
  }

  void bind(BoundArgs& args, const DynMatMulPart& part, DynMatMulCall& call) const {
    args = BoundArgs();
    if (part.rows == 0) return;
    args.add(DNNL_ARG_SRC, part.pd.src_desc(), engine_, call.a.get());
    args.add(DNNL_ARG_WEIGHTS, part.b);
    args.add(DNNL_ARG_DST, part.pd.dst_desc(), engine_, call.sums.get());
    args.add_owned(DNNL_ARG_SCRATCHPAD, part.pd.scratchpad_desc(), engine_);
  }

  // A call's buffers for `rows` rows of `prepared`, from the pool, bound
  // again when last bound for another shape.
  std::unique_ptr<DynMatMulCall> take_call(const std::shared_ptr<const DynMatMulPrepared>& prepared, int64_t rows) {
    std::unique_ptr<DynMatMulCall> call = calls_.take([] { return std::make_unique<DynMatMulCall>(); });
    if (call->bound_to == prepared) return call;
    call->a = aligned_buffer(size_t(rows * spec_.k));
    call->sums = aligned_buffer(size_t(prepared->block.rows * spec_.n) * sizeof(int32_t));
    bind(call->block, prepared->block, *call);
    bind(call->tail, prepared->tail, *call);
    call->bound_to = prepared;
    return call;
  }

  DynMatMulSpec spec_;
  dnnl::engine engine_;
  mutable ShapeCache<DynMatMulPrepared> cache_;
  BoundPool<DynMatMulCall> calls_;
};

// ---- QLinearAdd --------------------------------------------------------------
// com.microsoft QLinearAdd of two tensors of one shape (a residual
// connection). Not a oneDNN primitive (oneDNN 2.6's binary takes no zero
// points): a loop over the codes with the CPU provider's arithmetic
// (float64, round half to even). It is here so that a QDQ Add becomes
// QLinearAdd where this provider would run the float Add (the QDQ fusion
// does not move work to a provider ranked lower), and channels-last chains
// of convolutions run through residual connections.

struct AddParams {
  double ka, kb, za, zb, zc;  // y = round((a - za) * ka + (b - zb) * kb + zc), saturated
};

// y = round_half_even((a - za) * ka + (b - zb) * kb + zc), saturated; in this
// order, unfused, as the CPU provider computes it.
template <typename T>
void add_codes(const T* a, const T* b, T* y, int64_t n, const AddParams p) {
  constexpr double lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  for (int64_t i = 0; i < n; ++i) {
    const double t = (double(a[i]) - p.za) * p.ka + (double(b[i]) - p.zb) * p.kb + p.zc;
    y[i] = T(std::clamp(std::nearbyint(t), lo, hi));
  }
}

// GCC 12 warns that the AVX-512 intrinsics' own undefined vectors (the
// headers' __Y) may be used uninitialized; they are not.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// add_codes 16 codes at a time: GCC's vectorization of the loop above ran
// at 0.8 ns a code, this at a tenth of it.
template <typename T>
__attribute__((target("avx512f"))) void add_codes_avx512(const T* a, const T* b, T* y, int64_t n,
                                                         const AddParams p) {
  const __m512d ka = _mm512_set1_pd(p.ka), kb = _mm512_set1_pd(p.kb), za = _mm512_set1_pd(p.za),
                zb = _mm512_set1_pd(p.zb), zc = _mm512_set1_pd(p.zc);
  const __m512i lo = _mm512_set1_epi32(std::numeric_limits<T>::min()),
                hi = _mm512_set1_epi32(std::numeric_limits<T>::max());
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i a16 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)),
                  b16 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i));
    const __m512i va = std::is_signed_v<T> ? _mm512_cvtepi8_epi32(a16) : _mm512_cvtepu8_epi32(a16),
                  vb = std::is_signed_v<T> ? _mm512_cvtepi8_epi32(b16) : _mm512_cvtepu8_epi32(b16);
    __m256i sums[2];
    for (int h = 0; h < 2; ++h) {
      const __m512d ta = _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(va, h)),
                    tb = _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(vb, h));
      const __m512d t = _mm512_add_pd(
          _mm512_add_pd(_mm512_mul_pd(_mm512_sub_pd(ta, za), ka), _mm512_mul_pd(_mm512_sub_pd(tb, zb), kb)), zc);
      sums[h] = _mm512_cvt_roundpd_epi32(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    }
    const __m512i r = _mm512_inserti64x4(_mm512_castsi256_si512(sums[0]), sums[1], 1);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i),
                     _mm512_cvtepi32_epi8(_mm512_min_epi32(_mm512_max_epi32(r, lo), hi)));
  }
  add_codes(a + i, b + i, y + i, n - i, p);
}
#pragma GCC diagnostic pop

template <typename T>
void add_quantized(const T* a, const T* b, T* y, int64_t n, const AddParams p) {
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  if (avx512)
    add_codes_avx512(a, b, y, n, p);
  else
    add_codes(a, b, y, n, p);
}

// inputs: A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale, C_zero_point
std::string parse_qadd(const NodeInfo& n, AddParams* p, int32_t* dtype) {
  if (n.inputs.size() < 7 || n.inputs.size() > 8) return "QLinearAdd takes 7 or 8 inputs";
  *dtype = n.inputs[0].dtype;
  if (!is_8bit(*dtype) || n.inputs[3].dtype != *dtype) return "A and B are not both uint8 or both int8";
  const sdk::ValueDesc &a = n.inputs[0], &b = n.inputs[3];
  if (a.rank < 0 || a.rank != b.rank) return "A and B differ in rank (or it is unknown)";
  for (size_t i = 0; i < a.dims.size(); ++i)
    if (a.dims[i] != b.dims[i]) return "A and B may differ in shape (only same-shaped tensors are added here)";
  QuantParams qa, qb, qc;
  RETURN_IF_REASON(read_params(n, 1, 2, *dtype, 1, &qa));
  RETURN_IF_REASON(read_params(n, 4, 5, *dtype, 1, &qb));
  RETURN_IF_REASON(read_params(n, 6, 7, *dtype, 1, &qc));
  *p = {double(qa.scales[0]) / qc.scales[0], double(qb.scales[0]) / qc.scales[0], double(qa.zeros[0]),
        double(qb.zeros[0]), double(qc.zeros[0])};
  return {};
}

class QAddKernel : public sdk::Kernel {
 public:
  QAddKernel(AddParams p, int32_t dtype) : p_(p), dtype_(dtype) {}

  OnyxStatus* compute(ComputeContext& ctx) override {
    sdk::Tensor a = ctx.in(0), b = ctx.in(3);
    if (a.shape() != b.shape())
      return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT,
                              "QLinearAdd: A and B differ in shape; the oneDNN provider adds same-shaped tensors only");
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, dtype_, a.shape(), &y));
    if (dtype_ == ONYX_DTYPE_UINT8)
      add_quantized(static_cast<const uint8_t*>(a.raw), static_cast<const uint8_t*>(b.raw),
                    static_cast<uint8_t*>(y.raw), a.size(), p_);
    else
      add_quantized(static_cast<const int8_t*>(a.raw), static_cast<const int8_t*>(b.raw), static_cast<int8_t*>(y.raw),
                    a.size(), p_);
    return nullptr;
  }

 private:
  AddParams p_;
  int32_t dtype_;
};

// ---- QLinearGlobalAveragePool ---------------------------------------------------
// com.microsoft QLinearGlobalAveragePool, NCHW or channels-last (N x spatial...
// x C): y = round_half_even((sum - HW * zx) * sx / (HW * sy)) + zy in float64,
// saturated, as the CPU provider computes it. A loop, not a oneDNN primitive:
// oneDNN 2.6's int8 pooling takes no zero points. Claimed so that the QDQ
// fusion makes DQ -> GlobalAveragePool -> Q into this node where oneDNN runs
// the float GlobalAveragePool (MobileNetV2's last layer), and a channels-last
// chain of convolutions runs into it with no Transpose.

struct GapSpec {
  bool channels_last = false;
  double sx = 1, sy = 1, zx = 0, zy = 0;
  int32_t dtype = 0;
};

// inputs: X, x_scale, x_zero_point?, y_scale, y_zero_point?
std::string parse_qgap(const NodeInfo& n, GapSpec* s) {
  if (n.inputs.size() < 4 || n.inputs.size() > 5) return "QLinearGlobalAveragePool takes 4 or 5 inputs";
  s->dtype = n.inputs[0].dtype;
  if (!is_8bit(s->dtype)) return "X is not uint8 or int8";
  RETURN_IF_REASON(require_rank(n, 0, 3, 8));
  if (n.input_present(4) && n.inputs[4].dtype != s->dtype) return "y_zero_point and X differ in type";
  QuantParams xq, yq;
  RETURN_IF_REASON(read_params(n, 1, 2, s->dtype, 1, &xq));
  RETURN_IF_REASON(read_params(n, 3, 4, s->dtype, 1, &yq));
  s->channels_last = n.get_int("channels_last", 0) != 0;
  s->sx = xq.scales[0], s->sy = yq.scales[0], s->zx = xq.zeros[0], s->zy = yq.zeros[0];
  return {};
}

class QGapKernel : public sdk::Kernel {
 public:
  explicit QGapKernel(GapSpec spec) : spec_(spec) {}

  OnyxStatus* compute(ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    const std::vector<int64_t>& dims = x.shape();
    const size_t rank = dims.size();
    if (rank < 3)
      return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "QLinearGlobalAveragePool: X has rank %zu, not >= 3", rank);
    const int64_t batch = dims[0], channels = spec_.channels_last ? dims[rank - 1] : dims[1];
    const int64_t taps = channels == 0 || batch == 0 ? 0 : x.size() / (batch * channels);
    std::vector<int64_t> out(rank, 1);
    out[0] = batch;
    out[spec_.channels_last ? rank - 1 : 1] = channels;
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, spec_.dtype, out, &y));
    if (y.size() == 0) return nullptr;
    if (taps == 0)
      return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "QLinearGlobalAveragePool: X of %zu dims has an empty spatial dim", rank);
    if (taps > (int64_t(1) << 23))  // 255 * 2^23 < 2^31: int32 sums below that
      return run<int64_t>(x, y, batch, channels, taps);
    return run<int32_t>(x, y, batch, channels, taps);
  }

 private:
  template <typename Acc>
  OnyxStatus* run(const sdk::Tensor& x, sdk::Tensor& y, int64_t batch, int64_t channels, int64_t taps) const {
    if (spec_.dtype == ONYX_DTYPE_UINT8)
      pool<uint8_t, Acc>(static_cast<const uint8_t*>(x.raw), static_cast<uint8_t*>(y.raw), batch, channels, taps);
    else
      pool<int8_t, Acc>(static_cast<const int8_t*>(x.raw), static_cast<int8_t*>(y.raw), batch, channels, taps);
    return nullptr;
  }

  template <typename T, typename Acc>
  void pool(const T* x, T* y, int64_t batch, int64_t channels, int64_t taps) const {
    constexpr double lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
    const double divisor = double(taps) * spec_.sy;
    auto code = [&](Acc sum) {
      const double q = double(sum - Acc(taps) * Acc(spec_.zx)) * spec_.sx / divisor;
      return T(std::clamp(std::nearbyint(q) + spec_.zy, lo, hi));
    };
    std::vector<Acc> sums(static_cast<size_t>(channels));
    for (int64_t n = 0; n < batch; ++n) {
      const T* xn = x + n * channels * taps;
      T* yn = y + n * channels;
      if (spec_.channels_last) {
        std::fill(sums.begin(), sums.end(), Acc(0));
        for (int64_t t = 0; t < taps; ++t)
          for (int64_t c = 0; c < channels; ++c) sums[size_t(c)] += Acc(xn[t * channels + c]);
        for (int64_t c = 0; c < channels; ++c) yn[c] = code(sums[size_t(c)]);
      } else {
        for (int64_t c = 0; c < channels; ++c) {
          Acc sum = 0;
          for (int64_t t = 0; t < taps; ++t) sum += Acc(xn[c * taps + t]);
          yn[c] = code(sum);
        }
      }
    }
  }

  GapSpec spec_;
};

}  // namespace

void add_quantized_ops(OpRegistry& ops) {
  // ONNX's QLinearConv, and ONNX Runtime's com.microsoft copy of it (which
  // may be channels-last).
  for (const char* domain : {"", "com.microsoft"})
    ops.add(OpBuilder("QLinearConv", domain)
                .since(*domain ? 1 : 10)
                .check([](const NodeInfo& n) -> std::string {
                  QConvSpec s;
                  return parse_qconv(n, &s);
                })
                .create([](const NodeInfo& n, const DeviceConfig& c) -> std::unique_ptr<sdk::Kernel> {
                  QConvSpec s;
                  parse_qconv(n, &s);
                  return std::make_unique<QConvKernel>(std::move(s), c);
                }));
  ops.add(OpBuilder("QLinearGlobalAveragePool", "com.microsoft")
              .since(1)
              .check([](const NodeInfo& n) {
                GapSpec s;
                return parse_qgap(n, &s);
              })
              .create([](const NodeInfo& n, const DeviceConfig&) -> std::unique_ptr<sdk::Kernel> {
                GapSpec s;
                parse_qgap(n, &s);
                return std::make_unique<QGapKernel>(s);
              }));
  ops.add(OpBuilder("QLinearAdd", "com.microsoft")
              .since(1)
              .check([](const NodeInfo& n) {
                AddParams p;
                int32_t dtype;
                return parse_qadd(n, &p, &dtype);
              })
              .create([](const NodeInfo& n, const DeviceConfig&) -> std::unique_ptr<sdk::Kernel> {
                AddParams p;
                int32_t dtype = 0;
                parse_qadd(n, &p, &dtype);
                return std::make_unique<QAddKernel>(p, dtype);
              }));
  ops.add(OpBuilder("QGemm", "com.microsoft")
              .since(1)
              .check([](const NodeInfo& n) {
                QMatMulSpec s;
                return parse_qgemm(n, &s);
              })
              .create([](const NodeInfo& n, const DeviceConfig& c) -> std::unique_ptr<sdk::Kernel> {
                QMatMulSpec s;
                parse_qgemm(n, &s);
                return std::make_unique<QMatMulKernel>(std::move(s), c);
              }));
  ops.add(OpBuilder("DynamicQuantizeMatMul", "com.microsoft")
              .since(1)
              .check([](const NodeInfo& n) {
                DynMatMulSpec s;
                return parse_dyn_matmul(n, &s);
              })
              .create([](const NodeInfo& n, const DeviceConfig& c) -> std::unique_ptr<sdk::Kernel> {
                DynMatMulSpec s;
                parse_dyn_matmul(n, &s);
                return std::make_unique<DynMatMulKernel>(std::move(s), c);
              }));
  ops.add(OpBuilder("QLinearMatMul")
              .since(10)
              .check([](const NodeInfo& n) {
                QMatMulSpec s;
                return parse_qmatmul(n, &s);
              })
              .create([](const NodeInfo& n, const DeviceConfig& c) -> std::unique_ptr<sdk::Kernel> {
                QMatMulSpec s;
                parse_qmatmul(n, &s);
                return std::make_unique<QMatMulKernel>(std::move(s), c);
              }));
}

}  // namespace onyx::onednn
