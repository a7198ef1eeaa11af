// ops_training.cpp: the ai.onyx ops that training graphs add (runtime/autodiff):
// SumToShape, NegativeLogLikelihoodLoss and its gradient, MaxPoolGrad and
// ConvGrad, and the fused optimizer updates (ai.onyx.optimizers AdamW,
// AdamWHF, SGD), float32, with the CPU provider's semantics
// (providers/cpu/kernels/grad/, kernels/optimizer/), so that a training step
// and its update stay on the GPU.
#include <algorithm>
#include <functional>
#include <optional>

#include "gpu_provider.h"
#include "op_util.h"

namespace onyx::gpu {
namespace {

using sdk::make_status;
constexpr const char* kOnyxDomain = "ai.onyx";

std::string dims_text(std::span<const int64_t> dims) {
  std::string s = "[";
  for (size_t k = 0; k < dims.size(); ++k) s += (k ? ", " : "") + std::to_string(dims[k]);
  return s + "]";
}

// An int64 shape input: its constant, or read back from the device.
OnyxStatus* shape_input(sdk::ComputeContext& ctx, size_t index, const std::optional<std::vector<int64_t>>& constant,
                        std::vector<int64_t>* out) {
  if (constant) {
    *out = *constant;
    return nullptr;
  }
  return read_int64_input(ctx, ctx.in(index), out);
}

std::optional<std::vector<int64_t>> constant_ints(const sdk::NodeInfo& n, size_t index) {
  if (index >= n.inputs.size() || !n.inputs[index].constant) return std::nullopt;
  const auto& c = n.inputs[index].constant;
  return std::vector<int64_t>(c->data<int64_t>(), c->data<int64_t>() + c->size());
}

// SumToShape(G, shape): G summed over the dims that broadcasting `shape` to
// G's shape would have expanded (the gradient of a broadcast).
class SumToShapeKernel : public GpuKernel {
 public:
  explicit SumToShapeKernel(const sdk::NodeInfo& n) : target_(constant_ints(n, 1)), name_(n.name) {}
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor g = ctx.in(0), y;
    std::vector<int64_t> target;
    ONYX_SDK_RETURN_IF_ERROR(shape_input(ctx, 1, target_, &target));
    const size_t rank = g.rank();
    if (target.size() > rank || rank > size_t(kMaxRank))
      return make_status(ONYX_STATUS_INVALID_ARGUMENT, "node '%s': cannot sum a gradient of shape %s to shape %s",
                         name_.c_str(), dims_text(g.dims).c_str(), dims_text(target).c_str());
    std::vector<bool> reduced(rank, false);
    for (size_t d = 0; d < rank; ++d) {
      int64_t t = d + target.size() >= rank ? target[d + target.size() - rank] : 1;
      if (t != 1 && t != g.dim(d))
        return make_status(ONYX_STATUS_INVALID_ARGUMENT,
                           "node '%s': gradient of shape %s cannot be summed to shape %s (dim %zu)", name_.c_str(),
                           dims_text(g.dims).c_str(), dims_text(target).c_str(), d);
      reduced[d] = t == 1 && g.dim(d) != 1;
    }
    std::vector<int64_t> kept;
    ReduceIndex index = make_reduce_index(g.dims, reduced, true, &kept);
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_FLOAT32, target, &y));
    return launch_status(launch_reduce(kernel_stream(ctx), ReduceOp::kSum, index, g.data<float>(), y.data<float>(),
                                       y.size()),
                         "launching SumToShape");
  }

 private:
  std::optional<std::vector<int64_t>> target_;
  std::string name_;
};

std::string nll_supported(const sdk::NodeInfo& n, size_t scores) {
  std::string r = n.get_string("reduction", "mean");
  if (r != "mean" && r != "sum" && r != "none") return "reduction is '" + r + "'; expected mean, sum or none";
  if (n.input_dtype(scores) != ONYX_DTYPE_FLOAT32) return "the scores must be float32";
  if (n.input_dtype(1) != ONYX_DTYPE_INT64 && n.input_dtype(1) != ONYX_DTYPE_INT32)
    return "the labels must be int64 or int32";
  return {};
}

// The loss and its gradient share attributes, shape checks and the label check.
class NllKernelBase : public GpuKernel {
 public:
  explicit NllKernelBase(const sdk::NodeInfo& n) : name_(n.name) {
    std::string r = n.get_string("reduction", "mean");
    shape_.reduction = r == "sum" ? kNllSum : r == "none" ? kNllNone : kNllMean;
    shape_.has_ignore_index = n.has("ignore_index");
    shape_.ignore_index = n.get_int("ignore_index", 0);
  }

 protected:
  // Scores [N, C, d1...] and labels [N, d1...].
  OnyxStatus* shape_for(std::span<const int64_t> scores, const sdk::Tensor& labels, NllShape* s) const {
    bool ok = scores.size() >= 2 && labels.rank() == scores.size() - 1 && labels.dim(0) == scores[0];
    for (size_t d = 2; ok && d < scores.size(); ++d) ok = labels.dim(d - 1) == scores[d];
    if (!ok)
      return make_status(ONYX_STATUS_INVALID_ARGUMENT,
                         "node '%s': labels of shape %s do not match scores of shape %s (expected [N, d1...] "
                         "for [N, C, d1...])",
                         name_.c_str(), dims_text(labels.dims).c_str(), dims_text(scores).c_str());
    *s = shape_;
    s->n = scores[0], s->classes = scores[1], s->inner = 1;
    for (size_t d = 2; d < scores.size(); ++d) s->inner *= scores[d];
    s->int64_labels = labels.dtype == ONYX_DTYPE_INT64;
    return nullptr;
  }
  OnyxStatus* run(sdk::ComputeContext& ctx, const NllShape& s,
                  const std::function<gpuError_t(gpuStream_t, int*)>& launch) const {
    return launch_checked(ctx, launch, "running NegativeLogLikelihoodLoss",
                          "node '" + name_ + "': a label is out of range: the scores have " +
                              std::to_string(s.classes) + " classes" +
                              (s.has_ignore_index ? " (and it is not ignore_index)" : ""));
  }

  NllShape shape_;
  std::string name_;
};

class NllLossKernel : public NllKernelBase {
 public:
  using NllKernelBase::NllKernelBase;
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), labels = ctx.in(1), y;
    NllShape s;
    ONYX_SDK_RETURN_IF_ERROR(shape_for(x.dims, labels, &s));
    std::span<const int64_t> out_dims;
    if (s.reduction == kNllNone) out_dims = labels.dims;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_FLOAT32, out_dims, &y));
    return run(ctx, s, [&](gpuStream_t stream, int* flag) {
      return launch_nll_loss(stream, s, x.data<float>(), labels.raw, y.data<float>(), flag);
    });
  }
};

// NegativeLogLikelihoodLossGrad(dloss, labels, shape of the scores).
class NllLossGradKernel : public NllKernelBase {
 public:
  explicit NllLossGradKernel(const sdk::NodeInfo& n) : NllKernelBase(n), scores_shape_(constant_ints(n, 2)) {}
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor dy = ctx.in(0), labels = ctx.in(1), dx;
    std::vector<int64_t> scores;
    ONYX_SDK_RETURN_IF_ERROR(shape_input(ctx, 2, scores_shape_, &scores));
    NllShape s;
    ONYX_SDK_RETURN_IF_ERROR(shape_for(scores, labels, &s));
    const int64_t expected = s.reduction == kNllNone ? labels.size() : 1;
    if (dy.size() != expected)
      return make_status(ONYX_STATUS_INVALID_ARGUMENT, "node '%s': the loss gradient has %lld elements; expected %lld",
                         name_.c_str(), (long long)dy.size(), (long long)expected);
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_FLOAT32, scores, &dx));
    return run(ctx, s, [&](gpuStream_t stream, int* flag) {
      return launch_nll_loss_grad(stream, s, dy.data<float>(), labels.raw, dx.data<float>(), flag);
    });
  }

 private:
  std::optional<std::vector<int64_t>> scores_shape_;
};

// MaxPoolGrad(dY, X) with MaxPool's attributes: dX.
class MaxPoolGradKernel : public GpuKernel {
 public:
  explicit MaxPoolGradKernel(const sdk::NodeInfo& n) : window_(pool2d_attributes(n)), name_(n.name) {}
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor dy = ctx.in(0), x = ctx.in(1), dx;
    if (x.rank() != 4)
      return make_status(ONYX_STATUS_INVALID_ARGUMENT, "node '%s': only 2-D pooling (4-D input) runs here",
                         name_.c_str());
    Pool2dShape s;
    if (std::string error = window_.complete(x.dim(2), x.dim(3), false, &s); !error.empty())
      return make_status(ONYX_STATUS_INVALID_ARGUMENT, "node '%s': %s", name_.c_str(), error.c_str());
    const std::vector<int64_t> expected = {x.dim(0), x.dim(1), s.out_height, s.out_width};
    if (dy.shape() != expected)
      return make_status(ONYX_STATUS_INVALID_ARGUMENT,
                         "node '%s': output gradient of shape %s does not match the pool's output %s", name_.c_str(),
                         dims_text(dy.dims).c_str(), dims_text(expected).c_str());
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_FLOAT32, x.dims, &dx));
    return launch_status(launch_max_pool2d_grad(kernel_stream(ctx), s, x.data<float>(), dy.data<float>(),
                                                dx.data<float>(), x.dim(0) * x.dim(1)),
                         "launching MaxPoolGrad");
  }

 private:
  Pool2dWindow window_;
  std::string name_;
};

// ConvGrad(dY, X, W) -> (dX, dW) with Conv's attributes; an output the graph
// omits is not computed. Per group, images in chunks:
//   columns_n = im2col(X_n);  dW_g = sum_n dY_n,g [M/g, OHW] x columns_n^T
//   (one batched GEMM into per-image partials, then a sum over the images);
//   dcolumns_n = W_g^T x dY_n,g (one batched GEMM), dX_n,g = col2im(dcolumns_n).
class ConvGradKernel : public GpuKernel {
 public:
  explicit ConvGradKernel(const sdk::NodeInfo& n)
      : attributes_(conv2d_attributes(n)),
        want_dx_(n.outputs.size() > 0 && n.outputs[0].present),
        want_dw_(n.outputs.size() > 1 && n.outputs[1].present),
        name_(n.name) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor dy = ctx.in(0), x = ctx.in(1), w = ctx.in(2), dx, dw;
    Conv2dShape s = attributes_;
    if (std::string error = complete_conv2d_shape(x.dims, w.dims, &s); !error.empty())
      return make_status(ONYX_STATUS_INVALID_ARGUMENT, "node '%s': %s", name_.c_str(), error.c_str());
    const std::vector<int64_t> expected = {s.batch, s.out_channels, s.out_height, s.out_width};
    if (dy.shape() != expected)
      return make_status(ONYX_STATUS_INVALID_ARGUMENT,
                         "node '%s': output gradient of shape %s does not match the convolution's output %s",
                         name_.c_str(), dims_text(dy.dims).c_str(), dims_text(expected).c_str());
    if (want_dx_) ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_FLOAT32, x.dims, &dx));
    if (want_dw_) ONYX_SDK_RETURN_IF_ERROR(ctx.output(1, ONYX_DTYPE_FLOAT32, w.dims, &dw));
    const int64_t rows = s.channels / s.groups * s.kernel_h * s.kernel_w, cols = s.out_height * s.out_width;
    const int64_t group_out = s.out_channels / s.groups;
    if (s.batch == 0 || rows * cols == 0) {
      gpuStream_t stream = kernel_stream(ctx);
      if (want_dx_ && x.size()) ONYX_SDK_RETURN_IF_ERROR(launch_status(
          gpuMemsetAsync(dx.raw, 0, size_t(x.size()) * sizeof(float), stream), "clearing ConvGrad's dX"));
      if (want_dw_ && w.size()) ONYX_SDK_RETURN_IF_ERROR(launch_status(
          gpuMemsetAsync(dw.raw, 0, size_t(w.size()) * sizeof(float), stream), "clearing ConvGrad's dW"));
      return nullptr;
    }
    // Column matrices of up to 64 MiB at a time.
    const int64_t chunk = std::clamp<int64_t>((int64_t(64) << 20) / int64_t(sizeof(float)) / (rows * cols), 1,
                                              s.batch);
    float *columns = nullptr, *partial = nullptr, *sum = nullptr;
    ONYX_SDK_RETURN_IF_ERROR(scratch(ctx, chunk * rows * cols, &columns));
    if (want_dw_) {
      ONYX_SDK_RETURN_IF_ERROR(scratch(ctx, chunk * group_out * rows, &partial));
      if (chunk < s.batch) ONYX_SDK_RETURN_IF_ERROR(scratch(ctx, group_out * rows, &sum));
    }
    gpuStream_t stream = kernel_stream(ctx);
    for (int64_t g = 0; g < s.groups; ++g)
      for (int64_t n0 = 0; n0 < s.batch; n0 += chunk) {
        const int64_t images = std::min(chunk, s.batch - n0);
        const float* dy_g = dy.data<float>() + (n0 * s.out_channels + g * group_out) * cols;
        if (want_dw_) {
          float* dw_g = dw.data<float>() + g * group_out * rows;
          ONYX_SDK_RETURN_IF_ERROR(launch_status(
              launch_im2col(stream, s, x.data<float>() + n0 * s.channels * s.height * s.width, g, columns, images),
              "launching im2col"));
          GemmParams p;  // partial_n [M/g, rows] = dY_n,g [M/g, cols] x columns_n^T
          p.m = group_out, p.n = rows, p.k = cols, p.trans_b = true;
          p.a = dy_g, p.lda = cols, p.stride_a = s.out_channels * cols;
          p.b = columns, p.ldb = cols, p.stride_b = rows * cols;
          p.c = partial, p.ldc = rows, p.stride_c = group_out * rows;
          p.batch = images;
          ONYX_SDK_RETURN_IF_ERROR(vendor_status(vendor_gemm(device->libs, stream, p), name_.c_str()));
          std::vector<int64_t> sum_dims;
          const int64_t partial_dims[2] = {images, group_out * rows};
          ReduceIndex over_images = make_reduce_index(partial_dims, {true, false}, false, &sum_dims);
          float* into = n0 == 0 ? dw_g : sum;
          ONYX_SDK_RETURN_IF_ERROR(launch_status(
              launch_reduce(stream, ReduceOp::kSum, over_images, partial, into, group_out * rows),
              "summing ConvGrad's weight gradient"));
          if (into != dw_g) {
            BroadcastIndex same;
            std::vector<int64_t> dims;
            const int64_t flat[1] = {group_out * rows};
            make_broadcast(flat, flat, &same, &dims);
            ONYX_SDK_RETURN_IF_ERROR(launch_status(
                launch_binary(stream, BinaryOp::kAdd, same, dw_g, sum, dw_g, group_out * rows),
                "accumulating ConvGrad's weight gradient"));
          }
        }
        if (want_dx_) {
          GemmParams p;  // dcolumns_n [rows, cols] = W_g^T [rows, M/g] x dY_n,g [M/g, cols]
          p.m = rows, p.n = cols, p.k = group_out, p.trans_a = true;
          p.a = w.data<float>() + g * group_out * rows, p.lda = rows, p.stride_a = 0;
          p.b = dy_g, p.ldb = cols, p.stride_b = s.out_channels * cols;
          p.c = columns, p.ldc = cols, p.stride_c = rows * cols;
          p.batch = images;
          ONYX_SDK_RETURN_IF_ERROR(vendor_status(vendor_gemm(device->libs, stream, p), name_.c_str()));
          ONYX_SDK_RETURN_IF_ERROR(launch_status(
              launch_col2im(stream, s, columns, g, dx.data<float>() + n0 * s.channels * s.height * s.width, images),
              "launching col2im"));
        }
      }
    return nullptr;
  }

 private:
  static OnyxStatus* scratch(sdk::ComputeContext& ctx, int64_t floats, float** out) {
    void* p = nullptr;
    ONYX_SDK_RETURN_IF_ERROR(ctx.scratch(size_t(floats) * sizeof(float), &p));
    *out = static_cast<float*>(p);
    return nullptr;
  }

  Conv2dShape attributes_;
  bool want_dx_, want_dw_;
  std::string name_;
};

// The fused optimizer updates (domain ai.onyx.optimizers): AdamW / AdamWHF
// (param, grad, m, v, lr, step, beta1, beta2, epsilon, weight_decay) =>
// (param', m', v') and SGD (param, grad, buf, lr, step, momentum, nesterov,
// weight_decay) => (param', buf'). One kernel per parameter.
class FusedOptimizerKernel : public GpuKernel {
 public:
  // tensors: parameter, gradient and state inputs; scalars: the rest.
  FusedOptimizerKernel(const sdk::NodeInfo& n, size_t tensors, size_t scalars, int adam_form)
      : tensors_(tensors), scalars_(scalars), adam_form_(adam_form), name_(n.name) {}
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    const sdk::Tensor param = ctx.in(0);
    std::vector<const float*> in;
    for (size_t i = 0; i < tensors_; ++i) {
      const sdk::Tensor t = ctx.in(i);
      if (t.shape() != param.shape())
        return make_status(ONYX_STATUS_INVALID_ARGUMENT, "node '%s': input %zu has shape %s, the parameter %s",
                           name_.c_str(), i, dims_text(t.dims).c_str(), dims_text(param.dims).c_str());
      in.push_back(t.data<float>());
    }
    OptimizerScalars scalars;
    for (size_t i = 0; i < scalars_; ++i) {
      const sdk::Tensor t = ctx.in(tensors_ + i);
      if (t.size() != 1)
        return make_status(ONYX_STATUS_INVALID_ARGUMENT, "node '%s': input %zu must be a scalar", name_.c_str(),
                           tensors_ + i);
      scalars.values[i] = t.data<float>();
    }
    std::vector<float*> out;
    for (size_t i = 0; i + 1 < tensors_; ++i) {  // every tensor but the gradient comes back updated
      sdk::Tensor y;
      ONYX_SDK_RETURN_IF_ERROR(ctx.output(i, ONYX_DTYPE_FLOAT32, param.dims, &y));
      out.push_back(y.data<float>());
    }
    gpuStream_t stream = kernel_stream(ctx);
    if (adam_form_ >= 0)
      return launch_status(launch_adamw(stream, adam_form_ == 1, scalars, in[0], in[1], in[2], in[3], out[0], out[1],
                                        out[2], param.size()),
                           "launching AdamW");
    return launch_status(launch_sgd(stream, scalars, in[0], in[1], in[2], out[0], out[1], param.size()),
                         "launching SGD");
  }
 private:
  size_t tensors_, scalars_;
  int adam_form_;  // 0 AdamW, 1 AdamWHF, -1 SGD
  std::string name_;
};

}  // namespace

void register_training_kernels(sdk::KernelRegistry& r) {
  constexpr const char* kOptimizerDomain = "ai.onyx.optimizers";
  struct Fused {
    const char* op;
    size_t tensors, scalars;
    int adam_form;
  };
  for (const Fused& f : {Fused{"AdamW", 4, 6, 0}, Fused{"AdamWHF", 4, 6, 1}, Fused{"SGD", 3, 5, -1}})
    r.add({kOptimizerDomain, f.op, 1, 1 << 30,
           [f](const sdk::NodeInfo& n) -> std::string {
             if (n.inputs.size() != f.tensors + f.scalars) return "expected " + std::to_string(f.tensors + f.scalars) + " inputs";
             return require_float32(n);
           },
           [f](const sdk::NodeInfo& n) {
             return std::make_unique<FusedOptimizerKernel>(n, f.tensors, f.scalars, f.adam_form);
           }});
  r.add({kOnyxDomain, "SumToShape", 1, 1 << 30,
         [](const sdk::NodeInfo& n) -> std::string {
           if (n.input_dtype(0) != ONYX_DTYPE_FLOAT32) return "the gradient must be float32";
           return n.input_dtype(1) == ONYX_DTYPE_INT64 ? std::string() : "the shape must be int64";
         },
         [](const sdk::NodeInfo& n) { return std::make_unique<SumToShapeKernel>(n); }});
  r.add({kOnyxDomain, "NegativeLogLikelihoodLoss", 1, 1 << 30,
         [](const sdk::NodeInfo& n) { return nll_supported(n, 0); },
         [](const sdk::NodeInfo& n) { return std::make_unique<NllLossKernel>(n); }});
  r.add({kOnyxDomain, "NegativeLogLikelihoodLossGrad", 1, 1 << 30,
         [](const sdk::NodeInfo& n) { return nll_supported(n, 0); },
         [](const sdk::NodeInfo& n) { return std::make_unique<NllLossGradKernel>(n); }});
  r.add({kOnyxDomain, "MaxPoolGrad", 1, 1 << 30, [](const sdk::NodeInfo& n) { return pool2d_supported(n, 1); },
         [](const sdk::NodeInfo& n) { return std::make_unique<MaxPoolGradKernel>(n); }});
  r.add({kOnyxDomain, "ConvGrad", 1, 1 << 30, [](const sdk::NodeInfo& n) { return conv2d_supported(n, 1, 2); },
         [](const sdk::NodeInfo& n) { return std::make_unique<ConvGradKernel>(n); }});
}

}  // namespace onyx::gpu
