// gelu_impl.h: GELU's vector loops written once over a vector type V
// (vec_math_avx2.cpp and vec_math_avx512.cpp instantiate them with their
// ISA's registers). Included only by those files; like them, it calls no
// standard-library inline function, so no ISA code is merged into code every
// CPU runs.
//
// V provides: reg (a float vector), kLanes, set(float),
// min, max, add, sub, mul, div, rcp(d) (1 / d to about an ulp for d >= 1, 0 for +inf),
// fmadd(a, b, c) = a b + c, fnmadd = c - a b,
// round (to nearest), scale_pow2(p, n) (p 2^n exactly, n integral in
// [-126, 128]), scale_pow2_normal(p, n) (the same for n in [-126, 127], where 2^n is one
// normal float), abs, zero_where_zero(c, v) (v, 0 where c
// == 0), select_nonnegative(x, a, b) (x >= 0 ? a : b), zero_below(x, limit,
// v) (v, 0 where x < limit; NaN keeps v), loadu, storeu, load_first(p, n)
// (the first n lanes, the rest 0), store_first(p, v, n).
//
// Accuracy (tests/providers/cpu/vec_math_test.cpp checks every ISA): within
// 2e-6 relative or 1e-30 absolute of the exact GELU; NaN stays NaN, +inf
// gives +inf and -inf gives 0.
#pragma once

#include <cstddef>

#include "kernels/elementwise/interleaved.h"

namespace onyx::cpu::vec::gelu_impl {

template <class V>
using Reg = typename V::reg;

// e^x to about 2 ulp for x in [-87.3, 88.7] (Cephes expf: x = n ln2 + r,
// |r| <= ln2 / 2, degree-5 polynomial for e^r, times 2^n); clamped outside.
// Inlined into the loop (as the functions below): called per vector, the
// erf-GELU reloaded its ~20 constants at every call and ran at 0.7 ns an
// element.
#define ONYX_GELU_INLINE inline __attribute__((always_inline))

// The range of x the caller guarantees or needs, which decides the clamps
// and how 2^n is applied: kFull [-87.3, 88.7] (2^n, n up to 128, as two
// halves); kNonPositive x <= 0 (erfc's exponent: no upper clamp, one
// multiply); kNormal [-87.3, 87.3], values beyond clamped (a caller that
// masks them), so that 2^n is one normal float: one multiply; kEverywhere
// [-103.97, 88.72], as kFull down to the subnormal results (2^n in two
// normal halves, n down to -150) and up to ln(FLT_MAX) (the Exp op,
// exp_log_impl.h, which maps what lies beyond).
enum class ExpRange { kFull, kNonPositive, kNormal, kEverywhere };

// kLow: e^{x + low}, low a correction below half an ulp of x (the rounding
// error of a product that made x), added after the range reduction
// (exp_plus below).
// NaN gives NaN: the clamps take x as their second operand, which min and
// max return when either is NaN.
template <class V, ExpRange kRange, bool kLow>
ONYX_GELU_INLINE Reg<V> exp_of(Reg<V> x, Reg<V> low) {
  if (kRange == ExpRange::kFull) x = V::min(V::set(88.3762626647949f), x);
  if (kRange == ExpRange::kNormal) x = V::min(V::set(87.3365447505531f), x);
  if (kRange == ExpRange::kEverywhere) x = V::min(V::set(88.72283935546875f), x);
  x = V::max(V::set(kRange == ExpRange::kEverywhere ? -103.972084045410f : -87.3365447505531f), x);
  const Reg<V> n = V::round(V::mul(x, V::set(1.44269504088896341f)));
  Reg<V> r = V::fnmadd(n, V::set(0.693359375f), x);
  r = V::fnmadd(n, V::set(-2.12194440e-4f), r);
  if (kLow) r = V::add(r, low);
  // The degree-5 polynomial by Estrin's scheme (pairs, then powers of r^2):
  // a dependency chain of 3 FMAs instead of Horner's 5, so that more
  // vectors are in flight (the loop is bound by latency, not throughput).
  const Reg<V> r2 = V::mul(r, r);
  const Reg<V> p01 = V::fmadd(V::set(1.6666665459e-1f), r, V::set(5.0000001201e-1f));
  const Reg<V> p23 = V::fmadd(V::set(8.3334519073e-3f), r, V::set(4.1665795894e-2f));
  const Reg<V> p45 = V::fmadd(V::set(1.9875691500e-4f), r, V::set(1.3981999507e-3f));
  Reg<V> p = V::fmadd(V::fmadd(p45, r2, p23), r2, p01);
  p = V::fmadd(p, r2, V::add(r, V::set(1.0f)));
  return kRange == ExpRange::kFull || kRange == ExpRange::kEverywhere ? V::scale_pow2(p, n) : V::scale_pow2_normal(p, n);
}

// e^x over kRange (by default all of float's).
template <class V, ExpRange kRange = ExpRange::kFull>
ONYX_GELU_INLINE Reg<V> exp(Reg<V> x) {
  return exp_of<V, kRange, false>(x, x);
}

// e^{x + low} (kLow above).
template <class V, ExpRange kRange>
ONYX_GELU_INLINE Reg<V> exp_plus(Reg<V> x, Reg<V> low) {
  return exp_of<V, kRange, true>(x, low);
}

// erfc(z) for z >= 0 with relative error below 1.2e-7 in exact arithmetic
// (Numerical Recipes' erfcc, a Chebyshev fit of erfc(z) e^{z^2}): accurate in
// the tail, where 1 - erf(z) would cancel.
template <class V>
ONYX_GELU_INLINE Reg<V> erfc(Reg<V> z) {
  const Reg<V> t = V::rcp(V::fmadd(V::set(0.5f), z, V::set(1.0f)));
  // a0 + a1 t + ... + a9 t^9 by Estrin's scheme (depth 4, Horner's 9).
  auto pair = [&](float lo, float hi) { return V::fmadd(V::set(hi), t, V::set(lo)); };
  const Reg<V> t2 = V::mul(t, t), t4 = V::mul(t2, t2), t8 = V::mul(t4, t4);
  const Reg<V> low = V::fmadd(pair(0.37409196f, 0.09678418f), t2, pair(-1.26551223f, 1.00002368f));
  const Reg<V> high = V::fmadd(pair(-1.13520398f, 1.48851587f), t2, pair(-0.18628806f, 0.27886807f));
  Reg<V> p = V::fmadd(pair(-0.82215223f, 0.17087277f), t8, V::fmadd(high, t4, low));
  p = V::fnmadd(z, z, p);  // -z^2 + poly
  // p <= 0: the polynomial fits ln(erfc(z) e^{z^2} / t), 0 at z = 0 and
  // negative beyond (to ln(1 / (2 sqrt(pi))) as z grows).
  return V::mul(t, exp<V, ExpRange::kNonPositive>(p));
}

// erf(x): below |x| = 0.5 its Taylor series to x^13 (truncation under 1e-9
// relative there), where 1 - erfc would lose the small values' digits;
// above, sign(x) (1 - erfc(|x|)). +-0 keep their sign, +-inf give +-1, NaN
// stays NaN.
template <class V>
ONYX_GELU_INLINE Reg<V> erf(Reg<V> x) {
  const Reg<V> z = V::mul(x, x);
  // 2 / sqrt(pi) (1 - z / 3 + z^2 / 10 - z^3 / 42 + z^4 / 216 - z^5 / 1320 + z^6 / 9360), Horner.
  Reg<V> p = V::fmadd(V::set(1.0f / 9360), z, V::set(-1.0f / 1320));
  p = V::fmadd(p, z, V::set(1.0f / 216));
  p = V::fmadd(p, z, V::set(-1.0f / 42));
  p = V::fmadd(p, z, V::set(1.0f / 10));
  p = V::fmadd(p, z, V::set(-1.0f / 3));
  p = V::fmadd(p, z, V::set(1.0f));
  const Reg<V> small = V::mul(V::mul(x, V::set(1.1283791670955126f)), p);
  const Reg<V> a = V::abs(x);
  const Reg<V> large = V::sub(V::set(1.0f), erfc<V>(a));
  const Reg<V> signed_large = V::select_nonnegative(x, large, V::sub(V::set(0.0f), large));
  return V::select_nonnegative(V::sub(a, V::set(0.5f)), signed_large, small);
}

// GELU with erf: h = 0.5 |x| erfc(|x| / sqrt 2); x >= 0: x - h, else -h.
template <class V>
ONYX_GELU_INLINE Reg<V> gelu_erf(Reg<V> x) {
  const Reg<V> c = erfc<V>(V::mul(V::abs(x), V::set(0.7071067811865476f)));
  Reg<V> h = V::mul(V::mul(V::set(0.5f), x), c);  // signed: 0.5 x erfc
  h = V::zero_where_zero(c, h);                   // x = +-inf: 0, not inf * 0
  return V::select_nonnegative(x, V::sub(x, h), h);
}

// GELU with tanh: 0.5 x (1 + tanh(u)) = x / (1 + e^{-2u}).
template <class V>
ONYX_GELU_INLINE Reg<V> gelu_tanh(Reg<V> x) {
  const Reg<V> x3 = V::mul(V::mul(x, x), x);
  const Reg<V> u = V::mul(V::set(0.7978845608028654f), V::fmadd(V::set(0.044715f), x3, x));
  const Reg<V> e = exp<V>(V::mul(V::set(-2.0f), u));
  const Reg<V> y = V::div(x, V::add(V::set(1.0f), e));
  // x = -inf: u = -inf, e clamps to e^88 and y = -inf; the limit is 0.
  return V::zero_below(x, V::set(-1e30f), y);
}

// Four vectors at a time, interleaved (interleaved.h): the formulas are
// latency-bound one vector at a time. erf-GELU, AVX2, 16,384 normal values:
// 1.38 -> 1.09 ns an element (two ways 1.17, three 1.21).
template <class V, bool kErf>
void loop(const float* x, float* y, size_t n) {
  using V4 = Interleaved<V, 4>;
  size_t i = 0;
  for (; i + V4::kLanes <= n; i += V4::kLanes) {
    const Reg<V4> v = V4::loadu(x + i);
    V4::storeu(y + i, kErf ? gelu_erf<V4>(v) : gelu_tanh<V4>(v));
  }
  for (; i + V::kLanes <= n; i += V::kLanes) {
    const Reg<V> v = V::loadu(x + i);
    V::storeu(y + i, kErf ? gelu_erf<V>(v) : gelu_tanh<V>(v));
  }
  if (i < n) {  // the tail: masked lanes read as 0 and are not written
    const Reg<V> v = V::load_first(x + i, n - i);
    V::store_first(y + i, kErf ? gelu_erf<V>(v) : gelu_tanh<V>(v), n - i);
  }
}

}  // namespace onyx::cpu::vec::gelu_impl
