// Softmax and LogSoftmax on oneDNN's softmax_v2 primitive.
#include "ops.h"

namespace onyx::onednn {
namespace {

struct SoftmaxPrepared {
  dnnl::softmax_v2_forward::primitive_desc pd;
  dnnl::softmax_v2_forward prim;
  mutable BoundPool<BoundArgs> calls;
};

class SoftmaxKernel : public sdk::Kernel {
 public:
  SoftmaxKernel(bool log, int64_t axis, bool coerce_2d, const DeviceConfig& config)
      : log_(log), axis_(axis), coerce_2d_(coerce_2d), engine_(config.engine) {}

  OnyxStatus* compute(ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_FLOAT32, x.dims, &y));
    int64_t rank = int64_t(x.rank());
    int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    if (rank == 0 || axis < 0 || axis >= rank)
      return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "%s: axis %lld out of range for rank %lld",
                              log_ ? "LogSoftmax" : "Softmax", (long long)axis_, (long long)rank);
    if (x.size() == 0) return nullptr;
    // Opsets before 13 see the input as [outer, inner] split at axis; from 13
    // on softmax runs along one axis: seen as [outer, axis, inner].
    int64_t outer = 1, mid = 1, inner = 1;
    for (int64_t i = 0; i < rank; ++i) {
      int64_t d = x.dim(size_t(i));
      if (i < axis) outer *= d;
      else if (i == axis || coerce_2d_) mid *= d;
      else inner *= d;
    }
    std::vector<int64_t> dims = {outer, mid, inner};
    use_threads_for(ctx, 10.0 * double(x.size()));
    auto p = cache_.get(dims, [&] {
      auto made = std::make_shared<SoftmaxPrepared>();
      auto md = plain_md(dims);
      dnnl::softmax_v2_forward::desc desc(dnnl::prop_kind::forward_inference,
                                          log_ ? dnnl::algorithm::softmax_log : dnnl::algorithm::softmax_accurate,
                                          md, md, 1);
      made->pd = dnnl::softmax_v2_forward::primitive_desc(desc, base_attr(), engine_);
      made->prim = dnnl::softmax_v2_forward(made->pd);
      return made;
    });
    execute_bound(p->calls, p->prim, p->pd, {{DNNL_ARG_SRC, x.raw}, {DNNL_ARG_DST, y.raw}});
    return nullptr;
  }
  void output_memory(std::span<OnyxOutputMemoryInfo> out) const override {
    if (!out.empty()) out[0].kind = ONYX_OUTPUT_MAY_OVERWRITE_INPUT, out[0].input_index = 0;
  }

 private:
  bool log_;
  int64_t axis_;
  bool coerce_2d_;
  dnnl::engine engine_;
  ShapeCache<SoftmaxPrepared> cache_;
};

std::string softmax_supports(const NodeInfo& n) { return require_f32(n, {0}); }

}  // namespace

void add_softmax_ops(OpRegistry& ops) {
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    ops.add(OpBuilder(op).check(softmax_supports).create([](const NodeInfo& n, const DeviceConfig& c) {
      bool coerce = n.opset < 13;
      return std::make_unique<SoftmaxKernel>(n.op_type == "LogSoftmax", n.get_int("axis", coerce ? 1 : -1), coerce,
                                             c);
    }));
  }
}

}  // namespace onyx::onednn
