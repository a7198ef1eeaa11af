// gpu_util.cpp: small helpers the shared GPU op sources use: statuses for
// runtime and vendor-library errors, reading int64 parameters back from the
// device, the float32 predicate.
#include "gpu_provider.h"

#include <algorithm>

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

ScratchFn scratch_of(sdk::ComputeContext& ctx) {
  return [&ctx](size_t bytes, std::string* error) -> void* {
    void* p = nullptr;
    if (OnyxStatus* st = ctx.scratch(bytes, &p)) {
      *error = ctx.host().status_message(st);
      ctx.host().status_release(st);
      return nullptr;
    }
    return p;
  };
}

std::string require_float32(const sdk::NodeInfo& node) {
  return sdk::require_input_types(node, {ONYX_DTYPE_FLOAT32});
}

Pool2dWindow pool2d_attributes(const sdk::NodeInfo& n) {
  Pool2dWindow w;
  std::vector<int64_t> k = n.get_ints("kernel_shape", {1, 1}), s = n.get_ints("strides", {1, 1}),
                       d = n.get_ints("dilations", {1, 1}), p = n.get_ints("pads", {0, 0, 0, 0});
  w.shape.kernel_h = k[0], w.shape.kernel_w = k[1];
  w.shape.stride_h = s[0], w.shape.stride_w = s[1];
  w.shape.dilation_h = d[0], w.shape.dilation_w = d[1];
  w.shape.pad_top = p[0], w.shape.pad_left = p[1];
  w.pad_bottom = p[2], w.pad_right = p[3];
  w.shape.count_include_pad = n.get_int("count_include_pad", 0) != 0;
  return w;
}

std::string Pool2dWindow::complete(int64_t height, int64_t width, bool global, Pool2dShape* out) const {
  Pool2dShape& s = *out;
  s = shape;
  s.height = height, s.width = width;
  if (global) s.kernel_h = height, s.kernel_w = width;
  s.out_height = (s.height + s.pad_top + pad_bottom - s.dilation_h * (s.kernel_h - 1) - 1) / s.stride_h + 1;
  s.out_width = (s.width + s.pad_left + pad_right - s.dilation_w * (s.kernel_w - 1) - 1) / s.stride_w + 1;
  return s.out_height > 0 && s.out_width > 0 ? std::string() : "window larger than the padded input";
}

std::string pool2d_supported(const sdk::NodeInfo& n, size_t x) {
  if (n.inputs[x].rank >= 0 && n.inputs[x].rank != 4) return "only 2-D pooling (4-D input) runs here";
  std::string auto_pad = n.get_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID") return "auto_pad " + auto_pad + " is not supported";
  if (n.get_int("ceil_mode", 0) != 0) return "ceil_mode=1 is not supported";
  if (n.get_ints("kernel_shape").size() != 2) return "kernel_shape must have 2 entries";
  if (n.get_ints("strides", {1, 1}).size() != 2 || n.get_ints("dilations", {1, 1}).size() != 2 ||
      n.get_ints("pads", {0, 0, 0, 0}).size() != 4)
    return "strides, dilations and pads must be 2-D";
  return require_float32(n);
}

Conv2dShape conv2d_attributes(const sdk::NodeInfo& n) {
  Conv2dShape s;
  std::vector<int64_t> pads = n.get_ints("pads", {0, 0, 0, 0});
  std::vector<int64_t> strides = n.get_ints("strides", {1, 1});
  std::vector<int64_t> dilations = n.get_ints("dilations", {1, 1});
  s.pad_h = pads[0], s.pad_w = pads[1];
  s.stride_h = strides[0], s.stride_w = strides[1];
  s.dilation_h = dilations[0], s.dilation_w = dilations[1];
  s.groups = n.get_int("group", 1);
  // kernel_shape, when given, must be the weights' (checked at run time).
  std::vector<int64_t> kernel = n.get_ints("kernel_shape", {});
  if (kernel.size() == 2) s.kernel_h = kernel[0], s.kernel_w = kernel[1];
  return s;
}

std::string conv2d_supported(const sdk::NodeInfo& n, size_t x, size_t w) {
  if (n.inputs[x].rank >= 0 && n.inputs[x].rank != 4) return "only 2-D convolution (4-D input) runs here";
  if (n.inputs[w].rank != 4) return "only 2-D convolution (4-D weights) runs here";
  std::string auto_pad = n.get_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID") return "auto_pad " + auto_pad + " is not supported";
  std::vector<int64_t> pads = n.get_ints("pads", {0, 0, 0, 0});
  if (pads.size() != 4 || pads[0] != pads[2] || pads[1] != pads[3])
    return "only symmetric pads are supported";
  if (n.has("kernel_shape") && n.get_ints("kernel_shape", {}).size() != 2) return "kernel_shape must have 2 entries";
  std::vector<int64_t> strides = n.get_ints("strides", {1, 1}), dilations = n.get_ints("dilations", {1, 1});
  if (strides.size() != 2 || dilations.size() != 2) return "strides and dilations must have 2 entries";
  if (std::min({strides[0], strides[1], dilations[0], dilations[1]}) <= 0 || n.get_int("group", 1) <= 0)
    return "strides, dilations and group must be positive";
  return require_float32(n);
}

std::string complete_conv2d_shape(std::span<const int64_t> x, std::span<const int64_t> w, Conv2dShape* shape) {
  Conv2dShape& s = *shape;
  if (x.size() != 4 || w.size() != 4) return "Conv needs 4-D input and weights";
  s.batch = x[0], s.channels = x[1], s.height = x[2], s.width = x[3];
  if ((s.kernel_h || s.kernel_w) && (s.kernel_h != w[2] || s.kernel_w != w[3]))
    return "kernel_shape [" + std::to_string(s.kernel_h) + ", " + std::to_string(s.kernel_w) +
           "] does not match the weights' [" + std::to_string(w[2]) + ", " + std::to_string(w[3]) + "]";
  s.out_channels = w[0], s.kernel_h = w[2], s.kernel_w = w[3];
  if (s.channels % s.groups || s.out_channels % s.groups || w[1] * s.groups != s.channels)
    return "weights [" + std::to_string(w[0]) + ", " + std::to_string(w[1]) + ", ...] do not match " +
           std::to_string(s.channels) + " input channels in " + std::to_string(s.groups) + " groups";
  s.out_height = (s.height + 2 * s.pad_h - s.dilation_h * (s.kernel_h - 1) - 1) / s.stride_h + 1;
  s.out_width = (s.width + 2 * s.pad_w - s.dilation_w * (s.kernel_w - 1) - 1) / s.stride_w + 1;
  if (s.out_height <= 0 || s.out_width <= 0) return "kernel larger than padded input";
  return {};
}

}  // namespace onyx::gpu
