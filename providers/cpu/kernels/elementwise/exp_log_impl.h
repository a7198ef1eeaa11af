// exp_log_impl.h: the vector loops of the Exp and Log ops (float32), written
// once over a vector type V as gelu_impl.h's and instantiated by the same
// files (run by logistic_impl::loop). Unlike the activations' internal
// exponentials these cover every float as libm does: subnormal results and
// inputs, overflow to +inf, log of 0 and of negatives.
//
// V provides, beyond gelu_impl.h's list: select_below (logistic_impl.h),
// mantissa(x) and exponent(x) (x = m 2^e, m in [0.5, 1), for a positive
// normal x).
//
// Accuracy (tests/providers/cpu/vec_math_test.cpp checks every ISA): within
// 3 ulp of the exact value where it is a normal float; exp's subnormal
// results within one subnormal step.
#pragma once

#include <cstddef>

#include "kernels/elementwise/gelu_impl.h"

namespace onyx::cpu::vec::exp_log_impl {

template <class V>
using Reg = typename V::reg;

// e^x as the Exp op needs it, for every float: gelu_impl's exponential over
// kEverywhere, 0 below its range (e^x < 2^-150 rounds to 0), +inf above
// ln(FLT_MAX); NaN stays NaN (the clamps return x, the comparisons are
// false for it).
template <class V>
ONYX_GELU_INLINE Reg<V> exp(Reg<V> x) {
  const Reg<V> e = V::zero_below(x, V::set(-103.972084045410f), gelu_impl::exp<V, gelu_impl::ExpRange::kEverywhere>(x));
  return V::select_below(V::set(88.72283935546875f), x, V::set(__builtin_inff()), e);
}

// ln x (Cephes' logf: x = m 2^e with m in [sqrt(1/2), sqrt(2)), a degree-8
// polynomial in m - 1, ln 2 in two parts). Subnormal x is scaled by 2^23
// first; ln 0 = -inf, ln of a negative (or -inf) is NaN, ln +inf = +inf,
// NaN stays NaN.
template <class V>
ONYX_GELU_INLINE Reg<V> log(Reg<V> x) {
  const Reg<V> smallest_normal = V::set(1.17549435e-38f);
  const Reg<V> scaled = V::select_below(x, smallest_normal, V::mul(x, V::set(8388608.0f)), x);
  Reg<V> e = V::add(V::exponent(scaled), V::select_below(x, smallest_normal, V::set(-23.0f), V::set(0.0f)));
  const Reg<V> m = V::mantissa(scaled);
  // m below sqrt(1/2): 2m - 1 and e - 1, so that the polynomial's argument
  // stays within [sqrt(1/2) - 1, sqrt(2) - 1].
  const Reg<V> low = V::set(0.707106781186547524f);
  const Reg<V> f = V::select_below(m, low, V::sub(V::add(m, m), V::set(1.0f)), V::sub(m, V::set(1.0f)));
  e = V::select_below(m, low, V::sub(e, V::set(1.0f)), e);
  const Reg<V> z = V::mul(f, f);
  Reg<V> p = V::fmadd(V::set(7.0376836292e-2f), f, V::set(-1.1514610310e-1f));
  p = V::fmadd(p, f, V::set(1.1676998740e-1f));
  p = V::fmadd(p, f, V::set(-1.2420140846e-1f));
  p = V::fmadd(p, f, V::set(1.4249322787e-1f));
  p = V::fmadd(p, f, V::set(-1.6668057665e-1f));
  p = V::fmadd(p, f, V::set(2.0000714765e-1f));
  p = V::fmadd(p, f, V::set(-2.4999993993e-1f));
  p = V::fmadd(p, f, V::set(3.3333331174e-1f));
  Reg<V> y = V::mul(V::mul(p, f), z);
  y = V::fmadd(e, V::set(-2.12194440e-4f), y);
  y = V::fnmadd(V::set(0.5f), z, y);
  Reg<V> r = V::fmadd(e, V::set(0.693359375f), V::add(f, y));
  r = V::add(r, V::sub(x, x));  // NaN (and +-inf, settled below) give NaN
  r = V::select_below(V::set(3.40282347e38f), x, x, r);             // +inf
  r = V::select_below(x, V::set(1.4e-45f), V::set(-__builtin_inff()), r);  // +-0
  return V::select_below(x, V::set(0.0f), V::set(__builtin_nanf("")), r);  // negative, -inf
}

struct Exp {
  template <class W>
  ONYX_GELU_INLINE Reg<W> apply(Reg<W> x) const { return exp<W>(x); }
};

struct Erf {
  template <class W>
  ONYX_GELU_INLINE Reg<W> apply(Reg<W> x) const { return gelu_impl::erf<W>(x); }
};

struct Log {
  template <class W>
  ONYX_GELU_INLINE Reg<W> apply(Reg<W> x) const { return log<W>(x); }
};

}  // namespace onyx::cpu::vec::exp_log_impl
