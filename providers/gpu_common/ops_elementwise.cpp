// ops_elementwise.cpp: unary activations, broadcasting binary ops and
// comparisons (float32), Cast and Where.
#include <array>
#include <functional>

#include "gpu_provider.h"
#include "op_util.h"

namespace onyx::gpu {
namespace {

class UnaryKernel : public GpuKernel {
 public:
  UnaryKernel(UnaryOp op, float alpha) : op_(op), alpha_(alpha) {}
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_FLOAT32, x.dims, &y));
    gpuError_t e = launch_unary(kernel_stream(ctx), op_, alpha_, x.data<float>(), y.data<float>(),
                                x.size());
    return e == gpuSuccess ? nullptr : gpu_status(e, "launching an elementwise kernel");
  }

 private:
  UnaryOp op_;
  float alpha_;
};

// A broadcasting op of two float32 tensors: arithmetic (float32 out) or a
// comparison (bool out), by its launcher.
class BroadcastKernel : public GpuKernel {
 public:
  using Launch = std::function<gpuError_t(gpuStream_t, const BroadcastIndex&, const float*, const float*, void*,
                                          int64_t)>;
  BroadcastKernel(int32_t out_dtype, Launch launch, std::string name)
      : out_dtype_(out_dtype), launch_(std::move(launch)), name_(std::move(name)) {}
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor a = ctx.in(0), b = ctx.in(1), y;
    BroadcastIndex index;
    std::vector<int64_t> out_dims;
    std::string error = make_broadcast(a.dims, b.dims, &index, &out_dims);
    if (!error.empty())
      return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "node '%s': %s", name_.c_str(), error.c_str());
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, out_dtype_, out_dims, &y));
    return launch_status(launch_(kernel_stream(ctx), index, a.data<float>(), b.data<float>(), y.raw, y.size()),
                         "launching a broadcasting kernel");
  }

 private:
  int32_t out_dtype_;
  Launch launch_;
  std::string name_;
};

class CastKernel : public GpuKernel {
 public:
  explicit CastKernel(int32_t to) : to_(to) {}
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, to_, x.dims, &y));
    gpuError_t e = launch_cast(kernel_stream(ctx), x.raw, x.dtype, y.raw, to_, x.size());
    return e == gpuSuccess ? nullptr : gpu_status(e, "launching Cast");
  }

 private:
  int32_t to_;
};

bool castable(int32_t dtype) {
  switch (dtype) {
    case ONYX_DTYPE_FLOAT32: case ONYX_DTYPE_UINT8: case ONYX_DTYPE_INT8: case ONYX_DTYPE_INT32:
    case ONYX_DTYPE_INT64: case ONYX_DTYPE_BOOL: case ONYX_DTYPE_FLOAT64: return true;
  }
  return false;
}

// Where(cond, x, y) with three-way broadcasting.
class WhereKernel : public GpuKernel {
 public:
  explicit WhereKernel(std::string name) : name_(std::move(name)) {}
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor c = ctx.in(0), x = ctx.in(1), o = ctx.in(2), y;
    BroadcastIndex unused, ci, xi, oi;
    std::vector<int64_t> cx, out_dims, tmp;
    std::string error = make_broadcast(c.dims, x.dims, &unused, &cx);
    if (error.empty()) error = make_broadcast(cx, o.dims, &unused, &out_dims);
    // Each input's strides against the output shape.
    if (error.empty()) error = make_broadcast(out_dims, c.dims, &ci, &tmp);
    if (error.empty()) error = make_broadcast(out_dims, x.dims, &xi, &tmp);
    if (error.empty()) error = make_broadcast(out_dims, o.dims, &oi, &tmp);
    if (!error.empty())
      return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "node '%s': %s", name_.c_str(), error.c_str());
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, out_dims, &y));
    gpuError_t e = launch_where(kernel_stream(ctx), ci, xi, oi, c.data<unsigned char>(), x.raw, o.raw,
                                y.raw, y.size(), int64_t(sdk::dtype_size(x.dtype)));
    return e == gpuSuccess ? nullptr : gpu_status(e, "launching Where");
  }

 private:
  std::string name_;
};

void add_unary(sdk::KernelRegistry& r, const char* op, int64_t since, UnaryOp kind,
               float default_alpha = 0.f) {
  r.add({"", op, since, 1 << 30, require_float32, [kind, default_alpha](const sdk::NodeInfo& n) {
           return std::make_unique<UnaryKernel>(kind, float(n.get_float("alpha", default_alpha)));
         }});
}

void add_binary(sdk::KernelRegistry& r, const char* op, int64_t since, BinaryOp kind) {
  auto supports = [](const sdk::NodeInfo& n) -> std::string {
    if (n.inputs.size() != 2) return "only the two-input form runs on this provider";
    return require_float32(n);
  };
  r.add({"", op, since, 1 << 30, supports, [kind](const sdk::NodeInfo& n) {
           return std::make_unique<BroadcastKernel>(
               ONYX_DTYPE_FLOAT32,
               [kind](gpuStream_t stream, const BroadcastIndex& index, const float* a, const float* b, void* y,
                      int64_t count) { return launch_binary(stream, kind, index, a, b, static_cast<float*>(y), count); },
               n.name);
         }});
}

void add_compare(sdk::KernelRegistry& r, const char* op, int64_t since, CompareOp kind) {
  r.add({"", op, since, 1 << 30, require_float32, [kind](const sdk::NodeInfo& n) {
           return std::make_unique<BroadcastKernel>(
               ONYX_DTYPE_BOOL,
               [kind](gpuStream_t stream, const BroadcastIndex& index, const float* a, const float* b, void* y,
                      int64_t count) {
                 return launch_compare(stream, kind, index, a, b, static_cast<unsigned char*>(y), count);
               },
               n.name);
         }});
}

}  // namespace

void register_elementwise_kernels(sdk::KernelRegistry& r) {
  // Opset floors are where the op's float semantics took their current form.
  add_unary(r, "Relu", 6, UnaryOp::kRelu);
  add_unary(r, "Sigmoid", 6, UnaryOp::kSigmoid);
  add_unary(r, "Tanh", 6, UnaryOp::kTanh);
  add_unary(r, "Exp", 6, UnaryOp::kExp);
  add_unary(r, "Log", 6, UnaryOp::kLog);
  add_unary(r, "Sqrt", 6, UnaryOp::kSqrt);
  add_unary(r, "Neg", 6, UnaryOp::kNeg);
  add_unary(r, "Abs", 6, UnaryOp::kAbs);
  add_unary(r, "Erf", 9, UnaryOp::kErf);
  add_unary(r, "Reciprocal", 6, UnaryOp::kReciprocal);
  add_unary(r, "LeakyRelu", 6, UnaryOp::kLeakyRelu, 0.01f);
  r.add({"", "Gelu", 20, 1 << 30,
         [](const sdk::NodeInfo& n) -> std::string {
           std::string approx = n.get_string("approximate", "none");
           if (approx != "none" && approx != "tanh") return "unknown Gelu approximation " + approx;
           return require_float32(n);
         },
         [](const sdk::NodeInfo& n) {
           bool tanh = n.get_string("approximate", "none") == "tanh";
           return std::make_unique<UnaryKernel>(tanh ? UnaryOp::kGeluTanh : UnaryOp::kGelu, 0.f);
         }});
  r.add({"", "Cast", 6, 1 << 30,
         [](const sdk::NodeInfo& n) -> std::string {
           int32_t to = int32_t(n.get_int("to", 0));
           if (!castable(n.input_dtype(0)) || !castable(to))
             return std::string("Cast from ") + sdk::dtype_name(n.input_dtype(0)) + " to " +
                    sdk::dtype_name(to) + " is not supported";
           return {};
         },
         [](const sdk::NodeInfo& n) { return std::make_unique<CastKernel>(int32_t(n.get_int("to", 0))); }});
  r.add({"", "Where", 9, 1 << 30,
         [](const sdk::NodeInfo& n) -> std::string {
           if (n.input_dtype(0) != ONYX_DTYPE_BOOL) return "condition must be bool";
           size_t bytes = sdk::dtype_size(n.input_dtype(1));
           if (n.input_dtype(1) != n.input_dtype(2) || (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8))
             return std::string("element type ") + sdk::dtype_name(n.input_dtype(1)) + " is not supported";
           return {};
         },
         [](const sdk::NodeInfo& n) { return std::make_unique<WhereKernel>(n.name); }});
  add_binary(r, "Add", 7, BinaryOp::kAdd);
  add_binary(r, "Sub", 7, BinaryOp::kSub);
  add_binary(r, "Mul", 7, BinaryOp::kMul);
  add_binary(r, "Div", 7, BinaryOp::kDiv);
  add_binary(r, "Pow", 7, BinaryOp::kPow);
  add_binary(r, "Max", 8, BinaryOp::kMax);
  add_binary(r, "Min", 8, BinaryOp::kMin);
  add_compare(r, "Greater", 7, CompareOp::kGreater);
  add_compare(r, "Less", 7, CompareOp::kLess);
  add_compare(r, "GreaterOrEqual", 12, CompareOp::kGreaterOrEqual);
  add_compare(r, "LessOrEqual", 12, CompareOp::kLessOrEqual);
  add_compare(r, "Equal", 7, CompareOp::kEqual);
}

}  // namespace onyx::gpu
