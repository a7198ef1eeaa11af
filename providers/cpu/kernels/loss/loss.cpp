// loss.cpp: ONNX NegativeLogLikelihoodLoss (opset 12+) and
// SoftmaxCrossEntropyLoss (opset 12+), float16/bfloat16/float32/float64,
// computed in double.
//
//   loss[n, d] = -input[n, target[n, d], d] * weight[target[n, d]]
//   (0 where target == ignore_index); "sum" adds them, "mean" divides the sum
//   by the sum of the weights of the targets not ignored.
// SoftmaxCrossEntropyLoss is the same over log_softmax(scores, axis 1), and
// can also return that log-probability tensor.
#include <cinttypes>
#include <cmath>
#include <optional>
#include <vector>

#include "kernels/kernel_util.h"
#include "kernels/narrow_types.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

constexpr unsigned kLossTypes = util::kFloat | util::kHalf;

class LossKernel final : public sdk::Kernel {
 public:
  LossKernel(const sdk::NodeInfo& node, bool softmax)
      : label_(util::node_label(node)), softmax_(softmax), reduction_(node.get_string("reduction", "mean")) {
    if (node.has("ignore_index")) ignore_index_ = node.get_int("ignore_index", 0);
  }

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), target = ctx.in(1);
    std::optional<sdk::Tensor> weight = ctx.input(2);
    if (x.rank() < 2) return util::fail(label_, "input 0 must have shape [N, C, d1...], got %s", util::dims_str(x.dims).c_str());
    bool shapes_ok = target.rank() == x.rank() - 1 && target.dim(0) == x.dim(0);
    for (size_t d = 2; shapes_ok && d < x.rank(); ++d) shapes_ok = target.dim(d - 1) == x.dim(d);
    if (!shapes_ok)
      return util::fail(label_, "target of shape %s does not match input of shape %s (expected [N, d1...])",
                        util::dims_str(target.dims).c_str(), util::dims_str(x.dims).c_str());
    const int64_t n = x.dim(0), classes = x.dim(1), inner = n && classes ? x.size() / (n * classes) : 0;
    if (weight && weight->size() != classes)
      return util::fail(label_, "weight has %" PRId64 " elements; the input has %" PRId64 " classes", weight->size(), classes);

    // The (log-)probabilities in double.
    std::vector<double> p(size_t(x.size()));
    for (int64_t i = 0; i < x.size(); ++i) p[size_t(i)] = narrow::load(x.dtype, x.raw, i);
    if (softmax_) log_softmax(p, n, classes, inner);

    std::vector<double> losses(size_t(target.size()));
    double total = 0, weight_sum = 0;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t at = b * inner + i;
        int64_t t = target.dtype == ONYX_DTYPE_INT64 ? target.data<int64_t>()[at] : target.data<int32_t>()[at];
        if (ignore_index_ && t == *ignore_index_) continue;
        if (t < 0 || t >= classes)
          return util::fail(label_, "target %" PRId64 " at flat position %" PRId64 " is outside [0, %" PRId64 ")%s", t, at,
                            classes, ignore_index_ ? " and is not ignore_index" : "");
        double w = weight ? narrow::load(weight->dtype, weight->raw, t) : 1.0;
        losses[size_t(at)] = -p[size_t((b * classes + t) * inner + i)] * w;
        total += losses[size_t(at)];
        weight_sum += w;
      }

    sdk::Tensor y;
    if (reduction_ == "none") {
      ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, target.dims, &y));
      for (size_t k = 0; k < losses.size(); ++k) narrow::store(y.dtype, y.raw, int64_t(k), losses[k], true);
    } else {
      ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, {}, &y));
      // "mean" with every target ignored is 0/0 in ONNX's reference: NaN.
      double v = reduction_ == "sum" ? total : total / weight_sum;
      narrow::store(y.dtype, y.raw, 0, v, true);
    }
    if (softmax_ && ctx.output_count() > 1) {
      sdk::Tensor lp;
      ONYX_SDK_RETURN_IF_ERROR(ctx.output(1, x.dtype, x.dims, &lp));
      for (size_t k = 0; k < p.size(); ++k) narrow::store(lp.dtype, lp.raw, int64_t(k), p[k], true);
    }
    return nullptr;
  }

 private:
  static void log_softmax(std::vector<double>& p, int64_t n, int64_t classes, int64_t inner) {
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < inner; ++i) {
        auto at = [&](int64_t c) -> double& { return p[size_t((b * classes + c) * inner + i)]; };
        double m = -INFINITY, s = 0;
        for (int64_t c = 0; c < classes; ++c) m = std::max(m, at(c));
        for (int64_t c = 0; c < classes; ++c) s += std::exp(at(c) - m);
        double log_sum = m + std::log(s);
        for (int64_t c = 0; c < classes; ++c) at(c) -= log_sum;
      }
  }

  std::string label_;
  bool softmax_;
  std::string reduction_;
  std::optional<int64_t> ignore_index_;
};

}  // namespace

void register_loss_kernels(sdk::KernelRegistry& registry) {
  for (bool softmax : {false, true})
    registry.add(sdk::KernelDefBuilder(softmax ? "SoftmaxCrossEntropyLoss" : "NegativeLogLikelihoodLoss")
                     .since(12)
                     .inputs(2, 3)
                     .input_types({0, 2}, util::dtype_set(kLossTypes))
                     .input_type(1, sdk::DTypeSet{ONYX_DTYPE_INT32, ONYX_DTYPE_INT64})
                     .check([](const sdk::NodeInfo& node) {
                       std::string r = node.get_string("reduction", "mean");
                       if (r != "mean" && r != "sum" && r != "none") return "reduction is '" + r + "'; expected mean, sum or none";
                       return std::string();
                     })
                     .create([softmax](const sdk::NodeInfo& node) { return std::make_unique<LossKernel>(node, softmax); }));
}

}  // namespace onyx::cpu
