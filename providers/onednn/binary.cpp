// Add, Sub, Mul and Div (float32, numpy broadcasting) on oneDNN's binary
// primitive. oneDNN broadcasts only its second operand, so when the first
// input is the one that broadcasts: Add and Mul swap operands; otherwise the
// first input is expanded into the output buffer and the op runs in place.
#include <cstring>

#include "ops.h"
#include "spatial.h"

namespace onyx::onednn {
namespace {

using dnnl::algorithm;

struct BinaryPrepared {
  std::vector<int64_t> out;    // ONNX output shape
  dims_t a, b, dst;            // oneDNN dims (same rank)
  bool swap = false;           // run as op(b, a)
  bool expand_a = false;       // a is expanded into the output first
  dnnl::binary::primitive_desc pd;
  dnnl::binary prim;
  mutable BoundPool<BoundArgs> calls;
};

dims_t padded(const std::vector<int64_t>& d, size_t rank) {
  dims_t p(rank - d.size(), 1);
  p.insert(p.end(), d.begin(), d.end());
  return p;
}

// Copies `src` (dims `from`, broadcastable to `to`, same rank) into `dst`.
void expand(const float* src, const dims_t& from, float* dst, const dims_t& to) {
  size_t rank = to.size();
  dims_t src_strides = dense_strides(from);
  for (size_t i = 0; i < rank; ++i)
    if (from[i] == 1) src_strides[i] = 0;
  int64_t count = 1;
  for (int64_t d : to) count *= d;
  std::vector<int64_t> index(rank, 0);
  int64_t offset = 0;
  for (int64_t n = 0; n < count; ++n) {
    dst[n] = src[offset];
    for (size_t i = rank; i-- > 0;) {  // next index, odometer style
      offset += src_strides[i];
      if (++index[i] < to[i]) break;
      offset -= src_strides[i] * to[i];
      index[i] = 0;
    }
  }
}

class BinaryKernel : public sdk::Kernel {
 public:
  BinaryKernel(algorithm alg, bool commutative, std::string op, const DeviceConfig& config)
      : alg_(alg), commutative_(commutative), op_(std::move(op)), engine_(config.engine) {}

  OnyxStatus* compute(ComputeContext& ctx) override {
    sdk::Tensor a = ctx.in(0), b = ctx.in(1);
    std::vector<int64_t> out;
    if (!broadcast_shape(a.shape(), b.shape(), &out))
      return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "%s: input shapes do not broadcast", op_.c_str());
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_FLOAT32, out, &y));
    if (y.size() == 0) return nullptr;
    use_threads_for(ctx, 8.0 * double(y.size()));  // memory-bound: as eltwise.cpp
    auto p = cache_.get(shape_key(ctx), [&] { return prepare(a.shape(), b.shape(), out); });
    const void* first = p->swap ? b.raw : a.raw;
    const void* second = p->swap ? a.raw : b.raw;
    if (p->expand_a) {
      expand(a.data<float>(), p->a, y.data<float>(), p->dst);
      first = y.raw;
    }
    execute_bound(p->calls, p->prim, p->pd, {{DNNL_ARG_SRC_0, first}, {DNNL_ARG_SRC_1, second}, {DNNL_ARG_DST, y.raw}});
    return nullptr;
  }
  // oneDNN's binary runs with the output in the first input's buffer.
  void output_memory(std::span<OnyxOutputMemoryInfo> out) const override {
    if (!out.empty()) out[0].kind = ONYX_OUTPUT_MAY_OVERWRITE_INPUT, out[0].input_index = 0;
  }

 private:
  std::shared_ptr<BinaryPrepared> prepare(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                                          const std::vector<int64_t>& out) const {
    auto p = std::make_shared<BinaryPrepared>();
    size_t rank = std::max<size_t>(out.size(), 1);
    p->out = out;
    p->a = padded(a, rank);
    p->b = padded(b, rank);
    p->dst = padded(out, rank);
    p->swap = p->a != p->dst && p->b == p->dst && commutative_;
    p->expand_a = p->a != p->dst && !p->swap;
    dnnl::memory::desc src0 = plain_md(p->swap ? p->b : p->dst), src1 = plain_md(p->swap ? p->a : p->b);
    dnnl::binary::desc desc(alg_, src0, src1, plain_md(p->dst));
    p->pd = dnnl::binary::primitive_desc(desc, base_attr(), engine_);
    p->prim = dnnl::binary(p->pd);
    return p;
  }

  algorithm alg_;
  bool commutative_;
  std::string op_;
  dnnl::engine engine_;
  ShapeCache<BinaryPrepared> cache_;
};

std::string binary_supports(const NodeInfo& n) {
  if (n.inputs.size() != 2) return n.op_type + " takes 2 inputs";
  return require_f32(n, {0, 1});
}

}  // namespace

bool broadcast_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b, std::vector<int64_t>* out) {
  size_t rank = std::max(a.size(), b.size());
  out->assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i + a.size() >= rank ? a[i + a.size() - rank] : 1;
    int64_t db = i + b.size() >= rank ? b[i + b.size() - rank] : 1;
    if (da != db && da != 1 && db != 1) return false;
    (*out)[i] = da == 1 ? db : da;
  }
  return true;
}

void add_broadcast(const float* a, const std::vector<int64_t>& a_dims, const float* b,
                   const std::vector<int64_t>& b_dims, float* y, const std::vector<int64_t>& out) {
  size_t rank = out.size();
  const dims_t pa = padded(a_dims, rank), pb = padded(b_dims, rank);
  dims_t sa = dense_strides(pa), sb = dense_strides(pb);
  for (size_t i = 0; i < rank; ++i) {
    if (pa[i] == 1) sa[i] = 0;
    if (pb[i] == 1) sb[i] = 0;
  }
  int64_t count = sdk::element_count(out);
  std::vector<int64_t> index(rank, 0);
  int64_t ia = 0, ib = 0;
  for (int64_t n = 0; n < count; ++n) {
    y[n] = a[ia] + b[ib];
    for (size_t i = rank; i-- > 0;) {  // next index, odometer style
      ia += sa[i];
      ib += sb[i];
      if (++index[i] < out[i]) break;
      ia -= sa[i] * out[i];
      ib -= sb[i] * out[i];
      index[i] = 0;
    }
  }
}

void add_binary_ops(OpRegistry& ops) {
  struct Entry {
    const char* op;
    algorithm alg;
    bool commutative;
  };
  static const Entry kOps[] = {{"Add", algorithm::binary_add, true},
                               {"Sub", algorithm::binary_sub, false},
                               {"Mul", algorithm::binary_mul, true},
                               {"Div", algorithm::binary_div, false}};
  for (const Entry& e : kOps) {
    // Opset 7 brought numpy broadcasting (earlier: the `broadcast` attribute).
    ops.add(OpBuilder(e.op).since(7).check(binary_supports).create([e](const NodeInfo& n, const DeviceConfig& c) {
      return std::make_unique<BinaryKernel>(e.alg, e.commutative, n.op_type, c);
    }));
  }
}

}  // namespace onyx::onednn
