// Element-wise activations on oneDNN's eltwise primitive. The same mapping
// (activation_of) turns an activation node into a post-op of a fused group.
#include <cfloat>
#include <cmath>

#include "ops.h"

namespace onyx::onednn {
namespace {

using dnnl::algorithm;

// The value of a scalar constant input `k` (Clip's bounds).
bool constant_scalar(const NodeInfo& node, size_t k, float* out) {
  const auto& c = node.inputs[k].constant;
  if (!c || c->dtype != ONYX_DTYPE_FLOAT32 || c->size() != 1) return false;
  *out = *c->data<float>();
  return true;
}

}  // namespace

bool activation_of(const NodeInfo& node, Activation* out, std::string* reason) {
  const std::string& op = node.op_type;
  *out = Activation{};
  auto set = [&](algorithm alg, float alpha = 0.f, float beta = 0.f) {
    *out = Activation{alg, alpha, beta};
    return true;
  };
  // com.microsoft's Gelu is ONNX's erf Gelu (no attributes).
  if (!node.domain.empty() && !(node.domain == "com.microsoft" && op == "Gelu"))
    return *reason = "not an ai.onnx op", false;
  if (op == "Relu") return set(algorithm::eltwise_relu);
  if (op == "LeakyRelu") return set(algorithm::eltwise_relu, float(node.get_float("alpha", 0.01)));
  if (op == "Elu") return set(algorithm::eltwise_elu, float(node.get_float("alpha", 1.0)));
  if (op == "Sigmoid") return set(algorithm::eltwise_logistic);
  if (op == "Tanh") return set(algorithm::eltwise_tanh);
  if (op == "Exp") return set(algorithm::eltwise_exp);
  // oneDNN's log is off by ~1e-6 absolute near 1: outside ONNX's tolerance.
  if (op == "Log") return *reason = "oneDNN's log is not accurate enough near 1", false;
  if (op == "Sqrt") return set(algorithm::eltwise_sqrt);
  if (op == "Abs") return set(algorithm::eltwise_abs);
  if (op == "Neg") return set(algorithm::eltwise_linear, -1.f, 0.f);
  if (op == "Reciprocal") return set(algorithm::eltwise_pow, 1.f, -1.f);
  // oneDNN's soft_relu loses relative accuracy where log(1 + exp(x)) is
  // tiny (x << 0): 1% off at x = -10 (ONNX's test_mish_expanded).
  if (op == "Softplus") return *reason = "oneDNN's softplus is not accurate enough for x << 0", false;
  // Measured against float64 (tests/providers/onednn/activation_accuracy_test):
  // oneDNN's mish is 2x off for x << 0 (-2.0e-6 for -9.9e-7 at x = -16.6)
  // and its tanh-Gelu 0.4% off at x = -4.15: outside ONNX's tolerance.
  if (op == "Mish") return *reason = "oneDNN's mish is not accurate enough for x << 0", false;
  if (op == "HardSwish") return set(algorithm::eltwise_hardswish);
  if (op == "Round") return set(algorithm::eltwise_round);
  if (op == "Gelu") {
    std::string approximate = node.get_string("approximate", "none");
    if (approximate == "none") return set(algorithm::eltwise_gelu_erf);
    if (approximate == "tanh") return *reason = "oneDNN's tanh-Gelu is not accurate enough for x < -4", false;
    return *reason = "Gelu approximate='" + approximate + "' is not defined by ONNX", false;
  }
  if (op == "Clip") {
    float lo = -INFINITY, hi = INFINITY;
    if (node.opset < 11) {
      // Opset 6's defaults are the float range, not infinities.
      lo = float(node.get_float("min", -FLT_MAX));
      hi = float(node.get_float("max", FLT_MAX));
    } else {
      if (node.input_present(1) && !constant_scalar(node, 1, &lo))
        return *reason = "Clip min is not a constant float32 scalar", false;
      if (node.input_present(2) && !constant_scalar(node, 2, &hi))
        return *reason = "Clip max is not a constant float32 scalar", false;
    }
    // ONNX gives max when min > max; oneDNN's clip does not promise that.
    if (lo > hi) return *reason = "Clip with min > max", false;
    return set(algorithm::eltwise_clip_v2, lo, hi);
  }
  return *reason = "op " + op + " has no oneDNN eltwise form", false;
}

namespace {

struct EltwisePrepared {
  dnnl::eltwise_forward::primitive_desc pd;
  dnnl::eltwise_forward prim;
  mutable BoundPool<BoundArgs> calls;
};

class EltwiseKernel : public sdk::Kernel {
 public:
  EltwiseKernel(Activation act, const DeviceConfig& config) : act_(act), engine_(config.engine) {}

  OnyxStatus* compute(ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_FLOAT32, x.dims, &y));
    int64_t n = x.size();
    if (n == 0) return nullptr;
    use_threads_for(ctx, 8.0 * double(n));
    auto prepared = cache_.get({n}, [&] {
      auto md = plain_md({n});
      dnnl::eltwise_forward::desc desc(dnnl::prop_kind::forward_inference, act_.algorithm, md,
                                       act_.alpha, act_.beta);
      auto p = std::make_shared<EltwisePrepared>();
      p->pd = dnnl::eltwise_forward::primitive_desc(desc, base_attr(), engine_);
      p->prim = dnnl::eltwise_forward(p->pd);
      return p;
    });
    execute_bound(prepared->calls, prepared->prim, prepared->pd, {{DNNL_ARG_SRC, x.raw}, {DNNL_ARG_DST, y.raw}});
    return nullptr;
  }
  // oneDNN's eltwise runs in place.
  void output_memory(std::span<OnyxOutputMemoryInfo> out) const override {
    if (!out.empty()) out[0].kind = ONYX_OUTPUT_MAY_OVERWRITE_INPUT, out[0].input_index = 0;
  }

 private:
  Activation act_;
  dnnl::engine engine_;
  ShapeCache<EltwisePrepared> cache_;
};

std::string eltwise_supports(const NodeInfo& node) {
  Activation act;
  std::string reason;
  if (!activation_of(node, &act, &reason)) return reason;
  return require_f32(node, {0});
}

}  // namespace

void add_eltwise_ops(OpRegistry& ops) {
  struct Entry {
    const char* op;
    int64_t since;
  };
  // Opset ranges where the op's definition matches what activation_of maps.
  static const Entry kOps[] = {{"Relu", 6},     {"LeakyRelu", 6}, {"Elu", 6},        {"Sigmoid", 6},
                               {"Tanh", 6},     {"Exp", 6},        {"Sqrt", 6},
                               {"Abs", 6},      {"Neg", 6},       {"Reciprocal", 6},
                               {"HardSwish", 14}, {"Round", 11},    {"Gelu", 20},
                               {"Clip", 6}};
  auto create = [](const NodeInfo& node, const DeviceConfig& config) {
    Activation act;
    std::string reason;
    activation_of(node, &act, &reason);
    return std::make_unique<EltwiseKernel>(act, config);
  };
  for (const Entry& e : kOps) ops.add(OpBuilder(e.op).since(e.since).check(eltwise_supports).create(create));
  // The erf Gelu the graph optimizer writes for models before opset 20
  // (and ORT's transformers optimizer writes), same as ONNX's.
  ops.add(OpBuilder("Gelu").domain("com.microsoft").since(1).check(eltwise_supports).create(create));
}

}  // namespace onyx::onednn
