// gpu_util.cpp: small helpers the shared GPU op sources use: statuses for
// runtime and vendor-library errors, reading int64 parameters back from the
// device, the float32 predicate.
#include "gpu_provider.h"

namespace onyx::gpu {

using sdk::make_status;

OnyxStatus* gpu_status(gpuError_t error, const char* what) {
  (void)gpuGetLastError();  // clear a non-sticky error so later calls are not blamed
  return make_status(ONYX_STATUS_INTERNAL, "%s failed: %s error %d (%s): %s", what,
                     ONYX_GPU_RUNTIME_NAME, int(error), gpuGetErrorName(error),
                     gpuGetErrorString(error));
}

OnyxStatus* vendor_status(const std::string& error, const char* node_name) {
  if (error.empty()) return nullptr;
  return make_status(ONYX_STATUS_INTERNAL, "node '%s': %s", node_name, error.c_str());
}

OnyxStatus* read_int64_input(sdk::ComputeContext& ctx, const sdk::Tensor& t, std::vector<int64_t>* out) {
  if (t.dtype != ONYX_DTYPE_INT64)
    return make_status(ONYX_STATUS_INVALID_ARGUMENT, "expected an int64 tensor, got %s",
                       sdk::dtype_name(t.dtype));
  out->resize(size_t(t.size()));
  if (out->empty()) return nullptr;
  gpuStream_t stream = kernel_stream(ctx);
  gpuError_t e = gpuMemcpyAsync(out->data(), t.raw, out->size() * sizeof(int64_t),
                                gpuMemcpyDeviceToHost, stream);
  if (e == gpuSuccess) e = gpuStreamSynchronize(stream);
  return e == gpuSuccess ? nullptr : gpu_status(e, "reading an int64 input back");
}

std::string require_float32(const sdk::NodeInfo& node) {
  return sdk::require_input_types(node, {ONYX_DTYPE_FLOAT32});
}

}  // namespace onyx::gpu
