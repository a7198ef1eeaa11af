// kernel_math.h: the per-element and per-row math of the GPU kernels.
//
// Compiled three ways: by nvcc (CUDA provider), by hipcc (ROCm provider) and
// by g++ (host-side unit tests in tests/providers/cuda). Keeping the math
// here, in __host__ __device__ functions, is how GPU results get checked on
// machines without a GPU: the tests run exactly these functions against
// float64 references and the CPU provider.
//
// Nothing here allocates, throws or touches a runtime API.
#pragma once

#include <math.h>
#include <stdint.h>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define ONYX_HD __host__ __device__ inline
#else
#define ONYX_HD inline
#endif

namespace onyx::gpu {

constexpr int kMaxRank = 8;

// ---------------------------------------------------------------------------
// Elementwise
// ---------------------------------------------------------------------------

enum class UnaryOp : int32_t {
  kRelu, kSigmoid, kTanh, kExp, kLog, kSqrt, kNeg, kAbs, kErf, kReciprocal,
  kLeakyRelu,  // alpha: slope for x < 0
  kGelu,       // exact (erf) form
  kGeluTanh,   // tanh approximation
  kIdentity,
};

ONYX_HD float apply_unary(UnaryOp op, float x, float alpha) {
  switch (op) {
    case UnaryOp::kRelu: return x < 0.f ? 0.f : x;  // max(0, x) keeps NaN, as numpy
    // Split by sign so that exp never overflows.
    case UnaryOp::kSigmoid: {
      if (x >= 0.f) return 1.f / (1.f + expf(-x));
      float e = expf(x);
      return e / (1.f + e);
    }
    case UnaryOp::kTanh: return tanhf(x);
    case UnaryOp::kExp: return expf(x);
    case UnaryOp::kLog: return logf(x);
    case UnaryOp::kSqrt: return sqrtf(x);
    case UnaryOp::kNeg: return -x;
    case UnaryOp::kAbs: return fabsf(x);
    case UnaryOp::kErf: return erff(x);
    case UnaryOp::kReciprocal: return 1.f / x;
    case UnaryOp::kLeakyRelu: return x >= 0.f ? x : alpha * x;
    case UnaryOp::kGelu: return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
    case UnaryOp::kGeluTanh: {
      const float k = 0.79788456080286536f;  // sqrt(2 / pi)
      return 0.5f * x * (1.f + tanhf(k * (x + 0.044715f * x * x * x)));
    }
    case UnaryOp::kIdentity: return x;
  }
  return x;
}

enum class BinaryOp : int32_t { kAdd, kSub, kMul, kDiv, kPow, kMax, kMin };

// Comparisons of float32 to a bool (one byte); NaN compares false (true for !=).
enum class CompareOp : int32_t { kGreater, kLess, kGreaterOrEqual, kLessOrEqual, kEqual };

ONYX_HD unsigned char apply_compare(CompareOp op, float a, float b) {
  switch (op) {
    case CompareOp::kGreater: return a > b;
    case CompareOp::kLess: return a < b;
    case CompareOp::kGreaterOrEqual: return a >= b;
    case CompareOp::kLessOrEqual: return a <= b;
    case CompareOp::kEqual: return a == b;
  }
  return 0;
}

ONYX_HD float apply_binary(BinaryOp op, float a, float b) {
  switch (op) {
    case BinaryOp::kAdd: return a + b;
    case BinaryOp::kSub: return a - b;
    case BinaryOp::kMul: return a * b;
    case BinaryOp::kDiv: return a / b;
    case BinaryOp::kPow: return powf(a, b);
    // NaN propagates, as in the ONNX reference (numpy maximum/minimum).
    case BinaryOp::kMax: return (a != a || b != b) ? a + b : (a > b ? a : b);
    case BinaryOp::kMin: return (a != a || b != b) ? a + b : (a < b ? a : b);
  }
  return a;
}

// Numpy-style broadcasting of two inputs to one output, as strides: an input
// dimension of size 1 (or a missing leading one) gets stride 0.
struct BroadcastIndex {
  int32_t rank = 0;
  int64_t out_dims[kMaxRank] = {};
  int64_t a_strides[kMaxRank] = {};
  int64_t b_strides[kMaxRank] = {};
};

// Offsets into a and b of output element `i` (row-major).
ONYX_HD void broadcast_offsets(const BroadcastIndex& bi, int64_t i, int64_t* a, int64_t* b) {
  int64_t oa = 0, ob = 0;
  for (int32_t d = bi.rank - 1; d >= 0; --d) {
    int64_t coord = i % bi.out_dims[d];
    i /= bi.out_dims[d];
    oa += coord * bi.a_strides[d];
    ob += coord * bi.b_strides[d];
  }
  *a = oa;
  *b = ob;
}

// Cast between the plain numeric types (ONNX dtype codes). Values go through
// double, which holds every float32 and int32 exactly and int64 up to 2^53;
// int64 <-> int64 copies bits. To bool: nonzero. Float to int truncates.
ONYX_HD double cast_load(const void* p, int64_t i, int32_t dtype) {
  switch (dtype) {
    case 1: return static_cast<const float*>(p)[i];
    case 2: return static_cast<const uint8_t*>(p)[i];
    case 3: return static_cast<const int8_t*>(p)[i];
    case 6: return static_cast<const int32_t*>(p)[i];
    case 7: return double(static_cast<const int64_t*>(p)[i]);
    case 9: return static_cast<const uint8_t*>(p)[i] ? 1.0 : 0.0;
    case 11: return static_cast<const double*>(p)[i];
  }
  return 0;
}

ONYX_HD void cast_store(void* p, int64_t i, int32_t dtype, double v) {
  switch (dtype) {
    case 1: static_cast<float*>(p)[i] = float(v); break;
    case 2: static_cast<uint8_t*>(p)[i] = uint8_t(int64_t(v)); break;
    case 3: static_cast<int8_t*>(p)[i] = int8_t(int64_t(v)); break;
    case 6: static_cast<int32_t*>(p)[i] = int32_t(int64_t(v)); break;
    case 7: static_cast<int64_t*>(p)[i] = int64_t(v); break;
    case 9: static_cast<uint8_t*>(p)[i] = v != 0.0 ? 1 : 0; break;
    case 11: static_cast<double*>(p)[i] = v; break;
  }
}

ONYX_HD void cast_element(const void* x, int32_t from, void* y, int32_t to, int64_t i) {
  if (from == 7 && to == 7) {  // exact for every int64
    static_cast<int64_t*>(y)[i] = static_cast<const int64_t*>(x)[i];
    return;
  }
  cast_store(y, i, to, cast_load(x, i, from));
}

// ---------------------------------------------------------------------------
// Reductions
// ---------------------------------------------------------------------------

enum class ReduceOp : int32_t { kSum, kMean, kMax, kMin, kProd, kSumSquare, kL1, kL2, kLogSumExp };

// The value folding starts from.
ONYX_HD float reduce_identity(ReduceOp op) {
  switch (op) {
    case ReduceOp::kMax: return -INFINITY;
    case ReduceOp::kMin: return INFINITY;
    case ReduceOp::kProd: return 1.f;
    default: return 0.f;
  }
}

// Folds one input element into an accumulator. LogSumExp folds exp(x - shift)
// where `shift` is the row maximum found in a first pass (overflow-safe).
ONYX_HD float reduce_fold(ReduceOp op, float acc, float x, float shift) {
  switch (op) {
    case ReduceOp::kSum: case ReduceOp::kMean: return acc + x;
    case ReduceOp::kMax: return (x > acc || x != x) ? x : acc;
    case ReduceOp::kMin: return (x < acc || x != x) ? x : acc;
    case ReduceOp::kProd: return acc * x;
    case ReduceOp::kSumSquare: case ReduceOp::kL2: return acc + x * x;
    case ReduceOp::kL1: return acc + fabsf(x);
    case ReduceOp::kLogSumExp: return acc + expf(x - shift);
  }
  return acc;
}

// Combines two partial accumulators (tree reduction across threads).
ONYX_HD float reduce_combine(ReduceOp op, float a, float b) {
  switch (op) {
    case ReduceOp::kMax: return (b > a || b != b) ? b : a;
    case ReduceOp::kMin: return (b < a || b != b) ? b : a;
    case ReduceOp::kProd: return a * b;
    default: return a + b;
  }
}

ONYX_HD float reduce_finish(ReduceOp op, float acc, int64_t count, float shift) {
  switch (op) {
    case ReduceOp::kMean: return acc / float(count);
    case ReduceOp::kL2: return sqrtf(acc);
    case ReduceOp::kLogSumExp: return logf(acc) + shift;
    default: return acc;
  }
}

// Maps (output element, position inside the reduced set) to an input offset.
// Kept axes and reduced axes are listed separately, each with sizes and input
// strides, so any set of axes reduces without a transpose.
struct ReduceIndex {
  int32_t kept_rank = 0;
  int64_t kept_dims[kMaxRank] = {};
  int64_t kept_strides[kMaxRank] = {};
  int32_t reduced_rank = 0;
  int64_t reduced_dims[kMaxRank] = {};
  int64_t reduced_strides[kMaxRank] = {};
  int64_t reduce_count = 1;  // product of reduced_dims
};

ONYX_HD int64_t reduce_input_offset(const ReduceIndex& ri, int64_t out_index, int64_t r) {
  int64_t offset = 0;
  for (int32_t d = ri.kept_rank - 1; d >= 0; --d) {
    offset += (out_index % ri.kept_dims[d]) * ri.kept_strides[d];
    out_index /= ri.kept_dims[d];
  }
  for (int32_t d = ri.reduced_rank - 1; d >= 0; --d) {
    offset += (r % ri.reduced_dims[d]) * ri.reduced_strides[d];
    r /= ri.reduced_dims[d];
  }
  return offset;
}

// ---------------------------------------------------------------------------
// Rows: softmax and layer normalization
// ---------------------------------------------------------------------------

// A "row" is the `length` elements along one axis: element k of row `row` is
// at row_base(row) + k * stride, where rows are (outer, inner) pairs.
struct RowLayout {
  int64_t rows = 0;    // outer * inner
  int64_t length = 0;  // size of the normalized axis (or axes)
  int64_t inner = 1;   // stride between consecutive elements of a row
};

ONYX_HD int64_t row_base(const RowLayout& l, int64_t row) {
  int64_t outer = row / l.inner, inner = row % l.inner;
  return outer * l.length * l.inner + inner;
}

// Softmax output from the row maximum and the sum of exp(x - max).
ONYX_HD float softmax_output(float x, float row_max, float row_sum, bool log_softmax) {
  return log_softmax ? (x - row_max) - logf(row_sum) : expf(x - row_max) / row_sum;
}

ONYX_HD float layer_norm_inv_std(float variance, float epsilon) {
  return 1.f / sqrtf(variance + epsilon);
}

ONYX_HD float layer_norm_output(float x, float mean, float inv_std, float scale, float bias) {
  return (x - mean) * inv_std * scale + bias;
}

// ---------------------------------------------------------------------------
// Gather
// ---------------------------------------------------------------------------

// Output element `i` of Gather(data, indices, axis) with data viewed as
// [outer, axis_dim, inner] and output as [outer, index_count, inner].
// Returns the source offset, or -1 when the index is out of [-axis_dim, axis_dim).
ONYX_HD int64_t gather_source_offset(int64_t i, int64_t inner, int64_t index_count,
                                     int64_t axis_dim, int64_t index) {
  int64_t in = i % inner;
  int64_t outer = i / (inner * index_count);
  if (index < -axis_dim || index >= axis_dim) return -1;
  if (index < 0) index += axis_dim;
  return (outer * axis_dim + index) * inner + in;
}

// Which entry of `indices` output element `i` reads.
ONYX_HD int64_t gather_index_position(int64_t i, int64_t inner, int64_t index_count) {
  return (i / inner) % index_count;
}

// ---------------------------------------------------------------------------
// Scatter (reduction "none")
// ---------------------------------------------------------------------------

// ScatterElements: update element j (row-major over the updates' shape)
// lands at its own coordinates with the `axis` one replaced by `index`.
struct ScatterElementsIndex {
  int32_t rank = 0, axis = 0;
  int64_t update_dims[kMaxRank] = {};
  int64_t data_strides[kMaxRank] = {};
  int64_t axis_dim = 0;
};

// Returns the data offset, or -1 when `index` is outside [-axis_dim, axis_dim).
ONYX_HD int64_t scatter_elements_offset(const ScatterElementsIndex& s, int64_t j, int64_t index) {
  if (index < -s.axis_dim || index >= s.axis_dim) return -1;
  if (index < 0) index += s.axis_dim;
  int64_t offset = 0;
  for (int32_t d = s.rank - 1; d >= 0; --d) {
    int64_t coord = j % s.update_dims[d];
    j /= s.update_dims[d];
    offset += (d == s.axis ? index : coord) * s.data_strides[d];
  }
  return offset;
}

// ScatterND: update element j is element j % slice_size of slice
// j / slice_size, placed at the data slice named by that slice's k indices.
// Returns the data offset, or -1 when an index is out of range.
ONYX_HD int64_t scatter_nd_offset(const int64_t* slice_indices, int32_t k, const int64_t* data_dims,
                                  const int64_t* data_strides, int64_t slice_size, int64_t j) {
  int64_t offset = j % slice_size;
  for (int32_t t = 0; t < k; ++t) {
    int64_t index = slice_indices[t];
    if (index < -data_dims[t] || index >= data_dims[t]) return -1;
    offset += (index < 0 ? index + data_dims[t] : index) * data_strides[t];
  }
  return offset;
}

// ---------------------------------------------------------------------------
// Inference batch normalization and 2-D pooling
// ---------------------------------------------------------------------------

ONYX_HD float batch_norm_output(float x, float mean, float variance, float scale, float bias,
                                float epsilon) {
  return (x - mean) / sqrtf(variance + epsilon) * scale + bias;
}

struct Pool2dShape {
  int64_t height = 0, width = 0, out_height = 0, out_width = 0;
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, dilation_h = 1, dilation_w = 1;
  bool count_include_pad = false;  // AveragePool: divide by the whole window
};

// Output pixel (oy, ox) of one channel plane: the window's maximum, or its
// average over the taps inside the image (or over the whole window when
// count_include_pad). A window entirely in the padding gives -inf / 0.
ONYX_HD float pool2d_value(const Pool2dShape& s, const float* plane, int64_t oy, int64_t ox,
                           bool max_pool) {
  float acc = max_pool ? -INFINITY : 0.f;
  int64_t taps = 0;
  for (int64_t kh = 0; kh < s.kernel_h; ++kh) {
    int64_t y = oy * s.stride_h - s.pad_top + kh * s.dilation_h;
    if (y < 0 || y >= s.height) continue;
    for (int64_t kw = 0; kw < s.kernel_w; ++kw) {
      int64_t x = ox * s.stride_w - s.pad_left + kw * s.dilation_w;
      if (x < 0 || x >= s.width) continue;
      float v = plane[y * s.width + x];
      if (max_pool) acc = (v > acc || v != v) ? v : acc;
      else acc += v;
      ++taps;
    }
  }
  if (max_pool) return acc;
  int64_t divisor = s.count_include_pad ? s.kernel_h * s.kernel_w : taps;
  return divisor > 0 ? acc / float(divisor) : 0.f;
}

// The output position whose window puts tap k on input position i along
// one dim (i = o * stride - pad + k * dilation), or -1 when there is none:
// how a gradient gathers per input element, without atomics.
ONYX_HD int64_t output_of_tap(int64_t i, int64_t k, int64_t pad, int64_t stride, int64_t dilation, int64_t out) {
  const int64_t t = i + pad - k * dilation;  // = o * stride
  if (t < 0 || t % stride) return -1;
  return t / stride < out ? t / stride : -1;
}

// NegativeLogLikelihoodLoss over scores [n, classes, inner] and labels
// [n, inner] (int32 or int64); reduction 0 mean, 1 sum, 2 none.
struct NllShape {
  int64_t n = 0, classes = 0, inner = 1;
  bool int64_labels = true;
  bool has_ignore_index = false;
  int64_t ignore_index = 0;
  int32_t reduction = 0;
};
constexpr int32_t kNllMean = 0, kNllSum = 1, kNllNone = 2;

// Target t (= b * inner + i): its label, and whether it counts (not ignored)
// and is in range (an out-of-range label that is not ignored is an error).
ONYX_HD int64_t nll_label(const NllShape& s, const void* labels, int64_t t, bool* counts, bool* in_range) {
  int64_t label = s.int64_labels ? static_cast<const int64_t*>(labels)[t]
                                 : int64_t(static_cast<const int32_t*>(labels)[t]);
  *counts = !(s.has_ignore_index && label == s.ignore_index);
  *in_range = !*counts || (label >= 0 && label < s.classes);
  return label;
}
// Offset in the scores of target t's label (valid when it counts and is in range).
ONYX_HD int64_t nll_offset(const NllShape& s, int64_t t, int64_t label) {
  return ((t / s.inner) * s.classes + label) * s.inner + t % s.inner;
}

// Fused optimizer updates (domain ai.onyx.optimizers), the CPU provider's
// float32 formulas (providers/cpu/kernels/optimizer/fused_optimizers.cpp).
// The scalars stay in device memory: each thread reads them, so a step needs
// no read-back. AdamW's scalars: lr, step, beta1, beta2, epsilon, weight_decay.
struct AdamStep {
  float m, v, p;
};
ONYX_HD AdamStep adamw_element(bool hf, const float* s, float p, float g, float m, float v) {
  const float lr = s[0], step = s[1], beta1 = s[2], beta2 = s[3], epsilon = s[4], weight_decay = s[5];
  const float bias1 = 1.0f - powf(beta1, step), bias2 = 1.0f - powf(beta2, step), keep = 1.0f - lr * weight_decay;
  AdamStep r;
  r.m = beta1 * m + (1.0f - beta1) * g;
  r.v = beta2 * v + (1.0f - beta2) * (g * g);
  if (hf) {  // adamw_hf: epsilon before the second moment's correction, decay after
    const float step_size = lr * sqrtf(bias2) / bias1;
    r.p = (p - step_size * (r.m / (sqrtf(r.v) + epsilon))) * keep;
  } else {  // adamw (PyTorch): decoupled decay, corrections as reciprocals
    const float step_size = lr / bias1, inv_sqrt_bias2 = 1.0f / sqrtf(bias2);
    r.p = p * keep - step_size * r.m / (sqrtf(r.v) * inv_sqrt_bias2 + epsilon);
  }
  return r;
}
// SGD's scalars: lr, step, momentum, nesterov (0 or 1), weight_decay.
ONYX_HD void sgd_element(const float* s, float p, float g, float buf, float* p_out, float* buf_out) {
  const float lr = s[0], momentum = s[2], nesterov = s[3], weight_decay = s[4];
  const float grad = g + weight_decay * p;
  const float new_buf = momentum * buf + grad;
  const float direction = nesterov * (grad + momentum * new_buf) + (1.0f - nesterov) * new_buf;
  *p_out = p - lr * direction;
  *buf_out = new_buf;
}

// MaxPool's gradient at input pixel (iy, ix) of one plane: the sum of dY over
// the windows whose maximum is this pixel. A window's maximum is its first
// tap (row-major) holding the largest value, or its first NaN, as
// pool2d_value picks it; gathering per input pixel needs no atomics.
ONYX_HD float max_pool2d_grad_value(const Pool2dShape& s, const float* x_plane, const float* dy_plane,
                                    int64_t iy, int64_t ix) {
  float grad = 0.f;
  for (int64_t kh = 0; kh < s.kernel_h; ++kh) {
    const int64_t oy = output_of_tap(iy, kh, s.pad_top, s.stride_h, s.dilation_h, s.out_height);
    if (oy < 0) continue;
    for (int64_t kw = 0; kw < s.kernel_w; ++kw) {
      const int64_t ox = output_of_tap(ix, kw, s.pad_left, s.stride_w, s.dilation_w, s.out_width);
      if (ox < 0) continue;
      // The argmax of window (oy, ox), as pool2d_value scans it.
      float best = -INFINITY;
      int64_t best_at = -1;
      for (int64_t h = 0; h < s.kernel_h; ++h) {
        int64_t y = oy * s.stride_h - s.pad_top + h * s.dilation_h;
        if (y < 0 || y >= s.height) continue;
        for (int64_t w = 0; w < s.kernel_w; ++w) {
          int64_t x = ox * s.stride_w - s.pad_left + w * s.dilation_w;
          if (x < 0 || x >= s.width) continue;
          float v = x_plane[y * s.width + x];
          if (best_at < 0 || (best == best && (v > best || v != v))) best = v, best_at = y * s.width + x;
        }
      }
      if (best_at == iy * s.width + ix) grad += dy_plane[oy * s.out_width + ox];
    }
  }
  return grad;
}

// ---------------------------------------------------------------------------
// Convolution lowering (im2col) for providers without a convolution library
// ---------------------------------------------------------------------------

struct Conv2dShape {
  int64_t batch = 0, channels = 0, height = 0, width = 0;   // input, NCHW
  int64_t out_channels = 0, out_height = 0, out_width = 0;
  int64_t kernel_h = 0, kernel_w = 0;
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;
};

// Element (row, col) of the column matrix of image `n`, group `g`: rows are
// (c, kh, kw) of the group's input channels, cols are output pixels.
// Returns 0 for taps that fall into the padding.
ONYX_HD float im2col_value(const Conv2dShape& s, const float* image, int64_t g, int64_t row,
                           int64_t col) {
  int64_t group_channels = s.channels / s.groups;
  int64_t kw = row % s.kernel_w;
  int64_t kh = (row / s.kernel_w) % s.kernel_h;
  int64_t c = g * group_channels + row / (s.kernel_w * s.kernel_h);
  int64_t ox = col % s.out_width, oy = col / s.out_width;
  int64_t y = oy * s.stride_h - s.pad_h + kh * s.dilation_h;
  int64_t x = ox * s.stride_w - s.pad_w + kw * s.dilation_w;
  if (y < 0 || y >= s.height || x < 0 || x >= s.width) return 0.f;
  return image[(c * s.height + y) * s.width + x];
}

// The adjoint of im2col: element (c, y, x) of one image's gradient, c within
// group g's channels, is the sum of the column-matrix gradient entries that
// im2col_value read from it (one per tap whose output pixel exists).
ONYX_HD float col2im_value(const Conv2dShape& s, const float* columns, int64_t c, int64_t y,
                           int64_t x) {
  int64_t cols = s.out_height * s.out_width;
  float sum = 0.f;
  for (int64_t kh = 0; kh < s.kernel_h; ++kh) {
    const int64_t oy = output_of_tap(y, kh, s.pad_h, s.stride_h, s.dilation_h, s.out_height);
    if (oy < 0) continue;
    for (int64_t kw = 0; kw < s.kernel_w; ++kw) {
      const int64_t ox = output_of_tap(x, kw, s.pad_w, s.stride_w, s.dilation_w, s.out_width);
      if (ox < 0) continue;
      int64_t row = (c * s.kernel_h + kh) * s.kernel_w + kw;
      sum += columns[row * cols + oy * s.out_width + ox];
    }
  }
  return sum;
}

}  // namespace onyx::gpu
