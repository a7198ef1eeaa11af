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
#include "target_clones.h"

namespace onyx::cpu {
namespace {

// Inputs: A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale,
// C_zero_point; the zero points are optional.
constexpr quant::QParamSpec kA{1, 2, "A_scale", "A_zero_point"};
constexpr quant::QParamSpec kB{4, 5, "B_scale", "B_zero_point"};
constexpr quant::QParamSpec kC{6, 7, "C_scale", "C_zero_point"};

// The per-element form: Add (kMul false) uses ka, kb; Mul uses ka = k.
struct Affine {
  double ka, kb, za, zb, zc;
};

// One run of n outputs whose inputs step by sa and sb (0 or 1). The
// constants are copied into locals and the pointers do not alias, so that
// the compiler keeps them in registers and vectorizes: through a functor
// they would be reloaded after every uint8 store (char stores may alias
// anything), which left the loop scalar and branchy.
// kSmall: every value is below 2^30 in magnitude (always, unless a scale
// ratio is absurd), so saturate_round_small applies.
template <bool kMul, bool kSmall, typename T>
[[gnu::always_inline]] inline void run(const T* __restrict a, int64_t sa, const T* __restrict b, int64_t sb, T* __restrict y, int64_t n,
         const Affine f) {
  const double ka = f.ka, kb = f.kb, za = f.za, zb = f.zb, zc = f.zc;
  auto code = [=](double x, double w) {
    const double v = kMul ? (x - za) * (w - zb) * ka + zc : (x - za) * ka + (w - zb) * kb + zc;
    return kSmall ? quant::saturate_round_small<T>(v) : quant::saturate_round<T>(v);
  };
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; ++i) y[i] = code(double(a[i]), double(b[i]));
  } else if (sa == 1) {
    const double w = double(b[0]);
    for (int64_t i = 0; i < n; ++i) y[i] = code(double(a[i]), w);
  } else if (sb == 1) {
    const double x = double(a[0]);
    for (int64_t i = 0; i < n; ++i) y[i] = code(x, double(b[i]));
  } else {
    const T v = code(double(a[0]), double(b[0]));
    for (int64_t i = 0; i < n; ++i) y[i] = v;
  }
}

// The common case, Add of two same-shaped tensors (ResNet's residual
// connections), cloned for AVX-512 and AVX2: this file is built for the
// baseline ISA, where the float64 loop runs two lanes wide.
ONYX_CLONES void add_same_shape(
    const uint8_t* __restrict a, const uint8_t* __restrict b, uint8_t* __restrict y, int64_t n, const Affine f) {
  run<false, true>(a, 1, b, 1, y, n, f);
}
ONYX_CLONES void add_same_shape(
    const int8_t* __restrict a, const int8_t* __restrict b, int8_t* __restrict y, int64_t n, const Affine f) {
  run<false, true>(a, 1, b, 1, y, n, f);
}

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
    const Affine f = mul_ ? Affine{qa.scale * qb.scale / qc.scale, 0, za, zb, zc}
                          : Affine{qa.scale / qc.scale, qb.scale / qc.scale, za, zb, zc};
    const int64_t sa = plan.strides[0].back(), sb = plan.strides[1].back();
    // Code differences are at most 255 in magnitude, zc too.
    const double bound = mul_ ? 255.0 * 255.0 * f.ka + 255 : 255.0 * (f.ka + f.kb) + 255;
    const bool small = bound < double(1 << 30);
    quant::visit_8bit(a.dtype, [&](auto tag) {
      using T = decltype(tag);
      const T *ap = a.data<T>(), *bp = b.data<T>();
      T* cp = c.data<T>();
      ew::for_each_run<2>(ctx, plan, [&](const std::array<int64_t, 2>& off, int64_t out, int64_t n) {
        const T *pa = ap + off[0], *pb = bp + off[1];
        if (mul_ && small) run<true, true>(pa, sa, pb, sb, cp + out, n, f);
        else if (mul_) run<true, false>(pa, sa, pb, sb, cp + out, n, f);
        else if (small && sa == 1 && sb == 1) add_same_shape(pa, pb, cp + out, n, f);
        else if (small) run<false, true>(pa, sa, pb, sb, cp + out, n, f);
        else run<false, false>(pa, sa, pb, sb, cp + out, n, f);
      });
    });
    return nullptr;
  }

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
