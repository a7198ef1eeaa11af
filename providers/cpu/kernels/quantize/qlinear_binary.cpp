// qlinear_binary.cpp: com.microsoft QLinearAdd and QLinearMul on uint8/int8
// with numpy broadcasting:
//   C = quantize(dequantize(A) + dequantize(B))  (Mul: *)
// with per-tensor scales and zero points. Per element this is one float64
// affine form of the two codes,
//   Add: (a - za) * (sa / sc) + (b - zb) * (sb / sc) + zc
//   Mul: (a - za) * (b - zb) * (sa * sb / sc) + zc
// then rounding half to even with saturation, all without branches or libm
// calls so that the broadcasting loops (elementwise.h) vectorize. float64,
// not float32: scales like 0.05 and 0.07 put 1 in 70 sums within float32's
// error (~1e-5 of a step) of a half-way point, where float32 rounds either
// way; in float64 only the ratios and the last products round (~1e-13), so a
// code differs from the float64 reference's only at (near-)exact ties.
#include <memory>

#include "kernels/elementwise/elementwise.h"
#include "kernels/kernel_util.h"
#include "kernels/quantize/qlinear_common.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

// Inputs: A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale,
// C_zero_point; the zero points are optional.
constexpr quant::QParamSpec kA{1, 2, "A_scale", "A_zero_point"};
constexpr quant::QParamSpec kB{4, 5, "B_scale", "B_zero_point"};
constexpr quant::QParamSpec kC{6, 7, "C_scale", "C_zero_point"};

class QLinearBinaryKernel final : public sdk::Kernel {
 public:
  QLinearBinaryKernel(const sdk::NodeInfo& node, bool mul) : label_(util::node_label(node)), mul_(mul) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    const sdk::Tensor a = ctx.in(0), b = ctx.in(3);
    if (a.dtype != b.dtype)
      return util::fail(label_, "B has type %s but A has type %s", sdk::dtype_name(b.dtype),
                        sdk::dtype_name(a.dtype));
    quant::QParam qa, qb, qc;
    std::string e = quant::read_qparam(ctx, kA, a.dtype, "A", &qa);
    if (e.empty()) e = quant::read_qparam(ctx, kB, a.dtype, "A", &qb);
    if (e.empty()) e = quant::read_qparam(ctx, kC, a.dtype, "A", &qc);
    std::vector<int64_t> out_dims;
    if (e.empty()) e = ew::broadcast_shape({a.dims, b.dims}, &out_dims);
    if (!e.empty()) return util::fail(label_, "%s", e.c_str());
    sdk::Tensor c;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, a.dtype, out_dims, &c));
    const ew::BroadcastPlan plan = ew::make_plan({a.dims, b.dims}, out_dims);
    const double za = qa.zero, zb = qb.zero, zc = qc.zero;
    quant::visit_8bit(a.dtype, [&](auto tag) {
      using T = decltype(tag);
      if (mul_) {
        const double k = qa.scale * qb.scale / qc.scale;
        ew::binary_loop(ctx, plan, a.data<T>(), b.data<T>(), c.data<T>(), [=](T x, T w) {
          return quant::saturate_round<T>((double(x) - za) * (double(w) - zb) * k + zc);
        });
      } else {
        const double ka = qa.scale / qc.scale, kb = qb.scale / qc.scale;
        ew::binary_loop(ctx, plan, a.data<T>(), b.data<T>(), c.data<T>(), [=](T x, T w) {
          return quant::saturate_round<T>((double(x) - za) * ka + (double(w) - zb) * kb + zc);
        });
      }
    });
    return nullptr;
  }

  // The loops read element i of each input before writing element i.
  void output_memory(std::span<OnyxOutputMemoryInfo> out) const override { util::output0_may_overwrite_input(out); }

 private:
  std::string label_;
  bool mul_;
};

}  // namespace

void register_qlinear_binary_kernels(sdk::KernelRegistry& registry) {
  constexpr sdk::DTypeSet k8Bit{ONYX_DTYPE_UINT8, ONYX_DTYPE_INT8};
  for (bool mul : {false, true}) {
    registry.add(sdk::KernelDefBuilder(mul ? "QLinearMul" : "QLinearAdd", "com.microsoft")
                     .inputs(1, 8)
                     .input_types({0, 3}, k8Bit)
                     .input_types({1, 4, 6}, sdk::dtypes::kFloat32)
                     .check([](const sdk::NodeInfo& node) { return quant::missing_input(node, {0, 1, 3, 4, 6}); })
                     .create([mul](const sdk::NodeInfo& node) { return std::make_unique<QLinearBinaryKernel>(node, mul); }));
  }
}

}  // namespace onyx::cpu
