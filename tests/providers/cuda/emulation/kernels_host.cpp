// kernels_host.cpp: the launchers of providers/gpu_common/kernels.h run on
// the host, for the emulated GPU provider used in tests. Each enqueues its
// loop on the stream (host_runtime.h: deferred until waited for) with its
// arguments copied, as a real launch copies kernel arguments. Each mirrors its
// kernel in kernels.cu: the same kernel_math.h / gemm_tiled.h functions, and
// for block reductions the same 256 strided thread partials combined as a
// tree, so results match the device's summation order.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels.h"

namespace onyx::gpu {
namespace {

constexpr int kThreads = 256;

// Thread t folds elements t, t + 256, ...; then the shared-memory tree.
template <typename Fold, typename Combine>
float block_reduce(int64_t n, float init, Fold fold, Combine combine) {
  float partial[kThreads];
  for (int t = 0; t < kThreads; ++t) {
    partial[t] = init;
    for (int64_t k = t; k < n; k += kThreads) partial[t] = fold(partial[t], k);
  }
  for (int half = kThreads / 2; half > 0; half /= 2)
    for (int t = 0; t < half; ++t) partial[t] = combine(partial[t], partial[t + half]);
  return partial[0];
}

}  // namespace

gpuError_t launch_unary(gpuStream_t stream, UnaryOp op, float alpha, const float* x, float* y, int64_t n) {
  return emulation_launch(stream, [=] {
    for (int64_t i = 0; i < n; ++i) y[i] = apply_unary(op, x[i], alpha);
  });
}

gpuError_t launch_binary(gpuStream_t stream, BinaryOp op, const BroadcastIndex& index, const float* a,
                         const float* b, float* y, int64_t n) {
  return emulation_launch(stream, [=] {
    for (int64_t i = 0; i < n; ++i) {
      int64_t ia, ib;
      broadcast_offsets(index, i, &ia, &ib);
      y[i] = apply_binary(op, a[ia], b[ib]);
    }
  });
}

gpuError_t launch_compare(gpuStream_t stream, CompareOp op, const BroadcastIndex& index, const float* a,
                          const float* b, unsigned char* y, int64_t n) {
  return emulation_launch(stream, [=] {
    for (int64_t i = 0; i < n; ++i) {
      int64_t ia, ib;
      broadcast_offsets(index, i, &ia, &ib);
      y[i] = apply_compare(op, a[ia], b[ib]);
    }
  });
}

gpuError_t launch_strided_copy(gpuStream_t stream, const BroadcastIndex& index, const void* x, void* y,
                               int64_t n, int64_t element_bytes) {
  return emulation_launch(stream, [=] {
    for (int64_t i = 0; i < n; ++i) {
      int64_t ia, ib;
      broadcast_offsets(index, i, &ia, &ib);
      std::memcpy(static_cast<char*>(y) + i * element_bytes,
                  static_cast<const char*>(x) + ia * element_bytes, size_t(element_bytes));
    }
  });
}

gpuError_t launch_cast(gpuStream_t stream, const void* x, int32_t from, void* y, int32_t to, int64_t n) {
  return emulation_launch(stream, [=] {
    for (int64_t i = 0; i < n; ++i) cast_element(x, from, y, to, i);
  });
}

gpuError_t launch_where(gpuStream_t stream, const BroadcastIndex& ci, const BroadcastIndex& xi,
                        const BroadcastIndex& oi, const unsigned char* cond, const void* x,
                        const void* other, void* y, int64_t n, int64_t element_bytes) {
  return emulation_launch(stream, [=] {
    for (int64_t i = 0; i < n; ++i) {
      int64_t unused, c, a, b;
      broadcast_offsets(ci, i, &unused, &c);
      broadcast_offsets(xi, i, &unused, &a);
      broadcast_offsets(oi, i, &unused, &b);
      const char* src = cond[c] ? static_cast<const char*>(x) + a * element_bytes
                                : static_cast<const char*>(other) + b * element_bytes;
      std::memcpy(static_cast<char*>(y) + i * element_bytes, src, size_t(element_bytes));
    }
  });
}

gpuError_t launch_scatter_elements(gpuStream_t stream, const ScatterElementsIndex& index, const void* indices,
                                   bool int64_indices, const void* updates, void* y, int64_t n,
                                   int64_t element_bytes, int* bad_index) {
  return emulation_launch(stream, [=] {
    for (int64_t j = 0; j < n; ++j) {
      int64_t idx = int64_indices ? static_cast<const int64_t*>(indices)[j]
                                  : static_cast<const int32_t*>(indices)[j];
      int64_t dst = scatter_elements_offset(index, j, idx);
      if (dst < 0) {
        *bad_index = 1;
        continue;
      }
      std::memcpy(static_cast<char*>(y) + dst * element_bytes,
                  static_cast<const char*>(updates) + j * element_bytes, size_t(element_bytes));
    }
  });
}

gpuError_t launch_scatter_nd(gpuStream_t stream, const ScatterNdShape& s, const int64_t* indices,
                             const void* updates, void* y, int64_t n, int64_t element_bytes,
                             int* bad_index) {
  return emulation_launch(stream, [=] {
    for (int64_t j = 0; j < n; ++j) {
      int64_t dst = scatter_nd_offset(indices + (j / s.slice_size) * s.k, s.k, s.data_dims,
                                      s.data_strides, s.slice_size, j);
      if (dst < 0) {
        *bad_index = 1;
        continue;
      }
      std::memcpy(static_cast<char*>(y) + dst * element_bytes,
                  static_cast<const char*>(updates) + j * element_bytes, size_t(element_bytes));
    }
  });
}

gpuError_t launch_reduce(gpuStream_t stream, ReduceOp op, const ReduceIndex& index, const float* x, float* y,
                         int64_t out_count) {
  return emulation_launch(stream, [=] {
    for (int64_t out = 0; out < out_count; ++out) {
      auto at = [&](int64_t r) { return x[reduce_input_offset(index, out, r)]; };
      float shift = 0.f;
      if (op == ReduceOp::kLogSumExp) {
        shift = block_reduce(
            index.reduce_count, -INFINITY,
            [&](float acc, int64_t r) { return reduce_fold(ReduceOp::kMax, acc, at(r), 0.f); },
            [](float a, float b) { return reduce_combine(ReduceOp::kMax, a, b); });
        if (std::isinf(shift)) shift = 0.f;
      }
      float acc = block_reduce(
          index.reduce_count, reduce_identity(op),
          [&](float a, int64_t r) { return reduce_fold(op, a, at(r), shift); },
          [op](float a, float b) { return reduce_combine(op, a, b); });
      y[out] = reduce_finish(op, acc, index.reduce_count, shift);
    }
  });
}

gpuError_t launch_softmax(gpuStream_t stream, const RowLayout& rows, bool log_softmax, const float* x,
                          float* y) {
  return emulation_launch(stream, [=] {
    for (int64_t row = 0; row < rows.rows; ++row) {
      int64_t base = row_base(rows, row);
      auto at = [&](int64_t k) { return x[base + k * rows.inner]; };
      float m = block_reduce(
          rows.length, -INFINITY, [&](float a, int64_t k) { return std::fmax(a, at(k)); },
          [](float a, float b) { return std::fmax(a, b); });
      float s = block_reduce(
          rows.length, 0.f, [&](float a, int64_t k) { return a + std::exp(at(k) - m); },
          [](float a, float b) { return a + b; });
      for (int64_t k = 0; k < rows.length; ++k)
        y[base + k * rows.inner] = softmax_output(at(k), m, s, log_softmax);
    }
  });
}

gpuError_t launch_layer_norm(gpuStream_t stream, const RowLayout& rows, float epsilon, const float* x,
                             const float* scale, const float* bias, float* y, float* mean_out,
                             float* inv_std_out) {
  return emulation_launch(stream, [=] {
    auto add = [](float a, float b) { return a + b; };
    for (int64_t row = 0; row < rows.rows; ++row) {
      const float* in = x + row * rows.length;
      float mean = block_reduce(rows.length, 0.f, [&](float a, int64_t k) { return a + in[k]; }, add) /
                   float(rows.length);
      float var = block_reduce(
                      rows.length, 0.f,
                      [&](float a, int64_t k) { return a + (in[k] - mean) * (in[k] - mean); }, add) /
                  float(rows.length);
      float inv_std = layer_norm_inv_std(var, epsilon);
      for (int64_t k = 0; k < rows.length; ++k)
        y[row * rows.length + k] = layer_norm_output(in[k], mean, inv_std, scale[k], bias ? bias[k] : 0.f);
      if (mean_out) mean_out[row] = mean;
      if (inv_std_out) inv_std_out[row] = inv_std;
    }
  });
}

gpuError_t launch_gather(gpuStream_t stream, const void* data, const void* indices, bool indices_are_int64,
                         void* out, int64_t out_count, int64_t inner, int64_t index_count,
                         int64_t axis_dim, int64_t element_bytes, int* bad_index) {
  return emulation_launch(stream, [=] {
    for (int64_t i = 0; i < out_count; ++i) {
      int64_t pos = gather_index_position(i, inner, index_count);
      int64_t index = indices_are_int64 ? static_cast<const int64_t*>(indices)[pos]
                                        : static_cast<const int32_t*>(indices)[pos];
      int64_t src = gather_source_offset(i, inner, index_count, axis_dim, index);
      if (src < 0) {
        *bad_index = 1;
        continue;
      }
      std::memcpy(static_cast<char*>(out) + i * element_bytes,
                  static_cast<const char*>(data) + src * element_bytes, size_t(element_bytes));
    }
  });
}

gpuError_t launch_channel_bias(gpuStream_t stream, float* y, const float* bias, int64_t n, int64_t channels,
                               int64_t spatial) {
  return emulation_launch(stream, [=] {
    for (int64_t i = 0; i < n * channels * spatial; ++i) y[i] += bias[(i / spatial) % channels];
  });
}

gpuError_t launch_batch_norm(gpuStream_t stream, const float* x, const float* scale, const float* bias,
                             const float* mean, const float* variance, float epsilon, float* y,
                             int64_t n, int64_t channels, int64_t spatial) {
  return emulation_launch(stream, [=] {
    for (int64_t i = 0; i < n * channels * spatial; ++i) {
      int64_t c = (i / spatial) % channels;
      y[i] = batch_norm_output(x[i], mean[c], variance[c], scale[c], bias[c], epsilon);
    }
  });
}

gpuError_t launch_pool2d(gpuStream_t stream, const Pool2dShape& s, bool max_pool, const float* x, float* y,
                         int64_t planes) {
  return emulation_launch(stream, [=] {
    int64_t plane_out = s.out_height * s.out_width;
    for (int64_t i = 0; i < planes * plane_out; ++i) {
      int64_t plane = i / plane_out, pixel = i % plane_out;
      y[i] = pool2d_value(s, x + plane * s.height * s.width, pixel / s.out_width, pixel % s.out_width,
                          max_pool);
    }
  });
}

gpuError_t launch_max_pool2d_grad(gpuStream_t stream, const Pool2dShape& s, const float* x, const float* dy,
                                  float* dx, int64_t planes) {
  return emulation_launch(stream, [=] {
    int64_t plane_in = s.height * s.width, plane_out = s.out_height * s.out_width;
    for (int64_t i = 0; i < planes * plane_in; ++i) {
      int64_t plane = i / plane_in, pixel = i % plane_in;
      dx[i] = max_pool2d_grad_value(s, x + plane * plane_in, dy + plane * plane_out, pixel / s.width,
                                    pixel % s.width);
    }
  });
}

// nll_loss_kernel's one block: thread t takes targets t, t + 256, ...
gpuError_t launch_nll_loss(gpuStream_t stream, const NllShape& s, const float* scores, const void* labels,
                           float* y, int* bad_label) {
  return emulation_launch(stream, [=] {
    const int64_t targets = s.n * s.inner;
    auto value = [&](int64_t t) {
      bool counts, in_range;
      int64_t label = nll_label(s, labels, t, &counts, &in_range);
      if (!in_range) *bad_label = 1;
      return counts && in_range ? -scores[nll_offset(s, t, label)] : 0.f;
    };
    auto add = [](float a, float b) { return a + b; };
    float total = block_reduce(targets, 0.f, [&](float acc, int64_t t) {
      float v = value(t);
      if (s.reduction == kNllNone) y[t] = v;
      return acc + v;
    }, add);
    float count = block_reduce(targets, 0.f, [&](float acc, int64_t t) {
      bool counts, in_range;
      nll_label(s, labels, t, &counts, &in_range);
      return acc + (counts ? 1.f : 0.f);
    }, add);
    if (s.reduction == kNllSum) y[0] = total;
    if (s.reduction == kNllMean) y[0] = count > 0.f ? total / count : 0.f;
  });
}

gpuError_t launch_nll_loss_grad(gpuStream_t stream, const NllShape& s, const float* dy, const void* labels,
                                float* dx, int* bad_label) {
  return emulation_launch(stream, [=] {
    const int64_t targets = s.n * s.inner;
    std::fill(dx, dx + s.n * s.classes * s.inner, 0.f);
    float count = block_reduce(targets, 0.f, [&](float acc, int64_t t) {
      bool counts, in_range;
      nll_label(s, labels, t, &counts, &in_range);
      return acc + (counts ? 1.f : 0.f);
    }, [](float a, float b) { return a + b; });
    float scale = s.reduction == kNllMean ? (count > 0.f ? 1.f / count : 0.f) : 1.f;
    for (int64_t t = 0; t < targets; ++t) {
      bool counts, in_range;
      int64_t label = nll_label(s, labels, t, &counts, &in_range);
      if (!in_range) *bad_label = 1;
      if (counts && in_range) dx[nll_offset(s, t, label)] = -dy[s.reduction == kNllNone ? t : 0] * scale;
    }
  });
}

gpuError_t launch_adamw(gpuStream_t stream, bool hf, const OptimizerScalars& scalars, const float* p, const float* g,
                        const float* m, const float* v, float* p_out, float* m_out, float* v_out, int64_t n) {
  return emulation_launch(stream, [=] {
    float s[6];
    for (int k = 0; k < 6; ++k) s[k] = *scalars.values[k];
    for (int64_t i = 0; i < n; ++i) {
      AdamStep r = adamw_element(hf, s, p[i], g[i], m[i], v[i]);
      p_out[i] = r.p, m_out[i] = r.m, v_out[i] = r.v;
    }
  });
}

gpuError_t launch_sgd(gpuStream_t stream, const OptimizerScalars& scalars, const float* p, const float* g,
                      const float* buf, float* p_out, float* buf_out, int64_t n) {
  return emulation_launch(stream, [=] {
    float s[5];
    for (int k = 0; k < 5; ++k) s[k] = *scalars.values[k];
    for (int64_t i = 0; i < n; ++i) sgd_element(s, p[i], g[i], buf[i], &p_out[i], &buf_out[i]);
  });
}

gpuError_t launch_write_int64s(gpuStream_t stream, const SmallInt64s& values, int64_t* y) {
  return emulation_launch(stream, [=] { std::copy(values.values, values.values + values.count, y); });
}

// gemm_tiled_kernel, block by block, each step for all threads before the next.
gpuError_t launch_gemm_tiled(gpuStream_t stream, const GemmParams& p) {
  return emulation_launch(stream, [=] {
    GemmTiles tiles;
    std::vector<float> acc(size_t(kGemmThreads) * kGemmPerThread * kGemmPerThread);
    auto acc_of = [&](int tid) {
      return reinterpret_cast<float(*)[kGemmPerThread]>(&acc[size_t(tid) * kGemmPerThread * kGemmPerThread]);
    };
    for (int64_t z = 0; z < p.batch; ++z) {
      const float* a = p.a + z * p.stride_a;
      const float* b = p.b + z * p.stride_b;
      float* c = p.c + z * p.stride_c;
      for (int64_t row0 = 0; row0 < p.m; row0 += kGemmTileM)
        for (int64_t col0 = 0; col0 < p.n; col0 += kGemmTileN) {
          std::fill(acc.begin(), acc.end(), 0.f);
          for (int64_t k0 = 0; k0 < p.k; k0 += kGemmTileK) {
            for (int tid = 0; tid < kGemmThreads; ++tid) gemm_load_tiles(p, a, b, tiles, row0, col0, k0, tid);
            for (int tid = 0; tid < kGemmThreads; ++tid)
              gemm_accumulate(tiles, acc_of(tid), tid % kGemmThreadsX, tid / kGemmThreadsX);
          }
          for (int tid = 0; tid < kGemmThreads; ++tid)
            gemm_store(p, c, acc_of(tid), row0, col0, tid % kGemmThreadsX, tid / kGemmThreadsX);
        }
    }
  });
}

gpuError_t launch_im2col(gpuStream_t stream, const Conv2dShape& s, const float* image, int64_t group,
                         float* columns, int64_t images) {
  return emulation_launch(stream, [=] {
    int64_t rows = s.channels / s.groups * s.kernel_h * s.kernel_w, cols = s.out_height * s.out_width;
    for (int64_t n = 0; n < images; ++n) {
      const float* x = image + n * s.channels * s.height * s.width;
      float* out = columns + n * rows * cols;
      for (int64_t i = 0; i < rows * cols; ++i) out[i] = im2col_value(s, x, group, i / cols, i % cols);
    }
  });
}

gpuError_t launch_col2im(gpuStream_t stream, const Conv2dShape& s, const float* columns, int64_t group,
                         float* image_grad, int64_t images) {
  return emulation_launch(stream, [=] {
    int64_t group_channels = s.channels / s.groups, plane = s.height * s.width;
    int64_t column_size = group_channels * s.kernel_h * s.kernel_w * s.out_height * s.out_width;
    for (int64_t n = 0; n < images; ++n)
      for (int64_t c = 0; c < group_channels; ++c)
        for (int64_t p = 0; p < plane; ++p)
          image_grad[(n * s.channels + group * group_channels + c) * plane + p] =
              col2im_value(s, columns + n * column_size, c, p / s.width, p % s.width);
  });
}

}  // namespace onyx::gpu
