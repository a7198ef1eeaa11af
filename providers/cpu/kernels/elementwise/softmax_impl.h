// softmax_impl.h: Softmax along a contiguous row, written once over a vector
// type V (vec_math_avx2.cpp and vec_math_avx512.cpp instantiate it; V as in
// gelu_impl.h, whose exp it uses, plus reduce_max (the largest lane),
// reduce_add_double (the lanes' sum in double) and any_nonzero). Like
// gelu_impl.h it calls no standard-library inline function. The reductions
// stay in registers: a row of an attention head is 16 to 64 floats, and
// storing lanes to sum them one by one took a third of its softmax.
//
// y = e / sum(e) with e = exp(x - max(x)): the exponentials to about 2 ulp
// (0 below e^-87.3, where float32 would be denormal: -inf gives exactly 0),
// the sum in V::kLanes float partial sums, then in double; a row with a NaN
// or +inf (or only -inf) is NaN, as the scalar loop makes it.
#pragma once

#include <cstddef>

#include "kernels/elementwise/gelu_impl.h"

namespace onyx::cpu::vec::softmax_impl {

template <class V>
using Reg = typename V::reg;

template <class V>
void row(const float* x, float* y, size_t n) {
  constexpr size_t kLanes = V::kLanes;
  constexpr float kInf = __builtin_huge_valf();
  // The max, and whether any element is NaN or +inf: then x - max is NaN
  // somewhere and, as in the scalar loop, the whole row is NaN (exp clamps
  // its argument, so that must be said explicitly).
  float max = x[0];
  bool nan_row = false;
  size_t i = 0;
  if (n >= kLanes) {
    Reg<V> m = V::loadu(x), bad = V::zero_below(m, V::set(kInf), V::set(1.0f));
    for (i = kLanes; i + kLanes <= n; i += kLanes) {
      const Reg<V> v = V::loadu(x + i);
      m = V::max(m, v);
      bad = V::add(bad, V::zero_below(v, V::set(kInf), V::set(1.0f)));
    }
    max = V::reduce_max(m);  // a NaN lane makes the row NaN below, whatever max is
    nan_row = V::any_nonzero(bad);
  }
  for (; i < n; ++i) {
    max = x[i] > max ? x[i] : max;
    nan_row = nan_row || !(x[i] < kInf);
  }
  nan_row = nan_row || !(max > -kInf);  // every element -inf: x - max is NaN
  // e = exp(x - max) into y, summed.
  const Reg<V> shift = V::set(max);
  Reg<V> sum = V::set(0.0f);
  // exp clamps its argument at -87.3 (e^-87.3 = 2^-126); below that the
  // result is 0, so that masked (-inf) positions are exactly 0.
  const Reg<V> underflow = V::set(-87.3365447505531f);
  auto exp_of = [&](Reg<V> d) { return V::zero_below(d, underflow, gelu_impl::exp<V>(d)); };
  for (i = 0; i + kLanes <= n; i += kLanes) {
    const Reg<V> e = exp_of(V::sub(V::loadu(x + i), shift));
    V::storeu(y + i, e);
    sum = V::add(sum, e);
  }
  double total = V::reduce_add_double(sum);
  if (i < n) {  // the tail: masked lanes are computed from 0 but neither stored nor summed
    const Reg<V> e = exp_of(V::sub(V::load_first(x + i, n - i), shift));
    V::store_first(y + i, e, n - i);
    for (size_t k = i; k < n; ++k) total += double(y[k]);
  }
  const Reg<V> scale = V::set(nan_row ? __builtin_nanf("") : float(1.0 / total));
  for (i = 0; i + kLanes <= n; i += kLanes) V::storeu(y + i, V::mul(V::loadu(y + i), scale));
  if (i < n) V::store_first(y + i, V::mul(V::load_first(y + i, n - i), scale), n - i);
}

}  // namespace onyx::cpu::vec::softmax_impl
