// vec_math.cpp: the portable loops and the dispatch of vec_math.h.
#include "kernels/elementwise/vec_math.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>

namespace onyx::cpu::vec {
namespace detail {

void gelu_erf_generic(const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const double v = x[i];
    // 1 + erf(z) = erfc(-z), exact in the tail; -inf * erfc(inf) would be NaN.
    y[i] = std::isinf(v) ? float(v > 0 ? v : 0.0) : float(0.5 * v * std::erfc(-v * 0.7071067811865476));
  }
}

void gelu_tanh_generic(const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    // In double: 1 + tanh(u) cancels in float32 for u < 0. x / (1 + e^{-2u})
    // is the same value without the cancellation; e^{-2u} = inf gives 0.
    const double v = x[i];
    const double u = 0.7978845608028654 * (v + 0.044715 * v * v * v);
    y[i] = std::isinf(v) ? float(v > 0 ? v : 0.0) : float(v / (1.0 + std::exp(-2.0 * u)));
  }
}

// In double, each rounded once: the logistic in the form that never
// overflows exp().
static double sigmoid_of(double z) { return z >= 0 ? 1.0 / (1.0 + std::exp(-z)) : std::exp(z) / (1.0 + std::exp(z)); }

void sigmoid_generic(const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = float(sigmoid_of(x[i]));
}

void swish_generic(const float* x, float* y, size_t n, float alpha) {
  for (size_t i = 0; i < n; ++i) {
    const double v = x[i], s = sigmoid_of(double(alpha) * v);
    y[i] = s == 0 ? 0.0f : float(v * s);  // -inf: the limit 0, not -inf * 0
  }
}

void tanh_generic(const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = float(std::tanh(double(x[i])));
}

void exp_generic(const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
}

void erf_generic(const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = std::erf(x[i]);
}

void log_generic(const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = std::log(x[i]);
}

// The scalar loop Softmax had: max with NaN skipped unless first, the sum in
// double (a NaN or an infinity makes it, and the row, NaN).
void softmax_row_generic(const float* x, float* y, size_t n) {
  float max = x[0];
  for (size_t i = 1; i < n; ++i) max = x[i] > max ? x[i] : max;
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += double(y[i] = std::exp(x[i] - max));
  const auto scale = float(1.0 / sum);
  for (size_t i = 0; i < n; ++i) y[i] *= scale;
}

void window_rows_generic(float* y, int64_t ldy, const float* src, int64_t lds, int64_t rows, int64_t cols,
                         const int64_t* offsets, const float* taps, int64_t tap_count, float bias, float lo, float hi) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < cols; ++o) {
      float sum = bias;
      for (int64_t t = 0; t < tap_count; ++t) sum += src[r * lds + o + offsets[t]] * taps[t];
      sum = sum < lo ? lo : sum;  // NaN compares false: kept
      y[r * ldy + o] = sum > hi ? hi : sum;
    }
}

void transpose_generic(const float* src, int64_t rows, int64_t cols, int64_t ld_src, float* dst, int64_t ld_dst) {
  constexpr int64_t kBlock = 8;  // blocks: both sides' lines stay in cache
  for (int64_t r0 = 0; r0 < rows; r0 += kBlock)
    for (int64_t c0 = 0; c0 < cols; c0 += kBlock)
      for (int64_t c = c0; c < std::min(cols, c0 + kBlock); ++c)
        for (int64_t r = r0; r < std::min(rows, r0 + kBlock); ++r) dst[c * ld_dst + r] = src[r * ld_src + c];
}

void copy_rows_generic(float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) std::copy_n(src + r * ld_src, cols, dst + r * ld_dst);
}

void max_pool_2x2_generic(const float* x, float* y, int64_t h, int64_t w, int64_t oh, int64_t ow) {
  (void)h;
  for (int64_t i = 0; i < oh; ++i, y += ow) {
    const float* r0 = x + 2 * i * w;
    const float* r1 = r0 + w;
    for (int64_t j = 0; j < ow; ++j) {
      float best = r0[2 * j];
      for (float tap : {r0[2 * j + 1], r1[2 * j], r1[2 * j + 1]}) best = tap > best ? tap : best;
      y[j] = best;
    }
  }
}

void max_window_row_generic(float* y, const float* src, int64_t n, int64_t stride, const int64_t* offsets,
                            int64_t count) {
  for (int64_t o = 0; o < n; ++o, src += stride) {
    float best = src[offsets[0]];
    for (int64_t t = 1; t < count; ++t) {
      const float tap = src[offsets[t]];
      best = tap > best ? tap : best;
    }
    y[o] = best;
  }
}

void copy_strided_generic(const float* src, int64_t stride, int64_t n, float* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i * stride];
}

void max_pool_2x2_grad_generic(const float* x, const float* dy, float* dx, int64_t h, int64_t w, int64_t oh,
                               int64_t ow) {
  (void)h;
  for (int64_t i = 0; i < oh; ++i, dy += ow) {
    const float *r0 = x + 2 * i * w, *r1 = r0 + w;
    float *o0 = dx + 2 * i * w, *o1 = o0 + w;
    for (int64_t j = 0; j < ow; ++j) {
      // Selects, not branches (random data mispredicts half of them).
      const float t0 = r0[2 * j], t1 = r0[2 * j + 1], t2 = r1[2 * j], t3 = r1[2 * j + 1];
      const bool take1 = t1 > t0;
      const float b1 = take1 ? t1 : t0;
      const bool take2 = t2 > b1;
      const float b2 = take2 ? t2 : b1;
      const bool take3 = t3 > b2;
      const float g = dy[j];
      o1[2 * j + 1] = take3 ? g : 0.0f;
      o1[2 * j] = take2 && !take3 ? g : 0.0f;
      o0[2 * j + 1] = take1 && !take2 && !take3 ? g : 0.0f;
      o0[2 * j] = !take1 && !take2 && !take3 ? g : 0.0f;
    }
  }
}

}  // namespace detail

namespace {

bool use_avx2() {
#if defined(ONYX_CPU_AVX2_LOOPS)
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return ok;
#else
  return false;
#endif
}

bool use_avx512() {
#if defined(ONYX_CPU_AVX512_LOOPS)
  static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
  return ok;
#else
  return false;
#endif
}

}  // namespace

void gelu_erf(const float* x, float* y, size_t n) {
#if defined(ONYX_CPU_AVX512_LOOPS)
  if (use_avx512()) return detail::gelu_erf_avx512(x, y, n);
#endif
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (use_avx2()) return detail::gelu_erf_avx2(x, y, n);
#endif
  detail::gelu_erf_generic(x, y, n);
}

void sigmoid(const float* x, float* y, size_t n) {
#if defined(ONYX_CPU_AVX512_LOOPS)
  if (use_avx512()) return detail::sigmoid_avx512(x, y, n);
#endif
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (use_avx2()) return detail::sigmoid_avx2(x, y, n);
#endif
  detail::sigmoid_generic(x, y, n);
}

void swish(const float* x, float* y, size_t n, float alpha) {
#if defined(ONYX_CPU_AVX512_LOOPS)
  if (use_avx512()) return detail::swish_avx512(x, y, n, alpha);
#endif
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (use_avx2()) return detail::swish_avx2(x, y, n, alpha);
#endif
  detail::swish_generic(x, y, n, alpha);
}

void tanh(const float* x, float* y, size_t n) {
#if defined(ONYX_CPU_AVX512_LOOPS)
  if (use_avx512()) return detail::tanh_avx512(x, y, n);
#endif
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (use_avx2()) return detail::tanh_avx2(x, y, n);
#endif
  detail::tanh_generic(x, y, n);
}

void exp(const float* x, float* y, size_t n) {
#if defined(ONYX_CPU_AVX512_LOOPS)
  if (use_avx512()) return detail::exp_avx512(x, y, n);
#endif
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (use_avx2()) return detail::exp_avx2(x, y, n);
#endif
  detail::exp_generic(x, y, n);
}

void erf(const float* x, float* y, size_t n) {
#if defined(ONYX_CPU_AVX512_LOOPS)
  if (use_avx512()) return detail::erf_avx512(x, y, n);
#endif
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (use_avx2()) return detail::erf_avx2(x, y, n);
#endif
  detail::erf_generic(x, y, n);
}

void log(const float* x, float* y, size_t n) {
#if defined(ONYX_CPU_AVX512_LOOPS)
  if (use_avx512()) return detail::log_avx512(x, y, n);
#endif
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (use_avx2()) return detail::log_avx2(x, y, n);
#endif
  detail::log_generic(x, y, n);
}

void window_rows(float* y, int64_t ldy, const float* src, int64_t lds, int64_t rows, int64_t cols,
                 const int64_t* offsets, const float* taps, int64_t tap_count, float bias, float lo, float hi) {
#if defined(ONYX_CPU_AVX512_LOOPS)
  if (use_avx512())
    return detail::window_rows_avx512(y, ldy, src, lds, rows, cols, offsets, taps, tap_count, bias, lo, hi);
#endif
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (use_avx2()) return detail::window_rows_avx2(y, ldy, src, lds, rows, cols, offsets, taps, tap_count, bias, lo, hi);
#endif
  detail::window_rows_generic(y, ldy, src, lds, rows, cols, offsets, taps, tap_count, bias, lo, hi);
}

void softmax_row(const float* x, float* y, size_t n) {
#if defined(ONYX_CPU_AVX512_LOOPS)
  if (use_avx512()) return detail::softmax_row_avx512(x, y, n);
#endif
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (use_avx2()) return detail::softmax_row_avx2(x, y, n);
#endif
  detail::softmax_row_generic(x, y, n);
}

void gelu_tanh(const float* x, float* y, size_t n) {
#if defined(ONYX_CPU_AVX512_LOOPS)
  if (use_avx512()) return detail::gelu_tanh_avx512(x, y, n);
#endif
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (use_avx2()) return detail::gelu_tanh_avx2(x, y, n);
#endif
  detail::gelu_tanh_generic(x, y, n);
}

void transpose(const float* src, int64_t rows, int64_t cols, int64_t ld_src, float* dst, int64_t ld_dst) {
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (use_avx2()) return detail::transpose_avx2(src, rows, cols, ld_src, dst, ld_dst);
#endif
  detail::transpose_generic(src, rows, cols, ld_src, dst, ld_dst);
}

void copy_rows(float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows, int64_t cols) {
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (use_avx2()) return detail::copy_rows_avx2(dst, ld_dst, src, ld_src, rows, cols);
#endif
  detail::copy_rows_generic(dst, ld_dst, src, ld_src, rows, cols);
}

void max_pool_2x2(const float* x, float* y, int64_t h, int64_t w, int64_t oh, int64_t ow) {
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (use_avx2()) return detail::max_pool_2x2_avx2(x, y, h, w, oh, ow);
#endif
  detail::max_pool_2x2_generic(x, y, h, w, oh, ow);
}

void max_window_row(float* y, const float* src, int64_t n, int64_t stride, const int64_t* offsets, int64_t count) {
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (use_avx2() && (stride == 1 || stride == 2)) return detail::max_window_row_avx2(y, src, n, stride, offsets, count);
#endif
  detail::max_window_row_generic(y, src, n, stride, offsets, count);
}

void copy_strided(const float* src, int64_t stride, int64_t n, float* dst) {
  if (stride == 1) return (void)std::copy_n(src, n, dst);
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (stride == 2 && use_avx2()) return detail::copy_stride_2_avx2(src, n, dst);
#endif
  detail::copy_strided_generic(src, stride, n, dst);
}

void max_pool_2x2_grad(const float* x, const float* dy, float* dx, int64_t h, int64_t w, int64_t oh, int64_t ow) {
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (use_avx2()) return detail::max_pool_2x2_grad_avx2(x, dy, dx, h, w, oh, ow);
#endif
  detail::max_pool_2x2_grad_generic(x, dy, dx, h, w, oh, ow);
}

double sum(const float* x, size_t n) {
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (use_avx2()) return detail::sum_avx2(x, n);
#endif
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += double(x[i]);
  return s;
}

bool layer_norm_row(const float* x, float* y, int64_t n, const double* scale, const double* bias, double epsilon,
                    double* mean, double* inv_std) {
#if defined(ONYX_CPU_AVX2_LOOPS)
  if (use_avx2()) {
    detail::layer_norm_row_avx2(x, y, n, scale, bias, epsilon, mean, inv_std);
    return true;
  }
#endif
  return false;
}

const char* isa() { return use_avx512() ? "avx512 (GELU, logistic), avx2" : use_avx2() ? "avx2" : "generic"; }

}  // namespace onyx::cpu::vec
