// interleaved.h: Interleaved<V, K>, K registers of the vector type V (as in
// gelu_impl.h) used as one register of K x V::kLanes lanes: each operation
// is V's, applied to the K parts one after another.
//
// Why: a long per-vector formula (the erf-GELU is ~45 dependent operations)
// is bound by latency once the out-of-order window is full of one vector's
// waiting operations. Written K ways side by side, each step has K
// independent operations next to each other, so the window always holds
// work that is ready. The results are bit-identical to V's, lane by lane.
// Like gelu_impl.h it calls no standard-library inline function.
#pragma once

#include <cstddef>

namespace onyx::cpu::vec {

template <class V, int K>
struct Interleaved {
  struct reg {
    typename V::reg part[K];
  };
  static constexpr size_t kLanes = V::kLanes * K;

#define ONYX_INTERLEAVED_OP(name, params, args)             \
  [[gnu::always_inline]] static reg name params {           \
    reg r;                                                  \
    _Pragma("GCC unroll 8") for (int k = 0; k < K; ++k) r.part[k] = V::name args; \
    return r;                                               \
  }
  ONYX_INTERLEAVED_OP(set, (float v), (v))
  ONYX_INTERLEAVED_OP(abs, (reg a), (a.part[k]))
  ONYX_INTERLEAVED_OP(mantissa, (reg a), (a.part[k]))
  ONYX_INTERLEAVED_OP(exponent, (reg a), (a.part[k]))
  ONYX_INTERLEAVED_OP(round, (reg a), (a.part[k]))
  ONYX_INTERLEAVED_OP(rcp, (reg a), (a.part[k]))
  ONYX_INTERLEAVED_OP(min, (reg a, reg b), (a.part[k], b.part[k]))
  ONYX_INTERLEAVED_OP(max, (reg a, reg b), (a.part[k], b.part[k]))
  ONYX_INTERLEAVED_OP(add, (reg a, reg b), (a.part[k], b.part[k]))
  ONYX_INTERLEAVED_OP(sub, (reg a, reg b), (a.part[k], b.part[k]))
  ONYX_INTERLEAVED_OP(mul, (reg a, reg b), (a.part[k], b.part[k]))
  ONYX_INTERLEAVED_OP(div, (reg a, reg b), (a.part[k], b.part[k]))
  ONYX_INTERLEAVED_OP(scale_pow2, (reg p, reg n), (p.part[k], n.part[k]))
  ONYX_INTERLEAVED_OP(scale_pow2_normal, (reg p, reg n), (p.part[k], n.part[k]))
  ONYX_INTERLEAVED_OP(zero_where_zero, (reg c, reg v), (c.part[k], v.part[k]))
  ONYX_INTERLEAVED_OP(fmadd, (reg a, reg b, reg c), (a.part[k], b.part[k], c.part[k]))
  ONYX_INTERLEAVED_OP(fnmadd, (reg a, reg b, reg c), (a.part[k], b.part[k], c.part[k]))
  ONYX_INTERLEAVED_OP(select_nonnegative, (reg x, reg a, reg b), (x.part[k], a.part[k], b.part[k]))
  ONYX_INTERLEAVED_OP(zero_below, (reg x, reg limit, reg v), (x.part[k], limit.part[k], v.part[k]))
  ONYX_INTERLEAVED_OP(select_below, (reg x, reg limit, reg a, reg b), (x.part[k], limit.part[k], a.part[k], b.part[k]))
  ONYX_INTERLEAVED_OP(loadu, (const float* p), (p + k * V::kLanes))
#undef ONYX_INTERLEAVED_OP

  [[gnu::always_inline]] static void storeu(float* p, reg v) {
    _Pragma("GCC unroll 8") for (int k = 0; k < K; ++k) V::storeu(p + k * V::kLanes, v.part[k]);
  }
};

}  // namespace onyx::cpu::vec
