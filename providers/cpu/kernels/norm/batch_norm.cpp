// batch_norm.cpp: BatchNormalization (float32, float64), inference and, from
// opset 14, training mode with running statistics; and ai.onyx
// FusedBatchNormalization, the inference form followed by a Relu
// (optimize/activation_fusion.cpp: a training graph's frozen BatchNorm ->
// Relu in one pass over the tensor instead of two).
//
// Statistics are accumulated in double with two passes (mean, then the mean
// of squared deviations), which keeps the variance accurate when the mean is
// large compared with the spread.
#include <algorithm>
#include <cmath>

#include "kernels/norm/norm_util.h"
#include "kernels/registry.h"
#include "target_clones.h"

namespace onyx::cpu {

ONYX_CLONES void norm::affine(const float* x, float* y, int64_t n, double a, double b, bool relu) {
  const float ta = float(a), tb = float(b);
  if (!relu) {
    for (int64_t k = 0; k < n; ++k) y[k] = x[k] * ta + tb;
    return;
  }
  for (int64_t k = 0; k < n; ++k) {
    const float v = x[k] * ta + tb;
    y[k] = v < 0.0f ? 0.0f : v;  // NaN kept
  }
}

namespace {

// X is viewed as [N, F, S]: F = C and S = the spatial size, or, for the
// legacy spatial = 0 form, F = C x spatial (one statistic per activation)
// and S = 1.
class BatchNormKernel final : public sdk::Kernel {
 public:
  explicit BatchNormKernel(const sdk::NodeInfo& node)
      : label_(nn::node_label(node)),
        epsilon_(node.get_float("epsilon", 1e-5)),
        momentum_(node.get_float("momentum", 0.9)),
        spatial_(node.get_int("spatial", 1) != 0),
        relu_(node.domain == kOnyxDomain),  // FusedBatchNormalization: check_fused() allows only Relu
        // Training: opset 14+ says so with training_mode; before opset 7 with
        // an explicit is_test = 0. (ONNX's 6 -> 7 version converter reads an
        // absent is_test as inference and refuses is_test = 0 as training.)
        // Opsets 7-13 train only when the statistic outputs are wanted, which
        // supports() declines.
        training_(node.opset >= 14
                      ? node.get_int("training_mode", 0) != 0
                      : node.opset < 7 && node.has("is_test") && node.get_int("is_test", 1) == 0),
        want_running_{node.opset >= 14 && node.outputs.size() > 1 && node.outputs[1].present,
                      node.opset >= 14 && node.outputs.size() > 2 && node.outputs[2].present} {}

  // Statistics come first; then each element is read once and written in place.
  void output_memory(std::span<OnyxOutputMemoryInfo> out) const override {
    util::output0_may_overwrite_input(out);
  }

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    if (x.rank() < 2)
      return nn::fail(label_, "input 0 must be N x C x ..., got shape %s",
                      nn::dims_str(x.dims).c_str());
    const int64_t n = x.dim(0), c = x.dim(1), spatial = x.size() / std::max<int64_t>(1, n * c);
    const int64_t features = spatial_ ? c : c * spatial, s = spatial_ ? spatial : 1;
    std::vector<double> scale, bias, mean, var;
    static const char* names[] = {"X", "scale", "B", "input_mean", "input_var"};
    std::vector<double>* params[] = {nullptr, &scale, &bias, &mean, &var};
    for (size_t k = 1; k < 5; ++k)
      ONYX_SDK_RETURN_IF_ERROR(norm::read_params(label_, ctx.in(k), k, features, names[k], params[k]));

    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, x.dims, &y));
    std::vector<double> batch_mean(static_cast<size_t>(features)), batch_var(batch_mean);
    if (training_) {
      if (n * s == 0) return nn::fail(label_, "training mode needs a non-empty batch");
      if (x.dtype == ONYX_DTYPE_FLOAT64)
        batch_stats<double>(ctx, x, n, features, s, &batch_mean, &batch_var);
      else
        batch_stats<float>(ctx, x, n, features, s, &batch_mean, &batch_var);
      mean = batch_mean;
      var = batch_var;
    }
    // y = x * a + b with a = scale / sqrt(var + eps), b = bias - mean * a.
    std::vector<double> a(static_cast<size_t>(features)), b(a);
    for (size_t f = 0; f < a.size(); ++f) {
      a[f] = scale[f] / std::sqrt(var[f] + epsilon_);
      b[f] = bias[f] - mean[f] * a[f];
    }
    ctx.parallel_for(size_t(n * features), nn::grain_for(double(s)), [&](size_t lo, size_t hi) {
      for (size_t p = lo; p < hi; ++p) {
        size_t f = p % size_t(features), off = p * size_t(s);
        if (x.dtype == ONYX_DTYPE_FLOAT64)
          norm::affine(x.data<double>() + off, y.data<double>() + off, s, a[f], b[f], relu_);
        else
          norm::affine(x.data<float>() + off, y.data<float>() + off, s, a[f], b[f], relu_);
      }
    });
    // running_mean/var = input * momentum + batch * (1 - momentum), typed like the input.
    for (size_t k = 1; k <= 2; ++k) {
      if (!want_running_[k - 1]) continue;
      sdk::Tensor in = ctx.in(k + 2), out;
      const std::vector<double>& stats = k == 1 ? batch_mean : batch_var;
      ONYX_SDK_RETURN_IF_ERROR(ctx.output(k, in.dtype, in.dims, &out));
      for (int64_t f = 0; f < features; ++f) {
        double v = nn::element_as_double(in, f) * momentum_ + stats[size_t(f)] * (1 - momentum_);
        if (out.dtype == ONYX_DTYPE_FLOAT64)
          out.data<double>()[f] = v;
        else
          out.data<float>()[f] = float(v);
      }
    }
    return nullptr;
  }

 private:
  template <typename T>
  static void batch_stats(sdk::ComputeContext& ctx, const sdk::Tensor& x, int64_t n,
                          int64_t features, int64_t s, std::vector<double>* mean,
                          std::vector<double>* var) {
    const T* xd = x.data<T>();
    ctx.parallel_for(size_t(features), nn::grain_for(double(n * s) * 2), [&](size_t lo, size_t hi) {
      for (size_t f = lo; f < hi; ++f) {
        double sum = 0, sq = 0;
        for (int64_t i = 0; i < n; ++i) {
          const T* p = xd + (i * features + int64_t(f)) * s;
          for (int64_t k = 0; k < s; ++k) sum += double(p[k]);
        }
        double m = sum / double(n * s);
        for (int64_t i = 0; i < n; ++i) {
          const T* p = xd + (i * features + int64_t(f)) * s;
          for (int64_t k = 0; k < s; ++k) sq += (double(p[k]) - m) * (double(p[k]) - m);
        }
        (*mean)[f] = m;
        (*var)[f] = sq / double(n * s);
      }
    });
  }

  std::string label_;
  double epsilon_, momentum_;
  bool spatial_, relu_, training_;
  bool want_running_[2];  // outputs 1 (running_mean) and 2 (running_var)
};

std::string check_batch_norm(const sdk::NodeInfo& node) {
  for (size_t k = 1; k < 5; ++k)
    if (!node.input_present(k)) return "input " + std::to_string(k) + " is required";
  bool extra_outputs = false;
  for (size_t k = 1; k < node.outputs.size(); ++k) extra_outputs |= node.outputs[k].present;
  if (node.opset >= 14) {
    if (extra_outputs && node.get_int("training_mode", 0) == 0)
      return "outputs running_mean/running_var need training_mode = 1";
  } else if (extra_outputs) {
    return "the training outputs (mean, var, saved_mean, saved_var) of opset " +
           std::to_string(node.opset) + " are not supported; opset 14+ training_mode is";
  }
  return {};
}

// ai.onyx FusedBatchNormalization(X, scale, B, input_mean, input_var),
// attributes epsilon and activation: activation(BatchNormalization in
// inference mode); activation "Relu" only.
std::string check_fused(const sdk::NodeInfo& node) {
  for (size_t k = 1; k < 5; ++k)
    if (!node.input_present(k)) return "input " + std::to_string(k) + " is required";
  if (node.outputs.size() != 1) return "FusedBatchNormalization has one output";
  const std::string act = node.get_string("activation", "");
  return act == "Relu" ? std::string() : "FusedBatchNormalization activation '" + act + "' is not supported";
}

}  // namespace

void register_batch_norm_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("BatchNormalization")
                   .input_types({0, 1, 2, 3, 4}, sdk::dtypes::kFloat)
                   .check(check_batch_norm)
                   .create<BatchNormKernel>());
  registry.add(sdk::KernelDefBuilder("FusedBatchNormalization", kOnyxDomain)
                   .inputs(5)
                   .input_types({0, 1, 2, 3, 4}, sdk::dtypes::kFloat)
                   .check(check_fused)
                   .create<BatchNormKernel>());
}

}  // namespace onyx::cpu
