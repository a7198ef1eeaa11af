// ops_linalg.cpp: MatMul, Gemm and Conv (float32). The arithmetic goes to
// the vendor's GEMM and convolution (vendor_gemm / vendor_conv2d).
#include "gpu_provider.h"
#include "op_util.h"

namespace onyx::gpu {
namespace {

using sdk::make_status;

// MatMul with numpy semantics: 1-D operands are promoted and the added
// dimension removed; batch dimensions broadcast.
class MatMulKernel : public GpuKernel {
 public:
  explicit MatMulKernel(std::string name) : name_(std::move(name)) {}
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor a = ctx.in(0), b = ctx.in(1), y;
    if (a.rank() == 0 || b.rank() == 0)
      return make_status(ONYX_STATUS_INVALID_ARGUMENT, "node '%s': MatMul of a scalar", name_.c_str());
    // A 1-D A is [1, K]; a 1-D B is [K, 1].
    bool a_vector = a.rank() == 1, b_vector = b.rank() == 1;
    int64_t m = a_vector ? 1 : a.dim(a.rank() - 2), k = a.dim(a.rank() - 1);
    int64_t kb = b_vector ? b.dim(0) : b.dim(b.rank() - 2), n = b_vector ? 1 : b.dim(b.rank() - 1);
    if (kb != k)
      return make_status(ONYX_STATUS_INVALID_ARGUMENT,
                         "node '%s': inner dimensions differ (%lld vs %lld)", name_.c_str(),
                         (long long)k, (long long)kb);
    std::vector<int64_t> a_batch(a.dims.begin(), a.dims.end() - (a_vector ? 1 : 2));
    std::vector<int64_t> b_batch(b.dims.begin(), b.dims.end() - (b_vector ? 1 : 2));
    BroadcastIndex batch;
    std::vector<int64_t> out_batch;
    std::string error = make_broadcast(a_batch, b_batch, &batch, &out_batch);
    if (!error.empty())
      return make_status(ONYX_STATUS_INVALID_ARGUMENT, "node '%s': batch %s", name_.c_str(),
                         error.c_str());
    std::vector<int64_t> out_dims = out_batch;
    if (!a_vector) out_dims.push_back(m);
    if (!b_vector) out_dims.push_back(n);
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_FLOAT32, out_dims, &y));
    int64_t batches = sdk::element_count(out_batch);
    if (y.size() == 0) return nullptr;
    GemmParams p;
    p.m = m, p.n = n, p.k = k;
    p.lda = k, p.ldb = n, p.ldc = n;
    p.stride_c = m * n;
    // One strided call when each operand's batch is either whole or a single matrix.
    int64_t a_count = sdk::element_count(a_batch), b_count = sdk::element_count(b_batch);
    gpuStream_t stream = kernel_stream(ctx);
    if ((a_count == batches || a_count == 1) && (b_count == batches || b_count == 1)) {
      p.a = a.data<float>(), p.b = b.data<float>(), p.c = y.data<float>();
      p.stride_a = a_count == 1 ? 0 : m * k;
      p.stride_b = b_count == 1 ? 0 : k * n;
      p.batch = batches;
      return vendor_status(vendor_gemm(device->libs, stream, p), name_.c_str());
    }
    // Mixed broadcasting (e.g. [2,1] x [1,3] batches): one call per output matrix.
    for (int64_t i = 0; i < batches; ++i) {
      int64_t ia, ib;
      broadcast_offsets(batch, i, &ia, &ib);
      p.a = a.data<float>() + ia * m * k, p.b = b.data<float>() + ib * k * n;
      p.c = y.data<float>() + i * m * n;
      ONYX_SDK_RETURN_IF_ERROR(vendor_status(vendor_gemm(device->libs, stream, p), name_.c_str()));
    }
    return nullptr;
  }

 private:
  std::string name_;
};

// Gemm: Y = alpha * op(A) * op(B) + beta * C, C broadcast to [M, N].
class GemmKernel : public GpuKernel {
 public:
  GemmKernel(bool trans_a, bool trans_b, float alpha, float beta, std::string name)
      : trans_a_(trans_a), trans_b_(trans_b), alpha_(alpha), beta_(beta), name_(std::move(name)) {}
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor a = ctx.in(0), b = ctx.in(1), y;
    auto c = ctx.input(2);
    if (a.rank() != 2 || b.rank() != 2)
      return make_status(ONYX_STATUS_INVALID_ARGUMENT, "node '%s': Gemm needs 2-D A and B",
                         name_.c_str());
    int64_t m = trans_a_ ? a.dim(1) : a.dim(0), k = trans_a_ ? a.dim(0) : a.dim(1);
    int64_t kb = trans_b_ ? b.dim(1) : b.dim(0), n = trans_b_ ? b.dim(0) : b.dim(1);
    if (k != kb)
      return make_status(ONYX_STATUS_INVALID_ARGUMENT, "node '%s': inner dimensions differ (%lld vs %lld)",
                         name_.c_str(), (long long)k, (long long)kb);
    int64_t out_dims[2] = {m, n};
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_FLOAT32, out_dims, &y));
    if (y.size() == 0) return nullptr;
    GemmParams p;
    p.m = m, p.n = n, p.k = k, p.trans_a = trans_a_, p.trans_b = trans_b_;
    p.a = a.data<float>(), p.lda = a.dim(1);
    p.b = b.data<float>(), p.ldb = b.dim(1);
    p.c = y.data<float>(), p.ldc = n;
    p.alpha = alpha_;
    gpuStream_t stream = kernel_stream(ctx);
    ONYX_SDK_RETURN_IF_ERROR(vendor_status(vendor_gemm(device->libs, stream, p), name_.c_str()));
    if (!c || beta_ == 0.f) return nullptr;
    // beta == 1 (checked at creation): Y += C, broadcast.
    BroadcastIndex index;
    std::vector<int64_t> dims;
    std::string error = make_broadcast(out_dims, c->dims, &index, &dims);
    if (!error.empty() || dims.size() != 2 || dims[0] != m || dims[1] != n)
      return make_status(ONYX_STATUS_INVALID_ARGUMENT, "node '%s': C does not broadcast to [%lld, %lld]",
                         name_.c_str(), (long long)m, (long long)n);
    return launch_status(launch_binary(stream, BinaryOp::kAdd, index, y.data<float>(),
                                       c->data<float>(), y.data<float>(), y.size()),
                         "adding Gemm's C");
  }

 private:
  bool trans_a_, trans_b_;
  float alpha_, beta_;
  std::string name_;
};

// 2-D convolution, NCHW, explicit symmetric pads (or VALID).
class ConvKernel : public GpuKernel {
 public:
  ConvKernel(const sdk::NodeInfo& n) : shape_(conv2d_attributes(n)), name_(n.name) {}
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), w = ctx.in(1), y;
    auto bias = ctx.input(2);
    Conv2dShape s = shape_;
    if (std::string error = complete_conv2d_shape(x.dims, w.dims, &s); !error.empty())
      return make_status(ONYX_STATUS_INVALID_ARGUMENT, "node '%s': %s", name_.c_str(), error.c_str());
    if (bias && (bias->rank() != 1 || bias->dim(0) != s.out_channels))
      return make_status(ONYX_STATUS_INVALID_ARGUMENT, "node '%s': bias must have %lld elements",
                         name_.c_str(), (long long)s.out_channels);
    int64_t out_dims[4] = {s.batch, s.out_channels, s.out_height, s.out_width};
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_FLOAT32, out_dims, &y));
    if (y.size() == 0) return nullptr;
    gpuStream_t stream = kernel_stream(ctx);
    ONYX_SDK_RETURN_IF_ERROR(vendor_status(vendor_conv2d(device->libs, stream, s, x.data<float>(), w.data<float>(),
                                                         y.data<float>(), scratch_of(ctx)),
                                           name_.c_str()));
    if (!bias) return nullptr;
    return launch_status(launch_channel_bias(stream, y.data<float>(), bias->data<float>(), s.batch,
                                             s.out_channels, s.out_height * s.out_width),
                         "adding Conv's bias");
  }

 private:
  Conv2dShape shape_;
  std::string name_;
};

}  // namespace

void register_linalg_kernels(sdk::KernelRegistry& r) {
  r.add({"", "MatMul", 9, 1 << 30, require_float32,
         [](const sdk::NodeInfo& n) { return std::make_unique<MatMulKernel>(n.name); }});
  r.add({"", "Gemm", 11, 1 << 30,
         [](const sdk::NodeInfo& n) -> std::string {
           float beta = float(n.get_float("beta", 1.0));
           if (n.input_present(2) && beta != 0.f && beta != 1.f)
             return "Gemm with C and beta other than 0 or 1 is not supported";
           return require_float32(n);
         },
         [](const sdk::NodeInfo& n) {
           return std::make_unique<GemmKernel>(n.get_int("transA", 0) != 0, n.get_int("transB", 0) != 0,
                                               float(n.get_float("alpha", 1.0)),
                                               float(n.get_float("beta", 1.0)), n.name);
         }});
  r.add({"", "Conv", 11, 1 << 30, [](const sdk::NodeInfo& n) { return conv2d_supported(n, 0, 1); },
         [](const sdk::NodeInfo& n) { return std::make_unique<ConvKernel>(n); }});
}

}  // namespace onyx::gpu
