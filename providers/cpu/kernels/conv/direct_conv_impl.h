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

#include <algorithm>

#include "kernels/conv/direct_conv.h"

namespace onyx::cpu::direct_conv::impl {

template <class V>
using Reg = typename V::reg;

// act(v) as the op computes it; max/min return their second operand on NaN.
// With the activation known at compile time: the flat form's runs are
// short, and a switch per run cost a tenth of them.
template <class V, Epilogue::Kind A>
inline Reg<V> activate_as(const Epilogue& e, Reg<V> v) {
  if constexpr (A == Epilogue::kRelu) return V::max(V::zero(), v);  // v < 0 ? 0 : v
  if constexpr (A == Epilogue::kClip) return V::min(V::bcast(&e.b), V::max(V::bcast(&e.a), v));  // min(max(v, a), b)
  if constexpr (A == Epilogue::kLeakyRelu) return V::select_negative(v, V::mul(V::bcast(&e.a), v));
  return v;
}

template <class V>
inline Reg<V> activate(const Epilogue& e, Reg<V> v) {
  switch (e.kind) {
    case Epilogue::kNone: return v;
    case Epilogue::kRelu: return activate_as<V, Epilogue::kRelu>(e, v);
    case Epilogue::kClip: return activate_as<V, Epilogue::kClip>(e, v);
    case Epilogue::kLeakyRelu: return activate_as<V, Epilogue::kLeakyRelu>(e, v);
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
void lane_tile(const detail::LaneWork& k, int64_t p0, int64_t n, int64_t m0, float* staged) {
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
      if (p < n) V::store(staged + p * M + m0 + v * V::kLanes, activate<V>(*k.epilogue, V::add(acc[p][v], b)));
  }
}

// Positions are done a chunk at a time, staged in the first floats of this
// call's part of k.staged and transposed into y while they are in L1 (the
// whole range staged first, MobileNetV2's first layer, 1.6 MB, went through
// memory twice).
template <class V>
void run_lanes(const detail::LaneWork& k, int64_t p_lo, int64_t p_hi) {
  constexpr int64_t kStageFloats = 4096, kStep = kLanePositions * V::kLanes;
  const Shape& s = *k.shape;
  const int64_t M = s.out_channels, positions = s.out_h * s.out_w;
  const int64_t chunk = std::max(kStep, kStageFloats / M / kStep * kStep);
  float* const staged = k.staged + p_lo * M;
  for (int64_t c0 = p_lo; c0 < p_hi; c0 += chunk) {
    const int64_t c1 = std::min(p_hi, c0 + chunk);
    for (int64_t m0 = 0; m0 < M; m0 += kLaneChannels)
      for (int64_t p = c0; p < c1; p += kLanePositions) {
        const int64_t n = c1 - p < kLanePositions ? c1 - p : kLanePositions;
        lane_tile<V>(k, p, n, m0, staged + (p - c0) * M);
      }
    // [positions][M] -> [M][positions], kLanes x kLanes at a time.
    constexpr int L = V::kLanes;
    int64_t p = c0;
    for (; p + L <= c1; p += L)
      for (int64_t m = 0; m < M; m += L) {
        Reg<V> r[L];
        for (int i = 0; i < L; ++i) r[i] = V::loadu(staged + (p - c0 + i) * M + m);
        V::transpose(r);
        for (int i = 0; i < L; ++i) V::store(k.y + (m + i) * positions + p, r[i]);
      }
    for (; p < c1; ++p)
      for (int64_t m = 0; m < M; ++m) k.y[m * positions + p] = staged[(p - c0) * M + m];
  }
}

// staged [rows][stride][kLanes] -> y [kLanes][rows][cols] (planes `plane`
// apart): the first `cols` positions of each staged row, transposed kLanes
// at a time; a row's last block overlaps the one before it (the same values
// written twice) instead of a scalar tail.
template <class V>
void unstage(const float* staged, int64_t rows, int64_t stride, int64_t cols, float* y, int64_t plane) {
  constexpr int L = V::kLanes;
  for (int64_t r = 0; r < rows; ++r, staged += stride * L, y += cols) {
    if (cols < L) {
      for (int64_t q = 0; q < cols; ++q)
        for (int m = 0; m < L; ++m) y[m * plane + q] = staged[q * L + m];
      continue;
    }
    for (int64_t q0 = 0;; q0 += L) {
      const int64_t q = q0 < cols - L ? q0 : cols - L;
      Reg<V> v[L];
      for (int i = 0; i < L; ++i) v[i] = V::loadu(staged + (q + i) * L);
      V::transpose(v);
      for (int i = 0; i < L; ++i) V::store(y + i * plane + q, v[i]);
      if (q == cols - L) break;
    }
  }
}

// The flat form's accumulation: acc[r][p] += the taps from `first` on of
// every input channel at x + r * row + p (r < R rows of P positions), w
// their weights [channel][tap][kLanes]. Taps go KW at a time, a row of the
// kernel when KW is its width (3, dilation 1): then each input value is
// broadcast once for up to KW neighbouring positions (with one broadcast
// per multiply-add, Zen 4's two vector loads a cycle held it at 60% of the
// FMA peak).
template <class V, int R, int P, int KW>
inline void flat_accumulate(const detail::LaneWork& k, const float* x, int64_t row, const float* w,
                            Reg<V> (&acc)[R][P]) {
  const Shape& s = *k.shape;
  const int64_t plane = s.padded_h * s.padded_w;
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int p = 0; p < P; ++p) acc[r][p] = V::zero();
  for (int64_t c = 0; c < s.channels; ++c, x += plane)
    for (int64_t t = 0; t < k.taps; t += KW, w += KW * V::kLanes) {
      const float* xt = x + k.tap_offsets[t];
      Reg<V> wv[KW];
#pragma GCC unroll 4
      for (int d = 0; d < KW; ++d) wv[d] = V::loadu(w + d * V::kLanes);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
        for (int j = 0; j < P + KW - 1; ++j) {
          const Reg<V> xv = V::bcast(xt + r * row + j);
#pragma GCC unroll 4
          for (int d = 0; d < KW; ++d)
            if (j - d >= 0 && j - d < P) acc[r][j - d] = V::fma(xv, wv[d], acc[r][j - d]);
        }
    }
}

// The flat form (direct_conv.h) for kLanes output channels with weights w,
// bias `bias` (or null), into `staged` from its start: unpooled, flat
// positions [q_lo, q_hi) (row-major over out_h x padded_w) kFlatPositions
// at a time, staged [q - q_lo][kLanes].
template <class V, int KW, Epilogue::Kind A>
void flat_runs(const detail::LaneWork& k, int64_t q_lo, int64_t q_hi, const float* w, const float* bias,
               float* staged) {
  constexpr int P = int(kFlatPositions);
  const Reg<V> b = bias ? V::loadu(bias) : V::zero();
  for (int64_t q = q_lo; q < q_hi; q += P, staged += P * V::kLanes) {
    Reg<V> acc[1][P];
    flat_accumulate<V, 1, P, KW>(k, k.x + q, 0, w, acc);
    const int64_t n = q_hi - q;
#pragma GCC unroll 16
    for (int p = 0; p < P; ++p)
      if (p < n) V::store(staged + p * V::kLanes, activate_as<V, A>(*k.epilogue, V::add(acc[0][p], b)));
  }
}

// Pooled: pooled rows [row_lo, row_hi), each 2 output rows x P columns at a
// time max-pooled 2 x 2 in registers, staged [row - row_lo][column][kLanes].
// The max is taken as vec::max_pool_2x2 takes it (a NaN first in its window
// wins; a NaN later does not), so that fused and unfused agree bit for bit.
template <class V, int KW, Epilogue::Kind A>
void flat_pooled_runs(const detail::LaneWork& k, int64_t row_lo, int64_t row_hi, const float* w,
                      const float* bias, float* staged) {
  constexpr int P = int(kFlatPositions) / 2;  // 2 x P accumulators, as unpooled
  const int64_t row = k.shape->padded_w, pw = k.shape->out_w / 2;
  const Reg<V> b = bias ? V::loadu(bias) : V::zero();
  const Epilogue& e = *k.epilogue;
  for (int64_t r = row_lo; r < row_hi; ++r)
    for (int64_t j = 0; j < pw; j += P / 2) {
      float* out = staged + ((r - row_lo) * pw + j) * V::kLanes;
      Reg<V> acc[2][P];
      flat_accumulate<V, 2, P, KW>(k, k.x + 2 * r * row + 2 * j, row, w, acc);
      const int64_t n = pw - j;
#pragma GCC unroll 4
      for (int i = 0; i < P / 2; ++i) {
        Reg<V> best = activate_as<V, A>(e, V::add(acc[0][2 * i], b));
        best = V::max(activate_as<V, A>(e, V::add(acc[0][2 * i + 1], b)), best);
        best = V::max(activate_as<V, A>(e, V::add(acc[1][2 * i], b)), best);
        best = V::max(activate_as<V, A>(e, V::add(acc[1][2 * i + 1], b)), best);
        if (i < n) V::store(out + i * V::kLanes, best);
      }
    }
}

template <class V, int KW, Epilogue::Kind A>
void run_flat(const detail::LaneWork& k, int64_t row_lo, int64_t row_hi) {
  static_assert(V::kLanes == kFlatChannels && kFlatPositions % 4 == 0);
  constexpr int64_t L = kFlatChannels;
  const Shape& s = *k.shape;
  const int64_t per_block = s.channels * k.taps * L, rows = row_hi - row_lo;
  for (int64_t m0 = 0; m0 < s.out_channels; m0 += L) {
    const float* w = k.lane_w + m0 / L * per_block;
    const float* bias = k.bias ? k.bias + m0 : nullptr;
    if (!k.pool_2x2) {
      const int64_t plane = s.out_h * s.out_w;
      flat_runs<V, KW, A>(k, row_lo * s.padded_w, row_hi * s.padded_w, w, bias, k.staged);
      unstage<V>(k.staged, rows, s.padded_w, s.out_w, k.y + m0 * plane + row_lo * s.out_w, plane);
      continue;
    }
    const int64_t pw = s.out_w / 2, plane = s.out_h / 2 * pw;
    flat_pooled_runs<V, KW, A>(k, row_lo, row_hi, w, bias, k.staged);
    unstage<V>(k.staged, rows, pw, pw, k.y + m0 * plane + row_lo * pw, plane);
  }
}

template <class V, int KW>
void run_flat(const detail::LaneWork& k, int64_t row_lo, int64_t row_hi) {
  switch (k.epilogue->kind) {
    case Epilogue::kNone: return run_flat<V, KW, Epilogue::kNone>(k, row_lo, row_hi);
    case Epilogue::kRelu: return run_flat<V, KW, Epilogue::kRelu>(k, row_lo, row_hi);
    case Epilogue::kClip: return run_flat<V, KW, Epilogue::kClip>(k, row_lo, row_hi);
    case Epilogue::kLeakyRelu: return run_flat<V, KW, Epilogue::kLeakyRelu>(k, row_lo, row_hi);
  }
}

template <class V>
void run_flat(const detail::LaneWork& k, int64_t row_lo, int64_t row_hi) {
  if (k.shape->kernel_w == 3 && k.shape->dilation_w == 1)
    run_flat<V, 3>(k, row_lo, row_hi);
  else
    run_flat<V, 1>(k, row_lo, row_hi);
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

// The weight gradient with output channels in the lanes (direct_conv.h,
// accumulate_weight_gradient_lanes): NK (channel, tap) pairs from `first`
// x MV vectors of output channels from m0, over every output position: per
// position MV loads of dY^T and one broadcast of X per pair, no lane idle
// and no masked load, whatever the row width or stride.
template <class V, int MV, int NK>
void weight_lane_block(const detail::Work& k, int64_t m0, int64_t first, int64_t channel, int64_t tap) {
  const Shape& s = *k.shape;
  const int64_t plane = s.padded_h * s.padded_w, positions = s.out_h * s.out_w, M = s.out_channels;
  const float* xk[NK];
  for (int j = 0; j < NK; ++j) {
    xk[j] = k.x + channel * plane + k.tap_offsets[tap];
    if (++tap == k.taps) tap = 0, ++channel;
  }
  Reg<V> acc[NK][MV];
#pragma GCC unroll 16
  for (int j = 0; j < NK; ++j)
#pragma GCC unroll 2
    for (int v = 0; v < MV; ++v) acc[j][v] = V::zero();
  const float* dy = k.dy + m0;
  for (int64_t p = 0; p < positions; ++p, dy += M) {
    const int64_t at = k.positions[p];
    Reg<V> d[MV];
#pragma GCC unroll 2
    for (int v = 0; v < MV; ++v) d[v] = V::loadu(dy + v * V::kLanes);
#pragma GCC unroll 16
    for (int j = 0; j < NK; ++j) {
      const Reg<V> xv = V::bcast(xk[j] + at);
#pragma GCC unroll 2
      for (int v = 0; v < MV; ++v) acc[j][v] = V::fma(xv, d[v], acc[j][v]);
    }
  }
#pragma GCC unroll 16
  for (int j = 0; j < NK; ++j)
#pragma GCC unroll 2
    for (int v = 0; v < MV; ++v) {
      float* out = k.dw + (first + j) * M + m0 + v * V::kLanes;
      V::store(out, V::add(V::loadu(out), acc[j][v]));
    }
}

// Pairs [pair, pair_hi) (channel, tap the first one's) in blocks of NK,
// then what is left in blocks of NK / 2, down to 1: a 3 x 3 kernel of one
// input channel is 9 pairs, whose single-pair blocks read every position for
// one multiply-add each.
template <class V, int MV, int NK>
void weight_lane_pairs(const detail::Work& k, int64_t m0, int64_t pair, int64_t channel, int64_t tap,
                       int64_t pair_hi) {
  for (; pair + NK <= pair_hi; pair += NK) {
    weight_lane_block<V, MV, NK>(k, m0, pair, channel, tap);
    tap += NK;
    while (tap >= k.taps) tap -= k.taps, ++channel;
  }
  if constexpr (NK > 1) weight_lane_pairs<V, MV, NK / 2>(k, m0, pair, channel, tap, pair_hi);
}

template <class V>
void weight_gradient_lanes(const detail::Work& k, int64_t pair_lo, int64_t pair_hi) {
  const int64_t channel = pair_lo / k.taps, tap = pair_lo % k.taps;
  // 12 accumulators, 2 dY vectors and a broadcast: 15 of AVX2's 16
  // registers. (One vector of channels, with a load per multiply-add,
  // halved the speed of a 1 -> 8 channel layer's gradient.)
  for (int64_t m0 = 0; m0 < k.shape->out_channels; m0 += 2 * V::kLanes)
    weight_lane_pairs<V, 2, 6>(k, m0, pair_lo, channel, tap, pair_hi);
}

}  // namespace onyx::cpu::direct_conv::impl
