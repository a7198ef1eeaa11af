// cuda_libraries.cpp: cuBLAS and cuDNN for the CUDA provider, loaded with
// dlopen at plugin creation. The plugin links only the static CUDA runtime, so
// it loads on any machine; when a library or the driver is missing the
// provider reports "unavailable" with the library's name and dlerror(),
// instead of failing to load with an undiagnosable linker error.
#include <cublas_api.h>
#include <cudnn.h>
#include <dlfcn.h>

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "gpu_provider.h"

namespace onyx::gpu {
namespace {

// The functions used, typed from the vendor headers; resolved by dlsym.
#define ONYX_CUBLAS_FUNCTIONS(X) \
  X(cublasCreate_v2)             \
  X(cublasDestroy_v2)            \
  X(cublasSetStream_v2)          \
  X(cublasSgemmStridedBatched)   \
  X(cublasGetStatusString)

#define ONYX_CUDNN_FUNCTIONS(X)               \
  X(cudnnCreate)                              \
  X(cudnnDestroy)                             \
  X(cudnnSetStream)                           \
  X(cudnnGetErrorString)                      \
  X(cudnnCreateTensorDescriptor)              \
  X(cudnnSetTensor4dDescriptor)               \
  X(cudnnDestroyTensorDescriptor)             \
  X(cudnnCreateFilterDescriptor)              \
  X(cudnnSetFilter4dDescriptor)               \
  X(cudnnDestroyFilterDescriptor)             \
  X(cudnnCreateConvolutionDescriptor)         \
  X(cudnnSetConvolution2dDescriptor)          \
  X(cudnnSetConvolutionGroupCount)            \
  X(cudnnSetConvolutionMathType)              \
  X(cudnnDestroyConvolutionDescriptor)        \
  X(cudnnGetConvolutionForwardAlgorithm_v7)   \
  X(cudnnGetConvolutionForwardWorkspaceSize)  \
  X(cudnnConvolutionForward)

struct Functions {
#define ONYX_DECLARE(name) decltype(&::name) name = nullptr;
  ONYX_CUBLAS_FUNCTIONS(ONYX_DECLARE)
  ONYX_CUDNN_FUNCTIONS(ONYX_DECLARE)
#undef ONYX_DECLARE
};

// Opens `soname`, then the toolkit's library folder this plugin was built
// against. Returns "" or why it failed.
std::string open_library(const std::string& soname, void** handle) {
  *handle = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (*handle) return {};
  std::string first = dlerror();
  std::string fallback = std::string(ONYX_CUDA_LIBRARY_DIR) + "/" + soname;
  *handle = dlopen(fallback.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (*handle) return {};
  return "cannot load " + soname + " (needed for GEMM/convolution): " + first;
}

template <typename Fn>
std::string resolve(void* handle, const char* name, const std::string& library, Fn* out) {
  *out = reinterpret_cast<Fn>(dlsym(handle, name));
  return *out ? std::string() : library + " lacks " + name;
}

// Loaded once per process; the handles are never closed (the libraries keep
// threads and caches that do not survive dlclose).
struct Loaded {
  Functions fn;
  std::string error;
};

const Loaded& libraries() {
  static const Loaded loaded = [] {
    Loaded l;
    void* cublas = nullptr;
    void* cudnn = nullptr;
    std::string cublas_name = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    std::string cudnn_name = "libcudnn.so." + std::to_string(CUDNN_MAJOR);
    l.error = open_library(cublas_name, &cublas);
    if (l.error.empty()) l.error = open_library(cudnn_name, &cudnn);
#define ONYX_RESOLVE_CUBLAS(name) \
  if (l.error.empty()) l.error = resolve(cublas, #name, cublas_name, &l.fn.name);
#define ONYX_RESOLVE_CUDNN(name) \
  if (l.error.empty()) l.error = resolve(cudnn, #name, cudnn_name, &l.fn.name);
    ONYX_CUBLAS_FUNCTIONS(ONYX_RESOLVE_CUBLAS)
    ONYX_CUDNN_FUNCTIONS(ONYX_RESOLVE_CUDNN)
#undef ONYX_RESOLVE_CUBLAS
#undef ONYX_RESOLVE_CUDNN
    return l;
  }();
  return loaded;
}

const Functions& fn() { return libraries().fn; }

std::string cublas_error(cublasStatus_t s, const char* what) {
  return std::string(what) + " failed: cuBLAS status " + std::to_string(int(s)) + " (" +
         fn().cublasGetStatusString(s) + ")";
}

std::string cudnn_error(cudnnStatus_t s, const char* what) {
  return std::string(what) + " failed: cuDNN status " + std::to_string(int(s)) + " (" +
         fn().cudnnGetErrorString(s) + ")";
}

#define ONYX_CUDNN_CHECK(call, what)                    \
  do {                                                  \
    cudnnStatus_t onyx_s_ = (call);                     \
    if (onyx_s_ != CUDNN_STATUS_SUCCESS) return cudnn_error(onyx_s_, what); \
  } while (0)

// Descriptors released on every path.
struct ConvDescriptors {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  ~ConvDescriptors() {
    if (x) fn().cudnnDestroyTensorDescriptor(x);
    if (y) fn().cudnnDestroyTensorDescriptor(y);
    if (w) fn().cudnnDestroyFilterDescriptor(w);
    if (conv) fn().cudnnDestroyConvolutionDescriptor(conv);
  }
};

// A convolution's descriptors and the algorithm cuDNN's heuristics chose,
// made on its shape's first run and kept: creating the descriptors and asking
// the heuristics cost more than the convolution itself on small images.
struct ConvPlan {
  ConvDescriptors d;
  cudnnConvolutionFwdAlgo_t algo{};
  size_t workspace_bytes = 0;
};

using ConvKey = std::array<int64_t, 17>;

ConvKey conv_key(const Conv2dShape& s) {
  return {s.batch,  s.channels, s.height,   s.width,    s.out_channels, s.out_height, s.out_width,
          s.kernel_h, s.kernel_w, s.stride_h, s.stride_w, s.pad_h,        s.pad_w,      s.dilation_h,
          s.dilation_w, s.groups, 0};
}

}  // namespace

struct VendorLibraries {
  std::mutex mutex;  // a handle's stream binding + call must not interleave
  cublasHandle_t cublas = nullptr;
  cudnnHandle_t cudnn = nullptr;
  std::map<ConvKey, std::unique_ptr<ConvPlan>> conv_plans;  // under `mutex`
};

std::string vendor_probe() { return libraries().error; }

std::string vendor_open(VendorLibraries** out) {
  if (!libraries().error.empty()) return libraries().error;
  auto libs = std::make_unique<VendorLibraries>();
  cublasStatus_t s = fn().cublasCreate_v2(&libs->cublas);
  if (s != CUBLAS_STATUS_SUCCESS) return cublas_error(s, "creating the cuBLAS handle");
  cudnnStatus_t d = fn().cudnnCreate(&libs->cudnn);
  if (d != CUDNN_STATUS_SUCCESS) {
    fn().cublasDestroy_v2(libs->cublas);
    return cudnn_error(d, "creating the cuDNN handle");
  }
  *out = libs.release();
  return {};
}

void vendor_close(VendorLibraries* libs) {
  if (!libs) return;
  if (libs->cublas) fn().cublasDestroy_v2(libs->cublas);
  if (libs->cudnn) fn().cudnnDestroy(libs->cudnn);
  delete libs;
}

std::string vendor_gemm(VendorLibraries* libs, gpuStream_t stream, const GemmParams& p) {
  // cuBLAS is column-major: a row-major C = A*B is the column-major C' = B'*A',
  // so the operands swap and each keeps its own transpose flag.
  if (p.m == 0 || p.n == 0 || p.batch == 0) return {};
  if (p.k == 0) {  // an empty sum: C = beta * C, and cuBLAS refuses a leading dimension of 0
    if (p.beta != 0.f) return "a GEMM with k = 0 and beta != 0 is not supported";
    for (int64_t b = 0; b < p.batch; ++b)
      for (int64_t r = 0; r < p.m; ++r)
        if (gpuError_t e = gpuMemsetAsync(p.c + b * p.stride_c + r * p.ldc, 0, size_t(p.n) * sizeof(float), stream);
            e != gpuSuccess)
          return std::string("clearing an empty product: ") + gpuGetErrorString(e);
    return {};
  }
  std::lock_guard<std::mutex> lock(libs->mutex);
  cublasStatus_t s = fn().cublasSetStream_v2(libs->cublas, stream);
  if (s != CUBLAS_STATUS_SUCCESS) return cublas_error(s, "binding the cuBLAS stream");
  s = fn().cublasSgemmStridedBatched(
      libs->cublas, p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
      int(p.n), int(p.m), int(p.k), &p.alpha, p.b, int(p.ldb), p.stride_b, p.a, int(p.lda),
      p.stride_a, &p.beta, p.c, int(p.ldc), p.stride_c, int(p.batch));
  return s == CUBLAS_STATUS_SUCCESS ? std::string() : cublas_error(s, "cublasSgemmStridedBatched");
}

namespace {

// Describes the convolution `s` and lets cuDNN's heuristics rank the
// algorithms; keeps the first it can run.
std::string make_conv_plan(VendorLibraries* libs, const Conv2dShape& s, ConvPlan* plan) {
  const Functions& f = fn();
  ConvDescriptors& d = plan->d;
  ONYX_CUDNN_CHECK(f.cudnnCreateTensorDescriptor(&d.x), "cudnnCreateTensorDescriptor");
  ONYX_CUDNN_CHECK(f.cudnnCreateTensorDescriptor(&d.y), "cudnnCreateTensorDescriptor");
  ONYX_CUDNN_CHECK(f.cudnnCreateFilterDescriptor(&d.w), "cudnnCreateFilterDescriptor");
  ONYX_CUDNN_CHECK(f.cudnnCreateConvolutionDescriptor(&d.conv), "cudnnCreateConvolutionDescriptor");
  ONYX_CUDNN_CHECK(f.cudnnSetTensor4dDescriptor(d.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, int(s.batch),
                                                int(s.channels), int(s.height), int(s.width)),
                   "describing the Conv input");
  ONYX_CUDNN_CHECK(f.cudnnSetFilter4dDescriptor(d.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                                int(s.out_channels), int(s.channels / s.groups),
                                                int(s.kernel_h), int(s.kernel_w)),
                   "describing the Conv weights");
  ONYX_CUDNN_CHECK(f.cudnnSetTensor4dDescriptor(d.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, int(s.batch),
                                                int(s.out_channels), int(s.out_height),
                                                int(s.out_width)),
                   "describing the Conv output");
  ONYX_CUDNN_CHECK(f.cudnnSetConvolution2dDescriptor(d.conv, int(s.pad_h), int(s.pad_w),
                                                     int(s.stride_h), int(s.stride_w),
                                                     int(s.dilation_h), int(s.dilation_w),
                                                     CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                   "describing the convolution");
  ONYX_CUDNN_CHECK(f.cudnnSetConvolutionGroupCount(d.conv, int(s.groups)), "setting Conv groups");
  // Full fp32: no TF32 unless the session allows reduced precision (not yet plumbed).
  ONYX_CUDNN_CHECK(f.cudnnSetConvolutionMathType(d.conv, CUDNN_FMA_MATH), "setting the math type");
  constexpr int kCandidates = 8;
  cudnnConvolutionFwdAlgoPerf_t candidates[kCandidates] = {};
  int returned = 0;
  ONYX_CUDNN_CHECK(f.cudnnGetConvolutionForwardAlgorithm_v7(libs->cudnn, d.x, d.w, d.conv, d.y,
                                                            kCandidates, &returned, candidates),
                   "choosing a convolution algorithm");
  const cudnnConvolutionFwdAlgoPerf_t* chosen = nullptr;
  for (int i = 0; i < returned && !chosen; ++i)
    if (candidates[i].status == CUDNN_STATUS_SUCCESS) chosen = &candidates[i];
  if (!chosen) return "cuDNN offers no usable algorithm for this convolution";
  plan->algo = chosen->algo;
  ONYX_CUDNN_CHECK(f.cudnnGetConvolutionForwardWorkspaceSize(libs->cudnn, d.x, d.w, d.conv, d.y,
                                                             plan->algo, &plan->workspace_bytes),
                   "sizing the convolution workspace");
  return {};
}

}  // namespace

std::string vendor_conv2d(VendorLibraries* libs, gpuStream_t stream, const Conv2dShape& s,
                          const float* x, const float* w, float* y, const ScratchFn& scratch) {
  const Functions& f = fn();
  std::lock_guard<std::mutex> lock(libs->mutex);
  ONYX_CUDNN_CHECK(f.cudnnSetStream(libs->cudnn, stream), "binding the cuDNN stream");
  if (libs->conv_plans.size() >= 256) libs->conv_plans.clear();  // many shapes: start over
  std::unique_ptr<ConvPlan>& plan = libs->conv_plans[conv_key(s)];
  if (!plan) {
    auto made = std::make_unique<ConvPlan>();
    if (std::string error = make_conv_plan(libs, s, made.get()); !error.empty()) {
      libs->conv_plans.erase(conv_key(s));
      return error;
    }
    plan = std::move(made);
  }
  void* workspace = nullptr;
  if (plan->workspace_bytes) {
    std::string error;
    workspace = scratch(plan->workspace_bytes, &error);
    if (!workspace) return "convolution workspace: " + error;
  }
  const float one = 1.f, zero = 0.f;
  ONYX_CUDNN_CHECK(f.cudnnConvolutionForward(libs->cudnn, &one, plan->d.x, x, plan->d.w, w, plan->d.conv,
                                             plan->algo, workspace, plan->workspace_bytes, &zero, plan->d.y, y),
                   "cudnnConvolutionForward");
  return {};
}

}  // namespace onyx::gpu
