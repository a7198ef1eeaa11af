// ops_scatter.cpp: ScatterElements and ScatterND with reduction "none" (any
// element type of 1, 2, 4 or 8 bytes). The output starts as a copy of the
// data; updates are then written in place. Out-of-range indices are reported
// (the kernel raises a device flag that is read back).
#include "gpu_provider.h"
#include "op_util.h"

namespace onyx::gpu {
namespace {

using sdk::make_status;

// Copies data into y, runs `launch` with a zeroed device flag, and turns a
// raised flag into an error naming the node (launch_checked).
template <typename Launch>
OnyxStatus* scatter_into(sdk::ComputeContext& ctx, const sdk::Tensor& data, const sdk::Tensor& y,
                         const std::string& name, Launch launch) {
  size_t bytes = size_t(data.size()) * sdk::dtype_size(data.dtype);
  return launch_checked(
      ctx,
      [&](gpuStream_t stream, int* flag) {
        gpuError_t e = bytes ? gpuMemcpyAsync(y.raw, data.raw, bytes, gpuMemcpyDeviceToDevice, stream) : gpuSuccess;
        return e == gpuSuccess ? launch(stream, flag) : e;
      },
      "running a scatter", "node '" + name + "': an index is out of range");
}

class ScatterElementsKernel : public GpuKernel {
 public:
  ScatterElementsKernel(int64_t axis, std::string name) : axis_(axis), name_(std::move(name)) {}
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor data = ctx.in(0), indices = ctx.in(1), updates = ctx.in(2), y;
    size_t rank = data.rank();
    int64_t axis = axis_ < 0 ? axis_ + int64_t(rank) : axis_;
    if (axis < 0 || axis >= int64_t(rank) || rank > size_t(kMaxRank))
      return make_status(ONYX_STATUS_INVALID_ARGUMENT, "node '%s': axis out of range", name_.c_str());
    if (indices.shape() != updates.shape() || indices.rank() != rank)
      return make_status(ONYX_STATUS_INVALID_ARGUMENT,
                         "node '%s': indices and updates must have one shape of the data's rank", name_.c_str());
    ScatterElementsIndex index;
    index.rank = int32_t(rank), index.axis = int32_t(axis), index.axis_dim = data.dim(size_t(axis));
    int64_t stride = 1;
    for (size_t d = rank; d-- > 0;) {
      if (int64_t(d) != axis && updates.dim(d) > data.dim(d))
        return make_status(ONYX_STATUS_INVALID_ARGUMENT, "node '%s': updates exceed the data on axis %zu",
                           name_.c_str(), d);
      index.update_dims[d] = updates.dim(d);
      index.data_strides[d] = stride;
      stride *= data.dim(d);
    }
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, data.dtype, data.dims, &y));
    return scatter_into(ctx, data, y, name_, [&](gpuStream_t stream, int* flag) {
      return launch_scatter_elements(stream, index, indices.raw, indices.dtype == ONYX_DTYPE_INT64,
                                     updates.raw, y.raw, updates.size(),
                                     int64_t(sdk::dtype_size(data.dtype)), flag);
    });
  }

 private:
  int64_t axis_;
  std::string name_;
};

class ScatterNdKernel : public GpuKernel {
 public:
  explicit ScatterNdKernel(std::string name) : name_(std::move(name)) {}
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor data = ctx.in(0), indices = ctx.in(1), updates = ctx.in(2), y;
    if (indices.rank() == 0)
      return make_status(ONYX_STATUS_INVALID_ARGUMENT, "node '%s': indices must have rank >= 1", name_.c_str());
    ScatterNdShape s;
    int64_t k = indices.dim(indices.rank() - 1);
    if (k < 0 || k > int64_t(data.rank()) || k > kMaxRank)
      return make_status(ONYX_STATUS_INVALID_ARGUMENT, "node '%s': indices' last dimension %lld exceeds the data's rank",
                         name_.c_str(), (long long)k);
    s.k = int32_t(k);
    for (size_t d = size_t(k); d < data.rank(); ++d) s.slice_size *= data.dim(d);
    int64_t stride = s.slice_size;
    for (int64_t t = k; t-- > 0;) {
      s.data_dims[t] = data.dim(size_t(t));
      s.data_strides[t] = stride;
      stride *= data.dim(size_t(t));
    }
    int64_t slices = indices.size() / std::max<int64_t>(k, 1);
    if (updates.size() != slices * s.slice_size)
      return make_status(ONYX_STATUS_INVALID_ARGUMENT, "node '%s': updates have %lld elements, expected %lld",
                         name_.c_str(), (long long)updates.size(), (long long)(slices * s.slice_size));
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, data.dtype, data.dims, &y));
    return scatter_into(ctx, data, y, name_, [&](gpuStream_t stream, int* flag) {
      return launch_scatter_nd(stream, s, indices.data<int64_t>(), updates.raw, y.raw, updates.size(),
                               int64_t(sdk::dtype_size(data.dtype)), flag);
    });
  }

 private:
  std::string name_;
};

std::string scatter_supported(const sdk::NodeInfo& n, bool nd) {
  std::string reduction = n.get_string("reduction", "none");
  if (reduction != "none") return "reduction '" + reduction + "' is not supported";
  size_t bytes = sdk::dtype_size(n.input_dtype(0));
  if (n.input_dtype(0) != n.input_dtype(2) || (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8))
    return std::string("element type ") + sdk::dtype_name(n.input_dtype(0)) + " is not supported";
  int32_t it = n.input_dtype(1);
  if (nd ? it != ONYX_DTYPE_INT64 : (it != ONYX_DTYPE_INT64 && it != ONYX_DTYPE_INT32))
    return nd ? "indices must be int64" : "indices must be int32 or int64";
  return {};
}

}  // namespace

void register_scatter_kernels(sdk::KernelRegistry& r) {
  r.add({"", "ScatterElements", 11, 1 << 30,
         [](const sdk::NodeInfo& n) { return scatter_supported(n, false); },
         [](const sdk::NodeInfo& n) { return std::make_unique<ScatterElementsKernel>(n.get_int("axis", 0), n.name); }});
  r.add({"", "ScatterND", 11, 1 << 30, [](const sdk::NodeInfo& n) { return scatter_supported(n, true); },
         [](const sdk::NodeInfo& n) { return std::make_unique<ScatterNdKernel>(n.name); }});
}

}  // namespace onyx::gpu
