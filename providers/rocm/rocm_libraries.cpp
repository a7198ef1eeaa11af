// rocm_libraries.cpp: GEMM and convolution for the ROCm provider. Debian
// bookworm ships no rocBLAS or MIOpen, so both run on the project's own
// kernels: the tiled shared-memory SGEMM and im2col + that SGEMM.
#include <memory>

#include "gpu_provider.h"

namespace onyx::gpu {

struct VendorLibraries {};  // nothing to open: the kernels are ours

std::string vendor_probe() { return {}; }

std::string vendor_open(VendorLibraries** out) {
  *out = new VendorLibraries{};
  return {};
}

void vendor_close(VendorLibraries* libs) { delete libs; }

std::string vendor_gemm(VendorLibraries*, gpuStream_t stream, const GemmParams& params) {
  gpuError_t e = launch_gemm_tiled(stream, params);
  return e == gpuSuccess ? std::string() : std::string("tiled GEMM launch failed: ") + gpuGetErrorString(e);
}

std::string vendor_conv2d(VendorLibraries*, gpuStream_t stream, const Conv2dShape& s, const float* x,
                          const float* w, float* y, const ScratchFn& scratch) {
  // Per image and group: columns [C/g*kh*kw, OH*OW] = im2col(x), then
  // y[n, group's channels] = W_g [M/g, C/g*kh*kw] * columns. The column buffer
  // is reused: work on one stream runs in order.
  int64_t rows = s.channels / s.groups * s.kernel_h * s.kernel_w;
  int64_t cols = s.out_height * s.out_width;
  int64_t group_out = s.out_channels / s.groups;
  std::string error;
  auto* columns = static_cast<float*>(scratch(size_t(rows * cols) * sizeof(float), &error));
  if (!columns) return "im2col buffer: " + error;
  for (int64_t n = 0; n < s.batch; ++n) {
    const float* image = x + n * s.channels * s.height * s.width;
    for (int64_t g = 0; g < s.groups; ++g) {
      gpuError_t e = launch_im2col(stream, s, image, g, columns);
      GemmParams p;
      p.m = group_out, p.n = cols, p.k = rows;
      p.a = w + g * group_out * rows, p.lda = rows;
      p.b = columns, p.ldb = cols;
      p.c = y + (n * s.out_channels + g * group_out) * cols, p.ldc = cols;
      if (e == gpuSuccess) e = launch_gemm_tiled(stream, p);
      if (e != gpuSuccess) return std::string("convolution launch failed: ") + gpuGetErrorString(e);
    }
  }
  return {};
}

}  // namespace onyx::gpu
