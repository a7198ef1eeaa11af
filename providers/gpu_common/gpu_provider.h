// gpu_provider.h: what the shared GPU provider sources (CUDA and ROCm) have in
// common: the opened device, the kernel base class, the op registration
// functions and the small interface each vendor folder implements for its
// linear-algebra libraries (cuBLAS/cuDNN for CUDA, own kernels for ROCm).
// A device with its own memory: only the SDK pieces it uses, no host-memory
// provider.
#pragma once

#include <onyx/sdk/compute_context.hpp>
#include <onyx/sdk/kernel_registry.hpp>
#include <onyx/sdk/status.hpp>

#include <functional>
#include <span>
#include <string>

#include "gpu_vendor.h"
#include "kernels.h"

namespace onyx::gpu {

// ---------------------------------------------------------------------------
// Vendor interface: providers/cuda/ and providers/rocm/ each define these.
// Errors are sentences ("" = success) that name the library and its error
// code; gpu_provider.cpp and the ops turn them into statuses (vendor_status).
// Sentences, not statuses, because a status can only be made inside an ABI
// call and these files stay free of the ABI's objects.
// ---------------------------------------------------------------------------

struct VendorLibraries;  // per-device library handles (cuBLAS/cuDNN handles, ...)

// Checks that the libraries beyond the runtime can be used ("" when they can).
// Called once at plugin creation; must not crash when they are absent.
std::string vendor_probe();
// Opens the libraries for the current device. Thread-safe.
std::string vendor_open(VendorLibraries** out);
void vendor_close(VendorLibraries* libs);
// Row-major, batched SGEMM (gemm_tiled.h's GemmParams). Thread-safe.
std::string vendor_gemm(VendorLibraries* libs, gpuStream_t stream, const GemmParams& params);
// 2-D convolution without bias, NCHW. `scratch` returns device memory that
// lives until the kernel's compute returns. Thread-safe.
using ScratchFn = std::function<void*(size_t bytes, std::string* error)>;
std::string vendor_conv2d(VendorLibraries* libs, gpuStream_t stream, const Conv2dShape& shape,
                          const float* x, const float* w, float* y, const ScratchFn& scratch);

// ---------------------------------------------------------------------------
// Device and kernels
// ---------------------------------------------------------------------------

// What kernels see of their device (set by make_kernel in gpu_provider.cpp).
struct GpuDevice {
  int index = 0;
  VendorLibraries* libs = nullptr;
};

// A GPU kernel: compute() runs with the device current on the calling thread.
class GpuKernel : public sdk::Kernel {
 public:
  GpuDevice* device = nullptr;  // set when the kernel is created
};

// A status for a failed runtime call, naming the call and the runtime's error.
OnyxStatus* gpu_status(gpuError_t error, const char* what);
// nullptr for gpuSuccess, else gpu_status(e, what): for kernel launches.
inline OnyxStatus* launch_status(gpuError_t e, const char* what) {
  return e == gpuSuccess ? nullptr : gpu_status(e, what);
}
// Runs `launch` with a zeroed device int that its kernel raises on bad
// input (an index or label out of range, which the kernel skips rather than
// read out of bounds); a raised flag fails the run with INVALID_ARGUMENT and
// `bad_input` (which names the node). On a stream the flag is read when the
// run synchronizes the stream at its end (stream_synchronize), so the run
// does not wait for the device here; without one, before returning. `what`
// names the launch in a runtime error.
OnyxStatus* launch_checked(sdk::ComputeContext& ctx, const std::function<gpuError_t(gpuStream_t, int*)>& launch,
                           const char* what, std::string bad_input);
// Device scratch for a vendor call, freed after the kernel's compute (ctx.scratch).
ScratchFn scratch_of(sdk::ComputeContext& ctx);
// A status for a vendor-library error sentence ("" gives nullptr).
OnyxStatus* vendor_status(const std::string& error, const char* node_name);
// The stream the kernel must use (the host's, or the default stream).
gpuStream_t kernel_stream(sdk::ComputeContext& ctx);
// Copies a small int64 device tensor (axes, shapes) to the host, waiting for
// the stream: for ops whose parameters are computed inside the graph.
OnyxStatus* read_int64_input(sdk::ComputeContext& ctx, const sdk::Tensor& t, std::vector<int64_t>* out);

void register_elementwise_kernels(sdk::KernelRegistry& registry);
void register_nn_kernels(sdk::KernelRegistry& registry);
void register_linalg_kernels(sdk::KernelRegistry& registry);
void register_cnn_kernels(sdk::KernelRegistry& registry);
void register_shape_kernels(sdk::KernelRegistry& registry);
void register_scatter_kernels(sdk::KernelRegistry& registry);
void register_training_kernels(sdk::KernelRegistry& registry);

// A decline check: "" when every present input is float32, else the reason.
std::string require_float32(const sdk::NodeInfo& node);

// A pooling node's window as its attributes give it (kernel, strides,
// dilations, pads, count_include_pad); the sizes are filled at run time.
struct Pool2dWindow {
  Pool2dShape shape;
  int64_t pad_bottom = 0, pad_right = 0;
  // The shape for an H x W input (a global pool: the whole plane); "" or
  // why the window does not fit.
  std::string complete(int64_t height, int64_t width, bool global, Pool2dShape* out) const;
};
Pool2dWindow pool2d_attributes(const sdk::NodeInfo& node);
// "" when a MaxPool / AveragePool-like node (input `x`) is one this provider
// runs: 2-D, explicit pads or VALID, no ceil_mode, float32.
std::string pool2d_supported(const sdk::NodeInfo& node, size_t x);

// Conv's attributes (pads, strides, dilations, group, kernel_shape) of a node
// that conv2d_supported accepted; the tensor sizes are filled at run time.
Conv2dShape conv2d_attributes(const sdk::NodeInfo& node);
// "" when a Conv-like node (Conv, ConvGrad) is one this provider runs: 2-D,
// explicit symmetric pads or VALID, float32; input `x` and weights `w`.
std::string conv2d_supported(const sdk::NodeInfo& node, size_t x, size_t w);
// Fills the sizes of `shape` from the input [N, C, H, W] and weights
// [M, C/group, kh, kw]; "" or what does not fit.
std::string complete_conv2d_shape(std::span<const int64_t> x, std::span<const int64_t> w, Conv2dShape* shape);

// Creates the plugin (the OnyxPluginEntry's create for both GPU providers).
OnyxStatus* create_gpu_plugin(const OnyxPluginCreateArgs* args, OnyxPlugin** plugin,
                              const OnyxProviderApi** api);

}  // namespace onyx::gpu
