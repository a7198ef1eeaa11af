// kernels.h: host-callable launchers of the shared GPU kernels (kernels.cu).
// Each enqueues work on `stream` and returns the launch error (gpuSuccess
// when the launch was accepted). Pointers are device memory. Thread-safe:
// launchers keep no state.
#pragma once

#include <stdint.h>

#include "gemm_tiled.h"
#include "gpu_vendor.h"
#include "kernel_math.h"

namespace onyx::gpu {

gpuError_t launch_unary(gpuStream_t stream, UnaryOp op, float alpha, const float* x, float* y,
                        int64_t n);
gpuError_t launch_binary(gpuStream_t stream, BinaryOp op, const BroadcastIndex& index,
                         const float* a, const float* b, float* y, int64_t n);
// y[i] (bool, one byte) = a[ia] op b[ib] over a broadcast.
gpuError_t launch_compare(gpuStream_t stream, CompareOp op, const BroadcastIndex& index,
                          const float* a, const float* b, unsigned char* y, int64_t n);
// y[i] = x[a offset of i] for elements of `element_bytes`: a transpose or a
// broadcast (Expand) as strides (b_strides unused).
gpuError_t launch_strided_copy(gpuStream_t stream, const BroadcastIndex& index, const void* x,
                               void* y, int64_t n, int64_t element_bytes);
// Cast of n elements between plain numeric types (kernel_math.h cast_element).
gpuError_t launch_cast(gpuStream_t stream, const void* x, int32_t from, void* y, int32_t to, int64_t n);
// Where: y[i] = cond[c] ? x[a] : other[b], offsets from three broadcasts of
// the output index (each index's b_strides walk its input).
gpuError_t launch_where(gpuStream_t stream, const BroadcastIndex& cond_index,
                        const BroadcastIndex& x_index, const BroadcastIndex& other_index,
                        const unsigned char* cond, const void* x, const void* other, void* y,
                        int64_t n, int64_t element_bytes);
// Scatter of `n` update elements into y (already holding the data); indices
// int32 or int64. An out-of-range index sets *bad_index (device int) to 1.
gpuError_t launch_scatter_elements(gpuStream_t stream, const ScatterElementsIndex& index,
                                   const void* indices, bool int64_indices, const void* updates,
                                   void* y, int64_t n, int64_t element_bytes, int* bad_index);
// ScatterND: indices are int64 [slices, k]; data dims/strides have k entries.
struct ScatterNdShape {
  int32_t k = 0;
  int64_t data_dims[kMaxRank] = {};
  int64_t data_strides[kMaxRank] = {};  // in elements
  int64_t slice_size = 1;
};
gpuError_t launch_scatter_nd(gpuStream_t stream, const ScatterNdShape& shape, const int64_t* indices,
                             const void* updates, void* y, int64_t n, int64_t element_bytes,
                             int* bad_index);
// One block per output element; LogSumExp does a max pass first.
gpuError_t launch_reduce(gpuStream_t stream, ReduceOp op, const ReduceIndex& index, const float* x,
                         float* y, int64_t out_count);
// One block per row.
gpuError_t launch_softmax(gpuStream_t stream, const RowLayout& rows, bool log_softmax,
                          const float* x, float* y);
// Rows are contiguous (inner == 1): layer norm normalizes the trailing axes.
// scale/bias have `rows.length` entries (bias may be null); mean/inv_std
// (one per row) may be null.
gpuError_t launch_layer_norm(gpuStream_t stream, const RowLayout& rows, float epsilon,
                             const float* x, const float* scale, const float* bias, float* y,
                             float* mean, float* inv_std);
// Copies `element_bytes`-sized elements; sets *bad_index (device int) to 1 when
// an index is out of range (its outputs are then left unwritten).
gpuError_t launch_gather(gpuStream_t stream, const void* data, const void* indices,
                         bool indices_are_int64, void* out, int64_t out_count, int64_t inner,
                         int64_t index_count, int64_t axis_dim, int64_t element_bytes,
                         int* bad_index);
// y[n, c, ...] += bias[c] for an NC... tensor of `n * channels * spatial` elements.
gpuError_t launch_channel_bias(gpuStream_t stream, float* y, const float* bias, int64_t n,
                               int64_t channels, int64_t spatial);
// Inference BatchNormalization of an NC... tensor; per-channel parameters.
gpuError_t launch_batch_norm(gpuStream_t stream, const float* x, const float* scale,
                             const float* bias, const float* mean, const float* variance,
                             float epsilon, float* y, int64_t n, int64_t channels, int64_t spatial);
// MaxPool / AveragePool over `planes` (= N * C) planes of one shape.
gpuError_t launch_pool2d(gpuStream_t stream, const Pool2dShape& shape, bool max_pool,
                         const float* x, float* y, int64_t planes);
// MaxPool's gradient dX (planes of the input's shape) from X and dY; every
// element of dx is written.
gpuError_t launch_max_pool2d_grad(gpuStream_t stream, const Pool2dShape& shape, const float* x,
                                  const float* dy, float* dx, int64_t planes);
// NegativeLogLikelihoodLoss: y is one value (mean, sum) or [n, inner] (none).
// One block: the batch of a loss is small. A label out of range sets *bad_label.
gpuError_t launch_nll_loss(gpuStream_t stream, const NllShape& shape, const float* scores,
                           const void* labels, float* y, int* bad_label);
// Its gradient into dx [n, classes, inner] (zeroed here first): -dy (divided
// by the count of targets for mean) at each counted target's label.
gpuError_t launch_nll_loss_grad(gpuStream_t stream, const NllShape& shape, const float* dy,
                                const void* labels, float* dx, int* bad_label);
// Device pointers to an optimizer's scalar inputs (AdamW 6, SGD 5).
struct OptimizerScalars {
  const float* values[6] = {};
};
// Fused AdamW (hf: the adamw_hf form) / SGD over n elements; outputs may be
// their inputs. The scalars are gathered on the device first.
gpuError_t launch_adamw(gpuStream_t stream, bool hf, const OptimizerScalars& scalars, const float* p,
                        const float* g, const float* m, const float* v, float* p_out, float* m_out,
                        float* v_out, int64_t n);
gpuError_t launch_sgd(gpuStream_t stream, const OptimizerScalars& scalars, const float* p, const float* g,
                      const float* buf, float* p_out, float* buf_out, int64_t n);
// Up to kMaxRank int64 values known on the host (a shape), passed by value.
struct SmallInt64s {
  int64_t values[kMaxRank] = {};
  int32_t count = 0;
};
// y[0..count) = values: device data from the host without a host buffer
// that must outlive the copy.
gpuError_t launch_write_int64s(gpuStream_t stream, const SmallInt64s& values, int64_t* y);
// The project's tiled SGEMM (gemm_tiled.h).
gpuError_t launch_gemm_tiled(gpuStream_t stream, const GemmParams& params);
// Column matrices of `images` consecutive images from `image` (NCHW), group g:
// [images][channels/groups * kh * kw][out_h * out_w].
gpuError_t launch_im2col(gpuStream_t stream, const Conv2dShape& shape, const float* image,
                         int64_t group, float* columns, int64_t images = 1);
// The adjoint: group g's channels of `images` consecutive image gradients
// from their column-matrix gradients (laid out as launch_im2col writes them).
gpuError_t launch_col2im(gpuStream_t stream, const Conv2dShape& shape, const float* columns,
                         int64_t group, float* image_grad, int64_t images);

}  // namespace onyx::gpu
