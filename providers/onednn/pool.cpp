// MaxPool, AveragePool, GlobalMaxPool and GlobalAveragePool (1-D to 3-D) on
// oneDNN's pooling primitive.
#include "ops.h"
#include "spatial.h"

namespace onyx::onednn {

bool pool_geometry(const PoolSpec& s, const std::vector<int64_t>& x, PoolGeometry* g, std::string* err) {
  size_t spatial = x.size() - 2;
  auto at = [](const std::vector<int64_t>& v, size_t i, int64_t fallback) {
    return i < v.size() ? v[i] : fallback;
  };
  g->out = {x[0], x[1]};
  for (size_t i = 0; i < spatial; ++i) {
    int64_t in = x[2 + i];
    int64_t k = s.global ? in : at(s.kernel, i, 1), st = s.global ? 1 : at(s.strides, i, 1);
    int64_t d = s.global ? 1 : at(s.dilations, i, 1);
    int64_t dk = (k - 1) * d + 1;
    int64_t pb = s.global ? 0 : at(s.pads, i, 0), pe = s.global ? 0 : at(s.pads, i + spatial, 0);
    int64_t out;
    if (s.auto_pad == "SAME_UPPER" || s.auto_pad == "SAME_LOWER") {
      out = (in + st - 1) / st;
      int64_t total = std::max<int64_t>(0, (out - 1) * st + dk - in);
      pb = s.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pe = total - pb;
    } else {
      if (s.auto_pad == "VALID") pb = pe = 0;
      int64_t span = in + pb + pe - dk;
      if (span < 0) return *err = "the pooling window is larger than the padded input", false;
      out = (s.ceil_mode ? (span + st - 1) / st : span / st) + 1;
      // A last window that would start in the end padding is dropped.
      if (s.ceil_mode && (out - 1) * st >= in + pb) --out;
      // oneDNN wants the end padding that makes `out` windows exactly.
      pe = (out - 1) * st + dk - in - pb;
    }
    g->out.push_back(out);
    g->kernel.push_back(k);
    g->strides.push_back(st);
    g->dilates.push_back(d - 1);
    g->pad_begin.push_back(pb);
    g->pad_end.push_back(pe);
  }
  return true;
}

namespace {

struct PoolPrepared {
  PoolGeometry geo;
  dnnl::pooling_v2_forward::primitive_desc pd;
  dnnl::pooling_v2_forward prim;
  mutable BoundPool<BoundArgs> calls;
};

class PoolKernel : public sdk::Kernel {
 public:
  PoolKernel(PoolSpec spec, const DeviceConfig& config) : spec_(std::move(spec)), engine_(config.engine) {}

  OnyxStatus* compute(ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    std::string err;
    PoolGeometry geo;
    if (!pool_geometry(spec_, x.shape(), &geo, &err))
      return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "pooling: %s", err.c_str());
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_FLOAT32, geo.out, &y));
    if (y.size() == 0) return nullptr;
    double window = 1;
    for (int64_t k : spec_.kernel) window *= double(k);
    use_threads_for(ctx, double(x.size()) * window);
    auto p = cache_.get(x.shape(), [&] {
      auto made = std::make_shared<PoolPrepared>();
      made->geo = geo;
      const PoolGeometry& g = made->geo;
      auto alg = spec_.max                 ? dnnl::algorithm::pooling_max
                 : spec_.count_include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                           : dnnl::algorithm::pooling_avg_exclude_padding;
      dnnl::pooling_v2_forward::desc desc(dnnl::prop_kind::forward_inference, alg, plain_md(x.shape()),
                                          plain_md(g.out), g.strides, g.kernel, g.dilates, g.pad_begin,
                                          g.pad_end);
      made->pd = dnnl::pooling_v2_forward::primitive_desc(desc, base_attr(), engine_);
      made->prim = dnnl::pooling_v2_forward(made->pd);
      return made;
    });
    execute_bound(p->calls, p->prim, p->pd, {{DNNL_ARG_SRC, x.raw}, {DNNL_ARG_DST, y.raw}});
    return nullptr;
  }

 private:
  PoolSpec spec_;
  dnnl::engine engine_;
  ShapeCache<PoolPrepared> cache_;
};

std::string pool_supports(const NodeInfo& n) {
  RETURN_IF_REASON(require_f32(n, {0}));
  RETURN_IF_REASON(require_rank(n, 0, 3, 5));
  if (n.outputs.size() > 1 && n.outputs[1].present) return "MaxPool's Indices output is not computed here";
  std::string pad = n.get_string("auto_pad", "NOTSET");
  if (pad != "NOTSET" && pad != "VALID" && pad != "SAME_UPPER" && pad != "SAME_LOWER")
    return "unknown auto_pad '" + pad + "'";
  bool ceil_mode = n.get_int("ceil_mode", 0) != 0;
  if (n.op_type == "AveragePool" && ceil_mode && n.get_int("count_include_pad", 0) != 0)
    return "AveragePool with ceil_mode and count_include_pad";
  if (ceil_mode && pad != "NOTSET" && pad != "VALID") return "ceil_mode with auto_pad SAME";
  if (!n.op_type.starts_with("Global")) {
    size_t spatial = size_t(n.inputs[0].rank - 2);
    if (n.get_ints("kernel_shape").size() != spatial) return "kernel_shape does not match the input rank";
    for (int64_t v : n.get_ints("strides"))
      if (v < 1) return "strides must be >= 1";
    for (int64_t v : n.get_ints("dilations"))
      if (v < 1) return "dilations must be >= 1";
  }
  return {};
}


}  // namespace

PoolSpec read_pool_spec(const NodeInfo& n) {
  PoolSpec s;
  s.global = n.op_type.starts_with("Global");
  s.max = n.op_type.find("Max") != std::string::npos;
  s.ceil_mode = n.get_int("ceil_mode", 0) != 0;
  s.count_include_pad = n.get_int("count_include_pad", 0) != 0;
  s.auto_pad = n.get_string("auto_pad", "NOTSET");
  s.kernel = n.get_ints("kernel_shape");
  s.strides = n.get_ints("strides");
  s.dilations = n.get_ints("dilations");
  s.pads = n.get_ints("pads");
  return s;
}

void add_pool_ops(OpRegistry& ops) {
  for (const char* op : {"MaxPool", "AveragePool", "GlobalMaxPool", "GlobalAveragePool"}) {
    ops.add(OpBuilder(op).check(pool_supports).create([](const NodeInfo& n, const DeviceConfig& c) {
      return std::unique_ptr<sdk::Kernel>(new PoolKernel(read_pool_spec(n), c));
    }));
  }
}

}  // namespace onyx::onednn
