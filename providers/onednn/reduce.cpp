// ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1,
// ReduceL2 and ReduceSumSquare on oneDNN's reduction primitive.
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "ops.h"

namespace onyx::onednn {
namespace {

using dnnl::algorithm;

struct ReduceSpec {
  algorithm alg = algorithm::reduction_sum;
  float p = 0.f;
  std::string op;
  std::optional<std::vector<int64_t>> axes;  // nullopt: all axes (or none, with noop)
  bool keepdims = true, noop_with_empty_axes = false;
};

// The value of a reduction over an empty set.
float empty_value(const std::string& op) {
  if (op == "ReduceProd") return 1.f;
  if (op == "ReduceMax") return -std::numeric_limits<float>::infinity();
  if (op == "ReduceMin") return std::numeric_limits<float>::infinity();
  if (op == "ReduceMean") return std::numeric_limits<float>::quiet_NaN();
  return 0.f;  // sums and norms
}

// The value of a reduction over one element x.
float single_value(const std::string& op, float x) {
  if (op == "ReduceL1" || op == "ReduceL2") return std::fabs(x);
  if (op == "ReduceSumSquare") return x * x;
  return x;
}

struct ReducePrepared {
  dnnl::reduction::primitive_desc pd;
  dnnl::reduction prim;
  mutable BoundPool<BoundArgs> calls;
};

class ReduceKernel : public sdk::Kernel {
 public:
  ReduceKernel(ReduceSpec spec, const DeviceConfig& config) : spec_(std::move(spec)), engine_(config.engine) {}

  OnyxStatus* compute(ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    int64_t rank = int64_t(x.rank());
    std::set<int64_t> reduced;
    bool identity = spec_.noop_with_empty_axes && (!spec_.axes || spec_.axes->empty());
    if (!identity) {
      if (!spec_.axes || spec_.axes->empty())
        for (int64_t i = 0; i < rank; ++i) reduced.insert(i);
      for (int64_t a : spec_.axes.value_or(std::vector<int64_t>{})) {
        int64_t axis = a < 0 ? a + rank : a;
        if (axis < 0 || axis >= rank)
          return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "%s: axis %lld out of range for rank %lld",
                                  spec_.op.c_str(), (long long)a, (long long)rank);
        reduced.insert(axis);
      }
    }
    std::vector<int64_t> kept_dims, out_dims;  // kept: rank preserved, 1 on reduced axes
    for (int64_t i = 0; i < rank; ++i) {
      bool r = reduced.count(i) > 0;
      kept_dims.push_back(r ? 1 : x.dim(size_t(i)));
      if (!r || spec_.keepdims) out_dims.push_back(r ? 1 : x.dim(size_t(i)));
    }
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_FLOAT32, out_dims, &y));
    float* out = y.data<float>();
    const float* in = x.data<float>();
    if (y.size() == 0) return nullptr;
    if (identity) {
      std::memcpy(out, in, size_t(x.size()) * sizeof(float));
      return nullptr;
    }
    if (x.size() == 0) {
      std::fill(out, out + y.size(), empty_value(spec_.op));
      return nullptr;
    }
    if (y.size() == x.size()) {  // every reduced axis has one element
      for (int64_t i = 0; i < x.size(); ++i) out[i] = single_value(spec_.op, in[i]);
      return nullptr;
    }
    std::vector<int64_t> src_dims = x.shape();
    if (src_dims.empty()) src_dims = {1};
    use_threads_for(ctx, 2.0 * double(x.size()));
    auto p = cache_.get(src_dims, [&] {
      auto made = std::make_shared<ReducePrepared>();
      dnnl::reduction::desc desc(spec_.alg, plain_md(src_dims), plain_md(kept_dims), spec_.p, 0.f);
      made->pd = dnnl::reduction::primitive_desc(desc, base_attr(), engine_);
      made->prim = dnnl::reduction(made->pd);
      return made;
    });
    execute_bound(p->calls, p->prim, p->pd, {{DNNL_ARG_SRC, in}, {DNNL_ARG_DST, out}});
    return nullptr;
  }

 private:
  ReduceSpec spec_;
  dnnl::engine engine_;
  ShapeCache<ReducePrepared> cache_;
};

// Opset from which `axes` is an input instead of an attribute.
int64_t axes_input_since(const std::string& op) { return op == "ReduceSum" ? 13 : 18; }

std::string reduce_supports(const NodeInfo& n) {
  RETURN_IF_REASON(require_f32(n, {0}));
  if (n.inputs[0].rank > 6) return "oneDNN reductions here take rank <= 6";
  if (n.opset >= axes_input_since(n.op_type) && n.input_present(1)) {
    const auto& c = n.inputs[1].constant;
    if (!c) return "axes is not a constant";
    if (c->dtype != ONYX_DTYPE_INT64) return "axes is not int64";
  }
  return {};
}

ReduceSpec spec_of(const NodeInfo& n) {
  ReduceSpec s;
  s.op = n.op_type;
  if (s.op == "ReduceSum") s.alg = algorithm::reduction_sum;
  if (s.op == "ReduceMean") s.alg = algorithm::reduction_mean;
  if (s.op == "ReduceMax") s.alg = algorithm::reduction_max;
  if (s.op == "ReduceMin") s.alg = algorithm::reduction_min;
  if (s.op == "ReduceProd") s.alg = algorithm::reduction_mul;
  if (s.op == "ReduceL1") s.alg = algorithm::reduction_norm_lp_power_p_sum, s.p = 1.f;
  if (s.op == "ReduceL2") s.alg = algorithm::reduction_norm_lp_sum, s.p = 2.f;
  if (s.op == "ReduceSumSquare") s.alg = algorithm::reduction_norm_lp_power_p_sum, s.p = 2.f;
  s.keepdims = n.get_int("keepdims", 1) != 0;
  s.noop_with_empty_axes = n.get_int("noop_with_empty_axes", 0) != 0;
  if (n.opset >= axes_input_since(n.op_type)) {
    if (n.input_present(1)) {
      const sdk::ConstantTensor& c = *n.inputs[1].constant;
      s.axes = std::vector<int64_t>(c.data<int64_t>(), c.data<int64_t>() + c.size());
    }
  } else if (n.has("axes")) {
    s.axes = n.get_ints("axes");
  }
  return s;
}

}  // namespace

void add_reduce_ops(OpRegistry& ops) {
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                         "ReduceL2", "ReduceSumSquare"}) {
    ops.add(OpBuilder(op).check(reduce_supports).create([](const NodeInfo& n, const DeviceConfig& c) {
      return std::unique_ptr<sdk::Kernel>(new ReduceKernel(spec_of(n), c));
    }));
  }
}

}  // namespace onyx::onednn
