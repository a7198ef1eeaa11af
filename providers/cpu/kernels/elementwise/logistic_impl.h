// logistic_impl.h: the vector loops of Sigmoid, Swish (x sigmoid(alpha x),
// SiLU for alpha 1) and Tanh, written once over a vector type V as
// gelu_impl.h's (whose exp they share) and instantiated by the same files.
//
// V provides, beyond gelu_impl.h's list: select_below(x, limit, a, b)
// (x < limit ? a : b; NaN takes b).
//
// Accuracy (tests/providers/cpu/vec_math_test.cpp checks every ISA): within
// 1e-6 relative or 1.2e-38 absolute of the exact function (the logistic's
// left tail is 0 once e^z underflows below the smallest normal float; Swish's,
// x times it, is below 1.1e-36 there); NaN stays NaN, infinities give the
// limits.
#pragma once

#include <cstddef>

#include "kernels/elementwise/gelu_impl.h"
#include "kernels/elementwise/interleaved.h"

namespace onyx::cpu::vec::logistic_impl {

template <class V>
using Reg = typename V::reg;

using gelu_impl::ExpRange;

// x / (1 + e^-z) (x: 1 for the sigmoid, or Swish's input) where e^-z is
// within float's normal range (|z| <= 87.3), else 0 (z below: the limit, to
// 1.2e-38 |x|) or x (above). e^-z to ~2 ulp, then 1 + e^-z and the division
// rounded once each: the relative error stays near 3 ulp down the left tail,
// and the right one rounds to exactly x. (A reciprocal estimate and a Newton
// step instead of the division: an ulp short of 1 there, and fixing that
// cost more than the division.) kLow: z_error (z minus the exact product
// that made z, V::fnmadd) corrects the exponent. NaN: NaN.
template <class V, bool kLow>
ONYX_GELU_INLINE Reg<V> logistic_times(Reg<V> x, Reg<V> z, Reg<V> z_error) {
  const Reg<V> m = V::sub(V::set(0.0f), z);
  Reg<V> e;
  if constexpr (kLow) {
    // A product beyond float (z = +-inf) has an infinite or NaN error: the
    // clamp (NaN taken as -1: max returns its second operand) keeps e
    // finite; those lanes are the limits anyway.
    const Reg<V> clamped = V::min(V::max(z_error, V::set(-1.0f)), V::set(1.0f));
    e = gelu_impl::exp_plus<V, ExpRange::kNormal>(m, clamped);
  } else {
    e = gelu_impl::exp<V, ExpRange::kNormal>(m);
  }
  return V::zero_below(z, V::set(-87.3365447505531f), V::div(x, V::add(V::set(1.0f), e)));
}

template <class V>
ONYX_GELU_INLINE Reg<V> sigmoid(Reg<V> x) {
  return logistic_times<V, false>(V::set(1.0f), x, x);
}

// x sigmoid(alpha x); kScaled: alpha is not 1, and alpha x is formed with its
// rounding error (one FMA), so that the result is as accurate as sigmoid's.
template <class V, bool kScaled>
ONYX_GELU_INLINE Reg<V> swish(Reg<V> x, Reg<V> alpha) {
  if constexpr (!kScaled) {
    return logistic_times<V, false>(x, x, x);
  } else {
    const Reg<V> z = V::mul(alpha, x);
    return logistic_times<V, true>(x, z, V::fnmadd(alpha, x, z));  // z - alpha x, exactly
  }
}

// tanh: below |x| = 0.625 the odd polynomial of Cephes' tanhf (x + x^3 P(x^2),
// 1.3e-7 relative), above it (1 - e) / (1 + e) with e = e^{-2|x|} <= 0.29,
// which cancels little; the sign put back.
template <class V>
ONYX_GELU_INLINE Reg<V> tanh(Reg<V> x) {
  const Reg<V> a = V::abs(x);
  const Reg<V> z = V::mul(x, x);
  Reg<V> p = V::fmadd(V::set(-5.70498872745e-3f), z, V::set(2.06390887954e-2f));
  p = V::fmadd(p, z, V::set(-5.37397155531e-2f));
  p = V::fmadd(p, z, V::set(1.33314422036e-1f));
  p = V::fmadd(p, z, V::set(-3.33332819422e-1f));
  const Reg<V> small = V::fmadd(V::mul(p, z), x, x);
  const Reg<V> e = gelu_impl::exp<V, ExpRange::kNonPositive>(V::mul(V::set(-2.0f), a));
  // 1 - 2e / (1 + e): exactly 1 once e is below half an ulp.
  const Reg<V> t = V::fnmadd(V::add(e, e), V::rcp(V::add(V::set(1.0f), e)), V::set(1.0f));
  const Reg<V> large = V::select_nonnegative(x, t, V::sub(V::set(0.0f), t));
  return V::select_below(a, V::set(0.625f), small, large);  // NaN: large, NaN
}

// y = f(x) over n floats, four vectors interleaved (interleaved.h), the tail
// masked. F::apply<W>(Reg<W>) computes one register of any width.
template <class V, class F>
void loop(const float* x, float* y, size_t n, const F& f) {
  using V4 = Interleaved<V, 4>;
  size_t i = 0;
  for (; i + V4::kLanes <= n; i += V4::kLanes) V4::storeu(y + i, f.template apply<V4>(V4::loadu(x + i)));
  for (; i + V::kLanes <= n; i += V::kLanes) V::storeu(y + i, f.template apply<V>(V::loadu(x + i)));
  if (i < n) V::store_first(y + i, f.template apply<V>(V::load_first(x + i, n - i)), n - i);
}

struct Sigmoid {
  template <class W>
  ONYX_GELU_INLINE Reg<W> apply(Reg<W> x) const { return sigmoid<W>(x); }
};
template <bool kScaled>
struct Swish {
  float alpha;
  template <class W>
  ONYX_GELU_INLINE Reg<W> apply(Reg<W> x) const { return swish<W, kScaled>(x, W::set(alpha)); }
};
struct Tanh {
  template <class W>
  ONYX_GELU_INLINE Reg<W> apply(Reg<W> x) const { return tanh<W>(x); }
};

}  // namespace onyx::cpu::vec::logistic_impl
