// ops_shape.cpp: ops that only rearrange: views (Flatten, Reshape, Squeeze,
// Unsqueeze, Identity: declared ALIASES_INPUT, they move no bytes) and
// strided copies (Transpose, Expand). Any element type of 1, 2, 4 or 8 bytes.
#include <algorithm>
#include <optional>

#include "gpu_provider.h"
#include "op_util.h"

namespace onyx::gpu {
namespace {

using sdk::make_status;

// Requests a view's output. The host normally hands back the input's own
// buffer; a host that gives a separate buffer gets the bytes copied, so the
// result is right either way.
OnyxStatus* view_output(sdk::ComputeContext& ctx, const sdk::Tensor& x, std::span<const int64_t> dims) {
  sdk::Tensor y;
  ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, dims, &y));
  size_t bytes = size_t(x.size()) * sdk::dtype_size(x.dtype);
  if (y.raw == x.raw || bytes == 0) return nullptr;
  gpuError_t e = gpuMemcpyAsync(y.raw, x.raw, bytes, gpuMemcpyDeviceToDevice, kernel_stream(ctx));
  return e == gpuSuccess ? nullptr : gpu_status(e, "copying a view's bytes");
}

// A view: the output is the input's bytes with another shape.
class ViewKernel : public GpuKernel {
 public:
  using ShapeFn = std::function<std::string(std::span<const int64_t> in, std::vector<int64_t>* out)>;
  ViewKernel(ShapeFn shape, std::string name) : shape_(std::move(shape)), name_(std::move(name)) {}
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    std::vector<int64_t> dims;
    std::string error = shape_(x.dims, &dims);
    if (!error.empty())
      return make_status(ONYX_STATUS_INVALID_ARGUMENT, "node '%s': %s", name_.c_str(), error.c_str());
    return view_output(ctx, x, dims);
  }
  void output_memory(std::span<OnyxOutputMemoryInfo> out) const override {
    out[0].kind = ONYX_OUTPUT_ALIASES_INPUT;
    out[0].input_index = 0;
  }
  const std::string& name() const { return name_; }

 private:
  ShapeFn shape_;
  std::string name_;
};

// Reshape: a view whose shape comes from a constant, or from the graph at
// run time (read back from the device).
class ReshapeKernel : public ViewKernel {
 public:
  explicit ReshapeKernel(const sdk::NodeInfo& n)
      : ViewKernel(nullptr, n.name), allow_zero_(n.get_int("allowzero", 0) != 0) {
    if (const auto& c = n.inputs[1].constant) shape_.emplace(c->data<int64_t>(), c->data<int64_t>() + c->size());
  }
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    std::vector<int64_t> shape;
    if (shape_) shape = *shape_;
    else ONYX_SDK_RETURN_IF_ERROR(read_int64_input(ctx, ctx.in(1), &shape));
    std::vector<int64_t> dims;
    std::string error = reshape_dims(x.dims, shape, allow_zero_, &dims);
    if (!error.empty())
      return make_status(ONYX_STATUS_INVALID_ARGUMENT, "node '%s': %s", name().c_str(), error.c_str());
    return view_output(ctx, x, dims);
  }

 private:
  bool allow_zero_;
  std::optional<std::vector<int64_t>> shape_;
};

// Squeeze / Unsqueeze: axes from the attribute (opset < 13) or an input.
class SqueezeKernel : public ViewKernel {
 public:
  SqueezeKernel(const sdk::NodeInfo& n, bool unsqueeze, bool axes_as_input)
      : ViewKernel(nullptr, n.name), unsqueeze_(unsqueeze) {
    if (!axes_as_input) axes_ = n.get_ints("axes");
    else if (!n.input_present(1)) axes_ = std::vector<int64_t>{};
    else if (const auto& c = n.inputs[1].constant) axes_.emplace(c->data<int64_t>(), c->data<int64_t>() + c->size());
  }
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    std::vector<int64_t> axes;
    if (axes_) axes = *axes_;
    else ONYX_SDK_RETURN_IF_ERROR(read_int64_input(ctx, ctx.in(1), &axes));
    std::vector<int64_t> dims;
    std::string error = unsqueeze_ ? unsqueeze_dims(x.dims, axes, &dims) : squeeze_dims(x.dims, axes, &dims);
    if (!error.empty())
      return make_status(ONYX_STATUS_INVALID_ARGUMENT, "node '%s': %s", name().c_str(), error.c_str());
    return view_output(ctx, x, dims);
  }

 private:
  bool unsqueeze_;
  std::optional<std::vector<int64_t>> axes_;
};

// Transpose and Expand: y[i] = x[strided offset of i].
class StridedCopyKernel : public GpuKernel {
 public:
  StridedCopyKernel(const sdk::NodeInfo& n, bool expand) : expand_(expand), name_(n.name) {
    perm_ = n.get_ints("perm");
    if (expand && n.inputs[1].constant) {
      const auto& c = *n.inputs[1].constant;
      shape_.emplace(c.data<int64_t>(), c.data<int64_t>() + c.size());
    }
  }
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), y;
    BroadcastIndex index;
    std::vector<int64_t> out_dims;
    std::string error;
    if (expand_) {
      std::vector<int64_t> shape;
      if (shape_) shape = *shape_;
      else ONYX_SDK_RETURN_IF_ERROR(read_int64_input(ctx, ctx.in(1), &shape));
      error = make_broadcast(x.dims, shape, &index, &out_dims);
    } else {
      error = make_transpose(x.dims, perm_, &index, &out_dims);
    }
    if (!error.empty())
      return make_status(ONYX_STATUS_INVALID_ARGUMENT, "node '%s': %s", name_.c_str(), error.c_str());
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, out_dims, &y));
    gpuError_t e = launch_strided_copy(kernel_stream(ctx), index, x.raw, y.raw, y.size(),
                                       int64_t(sdk::dtype_size(x.dtype)));
    return e == gpuSuccess ? nullptr : gpu_status(e, "launching a strided copy");
  }

 private:
  bool expand_;
  std::vector<int64_t> perm_;
  std::optional<std::vector<int64_t>> shape_;
  std::string name_;
};

// Slice (opset 10+): starts/ends/axes/steps from constants or the graph.
class SliceKernel : public GpuKernel {
 public:
  explicit SliceKernel(const sdk::NodeInfo& n) : name_(n.name) {}
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), y;
    std::vector<int64_t> params[4];  // starts, ends, axes, steps
    for (size_t k = 0; k < 4; ++k)
      if (auto t = ctx.input(k + 1)) ONYX_SDK_RETURN_IF_ERROR(read_int64_input(ctx, *t, &params[k]));
    BroadcastIndex index;
    int64_t offset = 0;
    std::vector<int64_t> out_dims;
    std::string error = make_slice(x.dims, params[0], params[1], params[2], params[3], &index, &offset, &out_dims);
    if (!error.empty())
      return make_status(ONYX_STATUS_INVALID_ARGUMENT, "node '%s': %s", name_.c_str(), error.c_str());
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, out_dims, &y));
    int64_t bytes = int64_t(sdk::dtype_size(x.dtype));
    gpuError_t e = launch_strided_copy(kernel_stream(ctx), index, static_cast<char*>(x.raw) + offset * bytes,
                                       y.raw, y.size(), bytes);
    return e == gpuSuccess ? nullptr : gpu_status(e, "launching Slice");
  }

 private:
  std::string name_;
};

// Concat: each input is a block of rows copied into its columns of the output.
class ConcatKernel : public GpuKernel {
 public:
  ConcatKernel(int64_t axis, std::string name) : axis_(axis), name_(std::move(name)) {}
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    std::vector<sdk::Tensor> in;
    for (size_t k = 0; k < ctx.input_count(); ++k) in.push_back(ctx.in(k));
    size_t rank = in[0].rank();
    int64_t axis = axis_ < 0 ? axis_ + int64_t(rank) : axis_;
    if (axis < 0 || axis >= int64_t(rank))
      return make_status(ONYX_STATUS_INVALID_ARGUMENT, "node '%s': axis out of range", name_.c_str());
    std::vector<int64_t> out_dims = in[0].shape();
    out_dims[size_t(axis)] = 0;
    for (const sdk::Tensor& t : in) {
      bool same = t.rank() == rank && t.dtype == in[0].dtype;
      for (size_t d = 0; same && d < rank; ++d) same = int64_t(d) == axis || t.dim(d) == in[0].dim(d);
      if (!same)
        return make_status(ONYX_STATUS_INVALID_ARGUMENT, "node '%s': inputs differ outside axis %lld",
                           name_.c_str(), (long long)axis);
      out_dims[size_t(axis)] += t.dim(size_t(axis));
    }
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, in[0].dtype, out_dims, &y));
    size_t element = sdk::dtype_size(in[0].dtype);
    int64_t rows = sdk::element_count(std::span<const int64_t>(out_dims).first(size_t(axis)));
    int64_t inner = sdk::element_count(std::span<const int64_t>(out_dims).subspan(size_t(axis) + 1));
    size_t out_pitch = size_t(out_dims[size_t(axis)] * inner) * element, column = 0;
    for (const sdk::Tensor& t : in) {
      size_t width = size_t(t.dim(size_t(axis)) * inner) * element;
      if (width && rows) {
        gpuError_t e = gpuMemcpy2DAsync(static_cast<char*>(y.raw) + column, out_pitch, t.raw, width, width,
                                        size_t(rows), gpuMemcpyDeviceToDevice, kernel_stream(ctx));
        if (e != gpuSuccess) return gpu_status(e, "copying a Concat input");
      }
      column += width;
    }
    return nullptr;
  }

 private:
  int64_t axis_;
  std::string name_;
};

// Element types whose bytes the copy kernels can move.
std::string plain_element_type(const sdk::NodeInfo& n) {
  size_t bytes = sdk::dtype_size(n.input_dtype(0));
  if (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8)
    return std::string("element type ") + sdk::dtype_name(n.input_dtype(0)) + " is not supported";
  return {};
}

std::string int64_second_input(const sdk::NodeInfo& n) {
  if (n.input_present(1) && n.input_dtype(1) != ONYX_DTYPE_INT64) return "input 1 must be int64";
  return plain_element_type(n);
}

// Shape: the input's dims [start, end) (opset 15 clamps both into [0, rank]),
// written to the device by a kernel that takes them as its argument.
class ShapeKernel : public GpuKernel {
 public:
  explicit ShapeKernel(const sdk::NodeInfo& n)
      : start_(n.get_int("start", 0)), end_(n.has("end") ? std::optional<int64_t>(n.get_int("end", 0)) : std::nullopt),
        name_(n.name) {}
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    const std::vector<int64_t> dims = ctx.in(0).shape();
    const int64_t rank = int64_t(dims.size());
    auto clamp = [rank](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
    const int64_t begin = clamp(start_), end = std::max(begin, clamp(end_.value_or(rank)));
    if (end - begin > kMaxRank)
      return make_status(ONYX_STATUS_UNIMPLEMENTED, "node '%s': rank %lld exceeds %d", name_.c_str(),
                         (long long)rank, kMaxRank);
    SmallInt64s values;
    values.count = int32_t(end - begin);
    std::copy(dims.begin() + begin, dims.begin() + end, values.values);
    sdk::Tensor y;
    const int64_t out_dims[1] = {end - begin};
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_INT64, out_dims, &y));
    gpuError_t e = launch_write_int64s(kernel_stream(ctx), values, y.data<int64_t>());
    return e == gpuSuccess ? nullptr : gpu_status(e, "writing Shape's output");
  }

 private:
  int64_t start_;
  std::optional<int64_t> end_;
  std::string name_;
};

}  // namespace

void register_shape_kernels(sdk::KernelRegistry& r) {
  r.add({"", "Shape", 1, 1 << 30, [](const sdk::NodeInfo&) { return std::string(); },
         [](const sdk::NodeInfo& n) { return std::make_unique<ShapeKernel>(n); }});
  r.add({"", "Flatten", 1, 1 << 30, plain_element_type, [](const sdk::NodeInfo& n) {
           int64_t axis = n.get_int("axis", 1);
           return std::make_unique<ViewKernel>(
               [axis](std::span<const int64_t> in, std::vector<int64_t>* out) -> std::string {
                 int64_t a = axis < 0 ? axis + int64_t(in.size()) : axis;
                 if (a < 0 || a > int64_t(in.size())) return "axis out of range";
                 int64_t outer = sdk::element_count(in.first(size_t(a)));
                 *out = {outer, sdk::element_count(in.subspan(size_t(a)))};
                 return {};
               },
               n.name);
         }});
  r.add({"", "Reshape", 5, 1 << 30,
         [](const sdk::NodeInfo& n) -> std::string {
           if (n.input_dtype(1) != ONYX_DTYPE_INT64) return "the shape input must be int64";
           return plain_element_type(n);
         },
         [](const sdk::NodeInfo& n) { return std::make_unique<ReshapeKernel>(n); }});
  r.add({"", "Identity", 1, 1 << 30, plain_element_type, [](const sdk::NodeInfo& n) {
           return std::make_unique<ViewKernel>(
               [](std::span<const int64_t> in, std::vector<int64_t>* out) {
                 out->assign(in.begin(), in.end());
                 return std::string();
               },
               n.name);
         }});
  for (bool unsqueeze : {false, true}) {
    const char* op = unsqueeze ? "Unsqueeze" : "Squeeze";
    r.add({"", op, 1, 12, plain_element_type, [unsqueeze](const sdk::NodeInfo& n) {
             return std::make_unique<SqueezeKernel>(n, unsqueeze, false);
           }});
    r.add({"", op, 13, 1 << 30, int64_second_input, [unsqueeze](const sdk::NodeInfo& n) {
             return std::make_unique<SqueezeKernel>(n, unsqueeze, true);
           }});
  }
  r.add({"", "Slice", 10, 1 << 30,
         [](const sdk::NodeInfo& n) -> std::string {
           for (size_t k = 1; k < n.inputs.size(); ++k)
             if (n.input_present(k) && n.input_dtype(k) != ONYX_DTYPE_INT64)
               return "starts, ends, axes and steps must be int64";
           return plain_element_type(n);
         },
         [](const sdk::NodeInfo& n) { return std::make_unique<SliceKernel>(n); }});
  r.add({"", "Concat", 4, 1 << 30,
         [](const sdk::NodeInfo& n) -> std::string {
           if (!n.has("axis")) return "Concat needs an axis";
           return plain_element_type(n);
         },
         [](const sdk::NodeInfo& n) { return std::make_unique<ConcatKernel>(n.get_int("axis", 0), n.name); }});
  r.add({"", "Transpose", 1, 1 << 30, plain_element_type,
         [](const sdk::NodeInfo& n) { return std::make_unique<StridedCopyKernel>(n, false); }});
  r.add({"", "Expand", 8, 1 << 30, int64_second_input,
         [](const sdk::NodeInfo& n) { return std::make_unique<StridedCopyKernel>(n, true); }});
}

}  // namespace onyx::gpu
