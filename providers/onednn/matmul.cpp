// MatMul and Gemm on oneDNN's matmul primitive, alone or fused with a bias
// Add, a scale, an activation and a residual Add (one primitive: bias,
// eltwise and the residual's binary add run as post-ops while the output
// tile is still in registers, so the product is never written and read
// back).
//
// Constant weights are reordered once per shape into the layout oneDNN's
// kernel prefers (and to bf16 when the device allows reduced precision).
#include <cstring>
#include <optional>

#include "ops.h"
#include "spatial.h"

namespace onyx::onednn {
namespace {

using dt = dnnl::memory::data_type;

struct MatMulSpec {
  bool gemm = false;
  bool trans_a = false, trans_b = false;
  float alpha = 1.f, beta = 1.f;
  std::optional<sdk::ConstantTensor> constant_b;
  std::vector<float> bias;  // constant bias over the last axis (fused Add); empty: none
  std::vector<Activation> activations;  // eltwise post-ops in chain order (a scale, an activation)
  // A residual Add after the rest (a tensor of the product's shape): its
  // index among the group's inputs; none when empty.
  std::optional<size_t> residual_input;
  size_t output_index = 0;  // the group's output the kernel writes
  bool use_bf16 = false;
};

// Shapes of one call, as oneDNN sees them (batch dims padded to one rank).
struct Geometry {
  dims_t a, b, out;              // oneDNN dims of src, weights, dst
  dims_t a_strides, b_strides;
  std::vector<int64_t> onnx_out;  // ONNX output shape
  int64_t k = 0;
};

std::string broadcast_error(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  auto str = [](const std::vector<int64_t>& d) {
    std::string s = "[";
    for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
    return s + "]";
  };
  return "MatMul shapes " + str(a) + " and " + str(b) + " do not match";
}

// numpy matmul shapes: 1-D operands gain a unit axis that the output drops.
bool matmul_geometry(std::vector<int64_t> a, std::vector<int64_t> b, Geometry* g, std::string* err) {
  bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a.empty() || b.empty()) return *err = "MatMul of a scalar", false;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> pa(rank - a.size(), 1), pb(rank - b.size(), 1);
  pa.insert(pa.end(), a.begin(), a.end());
  pb.insert(pb.end(), b.begin(), b.end());
  if (pa[rank - 1] != pb[rank - 2]) return *err = broadcast_error(a, b), false;
  g->out.assign(rank, 0);
  for (size_t i = 0; i + 2 < rank; ++i) {
    if (pa[i] != pb[i] && pa[i] != 1 && pb[i] != 1) return *err = broadcast_error(a, b), false;
    g->out[i] = pa[i] == 1 ? pb[i] : pa[i];
  }
  g->out[rank - 2] = pa[rank - 2];
  g->out[rank - 1] = pb[rank - 1];
  g->k = pa[rank - 1];
  g->a.assign(pa.begin(), pa.end());
  g->b.assign(pb.begin(), pb.end());
  g->a_strides = dense_strides(g->a);
  g->b_strides = dense_strides(g->b);
  g->onnx_out.assign(g->out.begin(), g->out.end());
  if (b_vec) g->onnx_out.pop_back();
  if (a_vec) g->onnx_out.erase(g->onnx_out.end() - (b_vec ? 1 : 2));
  // [..., M, K] x [K, N] is one [batch*M, K] x [K, N] product: a single GEMM
  // whose weights oneDNN can pack, instead of a batch of small ones.
  if (b.size() == 2 && !b_vec && a.size() > 2) {
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < a.size(); ++i) rows *= a[i];
    g->a = {rows, g->k};
    g->b = {g->k, g->out.back()};
    g->out = {rows, g->out.back()};
    g->a_strides = dense_strides(g->a);
    g->b_strides = dense_strides(g->b);
  }
  return true;
}

bool gemm_geometry(const std::vector<int64_t>& a, const std::vector<int64_t>& b, const MatMulSpec& s,
                   Geometry* g, std::string* err) {
  int64_t m = s.trans_a ? a[1] : a[0], k = s.trans_a ? a[0] : a[1];
  int64_t kb = s.trans_b ? b[1] : b[0], n = s.trans_b ? b[0] : b[1];
  if (k != kb) return *err = "Gemm inner dimensions differ: " + std::to_string(k) + " and " + std::to_string(kb), false;
  g->a = {m, k};
  g->b = {k, n};
  g->out = {m, n};
  g->a_strides = s.trans_a ? dims_t{1, m} : dims_t{k, 1};
  g->b_strides = s.trans_b ? dims_t{1, k} : dims_t{n, 1};
  g->onnx_out = {m, n};
  g->k = k;
  return true;
}

// What one call binds (BoundArgs): the matmul's arguments and, with bf16,
// the conversions of A and of a B that is not constant; the indices of the
// arguments each call points at its own buffers.
struct MatMulCall {
  BoundArgs a_to_bf16, b_to_bf16, matmul;
  size_t a = 0, b = 0, c = 0, residual = 0, dst = 0;
};

struct MatMulPrepared {
  Geometry geo;
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
  dnnl::memory weights;         // reordered constant weights (empty: use input 1)
  dnnl::memory bias;            // constant bias
  dnnl::memory::desc c_md;      // Gemm C as a binary post-op operand (zero: none)
  // The residual as the last post-op (zero: none, or added after the
  // primitive because it broadcasts: `residual_out` is then the output shape).
  dnnl::memory::desc residual_md;
  std::vector<int64_t> residual_out;
  std::optional<dnnl::reorder> src_to_bf16, weights_to_bf16;
  mutable BoundPool<MatMulCall> calls;
};

class MatMulKernel : public sdk::Kernel {
 public:
  MatMulKernel(MatMulSpec spec, const DeviceConfig& config)
      : spec_(std::move(spec)), engine_(config.engine) {}

  OnyxStatus* compute(ComputeContext& ctx) override {
    sdk::Tensor a = ctx.in(0), b = ctx.in(1);
    std::optional<sdk::Tensor> c = spec_.gemm ? ctx.input(2) : std::nullopt;
    std::optional<sdk::Tensor> r = spec_.residual_input ? std::optional(ctx.in(*spec_.residual_input)) : std::nullopt;
    std::vector<int64_t> key = shape_key(ctx);
    // Steady state: shapes seen before, their geometry is in the cache
    // (small MatMuls cost little more than this bookkeeping).
    if (auto p = cache_.find(key)) {
      sdk::Tensor y;
      ONYX_SDK_RETURN_IF_ERROR(ctx.output(spec_.output_index, ONYX_DTYPE_FLOAT32, output_shape(*p), &y));
      use_threads_for(ctx, matmul_work(a, b));
      return run(ctx, *p, a, b, c, r, y);
    }
    Geometry geo;
    std::string err;
    bool ok = spec_.gemm ? gemm_geometry(a.shape(), b.shape(), spec_, &geo, &err)
                         : matmul_geometry(a.shape(), b.shape(), &geo, &err);
    if (!ok) return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "%s", err.c_str());
    std::vector<int64_t> out = geo.onnx_out;
    if (r && r->shape() != out && !broadcast_shape(geo.onnx_out, r->shape(), &out))
      return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "MatMul + Add: the Add's inputs do not broadcast");
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(spec_.output_index, ONYX_DTYPE_FLOAT32, out, &y));
    if (y.size() == 0) return nullptr;
    if (geo.k == 0) {  // oneDNN has no empty reductions
      if (!spec_.bias.empty() || c || !spec_.activations.empty() || r)
        return sdk::make_status(ONYX_STATUS_UNIMPLEMENTED,
                                "MatMul with an empty inner dimension and a bias, activation or residual");
      std::memset(y.raw, 0, size_t(y.size()) * sizeof(float));
      return nullptr;
    }
    use_threads_for(ctx, matmul_work(a, b));
    auto p = cache_.get(key, [&] { return prepare(a, b, c, r); });
    if (!p) return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "Gemm: C does not broadcast to the output");
    return run(ctx, *p, a, b, c, r, y);
  }

 private:
  // About 2 * M * N * K summed over the batch (a lower bound when only B is batched).
  double matmul_work(const sdk::Tensor& a, const sdk::Tensor& b) const {
    if (b.rank() == 0 || a.rank() == 0) return 0;
    double n = b.rank() == 1 ? 1.0 : double(spec_.trans_b ? b.dim(0) : b.dim(b.rank() - 1));
    return 2.0 * double(a.size()) * n;
  }

  static const std::vector<int64_t>& output_shape(const MatMulPrepared& p) {
    return p.residual_out.empty() ? p.geo.onnx_out : p.residual_out;
  }

  // Builds the primitive for these shapes; nullptr when the shapes are invalid.
  std::shared_ptr<MatMulPrepared> prepare(const sdk::Tensor& a, const sdk::Tensor& b,
                                          const std::optional<sdk::Tensor>& c,
                                          const std::optional<sdk::Tensor>& r) const {
    auto p = std::make_shared<MatMulPrepared>();
    std::string err;
    bool ok = spec_.gemm ? gemm_geometry(a.shape(), b.shape(), spec_, &p->geo, &err)
                         : matmul_geometry(a.shape(), b.shape(), &p->geo, &err);
    if (!ok) return nullptr;
    const Geometry& g = p->geo;
    dt compute_type = spec_.use_bf16 ? dt::bf16 : dt::f32;
    dnnl::memory::desc src_md = spec_.use_bf16 ? dnnl::memory::desc(g.a, dt::bf16, dense_strides(g.a))
                                               : dnnl::memory::desc(g.a, dt::f32, g.a_strides);
    dnnl::memory::desc user_b_md(g.b, dt::f32, g.b_strides);
    bool reorder_weights = spec_.constant_b.has_value() || spec_.use_bf16;
    dnnl::memory::desc wei_md = spec_.constant_b ? dnnl::memory::desc(g.b, compute_type, dnnl::memory::format_tag::any)
                                : spec_.use_bf16 ? dnnl::memory::desc(g.b, dt::bf16, dense_strides(g.b))
                                                 : user_b_md;
    dnnl::memory::desc dst_md(g.out, dt::f32, dense_strides(g.out));
    dnnl::primitive_attr attr = base_attr();
    dnnl::post_ops ops;
    if (spec_.alpha != 1.f) attr.set_output_scales(0, {spec_.alpha});
    dnnl::memory::desc bias_md;
    if (!spec_.bias.empty()) {
      dims_t bd(g.out.size(), 1);
      bd.back() = g.out.back();
      bias_md = dnnl::memory::desc(bd, dt::f32, dense_strides(bd));
    }
    if (c) {  // Gemm: + beta * C, C broadcast to [M, N]
      dims_t cd = {1, 1};
      if (c->rank() == 1) cd[1] = c->dim(0);
      if (c->rank() == 2) cd = {c->dim(0), c->dim(1)};
      for (size_t i = 0; i < 2; ++i)
        if (cd[i] != 1 && cd[i] != g.out[i]) return nullptr;
      p->c_md = dnnl::memory::desc(cd, dt::f32, dense_strides(cd));
      ops.append_binary(dnnl::algorithm::binary_add, p->c_md);
    }
    for (const Activation& act : spec_.activations) ops.append_eltwise(1.f, act.algorithm, act.alpha, act.beta);
    if (r && r->shape() == g.onnx_out) {
      // Same elements in the same order as the product: the dst's dims.
      p->residual_md = dnnl::memory::desc(g.out, dt::f32, dense_strides(g.out));
      ops.append_binary(dnnl::algorithm::binary_add, p->residual_md);
    } else if (r && !broadcast_shape(g.onnx_out, r->shape(), &p->residual_out)) {
      return nullptr;  // compute() checked this
    }
    attr.set_post_ops(ops);
    dnnl::matmul::desc desc = bias_md ? dnnl::matmul::desc(src_md, wei_md, bias_md, dst_md)
                                      : dnnl::matmul::desc(src_md, wei_md, dst_md);
    p->pd = dnnl::matmul::primitive_desc(desc, attr, engine_);
    p->prim = dnnl::matmul(p->pd);
    if (spec_.use_bf16) {
      p->src_to_bf16 = make_reorder(dnnl::memory::desc(g.a, dt::f32, g.a_strides), p->pd.src_desc(), engine_);
      if (!spec_.constant_b) p->weights_to_bf16 = make_reorder(user_b_md, p->pd.weights_desc(), engine_);
    }
    dnnl::stream& stream = thread_stream();
    if (spec_.constant_b && reorder_weights) {
      p->weights = dnnl::memory(p->pd.weights_desc(), engine_);
      dnnl::memory user(user_b_md, engine_, const_cast<unsigned char*>(spec_.constant_b->bytes.data()));
      dnnl::reorder(user, p->weights).execute(stream, user, p->weights);
    }
    if (!spec_.bias.empty()) {
      p->bias = dnnl::memory(bias_md, engine_);
      std::memcpy(p->bias.get_data_handle(), spec_.bias.data(), spec_.bias.size() * sizeof(float));
    }
    stream.wait();
    return p;
  }

  // The arguments of one call, made once per concurrent caller.
  std::unique_ptr<MatMulCall> bind(const MatMulPrepared& p) const {
    auto call = std::make_unique<MatMulCall>();
    const Geometry& g = p.geo;
    BoundArgs& m = call->matmul;
    dnnl::memory::desc user_a(g.a, dt::f32, g.a_strides), user_b(g.b, dt::f32, g.b_strides);
    call->a = bind_input(m, call->a_to_bf16, DNNL_ARG_SRC, user_a, p.pd.src_desc(), p.src_to_bf16.has_value(), engine_);
    if (p.weights)
      m.add(DNNL_ARG_WEIGHTS, p.weights);
    else
      call->b = bind_input(m, call->b_to_bf16, DNNL_ARG_WEIGHTS, user_b, p.pd.weights_desc(),
                           p.weights_to_bf16.has_value(), engine_);
    if (p.bias) m.add(DNNL_ARG_BIAS, p.bias);
    if (p.c_md) call->c = m.add(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, p.c_md, engine_);
    if (p.residual_md) {  // the last post-op (MatMul heads only: no C before it)
      int index = int(spec_.activations.size());
      call->residual = m.add(DNNL_ARG_ATTR_MULTIPLE_POST_OP(index) | DNNL_ARG_SRC_1, p.residual_md, engine_);
    }
    call->dst = m.add(DNNL_ARG_DST, dnnl::memory::desc(g.out, dt::f32, dense_strides(g.out)), engine_);
    m.add_owned(DNNL_ARG_SCRATCHPAD, p.pd.scratchpad_desc(), engine_);
    return call;
  }

  OnyxStatus* run(ComputeContext& ctx, const MatMulPrepared& p, const sdk::Tensor& a, const sdk::Tensor& b,
                  const std::optional<sdk::Tensor>& c, const std::optional<sdk::Tensor>& r,
                  const sdk::Tensor& y) const {
    dnnl::stream& stream = thread_stream();
    std::unique_ptr<MatMulCall> call = p.calls.take([&] { return bind(p); });
    if (p.src_to_bf16) {
      call->a_to_bf16.point(call->a, a.raw);
      call->a_to_bf16.execute(*p.src_to_bf16, stream);
    } else {
      call->matmul.point(call->a, a.raw);
    }
    if (p.weights_to_bf16) {
      call->b_to_bf16.point(call->b, b.raw);
      call->b_to_bf16.execute(*p.weights_to_bf16, stream);
    } else if (!p.weights) {
      call->matmul.point(call->b, b.raw);
    }
    if (c) {
      const float* c_data = c->data<float>();
      if (spec_.beta != 1.f) {  // the post-op adds C as is: scale a copy
        void* buf = nullptr;
        ONYX_SDK_RETURN_IF_ERROR(ctx.scratch(size_t(c->size()) * sizeof(float), &buf));
        float* scaled = static_cast<float*>(buf);
        for (int64_t i = 0; i < c->size(); ++i) scaled[i] = spec_.beta * c_data[i];
        c_data = scaled;
      }
      call->matmul.point(call->c, c_data);
    }
    if (p.residual_md) call->matmul.point(call->residual, r->raw);
    // A residual that broadcasts: the product goes to scratch and the Add
    // follows as ONNX broadcasts it (rare: shapes only known at run time).
    float* product = static_cast<float*>(y.raw);
    if (!p.residual_out.empty()) {
      void* buf = nullptr;
      ONYX_SDK_RETURN_IF_ERROR(ctx.scratch(size_t(sdk::element_count(p.geo.onnx_out)) * sizeof(float), &buf));
      product = static_cast<float*>(buf);
    }
    call->matmul.point(call->dst, product);
    call->matmul.execute(p.prim, stream);
    stream.wait();
    p.calls.give_back(std::move(call));
    if (!p.residual_out.empty())
      add_broadcast(product, p.geo.onnx_out, r->data<float>(), r->shape(), static_cast<float*>(y.raw),
                    p.residual_out);
    return nullptr;
  }

  MatMulSpec spec_;
  dnnl::engine engine_;
  mutable ShapeCache<MatMulPrepared> cache_;
};

std::string matmul_supports(const NodeInfo& node) {
  RETURN_IF_REASON(require_f32(node, {0, 1}));
  RETURN_IF_REASON(require_rank(node, 0, 1, 8));
  return require_rank(node, 1, 1, 8);
}

std::string gemm_supports(const NodeInfo& node) {
  RETURN_IF_REASON(require_f32(node, {0, 1, 2}));
  RETURN_IF_REASON(require_rank(node, 0, 2, 2));
  RETURN_IF_REASON(require_rank(node, 1, 2, 2));
  if (node.input_present(2)) return require_rank(node, 2, 0, 2);
  return {};
}

MatMulSpec spec_of(const NodeInfo& head, const DeviceConfig& config) {
  MatMulSpec s;
  s.gemm = head.op_type == "Gemm";
  if (s.gemm) {
    s.trans_a = head.get_int("transA", 0) != 0;
    s.trans_b = head.get_int("transB", 0) != 0;
    s.alpha = float(head.get_float("alpha", 1.0));
    s.beta = float(head.get_float("beta", 1.0));
  }
  if (is_constant(head, 1)) s.constant_b = head.inputs[1].constant;
  s.use_bf16 = config.use_bf16;
  return s;
}

// The bias a fused Add adds over the last axis of the MatMul's output, or
// the reason it is not such a bias.
std::string bias_of(const ChainNode& add, int64_t n, size_t out_rank, std::vector<float>* bias) {
  const NodeInfo& node = add.info;
  size_t other = add.from_previous == 0 ? 1 : 0;
  if (node.opset < 7) return "Add before opset 7 broadcasts differently";
  if (!is_constant(node, other)) return "the Add's other input is not a constant";
  const sdk::ConstantTensor& c = *node.inputs[other].constant;
  if (c.dtype != ONYX_DTYPE_FLOAT32) return "the bias is not float32";
  if (c.dims.size() > out_rank) return "the bias has a higher rank than the product";
  for (size_t i = 0; i + 1 < c.dims.size(); ++i)
    if (c.dims[i] != 1) return "the bias is not a vector over the last axis";
  int64_t last = c.dims.empty() ? 1 : c.dims.back();
  if (last != n && last != 1) return "the bias does not match the output's last axis";
  bias->assign(size_t(n), 0.f);
  for (int64_t i = 0; i < n; ++i) (*bias)[size_t(i)] = c.data<float>()[last == 1 ? 0 : i];
  return {};
}

// The residual Add that may end a MatMul's chain: a float32 tensor (not the
// constant bias right after the product) of the product's rank whose known
// dims match it. Dims known
// only at run time that broadcast are added after the primitive.
std::string residual_reason(const Chain& chain, size_t k) {
  const NodeInfo& head = chain[0].info;
  const NodeInfo& node = chain[k].info;
  if (head.op_type != "MatMul") return "only a MatMul's chain ends with a residual Add";
  if (node.opset < 7) return "Add before opset 7 broadcasts differently";
  if (head.inputs[0].rank < 2 || head.inputs[1].rank < 2) return "MatMul of a vector";
  const sdk::ValueDesc& product = chain[k - 1].info.outputs[0];
  const sdk::ValueDesc& other = node.inputs[chain[k].from_previous == 0 ? 1 : 0];
  if (other.dtype != ONYX_DTYPE_FLOAT32) return "the residual is not float32";
  if (product.rank < 0 || other.rank != product.rank) return "the residual's rank differs from the product's";
  for (size_t i = 0; i < size_t(other.rank); ++i)
    if (other.dims[i] >= 0 && product.dims[i] >= 0 && other.dims[i] != product.dims[i])
      return "the residual broadcasts";
  return {};
}

// A Mul or Div of the product by a constant scalar (attention's scaling),
// as a linear post-op: alpha = c, or 1/c for a Div (x * (1/c) may differ
// from x / c by an ulp, far inside what the product's summation order
// already moves; the special values agree: c = 0 gives inf, 0 * inf NaN).
// "" with *scale set, or why not.
std::string scale_reason(const ChainNode& link, float* scale) {
  const NodeInfo& node = link.info;
  size_t other = link.from_previous == 0 ? 1 : 0;
  if (node.opset < 7) return node.op_type + " before opset 7 broadcasts differently";
  if (node.op_type == "Div" && link.from_previous != 0) return "a constant divided by the product";
  if (!is_constant(node, other)) return node.op_type + " by a tensor that is not a constant";
  const sdk::ConstantTensor& c = *node.inputs[other].constant;
  if (c.dtype != ONYX_DTYPE_FLOAT32 || c.size() != 1) return node.op_type + " by a constant that is not a float32 scalar";
  if (c.dims.size() > size_t(std::max<int32_t>(node.inputs[link.from_previous].rank, 0)))
    return node.op_type + " by a scalar of a higher rank than the product";
  float v = c.data<float>()[0];
  *scale = node.op_type == "Mul" ? v : 1.f / v;
  return {};
}

// Reads the chain into *spec (when given); "" or why it is not a group.
std::string parse_chain(const Chain& chain, MatMulSpec* spec) {
  const NodeInfo& head = chain[0].info;
  size_t group_inputs = head.inputs.size();  // the group's inputs before node k's
  bool activation = false, residual = false, scaled = false;
  for (size_t k = 1; k < chain.size(); ++k) {
    const NodeInfo& node = chain[k].info;
    if (node.outputs.size() != 1) return node.op_type + " has several outputs";
    if (residual) return "the residual Add ends the group";
    std::string why;
    if (node.op_type == "Add" && k == 1 && is_constant(node, chain[k].from_previous == 0 ? 1 : 0)) {
      if (head.op_type != "MatMul") return "Gemm's C is its bias already";
      if (head.inputs[0].rank < 2 || head.inputs[1].rank < 2) return "MatMul of a vector";
      int64_t n = head.inputs[1].dims.back();
      if (n < 0) return "the MatMul's output width is unknown at session creation";
      std::vector<float> bias;
      why = bias_of(chain[k], n, size_t(std::max(head.inputs[0].rank, head.inputs[1].rank)), &bias);
      if (!why.empty()) return why;
      if (spec) spec->bias = std::move(bias);
    } else if ((node.op_type == "Mul" || node.op_type == "Div") && !activation) {
      float scale = 1.f;
      why = scaled ? "only one scale is fused" : scale_reason(chain[k], &scale);
      if (!why.empty()) return why;
      scaled = true;
      if (spec) spec->activations.push_back({dnnl::algorithm::eltwise_linear, scale, 0.f});
    } else if (node.op_type == "Add") {
      why = residual_reason(chain, k);
      if (!why.empty()) return why;
      residual = true;
      if (spec) spec->residual_input = group_inputs;
    } else {
      Activation act;
      if (chain[k].from_previous != 0 || !activation_of(node, &act, &why))
        return why.empty() ? node.op_type + " is not an activation of the product" : why;
      if (activation) return "only one activation is fused";
      activation = true;
      if (spec) spec->activations.push_back(act);
    }
    group_inputs += node.inputs.size() - 1;  // less the value the previous node computed
  }
  return {};
}

}  // namespace

std::string matmul_group_supports(const Chain& chain) {
  const NodeInfo& head = chain[0].info;
  std::string why = head.op_type == "Gemm" ? gemm_supports(head) : matmul_supports(head);
  if (!why.empty()) return why;
  return parse_chain(chain, nullptr);
}

std::unique_ptr<sdk::Kernel> create_matmul_group(const Chain& chain, const DeviceConfig& config) {
  MatMulSpec spec = spec_of(chain[0].info, config);
  parse_chain(chain, &spec);
  spec.output_index = chain.size() - 1;  // every node of a chain has one output
  return std::make_unique<MatMulKernel>(std::move(spec), config);
}

void add_matmul_ops(OpRegistry& ops) {
  auto create = [](const NodeInfo& n, const DeviceConfig& c) {
    return std::unique_ptr<sdk::Kernel>(new MatMulKernel(spec_of(n, c), c));
  };
  ops.add(OpBuilder("MatMul").check(matmul_supports).create(create));
  ops.add(OpBuilder("Gemm").since(7).check(gemm_supports).create(create));
}

}  // namespace onyx::onednn
