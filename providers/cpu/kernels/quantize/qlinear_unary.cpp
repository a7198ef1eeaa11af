// qlinear_unary.cpp: com.microsoft QLinearSigmoid and QLinearLeakyRelu on
// uint8/int8:
//   Y = quantize(f(dequantize(X)))   with per-tensor scales and zero points
// An 8-bit input has only 256 values, so each call first maps all of them
// through the float64 reference formula into a table; the tensor is then
// one table lookup per element, exactly the reference's result.
#include <array>
#include <cmath>
#include <memory>

#include "kernels/kernel_util.h"
#include "kernels/quantize/qlinear_common.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

// Inputs: X, X_scale, X_zero_point (optional), Y_scale, Y_zero_point (optional).
constexpr quant::QParamSpec kX{1, 2, "X_scale", "X_zero_point"};
constexpr quant::QParamSpec kY{3, 4, "Y_scale", "Y_zero_point"};

enum class UnaryOp { kSigmoid, kLeakyRelu };

class QLinearUnaryKernel final : public sdk::Kernel {
 public:
  QLinearUnaryKernel(const sdk::NodeInfo& node, UnaryOp op)
      : label_(util::node_label(node)), op_(op), alpha_(node.get_float("alpha", 0.01)) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    const sdk::Tensor x = ctx.in(0);
    quant::QParam xq, yq;
    std::string e = quant::read_qparam(ctx, kX, x.dtype, "X", &xq);
    if (e.empty()) e = quant::read_qparam(ctx, kY, x.dtype, "X", &yq);
    if (!e.empty()) return util::fail(label_, "%s", e.c_str());
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, x.dims, &y));
    quant::visit_8bit(x.dtype, [&](auto tag) {
      using T = decltype(tag);
      // Indexed by the code's bit pattern, so int8 and uint8 share the loop.
      std::array<T, 256> table;
      for (int v = int(quant::kLowest<T>); v <= int(quant::kHighest<T>); ++v) {
        const double real = double(v - xq.zero) * xq.scale;
        const double q = std::nearbyint(apply(real) / yq.scale) + double(yq.zero);
        table[uint8_t(v)] = quant::saturate_round<T>(q);
      }
      const uint8_t* xp = static_cast<const uint8_t*>(x.raw);
      T* yp = y.data<T>();
      ctx.parallel_for(size_t(x.size()), util::kGrain, [&](size_t begin, size_t end) {
        for (size_t i = begin; i < end; ++i) yp[i] = table[xp[i]];
      });
    });
    return nullptr;
  }

  // y[i] depends on x[i] alone.
  void output_memory(std::span<OnyxOutputMemoryInfo> out) const override { util::output0_may_overwrite_input(out); }

 private:
  double apply(double v) const {
    if (op_ == UnaryOp::kSigmoid) return 1.0 / (1.0 + std::exp(-v));
    return v >= 0 ? v : alpha_ * v;
  }

  std::string label_;
  UnaryOp op_;
  double alpha_;
};

}  // namespace

void register_qlinear_unary_kernels(sdk::KernelRegistry& registry) {
  constexpr sdk::DTypeSet k8Bit{ONYX_DTYPE_UINT8, ONYX_DTYPE_INT8};
  for (UnaryOp op : {UnaryOp::kSigmoid, UnaryOp::kLeakyRelu}) {
    registry.add(sdk::KernelDefBuilder(op == UnaryOp::kSigmoid ? "QLinearSigmoid" : "QLinearLeakyRelu", "com.microsoft")
                     .inputs(1, 5)
                     .input_type(0, k8Bit)
                     .input_types({1, 3}, sdk::dtypes::kFloat32)
                     .check([](const sdk::NodeInfo& node) { return quant::missing_input(node, {0, 1, 3}); })
                     .create([op](const sdk::NodeInfo& node) { return std::make_unique<QLinearUnaryKernel>(node, op); }));
  }
}

}  // namespace onyx::cpu
