// loss_grad.cpp: ai.onyx NegativeLogLikelihoodLoss and its gradient.
//
//   NegativeLogLikelihoodLoss(log_prob [N, C, d1...], labels [N, d1...]) -> loss
//   NegativeLogLikelihoodLossGrad(dloss, labels, shape of log_prob) -> dlog_prob
//
// Attributes as ONNX's NegativeLogLikelihoodLoss: reduction ("mean", "sum" or
// "none") and optional ignore_index. loss = -sum log_prob[n, label, ...] over
// the non-ignored targets, divided by their count for "mean" (0 when every
// target is ignored, where ONNX would give 0/0). A label outside [0, C) that
// is not ignore_index is an error naming the label and its position: never
// an out-of-bounds read.
#include <cinttypes>
#include <optional>
#include <vector>

#include "kernels/kernel_util.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

enum class Reduction { kMean, kSum, kNone };

struct LossAttrs {
  explicit LossAttrs(const sdk::NodeInfo& node) : label(util::node_label(node)) {
    std::string r = node.get_string("reduction", "mean");
    reduction = r == "sum" ? Reduction::kSum : r == "none" ? Reduction::kNone : Reduction::kMean;
    if (node.has("ignore_index")) ignore_index = node.get_int("ignore_index", 0);
  }
  std::string label;
  Reduction reduction = Reduction::kMean;
  std::optional<int64_t> ignore_index;
};

std::string check_reduction(const sdk::NodeInfo& node) {
  std::string r = node.get_string("reduction", "mean");
  if (r == "mean" || r == "sum" || r == "none") return {};
  return "reduction is '" + r + "'; expected mean, sum or none";
}

// Labels as int64 with their validity checked; *count: targets not ignored.
OnyxStatus* read_labels(const LossAttrs& a, const sdk::Tensor& labels, int64_t classes,
                        std::vector<int64_t>* out, int64_t* count) {
  out->resize(size_t(labels.size()));
  *count = 0;
  for (int64_t i = 0; i < labels.size(); ++i) {
    int64_t v = labels.dtype == ONYX_DTYPE_INT64 ? labels.data<int64_t>()[i] : labels.data<int32_t>()[i];
    (*out)[size_t(i)] = v;
    if (a.ignore_index && v == *a.ignore_index) continue;
    if (v < 0 || v >= classes)
      return util::fail(a.label, "label %" PRId64 " at flat position %" PRId64
                        " of the labels is out of range: the scores have %" PRId64 " classes%s",
                        v, i, classes, a.ignore_index ? " (and it is not ignore_index)" : "");
    ++*count;
  }
  return nullptr;
}

// Log_prob [N, C, inner] and labels [N, inner] must agree.
OnyxStatus* check_shapes(const LossAttrs& a, std::span<const int64_t> scores, std::span<const int64_t> labels) {
  bool ok = scores.size() >= 2 && labels.size() == scores.size() - 1 && labels[0] == scores[0];
  for (size_t d = 2; ok && d < scores.size(); ++d) ok = labels[d - 1] == scores[d];
  if (ok) return nullptr;
  return util::fail(a.label, "labels of shape %s do not match scores of shape %s (expected [N, d1...] for [N, C, d1...])",
                    util::dims_str(labels).c_str(), util::dims_str(scores).c_str());
}

class NllLossKernel final : public sdk::Kernel {
 public:
  explicit NllLossKernel(const sdk::NodeInfo& node) : a_(node) {}
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), labels = ctx.in(1);
    ONYX_SDK_RETURN_IF_ERROR(check_shapes(a_, x.dims, labels.dims));
    const int64_t classes = x.dim(1), n = x.dim(0), inner = n ? labels.size() / n : 0;
    std::vector<int64_t> t;
    int64_t count = 0;
    ONYX_SDK_RETURN_IF_ERROR(read_labels(a_, labels, classes, &t, &count));
    sdk::Tensor y;
    std::vector<int64_t> none_dims(labels.dims.begin(), labels.dims.end());
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, a_.reduction == Reduction::kNone ? std::span<const int64_t>(none_dims)
                                                                                     : std::span<const int64_t>(), &y));
    if (x.dtype == ONYX_DTYPE_FLOAT64) run<double>(x, y, t, n, classes, inner, count);
    else run<float>(x, y, t, n, classes, inner, count);
    return nullptr;
  }

 private:
  template <typename T>
  void run(const sdk::Tensor& x, const sdk::Tensor& y, const std::vector<int64_t>& t, int64_t n, int64_t classes,
           int64_t inner, int64_t count) const {
    const T* xd = x.data<T>();
    T* yd = y.data<T>();
    double total = 0;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t label = t[size_t(b * inner + i)];
        bool ignored = a_.ignore_index && label == *a_.ignore_index;
        double v = ignored ? 0.0 : -double(xd[(b * classes + label) * inner + i]);
        if (a_.reduction == Reduction::kNone) yd[b * inner + i] = T(v);
        total += v;
      }
    if (a_.reduction == Reduction::kSum) yd[0] = T(total);
    if (a_.reduction == Reduction::kMean) yd[0] = T(count ? total / double(count) : 0.0);
  }
  LossAttrs a_;
};

class NllLossGradKernel final : public sdk::Kernel {
 public:
  explicit NllLossGradKernel(const sdk::NodeInfo& node) : a_(node) {}
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor dy = ctx.in(0), labels = ctx.in(1);
    std::vector<int64_t> shape;
    if (!util::read_ints(ctx.in(2), &shape)) return util::fail(a_.label, "input 2 (the scores' shape) must be int64");
    ONYX_SDK_RETURN_IF_ERROR(check_shapes(a_, shape, labels.dims));
    const int64_t classes = shape[1], n = shape[0], inner = n ? labels.size() / n : 0;
    const int64_t expected_dy = a_.reduction == Reduction::kNone ? labels.size() : 1;
    if (dy.size() != expected_dy)
      return util::fail(a_.label, "the loss gradient has %" PRId64 " elements; expected %" PRId64, dy.size(), expected_dy);
    std::vector<int64_t> t;
    int64_t count = 0;
    ONYX_SDK_RETURN_IF_ERROR(read_labels(a_, labels, classes, &t, &count));
    sdk::Tensor dx;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, dy.dtype, shape, &dx));
    if (dy.dtype == ONYX_DTYPE_FLOAT64) run<double>(dy, dx, t, n, classes, inner, count);
    else run<float>(dy, dx, t, n, classes, inner, count);
    return nullptr;
  }

 private:
  template <typename T>
  void run(const sdk::Tensor& dy, const sdk::Tensor& dx, const std::vector<int64_t>& t, int64_t n, int64_t classes,
           int64_t inner, int64_t count) const {
    const T* g = dy.data<T>();
    T* out = dx.data<T>();
    std::fill(out, out + dx.size(), T(0));
    double scale = a_.reduction == Reduction::kMean ? (count ? 1.0 / double(count) : 0.0) : 1.0;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t label = t[size_t(b * inner + i)];
        if (a_.ignore_index && label == *a_.ignore_index) continue;
        double gi = double(g[a_.reduction == Reduction::kNone ? b * inner + i : 0]);
        out[(b * classes + label) * inner + i] = T(-gi * scale);
      }
  }
  LossAttrs a_;
};

}  // namespace

void register_loss_grad_kernels(sdk::KernelRegistry& registry) {
  constexpr sdk::DTypeSet kLabelTypes{ONYX_DTYPE_INT64, ONYX_DTYPE_INT32};
  registry.add(sdk::KernelDefBuilder("NegativeLogLikelihoodLoss", kOnyxDomain)
                   .inputs(2)
                   .input_type(0, sdk::dtypes::kFloat)
                   .input_type(1, kLabelTypes)
                   .check(check_reduction)
                   .create<NllLossKernel>());
  registry.add(sdk::KernelDefBuilder("NegativeLogLikelihoodLossGrad", kOnyxDomain)
                   .inputs(3)
                   .input_type(0, sdk::dtypes::kFloat)
                   .input_type(1, kLabelTypes)
                   .check(check_reduction)
                   .create<NllLossGradKernel>());
}

}  // namespace onyx::cpu
