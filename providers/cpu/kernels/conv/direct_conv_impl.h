// direct_conv_impl.h: the direct convolution's loops, written once over a
// vector type V (direct_conv_avx2.cpp and direct_conv_avx512.cpp instantiate
// them with their ISA's registers). Included only by those files.
//
// Like the vec_math loops, nothing here calls a standard-library inline
// function: the ISA's code must not be merged into code every CPU runs.
// V provides: reg, kLanes, kVectors (vectors of output positions per block),
// kWeightPairs ((channel, tap) pairs per weight-gradient block),
// zero(), loadu(p), bcast(p), fma(a, b, c) = a * b + c, add, mul, max, min,
// select_negative(v, if_negative), store(p, v), store_first(p, v, n),
// load_first(p, n) (the first n lanes, the rest 0), sum(v) (of the lanes).
#pragma once

#include "kernels/conv/direct_conv.h"

namespace onyx::cpu::direct_conv::impl {

template <class V>
using Reg = typename V::reg;

// act(v) as the op computes it; max/min return their second operand on NaN.
template <class V>
inline Reg<V> activate(const Epilogue& e, Reg<V> v) {
  switch (e.kind) {
    case Epilogue::kNone:
      return v;
    case Epilogue::kRelu:
      return V::max(V::zero(), v);  // v < 0 ? 0 : v
    case Epilogue::kClip:
      return V::min(V::bcast(&e.b), V::max(V::bcast(&e.a), v));  // min(max(v, a), b)
    case Epilogue::kLeakyRelu:
      return V::select_negative(v, V::mul(V::bcast(&e.a), v));
  }
  return v;
}

// MB output channels x NV fragments, accumulated over every channel and tap.
template <class V, int MB, int NV>
void block(const Shape& s, const float* x, const int64_t* tap_offsets, int64_t taps, const float* w,
           const Fragment* f, const float* bias, const Epilogue& e, float* y) {
  // Every loop over MB or NV unrolled, so that acc[][] is only ever indexed
  // by constants: else GCC keeps it on the stack and stores every
  // accumulator at every tap (AVX2 ran at a quarter of its peak).
  Reg<V> acc[MB][NV];
#pragma GCC unroll 4
  for (int m = 0; m < MB; ++m)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[m][v] = V::zero();
  const int64_t plane = s.padded_h * s.padded_w;
  for (int64_t c = 0; c < s.channels; ++c, x += plane) {
    for (int64_t t = 0; t < taps; ++t, w += MB) {
      const float* xt = x + tap_offsets[t];
      Reg<V> xv[NV];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) xv[v] = V::loadu(xt + f[v].in);
#pragma GCC unroll 4
      for (int m = 0; m < MB; ++m) {
        const Reg<V> wm = V::bcast(w + m);
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[m][v] = V::fma(wm, xv[v], acc[m][v]);
      }
    }
  }
  const int64_t out_plane = s.out_h * s.out_w;
#pragma GCC unroll 4
  for (int m = 0; m < MB; ++m) {
    const Reg<V> b = bias ? V::bcast(bias + m) : V::zero();
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      const Reg<V> r = activate<V>(e, V::add(acc[m][v], b));
      float* dst = y + m * out_plane + f[v].out;
      if (f[v].lanes == V::kLanes)
        V::store(dst, r);
      else
        V::store_first(dst, r, f[v].lanes);
    }
  }
}

template <class V, int MB>
void channel_block(const Shape& s, const float* x, const int64_t* tap_offsets, int64_t taps,
                   const float* w, const Fragment* f, int64_t fragments, const float* bias,
                   const Epilogue& e, float* y) {
  constexpr int K = V::kVectors;  // at most 4
  auto run_block = [&]<int NV>(int64_t at) {
    block<V, MB, (NV < K ? NV : K)>(s, x, tap_offsets, taps, w, f + at, bias, e, y);
  };
  // A block of one vector loads as much per FMA as it computes: the last
  // K + 1 fragments make two blocks instead (2 + 2 for K = 3, 3 + 2 for 4).
  const int64_t rest = fragments % K;
  const int64_t full = fragments - (rest == 1 && fragments > K ? K + 1 : rest);
  int64_t i = 0;
  for (; i < full; i += K) run_block.template operator()<K>(i);
  switch (fragments - i) {
    case 5: run_block.template operator()<3>(i), run_block.template operator()<2>(i + 3); break;
    case 4: run_block.template operator()<2>(i), run_block.template operator()<2>(i + 2); break;
    case 3: run_block.template operator()<3>(i); break;
    case 2: run_block.template operator()<2>(i); break;
    case 1: run_block.template operator()<1>(i); break;
    default: break;
  }
}

template <class V>
void run(const detail::Work& k, int64_t block_lo, int64_t block_hi) {
  static_assert(V::kVectors >= 1 && V::kVectors <= 4 && kChannelBlock == 4);
  const Shape& s = *k.shape;
  const int64_t out_plane = s.out_h * s.out_w, weights = s.channels * k.taps;
  for (int64_t b = block_lo; b < block_hi; ++b) {
    const int64_t m0 = b * kChannelBlock, left = s.out_channels - m0;
    const float* w = k.packed_w + m0 * weights;
    const float* bias = k.bias ? k.bias + m0 : nullptr;
    float* y = k.y + m0 * out_plane;
    const Fragment* f = k.fragments;
    const int64_t n = k.fragment_count;
    if (left >= 4) channel_block<V, 4>(s, k.x, k.tap_offsets, k.taps, w, f, n, bias, *k.epilogue, y);
    else if (left == 3) channel_block<V, 3>(s, k.x, k.tap_offsets, k.taps, w, f, n, bias, *k.epilogue, y);
    else if (left == 2) channel_block<V, 2>(s, k.x, k.tap_offsets, k.taps, w, f, n, bias, *k.epilogue, y);
    else channel_block<V, 1>(s, k.x, k.tap_offsets, k.taps, w, f, n, bias, *k.epilogue, y);
  }
}

// The channel-lane form (direct_conv.h): kLanePositions output positions
// [p0, p0 + n) x kLaneChannels output channels from m0, staged. Positions
// past n repeat the last one (computed, not stored), so one instance serves
// the tail.
template <class V>
void lane_tile(const detail::LaneWork& k, int64_t p0, int64_t n, int64_t m0) {
  constexpr int P = int(kLanePositions), NV = int(kLaneChannels) / V::kLanes;
  const Shape& s = *k.shape;
  const int64_t M = s.out_channels, plane = s.padded_h * s.padded_w;
  const float* xp[P];
#pragma GCC unroll 8
  for (int p = 0; p < P; ++p) xp[p] = k.x + k.positions[p0 + (p < n ? p : n - 1)];
  Reg<V> acc[P][NV];
#pragma GCC unroll 8
  for (int p = 0; p < P; ++p)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[p][v] = V::zero();
  const float* w = k.lane_w + m0 * s.channels * k.taps;
  for (int64_t c = 0, coff = 0; c < s.channels; ++c, coff += plane)
    for (int64_t t = 0; t < k.taps; ++t, w += kLaneChannels) {
      const int64_t off = coff + k.tap_offsets[t];
      Reg<V> wv[NV];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) wv[v] = V::loadu(w + v * V::kLanes);
#pragma GCC unroll 8
      for (int p = 0; p < P; ++p) {
        const Reg<V> xv = V::bcast(xp[p] + off);
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[p][v] = V::fma(xv, wv[v], acc[p][v]);
      }
    }
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    const Reg<V> b = k.bias ? V::loadu(k.bias + m0 + v * V::kLanes) : V::zero();
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p)
      if (p < n) V::store(k.staged + (p0 + p) * M + m0 + v * V::kLanes, activate<V>(*k.epilogue, V::add(acc[p][v], b)));
  }
}

template <class V>
void run_lanes(const detail::LaneWork& k, int64_t p_lo, int64_t p_hi) {
  const Shape& s = *k.shape;
  const int64_t M = s.out_channels, positions = s.out_h * s.out_w;
  for (int64_t m0 = 0; m0 < M; m0 += kLaneChannels)
    for (int64_t p = p_lo; p < p_hi; p += kLanePositions) {
      const int64_t n = p_hi - p < kLanePositions ? p_hi - p : kLanePositions;
      lane_tile<V>(k, p, n, m0);
    }
  // [positions][M] -> [M][positions], kLanes x kLanes at a time.
  constexpr int L = V::kLanes;
  int64_t p = p_lo;
  for (; p + L <= p_hi; p += L)
    for (int64_t m = 0; m < M; m += L) {
      Reg<V> r[L];
      for (int i = 0; i < L; ++i) r[i] = V::loadu(k.staged + (p + i) * M + m);
      V::transpose(r);
      for (int i = 0; i < L; ++i) V::store(k.y + (m + i) * positions + p, r[i]);
    }
  for (; p < p_hi; ++p)
    for (int64_t m = 0; m < M; ++m) k.y[m * positions + p] = k.staged[p * M + m];
}

// dW for MB output channels x NK (channel, tap) pairs starting at `first`:
// vector sums over the fragments of dY x X under each tap, added lane by
// lane into dw's partial sums (a horizontal sum per call cost as much as the
// loop on 14 x 14 planes; the caller sums the lanes once). Partial fragments
// load only their real lanes, so neighbouring values (a NaN elsewhere in X)
// never enter a sum.
template <class V, int MB, int NK>
void weight_block(const detail::Work& k, int64_t m0, int64_t first, int64_t channel, int64_t tap, float* dw) {
  const Shape& s = *k.shape;
  const int64_t plane = s.padded_h * s.padded_w, out_plane = s.out_h * s.out_w, per_filter = s.channels * k.taps;
  const float* xk[NK];
  for (int j = 0; j < NK; ++j) {  // pair first + j is (channel, tap), counted without a division
    xk[j] = k.x + channel * plane + k.tap_offsets[tap];
    if (++tap == k.taps) tap = 0, ++channel;
  }
  const float* dy = k.dy + m0 * out_plane;
  Reg<V> acc[MB][NK];
#pragma GCC unroll 4
  for (int m = 0; m < MB; ++m)
#pragma GCC unroll 8
    for (int j = 0; j < NK; ++j) acc[m][j] = V::zero();
  // One loop body for full and partial fragments (masked loads either way):
  // with a branch per fragment GCC kept the accumulators on the stack.
  for (int64_t f = 0; f < k.fragment_count; ++f) {
    const Fragment fr = k.fragments[f];
    Reg<V> d[MB];
#pragma GCC unroll 4
    for (int m = 0; m < MB; ++m) d[m] = V::load_first(dy + m * out_plane + fr.out, fr.lanes);
#pragma GCC unroll 8
    for (int j = 0; j < NK; ++j) {
      const Reg<V> xv = V::load_first(xk[j] + fr.in, fr.lanes);
#pragma GCC unroll 4
      for (int m = 0; m < MB; ++m) acc[m][j] = V::fma(d[m], xv, acc[m][j]);
    }
  }
  // Unrolled, so that acc[][] is only ever indexed by constants: else GCC
  // keeps it on the stack and stores every accumulator at every fragment.
#pragma GCC unroll 8
  for (int m = 0; m < MB; ++m)
#pragma GCC unroll 8
    for (int j = 0; j < NK; ++j) {
      float* lanes = dw + ((m0 + m) * per_filter + first + j) * V::kLanes;
      V::store(lanes, V::add(V::loadu(lanes), acc[m][j]));
    }
}

template <class V, int MB>
void weight_channels(const detail::Work& k, int64_t m0) {
  constexpr int NK = V::kWeightPairs;
  const int64_t per_filter = k.shape->channels * k.taps;
  int64_t ct = 0, channel = 0, tap = 0;
  auto advance = [&](int64_t pairs) {
    ct += pairs;
    tap += pairs;
    while (tap >= k.taps) tap -= k.taps, ++channel;
  };
  for (; ct + NK <= per_filter; advance(NK)) weight_block<V, MB, NK>(k, m0, ct, channel, tap, k.dw);
  for (; ct < per_filter; advance(1)) weight_block<V, MB, 1>(k, m0, ct, channel, tap, k.dw);
}

template <class V>
void weight_gradient(const detail::Work& k, int64_t block_lo, int64_t block_hi) {
  for (int64_t b = block_lo; b < block_hi; ++b) {
    const int64_t m0 = b * kChannelBlock, left = k.shape->out_channels - m0;
    if (left >= 4) weight_channels<V, 4>(k, m0);
    else if (left == 3) weight_channels<V, 3>(k, m0);
    else if (left == 2) weight_channels<V, 2>(k, m0);
    else weight_channels<V, 1>(k, m0);
  }
}

}  // namespace onyx::cpu::direct_conv::impl
