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
// The project's tiled SGEMM (gemm_tiled.h).
gpuError_t launch_gemm_tiled(gpuStream_t stream, const GemmParams& params);
// Column matrix of image `image` (NCHW, one image), group g:
// [channels/groups * kh * kw, out_h * out_w].
gpuError_t launch_im2col(gpuStream_t stream, const Conv2dShape& shape, const float* image,
                         int64_t group, float* columns);

}  // namespace onyx::gpu
