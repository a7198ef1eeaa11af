// causal_conv.cpp: CausalConvWithState (opset 27): a depthwise 1-D
// convolution over [past_state | input] (past_state [B, C, K-1], zeros when
// absent), plus bias and an optional SiLU ("silu" or "swish"), returning the
// last K-1 steps of the padded input as present_state. Computed in double.
#include <cinttypes>
#include <cmath>
#include <optional>
#include <vector>

#include "kernels/kernel_util.h"
#include "kernels/narrow_types.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

class CausalConvKernel final : public sdk::Kernel {
 public:
  explicit CausalConvKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)), activation_(node.get_string("activation", "none")) {
    for (const auto& o : node.outputs) wanted_.push_back(o.present);
  }

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), w = ctx.in(1);
    std::optional<sdk::Tensor> bias = ctx.input(2), past = ctx.input(3);
    if (x.rank() != 3 || w.rank() != 3 || w.dim(0) != x.dim(1) || w.dim(1) != 1 || w.dim(2) < 1)
      return util::fail(label_, "input %s and weight %s must be [B, C, T] and [C, 1, K]", util::dims_str(x.dims).c_str(),
                        util::dims_str(w.dims).c_str());
    const int64_t b = x.dim(0), c = x.dim(1), t = x.dim(2), k = w.dim(2), total = t + k - 1;
    if (past && (past->rank() != 3 || past->dim(0) != b || past->dim(1) != c || past->dim(2) != k - 1))
      return util::fail(label_, "past_state %s must be [%" PRId64 ", %" PRId64 ", %" PRId64 "]",
                        util::dims_str(past->dims).c_str(), b, c, k - 1);
    if (bias && bias->size() != c) return util::fail(label_, "bias must have %" PRId64 " elements", c);
    sdk::Tensor y, state;
    int64_t y_dims[3] = {b, c, t}, s_dims[3] = {b, c, k - 1};
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, y_dims, &y));
    const bool want_state = wanted_.size() > 1 && wanted_[1];
    if (want_state) ONYX_SDK_RETURN_IF_ERROR(ctx.output(1, x.dtype, s_dims, &state));
    std::vector<double> padded(static_cast<size_t>(total));
    for (int64_t n = 0; n < b; ++n)
      for (int64_t ch = 0; ch < c; ++ch) {
        for (int64_t i = 0; i < total; ++i)
          padded[size_t(i)] = i < k - 1 ? (past ? narrow::load(past->dtype, past->raw, (n * c + ch) * (k - 1) + i) : 0.0)
                                        : narrow::load(x.dtype, x.raw, (n * c + ch) * t + i - (k - 1));
        for (int64_t i = 0; i < t; ++i) {
          double acc = bias ? narrow::load(bias->dtype, bias->raw, ch) : 0.0;
          for (int64_t j = 0; j < k; ++j) acc += padded[size_t(i + j)] * narrow::load(w.dtype, w.raw, ch * k + j);
          if (activation_ == "silu" || activation_ == "swish") acc = acc / (1 + std::exp(-acc));
          narrow::store(y.dtype, y.raw, (n * c + ch) * t + i, acc, true);
        }
        if (want_state) {
          for (int64_t i = 0; i < k - 1; ++i)
            narrow::store(state.dtype, state.raw, (n * c + ch) * (k - 1) + i, padded[size_t(t + i)], true);
        }
      }
    return nullptr;
  }

 private:
  std::string label_;
  std::string activation_;
  std::vector<bool> wanted_;
};

}  // namespace

void register_causal_conv_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("CausalConvWithState")
                   .since(27)
                   .input_types({0, 1, 2, 3}, sdk::dtypes::kFloat | sdk::dtypes::kHalf)
                   .check([](const sdk::NodeInfo& n) {
                     std::string act = n.get_string("activation", "none");
                     if (act != "none" && act != "silu" && act != "swish")
                       return "activation '" + act + "' is not none, silu or swish";
                     return std::string();
                   })
                   .create<CausalConvKernel>());
}

}  // namespace onyx::cpu
