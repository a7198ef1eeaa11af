// kernels.cu: the shared GPU kernels. nvcc compiles this file for the CUDA
// provider and hipcc (as HIP) for the ROCm provider; gpu_vendor.h maps the
// runtime calls. The math lives in kernel_math.h / gemm_tiled.h so the host
// tests can check it; this file only distributes it over threads.
#include "kernels.h"

namespace onyx::gpu {
namespace {

constexpr int kThreads = 256;

unsigned grid_for(int64_t n) {
  int64_t blocks = (n + kThreads - 1) / kThreads;
  return unsigned(blocks < 65535 * 8 ? (blocks > 0 ? blocks : 1) : 65535 * 8);
}

// Tree reduction of one value per thread in shared memory (blockDim == kThreads).
template <typename Combine>
__device__ float block_reduce(float v, float* shared, Combine combine) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (int(threadIdx.x) < half)
      shared[threadIdx.x] = combine(shared[threadIdx.x], shared[threadIdx.x + half]);
    __syncthreads();
  }
  float result = shared[0];
  __syncthreads();
  return result;
}

__global__ void unary_kernel(UnaryOp op, float alpha, const float* x, float* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = apply_unary(op, x[i], alpha);
}

__global__ void binary_kernel(BinaryOp op, BroadcastIndex index, const float* a, const float* b,
                              float* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t ia, ib;
    broadcast_offsets(index, i, &ia, &ib);
    y[i] = apply_binary(op, a[ia], b[ib]);
  }
}

__global__ void compare_kernel(CompareOp op, BroadcastIndex index, const float* a, const float* b,
                               unsigned char* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t ia, ib;
    broadcast_offsets(index, i, &ia, &ib);
    y[i] = apply_compare(op, a[ia], b[ib]);
  }
}

__global__ void strided_copy_kernel(BroadcastIndex index, const unsigned char* x, unsigned char* y,
                                    int64_t n, int64_t element_bytes) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t ia, ib;
    broadcast_offsets(index, i, &ia, &ib);
    for (int64_t b = 0; b < element_bytes; ++b) y[i * element_bytes + b] = x[ia * element_bytes + b];
  }
}

__global__ void cast_kernel(const void* x, int32_t from, void* y, int32_t to, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    cast_element(x, from, y, to, i);
}

__global__ void where_kernel(BroadcastIndex ci, BroadcastIndex xi, BroadcastIndex oi,
                             const unsigned char* cond, const unsigned char* x,
                             const unsigned char* other, unsigned char* y, int64_t n,
                             int64_t element_bytes) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t unused, c, a, b;
    broadcast_offsets(ci, i, &unused, &c);
    broadcast_offsets(xi, i, &unused, &a);
    broadcast_offsets(oi, i, &unused, &b);
    const unsigned char* src = cond[c] ? x + a * element_bytes : other + b * element_bytes;
    for (int64_t k = 0; k < element_bytes; ++k) y[i * element_bytes + k] = src[k];
  }
}

__global__ void scatter_elements_kernel(ScatterElementsIndex index, const void* indices,
                                        bool int64_indices, const unsigned char* updates,
                                        unsigned char* y, int64_t n, int64_t element_bytes,
                                        int* bad_index) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < n;
       j += int64_t(gridDim.x) * blockDim.x) {
    int64_t idx = int64_indices ? static_cast<const int64_t*>(indices)[j]
                                : static_cast<const int32_t*>(indices)[j];
    int64_t dst = scatter_elements_offset(index, j, idx);
    if (dst < 0) {
      *bad_index = 1;
      continue;
    }
    for (int64_t b = 0; b < element_bytes; ++b) y[dst * element_bytes + b] = updates[j * element_bytes + b];
  }
}

__global__ void scatter_nd_kernel(ScatterNdShape s, const int64_t* indices, const unsigned char* updates,
                                  unsigned char* y, int64_t n, int64_t element_bytes, int* bad_index) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < n;
       j += int64_t(gridDim.x) * blockDim.x) {
    int64_t dst = scatter_nd_offset(indices + (j / s.slice_size) * s.k, s.k, s.data_dims,
                                    s.data_strides, s.slice_size, j);
    if (dst < 0) {
      *bad_index = 1;
      continue;
    }
    for (int64_t b = 0; b < element_bytes; ++b) y[dst * element_bytes + b] = updates[j * element_bytes + b];
  }
}

__global__ void reduce_kernel(ReduceOp op, ReduceIndex index, const float* x, float* y) {
  __shared__ float shared[kThreads];
  int64_t out = blockIdx.x;
  float shift = 0.f;
  if (op == ReduceOp::kLogSumExp) {
    float m = -INFINITY;
    for (int64_t r = threadIdx.x; r < index.reduce_count; r += kThreads)
      m = reduce_fold(ReduceOp::kMax, m, x[reduce_input_offset(index, out, r)], 0.f);
    shift = block_reduce(m, shared, [](float a, float b) { return reduce_combine(ReduceOp::kMax, a, b); });
    if (isinf(shift)) shift = 0.f;  // all -inf (or +inf): let exp/log give the IEEE answer
  }
  float acc = reduce_identity(op);
  for (int64_t r = threadIdx.x; r < index.reduce_count; r += kThreads)
    acc = reduce_fold(op, acc, x[reduce_input_offset(index, out, r)], shift);
  acc = block_reduce(acc, shared, [op](float a, float b) { return reduce_combine(op, a, b); });
  if (threadIdx.x == 0) y[out] = reduce_finish(op, acc, index.reduce_count, shift);
}

__global__ void softmax_kernel(RowLayout rows, bool log_softmax, const float* x, float* y) {
  __shared__ float shared[kThreads];
  int64_t base = row_base(rows, blockIdx.x);
  float m = -INFINITY;
  for (int64_t k = threadIdx.x; k < rows.length; k += kThreads)
    m = fmaxf(m, x[base + k * rows.inner]);
  m = block_reduce(m, shared, [](float a, float b) { return fmaxf(a, b); });
  float s = 0.f;
  for (int64_t k = threadIdx.x; k < rows.length; k += kThreads) s += expf(x[base + k * rows.inner] - m);
  s = block_reduce(s, shared, [](float a, float b) { return a + b; });
  for (int64_t k = threadIdx.x; k < rows.length; k += kThreads)
    y[base + k * rows.inner] = softmax_output(x[base + k * rows.inner], m, s, log_softmax);
}

__global__ void layer_norm_kernel(RowLayout rows, float epsilon, const float* x, const float* scale,
                                  const float* bias, float* y, float* mean_out, float* inv_std_out) {
  __shared__ float shared[kThreads];
  int64_t base = int64_t(blockIdx.x) * rows.length;
  auto add = [](float a, float b) { return a + b; };
  float s = 0.f;
  for (int64_t k = threadIdx.x; k < rows.length; k += kThreads) s += x[base + k];
  float mean = block_reduce(s, shared, add) / float(rows.length);
  float v = 0.f;  // two passes: the variance of centred values is accurate
  for (int64_t k = threadIdx.x; k < rows.length; k += kThreads) {
    float d = x[base + k] - mean;
    v += d * d;
  }
  float inv_std = layer_norm_inv_std(block_reduce(v, shared, add) / float(rows.length), epsilon);
  for (int64_t k = threadIdx.x; k < rows.length; k += kThreads)
    y[base + k] = layer_norm_output(x[base + k], mean, inv_std, scale[k], bias ? bias[k] : 0.f);
  if (threadIdx.x == 0) {
    if (mean_out) mean_out[blockIdx.x] = mean;
    if (inv_std_out) inv_std_out[blockIdx.x] = inv_std;
  }
}

__global__ void gather_kernel(const unsigned char* data, const void* indices, bool int64_indices,
                              unsigned char* out, int64_t n, int64_t inner, int64_t index_count,
                              int64_t axis_dim, int64_t element_bytes, int* bad_index) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t pos = gather_index_position(i, inner, index_count);
    int64_t index = int64_indices ? static_cast<const int64_t*>(indices)[pos]
                                  : static_cast<const int32_t*>(indices)[pos];
    int64_t src = gather_source_offset(i, inner, index_count, axis_dim, index);
    if (src < 0) {
      *bad_index = 1;
      continue;
    }
    for (int64_t b = 0; b < element_bytes; ++b)
      out[i * element_bytes + b] = data[src * element_bytes + b];
  }
}

__global__ void channel_bias_kernel(float* y, const float* bias, int64_t n, int64_t channels,
                                    int64_t spatial) {
  int64_t total = n * channels * spatial;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] += bias[(i / spatial) % channels];
}

__global__ void batch_norm_kernel(const float* x, const float* scale, const float* bias,
                                  const float* mean, const float* variance, float epsilon, float* y,
                                  int64_t total, int64_t channels, int64_t spatial) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t c = (i / spatial) % channels;
    y[i] = batch_norm_output(x[i], mean[c], variance[c], scale[c], bias[c], epsilon);
  }
}

__global__ void pool2d_kernel(Pool2dShape shape, bool max_pool, const float* x, float* y,
                              int64_t total) {
  int64_t plane_out = shape.out_height * shape.out_width;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t plane = i / plane_out, pixel = i % plane_out;
    y[i] = pool2d_value(shape, x + plane * shape.height * shape.width, pixel / shape.out_width,
                        pixel % shape.out_width, max_pool);
  }
}

__global__ void max_pool2d_grad_kernel(Pool2dShape s, const float* x, const float* dy, float* dx,
                                       int64_t total) {
  int64_t plane_in = s.height * s.width, plane_out = s.out_height * s.out_width;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t plane = i / plane_in, pixel = i % plane_in;
    dx[i] = max_pool2d_grad_value(s, x + plane * plane_in, dy + plane * plane_out, pixel / s.width,
                                  pixel % s.width);
  }
}

// One block: per-thread partial loss and count, then the block's sums.
__global__ void nll_loss_kernel(NllShape s, const float* scores, const void* labels, float* y,
                                int* bad_label) {
  __shared__ float shared[kThreads];
  float total = 0.f, count = 0.f;
  for (int64_t t = threadIdx.x; t < s.n * s.inner; t += kThreads) {
    bool counts, in_range;
    int64_t label = nll_label(s, labels, t, &counts, &in_range);
    if (!in_range) *bad_label = 1;
    float v = counts && in_range ? -scores[nll_offset(s, t, label)] : 0.f;
    if (s.reduction == kNllNone) y[t] = v;
    total += v;
    count += counts ? 1.f : 0.f;
  }
  auto add = [](float a, float b) { return a + b; };
  total = block_reduce(total, shared, add);
  count = block_reduce(count, shared, add);
  if (threadIdx.x == 0 && s.reduction == kNllSum) y[0] = total;
  if (threadIdx.x == 0 && s.reduction == kNllMean) y[0] = count > 0.f ? total / count : 0.f;
}

__global__ void nll_loss_grad_kernel(NllShape s, const float* dy, const void* labels, float* dx,
                                     int* bad_label) {
  __shared__ float shared[kThreads];
  float count = 0.f;
  for (int64_t t = threadIdx.x; t < s.n * s.inner; t += kThreads) {
    bool counts, in_range;
    nll_label(s, labels, t, &counts, &in_range);
    count += counts ? 1.f : 0.f;
  }
  count = block_reduce(count, shared, [](float a, float b) { return a + b; });
  float scale = s.reduction == kNllMean ? (count > 0.f ? 1.f / count : 0.f) : 1.f;
  for (int64_t t = threadIdx.x; t < s.n * s.inner; t += kThreads) {
    bool counts, in_range;
    int64_t label = nll_label(s, labels, t, &counts, &in_range);
    if (!in_range) *bad_label = 1;
    if (counts && in_range) dx[nll_offset(s, t, label)] = -dy[s.reduction == kNllNone ? t : 0] * scale;
  }
}

// The scalars are read once per block into shared memory.
__global__ void adamw_kernel(bool hf, OptimizerScalars scalars, const float* p, const float* g, const float* m,
                             const float* v, float* p_out, float* m_out, float* v_out, int64_t n) {
  __shared__ float s[6];
  if (threadIdx.x < 6) s[threadIdx.x] = *scalars.values[threadIdx.x];
  __syncthreads();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    AdamStep r = adamw_element(hf, s, p[i], g[i], m[i], v[i]);
    p_out[i] = r.p, m_out[i] = r.m, v_out[i] = r.v;
  }
}

__global__ void sgd_kernel(OptimizerScalars scalars, const float* p, const float* g, const float* buf,
                           float* p_out, float* buf_out, int64_t n) {
  __shared__ float s[5];
  if (threadIdx.x < 5) s[threadIdx.x] = *scalars.values[threadIdx.x];
  __syncthreads();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    sgd_element(s, p[i], g[i], buf[i], &p_out[i], &buf_out[i]);
}

__global__ void write_int64s_kernel(SmallInt64s v, int64_t* y) {
  if (int32_t(threadIdx.x) < v.count) y[threadIdx.x] = v.values[threadIdx.x];
}

__global__ void __launch_bounds__(kGemmThreads) gemm_tiled_kernel(GemmParams p) {
  __shared__ GemmTiles tiles;
  const float* a = p.a + blockIdx.z * p.stride_a;
  const float* b = p.b + blockIdx.z * p.stride_b;
  float* c = p.c + blockIdx.z * p.stride_c;
  int64_t row0 = int64_t(blockIdx.y) * kGemmTileM, col0 = int64_t(blockIdx.x) * kGemmTileN;
  int tx = threadIdx.x, ty = threadIdx.y, tid = ty * kGemmThreadsX + tx;
  float acc[kGemmPerThread][kGemmPerThread] = {};
  for (int64_t k0 = 0; k0 < p.k; k0 += kGemmTileK) {
    gemm_load_tiles(p, a, b, tiles, row0, col0, k0, tid);
    __syncthreads();
    gemm_accumulate(tiles, acc, tx, ty);
    __syncthreads();
  }
  gemm_store(p, c, acc, row0, col0, tx, ty);
}

__global__ void im2col_kernel(Conv2dShape shape, const float* image, int64_t group, float* columns,
                              int64_t rows, int64_t cols, int64_t images) {
  int64_t per_image = rows * cols, image_size = shape.channels * shape.height * shape.width;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < images * per_image;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t n = i / per_image, e = i % per_image;
    columns[i] = im2col_value(shape, image + n * image_size, group, e / cols, e % cols);
  }
}

// Element i of `images` x (group channels x H x W) gradient elements.
__global__ void col2im_kernel(Conv2dShape s, const float* columns, int64_t group, float* image_grad,
                              int64_t images) {
  int64_t group_channels = s.channels / s.groups, plane = s.height * s.width;
  int64_t per_image = group_channels * plane;
  int64_t column_size = group_channels * s.kernel_h * s.kernel_w * s.out_height * s.out_width;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < images * per_image;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t n = i / per_image, e = i % per_image, c = e / plane, p = e % plane;
    image_grad[(n * s.channels + group * group_channels + c) * plane + p] =
        col2im_value(s, columns + n * column_size, c, p / s.width, p % s.width);
  }
}

}  // namespace

gpuError_t launch_unary(gpuStream_t stream, UnaryOp op, float alpha, const float* x, float* y,
                        int64_t n) {
  if (n == 0) return gpuSuccess;
  unary_kernel<<<grid_for(n), kThreads, 0, stream>>>(op, alpha, x, y, n);
  return gpuGetLastError();
}

gpuError_t launch_binary(gpuStream_t stream, BinaryOp op, const BroadcastIndex& index,
                         const float* a, const float* b, float* y, int64_t n) {
  if (n == 0) return gpuSuccess;
  binary_kernel<<<grid_for(n), kThreads, 0, stream>>>(op, index, a, b, y, n);
  return gpuGetLastError();
}

gpuError_t launch_compare(gpuStream_t stream, CompareOp op, const BroadcastIndex& index,
                          const float* a, const float* b, unsigned char* y, int64_t n) {
  if (n == 0) return gpuSuccess;
  compare_kernel<<<grid_for(n), kThreads, 0, stream>>>(op, index, a, b, y, n);
  return gpuGetLastError();
}

gpuError_t launch_strided_copy(gpuStream_t stream, const BroadcastIndex& index, const void* x,
                               void* y, int64_t n, int64_t element_bytes) {
  if (n == 0) return gpuSuccess;
  strided_copy_kernel<<<grid_for(n), kThreads, 0, stream>>>(
      index, static_cast<const unsigned char*>(x), static_cast<unsigned char*>(y), n, element_bytes);
  return gpuGetLastError();
}

gpuError_t launch_cast(gpuStream_t stream, const void* x, int32_t from, void* y, int32_t to, int64_t n) {
  if (n == 0) return gpuSuccess;
  cast_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, from, y, to, n);
  return gpuGetLastError();
}

gpuError_t launch_where(gpuStream_t stream, const BroadcastIndex& cond_index,
                        const BroadcastIndex& x_index, const BroadcastIndex& other_index,
                        const unsigned char* cond, const void* x, const void* other, void* y,
                        int64_t n, int64_t element_bytes) {
  if (n == 0) return gpuSuccess;
  where_kernel<<<grid_for(n), kThreads, 0, stream>>>(
      cond_index, x_index, other_index, cond, static_cast<const unsigned char*>(x),
      static_cast<const unsigned char*>(other), static_cast<unsigned char*>(y), n, element_bytes);
  return gpuGetLastError();
}

gpuError_t launch_scatter_elements(gpuStream_t stream, const ScatterElementsIndex& index,
                                   const void* indices, bool int64_indices, const void* updates,
                                   void* y, int64_t n, int64_t element_bytes, int* bad_index) {
  if (n == 0) return gpuSuccess;
  scatter_elements_kernel<<<grid_for(n), kThreads, 0, stream>>>(
      index, indices, int64_indices, static_cast<const unsigned char*>(updates),
      static_cast<unsigned char*>(y), n, element_bytes, bad_index);
  return gpuGetLastError();
}

gpuError_t launch_scatter_nd(gpuStream_t stream, const ScatterNdShape& shape, const int64_t* indices,
                             const void* updates, void* y, int64_t n, int64_t element_bytes,
                             int* bad_index) {
  if (n == 0) return gpuSuccess;
  scatter_nd_kernel<<<grid_for(n), kThreads, 0, stream>>>(
      shape, indices, static_cast<const unsigned char*>(updates), static_cast<unsigned char*>(y), n,
      element_bytes, bad_index);
  return gpuGetLastError();
}

gpuError_t launch_reduce(gpuStream_t stream, ReduceOp op, const ReduceIndex& index, const float* x,
                         float* y, int64_t out_count) {
  if (out_count == 0) return gpuSuccess;
  reduce_kernel<<<unsigned(out_count), kThreads, 0, stream>>>(op, index, x, y);
  return gpuGetLastError();
}

gpuError_t launch_softmax(gpuStream_t stream, const RowLayout& rows, bool log_softmax,
                          const float* x, float* y) {
  if (rows.rows == 0 || rows.length == 0) return gpuSuccess;
  softmax_kernel<<<unsigned(rows.rows), kThreads, 0, stream>>>(rows, log_softmax, x, y);
  return gpuGetLastError();
}

gpuError_t launch_layer_norm(gpuStream_t stream, const RowLayout& rows, float epsilon,
                             const float* x, const float* scale, const float* bias, float* y,
                             float* mean, float* inv_std) {
  if (rows.rows == 0 || rows.length == 0) return gpuSuccess;
  layer_norm_kernel<<<unsigned(rows.rows), kThreads, 0, stream>>>(rows, epsilon, x, scale, bias, y,
                                                                  mean, inv_std);
  return gpuGetLastError();
}

gpuError_t launch_gather(gpuStream_t stream, const void* data, const void* indices,
                         bool indices_are_int64, void* out, int64_t out_count, int64_t inner,
                         int64_t index_count, int64_t axis_dim, int64_t element_bytes,
                         int* bad_index) {
  if (out_count == 0) return gpuSuccess;
  gather_kernel<<<grid_for(out_count), kThreads, 0, stream>>>(
      static_cast<const unsigned char*>(data), indices, indices_are_int64,
      static_cast<unsigned char*>(out), out_count, inner, index_count, axis_dim, element_bytes,
      bad_index);
  return gpuGetLastError();
}

gpuError_t launch_channel_bias(gpuStream_t stream, float* y, const float* bias, int64_t n,
                               int64_t channels, int64_t spatial) {
  int64_t total = n * channels * spatial;
  if (total == 0) return gpuSuccess;
  channel_bias_kernel<<<grid_for(total), kThreads, 0, stream>>>(y, bias, n, channels, spatial);
  return gpuGetLastError();
}

gpuError_t launch_batch_norm(gpuStream_t stream, const float* x, const float* scale,
                             const float* bias, const float* mean, const float* variance,
                             float epsilon, float* y, int64_t n, int64_t channels, int64_t spatial) {
  int64_t total = n * channels * spatial;
  if (total == 0) return gpuSuccess;
  batch_norm_kernel<<<grid_for(total), kThreads, 0, stream>>>(x, scale, bias, mean, variance,
                                                              epsilon, y, total, channels, spatial);
  return gpuGetLastError();
}

gpuError_t launch_pool2d(gpuStream_t stream, const Pool2dShape& shape, bool max_pool,
                         const float* x, float* y, int64_t planes) {
  int64_t total = planes * shape.out_height * shape.out_width;
  if (total == 0) return gpuSuccess;
  pool2d_kernel<<<grid_for(total), kThreads, 0, stream>>>(shape, max_pool, x, y, total);
  return gpuGetLastError();
}

gpuError_t launch_max_pool2d_grad(gpuStream_t stream, const Pool2dShape& shape, const float* x,
                                  const float* dy, float* dx, int64_t planes) {
  int64_t total = planes * shape.height * shape.width;
  if (total == 0) return gpuSuccess;
  max_pool2d_grad_kernel<<<grid_for(total), kThreads, 0, stream>>>(shape, x, dy, dx, total);
  return gpuGetLastError();
}

gpuError_t launch_nll_loss(gpuStream_t stream, const NllShape& shape, const float* scores,
                           const void* labels, float* y, int* bad_label) {
  nll_loss_kernel<<<1, kThreads, 0, stream>>>(shape, scores, labels, y, bad_label);
  return gpuGetLastError();
}

gpuError_t launch_nll_loss_grad(gpuStream_t stream, const NllShape& shape, const float* dy,
                                const void* labels, float* dx, int* bad_label) {
  size_t bytes = size_t(shape.n * shape.classes * shape.inner) * sizeof(float);
  gpuError_t e = bytes ? gpuMemsetAsync(dx, 0, bytes, stream) : gpuSuccess;
  if (e != gpuSuccess) return e;
  nll_loss_grad_kernel<<<1, kThreads, 0, stream>>>(shape, dy, labels, dx, bad_label);
  return gpuGetLastError();
}

gpuError_t launch_adamw(gpuStream_t stream, bool hf, const OptimizerScalars& scalars, const float* p,
                        const float* g, const float* m, const float* v, float* p_out, float* m_out,
                        float* v_out, int64_t n) {
  if (n == 0) return gpuSuccess;
  adamw_kernel<<<grid_for(n), kThreads, 0, stream>>>(hf, scalars, p, g, m, v, p_out, m_out, v_out, n);
  return gpuGetLastError();
}

gpuError_t launch_sgd(gpuStream_t stream, const OptimizerScalars& scalars, const float* p, const float* g,
                      const float* buf, float* p_out, float* buf_out, int64_t n) {
  if (n == 0) return gpuSuccess;
  sgd_kernel<<<grid_for(n), kThreads, 0, stream>>>(scalars, p, g, buf, p_out, buf_out, n);
  return gpuGetLastError();
}

gpuError_t launch_write_int64s(gpuStream_t stream, const SmallInt64s& values, int64_t* y) {
  if (values.count == 0) return gpuSuccess;
  write_int64s_kernel<<<1, kMaxRank, 0, stream>>>(values, y);
  return gpuGetLastError();
}

gpuError_t launch_gemm_tiled(gpuStream_t stream, const GemmParams& params) {
  if (params.m == 0 || params.n == 0 || params.batch == 0) return gpuSuccess;
  dim3 grid(unsigned((params.n + kGemmTileN - 1) / kGemmTileN),
            unsigned((params.m + kGemmTileM - 1) / kGemmTileM), unsigned(params.batch));
  dim3 block(kGemmThreadsX, kGemmThreadsY);
  gemm_tiled_kernel<<<grid, block, 0, stream>>>(params);
  return gpuGetLastError();
}

gpuError_t launch_im2col(gpuStream_t stream, const Conv2dShape& shape, const float* image,
                         int64_t group, float* columns, int64_t images) {
  int64_t rows = shape.channels / shape.groups * shape.kernel_h * shape.kernel_w;
  int64_t cols = shape.out_height * shape.out_width;
  if (rows * cols * images == 0) return gpuSuccess;
  im2col_kernel<<<grid_for(rows * cols * images), kThreads, 0, stream>>>(shape, image, group, columns,
                                                                          rows, cols, images);
  return gpuGetLastError();
}

gpuError_t launch_col2im(gpuStream_t stream, const Conv2dShape& shape, const float* columns,
                         int64_t group, float* image_grad, int64_t images) {
  int64_t total = images * shape.channels / shape.groups * shape.height * shape.width;
  if (total == 0) return gpuSuccess;
  col2im_kernel<<<grid_for(total), kThreads, 0, stream>>>(shape, columns, group, image_grad, images);
  return gpuGetLastError();
}

}  // namespace onyx::gpu
