// conv_lowering.h: the pieces Conv and ConvTranspose (conv.cpp) share,
// templated on the element type (float or double): the GEMM (ConvGrad uses
// it too), im2col / col2im over windows lifted to 3-D (nn::lift_to_3d),
// chunking of the column buffer, and the loop over (image, group) work
// items with per-worker scratch.
// A "line" is one output (or input, for col2im) row: a fixed (d, h)
// position of W elements.
#pragma once

#include <algorithm>
#include <atomic>
#include <vector>

#include "kernels/elementwise/vec_math.h"
#include "kernels/nn_util.h"

namespace onyx::cpu::conv_lowering {

// C = op(A) op(B) + beta C for the element type: the blocked SGEMM or the
// plain DGEMM (gemm/gemm.h).
// The epilogue (gemm/gemm.h) runs only on float32; a float64 caller
// applies its own.
inline void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                 const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
                 const ParallelFor& pf, const GemmEpilogue& epilogue = {}) {
  sgemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc, pf, epilogue);
}
inline void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda,
                 const double* b, int64_t ldb, double beta, double* c, int64_t ldc,
                 const ParallelFor& pf, const GemmEpilogue& = {}) {
  dgemm(ta, tb, m, n, k, 1.0, a, lda, b, ldb, beta, c, ldc, pf);
}

// im2col / col2im buffer shared by the workers, in bytes (16 MiB).
constexpr int64_t kColumnBytes = int64_t(16) << 20;

inline int64_t kernel_volume(const std::vector<nn::WindowDim>& w) {
  return w[0].kernel * w[1].kernel * w[2].kernel;
}
inline int64_t in_volume(const std::vector<nn::WindowDim>& w) { return w[0].in * w[1].in * w[2].in; }
inline int64_t out_volume(const std::vector<nn::WindowDim>& w) { return w[0].out * w[1].out * w[2].out; }

// Where one (image, group) work item runs: its scratch, the GEMM's
// parallelism and, when the item runs alone, the host pool for the loops.
template <typename T>
struct Worker {
  T* scratch = nullptr;
  ParallelFor gemm;
  sdk::ComputeContext* pool = nullptr;  // null inside a parallel body
  template <typename Fn>
  void for_range(size_t n, size_t grain, Fn&& fn) {
    // (A fresh lambda: the SDK's parallel_for takes its body as an rvalue.)
    if (pool)
      pool->parallel_for(n, grain, [&fn](size_t lo, size_t hi) { fn(lo, hi); });
    else if (n)
      fn(size_t(0), n);
  }
};

// Items run in parallel (each with its own scratch and a serial GEMM) when
// there are at least as many as threads: no synchronisation inside an item.
// Otherwise they run one by one with the parallelism inside each.
inline bool items_in_parallel(sdk::ComputeContext& ctx, int64_t items) {
  // (Below 2^32: for_each_item packs two item indices in 64 bits.)
  return ctx.thread_count() > 1 && items >= int64_t(ctx.thread_count()) && items < (int64_t(1) << 32);
}

// zeroed: the first that many elements of every worker's scratch start zeroed.
template <typename T, typename Body>
OnyxStatus* for_each_item(sdk::ComputeContext& ctx, int64_t items, int64_t scratch_elems,
                          Body&& body, int64_t zeroed = 0) {
  bool parallel = items_in_parallel(ctx, items);
  size_t slots = parallel ? ctx.thread_count() : 1;
  void* mem = nullptr;
  if (scratch_elems > 0)
    ONYX_SDK_RETURN_IF_ERROR(ctx.scratch(slots * size_t(scratch_elems) * sizeof(T), &mem));
  T* scratch = static_cast<T*>(mem);
  for (size_t slot = 0; scratch && slot < slots; ++slot)
    std::fill_n(scratch + slot * size_t(scratch_elems), std::min(zeroed, scratch_elems), T(0));
  if (!parallel) {
    Worker<T> w{scratch, nn::host_parallel_for(ctx), &ctx};
    for (int64_t item = 0; item < items; ++item) body(item, w);
    return nullptr;
  }
  ParallelFor serial = nn::serial_parallel_for();
  // Slot k owns the k-th contiguous share of the items and takes them from
  // its front; a slot done with its own takes the others' from their backs.
  // Contiguous shares keep an image on the core that wrote it: the pool runs
  // slot k on thread k, as it runs chunk k of the elementwise loops before
  // and after (images 0-31 of 64 on thread 0). Taking over the rest: the
  // cores of a shared machine do not run at the same speed (on a 2-vCPU VM
  // one took 20% longer for the same 32 images, and the other waited).
  struct alignas(64) Share {
    std::atomic<uint64_t> bounds;  // front << 32 | end, front == end: empty
  };
  std::vector<Share> shares(slots);
  for (size_t k = 0; k < slots; ++k)
    shares[k].bounds.store(uint64_t(items * int64_t(k) / int64_t(slots)) << 32 |
                               uint64_t(items * int64_t(k + 1) / int64_t(slots)),
                           std::memory_order_relaxed);
  // The next item of share k, from its front (owner) or its back; -1: none.
  auto take = [&shares](size_t k, bool front) -> int64_t {
    uint64_t b = shares[k].bounds.load(std::memory_order_relaxed);
    for (;;) {
      const uint64_t first = b >> 32, end = b & 0xffffffffu;
      if (first >= end) return -1;
      const uint64_t next = front ? (first + 1) << 32 | end : first << 32 | (end - 1);
      if (shares[k].bounds.compare_exchange_weak(b, next, std::memory_order_relaxed))
        return int64_t(front ? first : end - 1);
    }
  };
  ctx.parallel_for(slots, 1, [&](size_t lo, size_t hi) {
    for (size_t slot = lo; slot < hi; ++slot) {
      Worker<T> w{scratch ? scratch + slot * size_t(scratch_elems) : nullptr, serial, nullptr};
      for (int64_t item = take(slot, true); item >= 0; item = take(slot, true)) body(item, w);
      for (size_t other = 1; other < slots; ++other)
        for (int64_t item = take((slot + other) % slots, false); item >= 0; item = take((slot + other) % slots, false))
          body(item, w);
    }
  });
  return nullptr;
}

// Output lines per im2col/col2im chunk so that `rows` x (lines x width)
// elements of T fit the budget shared by the workers.
template <typename T>
int64_t lines_per_chunk(sdk::ComputeContext& ctx, int64_t items, int64_t rows, int64_t width,
                        int64_t lines) {
  int64_t slots = items_in_parallel(ctx, items) ? int64_t(ctx.thread_count()) : 1;
  int64_t fit = kColumnBytes / int64_t(sizeof(T)) / slots / std::max<int64_t>(1, rows * width);
  return std::clamp<int64_t>(fit, 1, std::max<int64_t>(1, lines));
}

// Row (c, kd, kh, kw) of `col` gets, for each output position of lines
// [l0, l1), the input element under that tap, or 0 in the padding.
template <typename T>
void im2col(const T* x, int64_t channels, const std::vector<nn::WindowDim>& win, int64_t l0,
            int64_t l1, T* col, Worker<T>& worker) {
  const nn::WindowDim &D = win[0], &H = win[1], &W = win[2];
  const int64_t taps = kernel_volume(win), cols = (l1 - l0) * W.out;
  worker.for_range(size_t(channels * taps), nn::grain_for(double(cols)), [&](size_t lo, size_t hi) {
    for (size_t r = lo; r < hi; ++r) {
      int64_t c = int64_t(r) / taps, t = int64_t(r) % taps;
      int64_t kd = t / (H.kernel * W.kernel), kh = t / W.kernel % H.kernel, kw = t % W.kernel;
      int64_t iw0 = kw * W.dilation - W.pad_begin;
      nn::IndexRange valid = nn::index_range(iw0, W.stride, W.out, 0, W.in);
      const T* xc = x + c * D.in * H.in * W.in;
      T* dst = col + int64_t(r) * cols;
      for (int64_t l = l0; l < l1; ++l, dst += W.out) {
        int64_t id = l / H.out * D.stride - D.pad_begin + kd * D.dilation;
        int64_t ih = l % H.out * H.stride - H.pad_begin + kh * H.dilation;
        if (id < 0 || id >= D.in || ih < 0 || ih >= H.in) {
          std::fill(dst, dst + W.out, T(0));
          continue;
        }
        const T* src = xc + (id * H.in + ih) * W.in;
        std::fill(dst, dst + valid.first, T(0));
        if (W.stride == 1)
          std::copy(src + iw0 + valid.first, src + iw0 + valid.last, dst + valid.first);
        else if constexpr (std::is_same_v<T, float>)  // vectorized for stride 2 (RegNet's grouped 3x3 / 2: 4.3x)
          vec::copy_strided(src + iw0 + valid.first * W.stride, W.stride, valid.last - valid.first, dst + valid.first);
        else
          for (int64_t ow = valid.first; ow < valid.last; ++ow) dst[ow] = src[iw0 + ow * W.stride];
        std::fill(dst + valid.last, dst + W.out, T(0));
      }
    }
  });
}

// Adds `col` rows (m, kd, kh, kw) x input positions of lines [l0, l1) into
// the output planes y[m] at the positions each tap reaches.
template <typename T>
void col2im(const T* col, int64_t channels, const std::vector<nn::WindowDim>& win, int64_t l0,
            int64_t l1, T* y, Worker<T>& worker) {
  const nn::WindowDim &D = win[0], &H = win[1], &W = win[2];
  const int64_t taps = kernel_volume(win), cols = (l1 - l0) * W.in, plane = out_volume(win);
  // One output channel per task: its rows write only its own plane.
  worker.for_range(size_t(channels), nn::grain_for(double(taps * cols)), [&](size_t lo, size_t hi) {
    for (size_t m = lo; m < hi; ++m)
      for (int64_t t = 0; t < taps; ++t) {
        int64_t kd = t / (H.kernel * W.kernel), kh = t / W.kernel % H.kernel, kw = t % W.kernel;
        int64_t ow0 = kw * W.dilation - W.pad_begin;
        nn::IndexRange valid = nn::index_range(ow0, W.stride, W.in, 0, W.out);
        const T* src = col + (int64_t(m) * taps + t) * cols;
        for (int64_t l = l0; l < l1; ++l, src += W.in) {
          int64_t od = l / H.in * D.stride - D.pad_begin + kd * D.dilation;
          int64_t oh = l % H.in * H.stride - H.pad_begin + kh * H.dilation;
          if (od < 0 || od >= D.out || oh < 0 || oh >= H.out) continue;
          T* dst = y + int64_t(m) * plane + (od * H.out + oh) * W.out;
          for (int64_t iw = valid.first; iw < valid.last; ++iw) dst[ow0 + iw * W.stride] += src[iw];
        }
      }
  });
}

}  // namespace onyx::cpu::conv_lowering
