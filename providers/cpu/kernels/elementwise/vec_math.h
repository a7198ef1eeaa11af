// vec_math.h: float32 activation loops vectorized for the running CPU
// (AVX-512 in vec_math_avx512.cpp for GELU, AVX2+FMA in vec_math_avx2.cpp,
// else portable C++), chosen once at first use. Private to the CPU provider.
//
// Accuracy (tests/providers/cpu/vec_math_test.cpp checks it against float64):
// gelu_erf and gelu_tanh are within 2e-6 relative or 1e-30 absolute of the
// exact function; NaN stays NaN, +inf gives +inf and -inf gives 0. sigmoid
// and tanh are within 1e-6 relative or 1.2e-38 absolute, swish within 1e-6
// relative or 1.1e-36 absolute; NaN stays NaN and infinities give the limits.
#pragma once

#include <cstddef>
#include <cstdint>

namespace onyx::cpu::vec {

// y[i] = 0.5 x (1 + erf(x / sqrt(2))); y may be x.
void gelu_erf(const float* x, float* y, size_t n);
// y[i] = 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))); y may be x.
void gelu_tanh(const float* x, float* y, size_t n);

// y[i] = 1 / (1 + e^-x); y may be x.
void sigmoid(const float* x, float* y, size_t n);
// y[i] = x sigmoid(alpha x) (ONNX Swish; SiLU for alpha 1); y may be x.
void swish(const float* x, float* y, size_t n, float alpha);
// y[i] = tanh(x); y may be x.
void tanh(const float* x, float* y, size_t n);
// y[i] = e^x; y may be x. Within 3 ulp where the result is a normal float,
// 1e-45 absolute below; 0 for x below -103.97, +inf above 88.72, NaN stays NaN.
void exp(const float* x, float* y, size_t n);
// y[i] = erf(x); y may be x. Within 3e-7 relative or 1e-37 absolute of the
// exact value; +-inf give +-1, NaN stays NaN, -0 stays -0.
void erf(const float* x, float* y, size_t n);
// y[i] = ln x; y may be x. Within 3 ulp (subnormal x included); -inf for
// +-0, NaN for negatives and NaN, +inf for +inf.
void log(const float* x, float* y, size_t n);

// MaxPool with a 2x2 window, stride 2, no padding or dilation, over one
// h x w plane into its oh x ow outputs (2 oh <= h, 2 ow <= w). Taps are
// compared in row-major order, each as `tap > best ? tap : best`, as the
// generic MaxPool loop does (so NaN handling is the same).
void max_pool_2x2(const float* x, float* y, int64_t h, int64_t w, int64_t oh, int64_t ow);
// Its gradient: each dy goes to the tap max_pool_2x2 picks (the first
// maximum), the window's other taps get 0. Writes the 2 oh x 2 ow inputs the
// windows cover; a last row or column none covers is left as it is.
void max_pool_2x2_grad(const float* x, const float* dy, float* dx, int64_t h, int64_t w, int64_t oh, int64_t ow);

// One row of MaxPool windows that lie inside the input: y[o] for o < n is the
// largest of src[o * stride + offsets[t]] over t < count (count >= 1),
// compared in t order as `tap > best ? tap : best` (the generic MaxPool
// loop's rule: a NaN first tap sticks, later NaNs are skipped). Stride 1 and
// 2 run vector loops; reads only the elements the windows cover.
void max_window_row(float* y, const float* src, int64_t n, int64_t stride, const int64_t* offsets, int64_t count);

// Softmax of one contiguous row of n >= 1 floats: y = exp(x - max) / sum,
// the exponentials to about 2 ulp, 0 below e^-87.3 (so -inf, a mask, gives
// exactly 0; a row holding NaN or +inf is NaN). y may be x.
void softmax_row(const float* x, float* y, size_t n);

// y[r * ldy + o] = min(hi, max(lo, bias + sum_t src[r * lds + o + offsets[t]] * taps[t]))
// for rows r < rows and columns o < cols (NaN kept): a depthwise convolution
// window over a flat, padded plane (conv/phase_planes.h) whose grid rows are
// lds apart, every tap summed in registers, clamped as a fused Relu or Clip
// would (lo, hi = -inf, inf: no clamp), each row written straight to y.
// Reads up to kWindowReadPast floats past the last element a row's window
// covers (whole vectors; those lanes are dropped). y must not overlap src.
constexpr int64_t kWindowReadPast = 16;
void window_rows(float* y, int64_t ldy, const float* src, int64_t lds, int64_t rows, int64_t cols,
                 const int64_t* offsets, const float* taps, int64_t tap_count, float bias, float lo, float hi);

// dst[c * ld_dst + r] = src[r * ld_src + c] for r < rows, c < cols: a
// transpose (a transposed GEMM's output back into planes). dst must not
// overlap src.
void transpose(const float* src, int64_t rows, int64_t cols, int64_t ld_src, float* dst, int64_t ld_dst);

// dst[r * ld_dst + c] = src[r * ld_src + c] for r < rows, c < cols: input
// rows placed into a padded plane (conv/phase_planes.h). Writes only those
// elements (the padding around them stays) and reads none past the last
// one. dst must not overlap src.
void copy_rows(float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows, int64_t cols);

// dst[i] = src[i * stride] for i < n (stride >= 1): a strided row made
// contiguous (im2col's strided taps; MaxPool's rows split by column parity).
// Reads only those elements; stride 1 and 2 run vector loops. No overlap.
void copy_strided(const float* src, int64_t stride, int64_t n, float* dst);

// The sum of n floats, in double (GlobalAveragePool's plane).
double sum(const float* x, size_t n);

// One LayerNormalization row of n floats, in double: the mean, then the mean
// of squared deviations (two passes: accurate when the mean is large against
// the spread), y[k] = (x[k] - mean) / sqrt(var + epsilon) * scale[k] + bias[k]
// rounded once to float (scale and bias: the row's n expanded values). Sets
// *mean and *inv_std. Returns false, touching nothing, where the CPU has no
// vector loop for it: the caller's portable loop runs instead (row_norm.cpp).
// y may be x.
bool layer_norm_row(const float* x, float* y, int64_t n, const double* scale, const double* bias, double epsilon,
                    double* mean, double* inv_std);

// "avx512 (GELU, logistic), avx2", "avx2" or "generic": which loops the functions above run.
const char* isa();

namespace detail {  // the per-ISA loops, for the dispatcher and the tests
void gelu_erf_generic(const float* x, float* y, size_t n);
void gelu_tanh_generic(const float* x, float* y, size_t n);
void sigmoid_generic(const float* x, float* y, size_t n);
void swish_generic(const float* x, float* y, size_t n, float alpha);
void tanh_generic(const float* x, float* y, size_t n);
void exp_generic(const float* x, float* y, size_t n);
void erf_generic(const float* x, float* y, size_t n);
void log_generic(const float* x, float* y, size_t n);
void softmax_row_generic(const float* x, float* y, size_t n);
void window_rows_generic(float* y, int64_t ldy, const float* src, int64_t lds, int64_t rows, int64_t cols,
                         const int64_t* offsets, const float* taps, int64_t tap_count, float bias, float lo, float hi);
// Defined only where ONYX_CPU_AVX2_LOOPS is set; call only on an AVX2+FMA CPU.
void gelu_erf_avx2(const float* x, float* y, size_t n);
void gelu_tanh_avx2(const float* x, float* y, size_t n);
void sigmoid_avx2(const float* x, float* y, size_t n);
void swish_avx2(const float* x, float* y, size_t n, float alpha);
void tanh_avx2(const float* x, float* y, size_t n);
void exp_avx2(const float* x, float* y, size_t n);
void erf_avx2(const float* x, float* y, size_t n);
void log_avx2(const float* x, float* y, size_t n);
void softmax_row_avx2(const float* x, float* y, size_t n);
double sum_avx2(const float* x, size_t n);
void layer_norm_row_avx2(const float* x, float* y, int64_t n, const double* scale, const double* bias, double epsilon,
                         double* mean, double* inv_std);
void window_rows_avx2(float* y, int64_t ldy, const float* src, int64_t lds, int64_t rows, int64_t cols,
                      const int64_t* offsets, const float* taps, int64_t tap_count, float bias, float lo, float hi);
// Defined only where ONYX_CPU_AVX512_LOOPS is set; call only on an AVX-512 CPU.
void gelu_erf_avx512(const float* x, float* y, size_t n);
void gelu_tanh_avx512(const float* x, float* y, size_t n);
void sigmoid_avx512(const float* x, float* y, size_t n);
void swish_avx512(const float* x, float* y, size_t n, float alpha);
void tanh_avx512(const float* x, float* y, size_t n);
void exp_avx512(const float* x, float* y, size_t n);
void erf_avx512(const float* x, float* y, size_t n);
void log_avx512(const float* x, float* y, size_t n);
void softmax_row_avx512(const float* x, float* y, size_t n);
void window_rows_avx512(float* y, int64_t ldy, const float* src, int64_t lds, int64_t rows, int64_t cols,
                        const int64_t* offsets, const float* taps, int64_t tap_count, float bias, float lo, float hi);
void transpose_generic(const float* src, int64_t rows, int64_t cols, int64_t ld_src, float* dst, int64_t ld_dst);
void copy_rows_generic(float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows, int64_t cols);
void transpose_avx2(const float* src, int64_t rows, int64_t cols, int64_t ld_src, float* dst, int64_t ld_dst);
void copy_rows_avx2(float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows, int64_t cols);
void max_pool_2x2_generic(const float* x, float* y, int64_t h, int64_t w, int64_t oh, int64_t ow);
void max_window_row_generic(float* y, const float* src, int64_t n, int64_t stride, const int64_t* offsets,
                            int64_t count);
void copy_strided_generic(const float* src, int64_t stride, int64_t n, float* dst);
void copy_stride_2_avx2(const float* src, int64_t n, float* dst);
void max_window_row_avx2(float* y, const float* src, int64_t n, int64_t stride, const int64_t* offsets,
                         int64_t count);
void max_pool_2x2_avx2(const float* x, float* y, int64_t h, int64_t w, int64_t oh, int64_t ow);
void max_pool_2x2_grad_generic(const float* x, const float* dy, float* dx, int64_t h, int64_t w, int64_t oh,
                               int64_t ow);
void max_pool_2x2_grad_avx2(const float* x, const float* dy, float* dx, int64_t h, int64_t w, int64_t oh, int64_t ow);
}  // namespace detail

}  // namespace onyx::cpu::vec
