// ops_nn.cpp: reductions, Softmax/LogSoftmax, LayerNormalization and Gather.
#include "gpu_provider.h"
#include "op_util.h"

namespace onyx::gpu {
namespace {

using sdk::make_status;

int64_t normalize_axis(int64_t axis, size_t rank) { return axis < 0 ? axis + int64_t(rank) : axis; }

// ---------------------------------------------------------------------------
// Reductions: axes from the attribute (older opsets), a constant input, or
// an input computed at run time (read back from the device, a few bytes).
// ---------------------------------------------------------------------------

struct ReduceConfig {
  std::vector<int64_t> axes;
  bool keepdims = true;
  bool noop_with_empty_axes = false;
  bool axes_at_run_time = false;  // axes is a non-constant input
};

// Reads the axes of a Reduce node; returns "" or why the node is declined.
std::string reduce_config(const sdk::NodeInfo& n, bool axes_as_input, ReduceConfig* c) {
  c->keepdims = n.get_int("keepdims", 1) != 0;
  c->noop_with_empty_axes = n.get_int("noop_with_empty_axes", 0) != 0;
  if (!axes_as_input) {
    c->axes = n.get_ints("axes");
    return {};
  }
  if (!n.input_present(1)) return {};
  if (n.inputs[1].dtype != ONYX_DTYPE_INT64) return "axes must be int64";
  const auto& axes = n.inputs[1].constant;
  if (!axes) {
    c->axes_at_run_time = true;
    return {};
  }
  c->axes.assign(axes->data<int64_t>(), axes->data<int64_t>() + axes->size());
  return {};
}

class ReduceKernel : public GpuKernel {
 public:
  ReduceKernel(ReduceOp op, ReduceConfig config, std::string name)
      : op_(op), config_(std::move(config)), name_(std::move(name)) {}
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), y;
    size_t rank = x.rank();
    if (rank > size_t(kMaxRank))
      return make_status(ONYX_STATUS_UNIMPLEMENTED, "node '%s': rank %zu exceeds %d", name_.c_str(),
                         rank, kMaxRank);
    std::vector<int64_t> axes = config_.axes;
    if (config_.axes_at_run_time) {
      if (auto t = ctx.input(1)) ONYX_SDK_RETURN_IF_ERROR(read_int64_input(ctx, *t, &axes));
    }
    std::vector<bool> reduced(rank, axes.empty() && !config_.noop_with_empty_axes);
    std::vector<bool> named(rank, false);
    for (int64_t a : axes) {
      int64_t axis = normalize_axis(a, rank);
      if (axis < 0 || axis >= int64_t(rank))
        return make_status(ONYX_STATUS_INVALID_ARGUMENT, "node '%s': axis %lld out of range for rank %zu",
                           name_.c_str(), (long long)a, rank);
      if (named[size_t(axis)])
        return make_status(ONYX_STATUS_INVALID_ARGUMENT, "node '%s': axis %lld is named twice in the axes",
                           name_.c_str(), (long long)axis);
      named[size_t(axis)] = reduced[size_t(axis)] = true;
    }
    std::vector<int64_t> out_dims;
    ReduceIndex index = make_reduce_index(x.dims, reduced, config_.keepdims, &out_dims);
    // An empty reduced set gives the op's identity (-inf for Max, +inf for Min,
    // 0 for Sum, -inf for LogSumExp), as opset 18 specifies.
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_FLOAT32, out_dims, &y));
    gpuError_t e = launch_reduce(kernel_stream(ctx), op_, index, x.data<float>(), y.data<float>(),
                                 y.size());
    return e == gpuSuccess ? nullptr : gpu_status(e, "launching a reduction");
  }

 private:
  ReduceOp op_;
  ReduceConfig config_;
  std::string name_;
};

void add_reduce(sdk::KernelRegistry& r, const char* op, ReduceOp kind, int64_t axes_input_since) {
  // Two definitions: axes as an attribute before `axes_input_since`, as an input from it on.
  for (bool as_input : {false, true}) {
    r.add({"", op, as_input ? axes_input_since : 1, as_input ? 1 << 30 : axes_input_since - 1,
           [as_input](const sdk::NodeInfo& n) -> std::string {
             ReduceConfig c;
             std::string why = reduce_config(n, as_input, &c);
             if (!why.empty()) return why;
             return n.input_dtype(0) == ONYX_DTYPE_FLOAT32 ? std::string() : "input 0 must be float32";
           },
           [kind, as_input](const sdk::NodeInfo& n) {
             ReduceConfig c;
             reduce_config(n, as_input, &c);
             return std::make_unique<ReduceKernel>(kind, std::move(c), n.name);
           }});
  }
}

// ---------------------------------------------------------------------------
// Softmax / LogSoftmax
// ---------------------------------------------------------------------------

class SoftmaxKernel : public GpuKernel {
 public:
  SoftmaxKernel(int64_t axis, bool single_axis, bool log, std::string name)
      : axis_(axis), single_axis_(single_axis), log_(log), name_(std::move(name)) {}
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), y;
    int64_t axis = normalize_axis(axis_, x.rank());
    if (axis < 0 || axis >= int64_t(std::max<size_t>(x.rank(), 1)))
      return make_status(ONYX_STATUS_INVALID_ARGUMENT, "node '%s': axis %lld out of range for rank %zu",
                         name_.c_str(), (long long)axis_, x.rank());
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_FLOAT32, x.dims, &y));
    RowLayout rows = make_softmax_rows(x.dims, axis, single_axis_);
    gpuError_t e = launch_softmax(kernel_stream(ctx), rows, log_, x.data<float>(), y.data<float>());
    return e == gpuSuccess ? nullptr : gpu_status(e, "launching softmax");
  }

 private:
  int64_t axis_;
  bool single_axis_, log_;
  std::string name_;
};

void add_softmax(sdk::KernelRegistry& r, const char* op, bool log) {
  r.add({"", op, 1, 12, require_float32, [log](const sdk::NodeInfo& n) {
           return std::make_unique<SoftmaxKernel>(n.get_int("axis", 1), false, log, n.name);
         }});
  r.add({"", op, 13, 1 << 30, require_float32, [log](const sdk::NodeInfo& n) {
           return std::make_unique<SoftmaxKernel>(n.get_int("axis", -1), true, log, n.name);
         }});
}

// ---------------------------------------------------------------------------
// LayerNormalization (opset 17): normalizes the trailing axes from `axis`.
// ---------------------------------------------------------------------------

class LayerNormKernel : public GpuKernel {
 public:
  LayerNormKernel(int64_t axis, float epsilon, bool want_mean, bool want_inv_std, std::string name)
      : axis_(axis), epsilon_(epsilon), want_mean_(want_mean), want_inv_std_(want_inv_std),
        name_(std::move(name)) {}
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), scale = ctx.in(1), y;
    auto bias = ctx.input(2);
    int64_t axis = normalize_axis(axis_, x.rank());
    if (axis < 0 || axis >= int64_t(x.rank()))
      return make_status(ONYX_STATUS_INVALID_ARGUMENT, "node '%s': axis %lld out of range for rank %zu",
                         name_.c_str(), (long long)axis_, x.rank());
    RowLayout rows = make_softmax_rows(x.dims, axis, false);
    // Scale and bias broadcast to the normalized shape (ONNX); the kernel
    // reads one full row of each, expanded here when they are smaller.
    const std::span<const int64_t> normalized(x.dims.begin() + axis, x.dims.end());
    const float* scale_row = nullptr;
    const float* bias_row = nullptr;
    ONYX_SDK_RETURN_IF_ERROR(normalized_row(ctx, scale, normalized, "scale", &scale_row));
    if (bias) ONYX_SDK_RETURN_IF_ERROR(normalized_row(ctx, *bias, normalized, "bias", &bias_row));
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_FLOAT32, x.dims, &y));
    // Mean and InvStdDev keep the leading dims and have 1 for normalized ones.
    std::vector<int64_t> stat_dims(x.dims.begin(), x.dims.end());
    for (size_t k = size_t(axis); k < stat_dims.size(); ++k) stat_dims[k] = 1;
    sdk::Tensor mean, inv_std;
    if (want_mean_)
      ONYX_SDK_RETURN_IF_ERROR(ctx.output(1, ONYX_DTYPE_FLOAT32, stat_dims, &mean));
    if (want_inv_std_)
      ONYX_SDK_RETURN_IF_ERROR(ctx.output(2, ONYX_DTYPE_FLOAT32, stat_dims, &inv_std));
    gpuError_t e = launch_layer_norm(kernel_stream(ctx), rows, epsilon_, x.data<float>(), scale_row, bias_row,
                                     y.data<float>(), mean.data<float>(), inv_std.data<float>());
    return e == gpuSuccess ? nullptr : gpu_status(e, "launching layer normalization");
  }

 private:
  // `t` as one row of the normalized shape: itself when it has that shape's
  // elements, else broadcast into scratch.
  OnyxStatus* normalized_row(sdk::ComputeContext& ctx, const sdk::Tensor& t, std::span<const int64_t> normalized,
                             const char* what, const float** row) const {
    const int64_t length = sdk::element_count(normalized);
    if (t.size() == length && t.rank() <= normalized.size()) {
      *row = t.data<float>();
      return nullptr;
    }
    BroadcastIndex index;
    std::vector<int64_t> dims;
    std::string error = make_broadcast(normalized, t.dims, &index, &dims);
    if (!error.empty() || sdk::element_count(dims) != length)
      return make_status(ONYX_STATUS_INVALID_ARGUMENT,
                         "node '%s': %s of %lld elements does not broadcast to the normalized shape (%lld elements)",
                         name_.c_str(), what, (long long)t.size(), (long long)length);
    void* expanded = nullptr;
    ONYX_SDK_RETURN_IF_ERROR(ctx.scratch(size_t(length) * sizeof(float), &expanded));
    // The broadcast's b side walks `t`: copy it as the a side of a strided copy.
    BroadcastIndex copy = index;
    for (int32_t k = 0; k < copy.rank; ++k) copy.a_strides[k] = index.b_strides[k];
    gpuError_t e = launch_strided_copy(kernel_stream(ctx), copy, t.raw, expanded, length, sizeof(float));
    if (e != gpuSuccess) return gpu_status(e, "broadcasting layer normalization's scale or bias");
    *row = static_cast<const float*>(expanded);
    return nullptr;
  }

  int64_t axis_;
  float epsilon_;
  bool want_mean_, want_inv_std_;  // the optional outputs the node names
  std::string name_;
};

// ---------------------------------------------------------------------------
// Gather: any element type of 1, 2, 4 or 8 bytes; int32/int64 indices.
// ---------------------------------------------------------------------------

class GatherKernel : public GpuKernel {
 public:
  GatherKernel(int64_t axis, std::string name) : axis_(axis), name_(std::move(name)) {}
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor data = ctx.in(0), indices = ctx.in(1), y;
    int64_t axis = normalize_axis(axis_, data.rank());
    if (axis < 0 || axis >= int64_t(data.rank()))
      return make_status(ONYX_STATUS_INVALID_ARGUMENT, "node '%s': axis %lld out of range for rank %zu",
                         name_.c_str(), (long long)axis_, data.rank());
    std::vector<int64_t> out_dims(data.dims.begin(), data.dims.begin() + axis);
    out_dims.insert(out_dims.end(), indices.dims.begin(), indices.dims.end());
    out_dims.insert(out_dims.end(), data.dims.begin() + axis + 1, data.dims.end());
    int64_t inner = 1;
    for (size_t k = size_t(axis) + 1; k < data.rank(); ++k) inner *= data.dims[k];
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, data.dtype, out_dims, &y));
    if (y.size() == 0) return nullptr;
    const long long extent = (long long)data.dims[size_t(axis)];
    return launch_checked(
        ctx,
        [&](gpuStream_t stream, int* flag) {
          return launch_gather(stream, data.raw, indices.raw, indices.dtype == ONYX_DTYPE_INT64, y.raw, y.size(),
                               inner, indices.size(), data.dims[size_t(axis)], int64_t(sdk::dtype_size(data.dtype)),
                               flag);
        },
        "running Gather",
        "node '" + name_ + "': an index is outside [-" + std::to_string(extent) + ", " + std::to_string(extent) +
            ") on axis " + std::to_string(axis_));
  }

 private:
  int64_t axis_;
  std::string name_;
};

}  // namespace

void register_nn_kernels(sdk::KernelRegistry& r) {
  add_reduce(r, "ReduceSum", ReduceOp::kSum, 13);
  add_reduce(r, "ReduceMean", ReduceOp::kMean, 18);
  add_reduce(r, "ReduceMax", ReduceOp::kMax, 18);
  add_reduce(r, "ReduceMin", ReduceOp::kMin, 18);
  add_reduce(r, "ReduceProd", ReduceOp::kProd, 18);
  add_reduce(r, "ReduceSumSquare", ReduceOp::kSumSquare, 18);
  add_reduce(r, "ReduceL1", ReduceOp::kL1, 18);
  add_reduce(r, "ReduceL2", ReduceOp::kL2, 18);
  add_reduce(r, "ReduceLogSumExp", ReduceOp::kLogSumExp, 18);
  add_softmax(r, "Softmax", false);
  add_softmax(r, "LogSoftmax", true);
  r.add({"", "LayerNormalization", 17, 1 << 30,
         [](const sdk::NodeInfo& n) -> std::string {
           if (n.get_int("stash_type", 1) != 1) return "only stash_type=1 (float32) is supported";
           return require_float32(n);
         },
         [](const sdk::NodeInfo& n) {
           return std::make_unique<LayerNormKernel>(
               n.get_int("axis", -1), float(n.get_float("epsilon", 1e-5)),
               n.outputs.size() > 1 && n.outputs[1].present,
               n.outputs.size() > 2 && n.outputs[2].present, n.name);
         }});
  r.add({"", "Gather", 11, 1 << 30,
         [](const sdk::NodeInfo& n) -> std::string {
           size_t bytes = sdk::dtype_size(n.input_dtype(0));
           if (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8)
             return std::string("data type ") + sdk::dtype_name(n.input_dtype(0)) + " is not supported";
           int32_t it = n.input_dtype(1);
           if (it != ONYX_DTYPE_INT64 && it != ONYX_DTYPE_INT32) return "indices must be int32 or int64";
           return {};
         },
         [](const sdk::NodeInfo& n) { return std::make_unique<GatherKernel>(n.get_int("axis", 0), n.name); }});
}

}  // namespace onyx::gpu
