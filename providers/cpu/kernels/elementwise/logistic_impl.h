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

// 1 / (1 + e^-z) for z = hi - hi_error (kLow: hi_error is the rounding error
// of the product that made hi). e = e^-|z| never overflows: 1 / (1 + e) for z >= 0,
// e / (1 + e) below, both relatively accurate until e underflows (|z| > 87.3).
template <class V, bool kLow>
ONYX_GELU_INLINE Reg<V> sigmoid(Reg<V> hi, Reg<V> hi_error) {
  const Reg<V> limit = V::set(-87.3365447505531f);
  const Reg<V> m = V::sub(V::set(0.0f), V::abs(hi));  // -|hi|
  Reg<V> e;
  if constexpr (kLow) {
    // -|hi - error| = -|hi| + sign(hi) error. |z| > 87.3 (where the error
    // may be NaN, inf - inf) is zeroed below whatever e it gives.
    const Reg<V> m_low = V::select_nonnegative(hi, hi_error, V::sub(V::set(0.0f), hi_error));
    e = gelu_impl::exp_plus<V, true>(m, m_low);
  } else {
    e = gelu_impl::exp<V, true>(m);
  }
  e = V::zero_below(m, limit, e);
  const Reg<V> s = V::div(V::set(1.0f), V::add(V::set(1.0f), e));
  return V::select_nonnegative(hi, s, V::mul(e, s));  // NaN: e s, NaN
}

// x sigmoid(alpha x): alpha x is formed with its rounding error (one FMA),
// so the result is as accurate as sigmoid's for any alpha. -inf gives 0 (the
// limit), not -inf * 0.
template <class V>
ONYX_GELU_INLINE Reg<V> swish(Reg<V> x, Reg<V> alpha) {
  const Reg<V> z = V::mul(alpha, x);
  const Reg<V> s = sigmoid<V, true>(z, V::fnmadd(alpha, x, z));  // z - alpha x, exactly
  return V::zero_where_zero(s, V::mul(x, s));
}

// tanh: below |x| = 0.625 the odd polynomial of Cephes' tanhf (x + x^3 P(x^2),
// 1.3e-7 relative), above it (1 - e) / (1 + e) with e = e^{-2|x|} <= 0.29,
// which cancels nothing; the sign put back.
template <class V>
ONYX_GELU_INLINE Reg<V> tanh(Reg<V> x) {
  const Reg<V> a = V::abs(x);
  const Reg<V> z = V::mul(x, x);
  Reg<V> p = V::fmadd(V::set(-5.70498872745e-3f), z, V::set(2.06390887954e-2f));
  p = V::fmadd(p, z, V::set(-5.37397155531e-2f));
  p = V::fmadd(p, z, V::set(1.33314422036e-1f));
  p = V::fmadd(p, z, V::set(-3.33332819422e-1f));
  const Reg<V> small = V::fmadd(V::mul(p, z), x, x);
  const Reg<V> e = gelu_impl::exp<V, true>(V::mul(V::set(-2.0f), a));
  const Reg<V> t = V::div(V::sub(V::set(1.0f), e), V::add(V::set(1.0f), e));
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
  ONYX_GELU_INLINE Reg<W> apply(Reg<W> x) const { return sigmoid<W, false>(x, x); }
};
struct Swish {
  float alpha;
  template <class W>
  ONYX_GELU_INLINE Reg<W> apply(Reg<W> x) const { return swish<W>(x, W::set(alpha)); }
};
struct Tanh {
  template <class W>
  ONYX_GELU_INLINE Reg<W> apply(Reg<W> x) const { return tanh<W>(x); }
};

}  // namespace onyx::cpu::vec::logistic_impl
