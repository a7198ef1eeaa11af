// Layout ops, so that whole CNNs and transformer blocks stay on this
// provider (and `--provider onednn` alone runs them): Flatten and Reshape as
// views (ONYX_OUTPUT_ALIASES_INPUT: no bytes move), Transpose as a oneDNN
// reorder from the input seen through permuted strides.
#include <cstring>

#include "ops.h"

namespace onyx::onednn {
namespace {

// A kernel whose output is input 0's bytes under other dims: the host
// normally hands back x's own buffer (ALIASES_INPUT); another buffer gets a copy.
class ViewKernel : public sdk::Kernel {
 public:
  void output_memory(std::span<OnyxOutputMemoryInfo> out) const override {
    if (!out.empty()) out[0].kind = ONYX_OUTPUT_ALIASES_INPUT, out[0].input_index = 0;
  }

 protected:
  static OnyxStatus* view(ComputeContext& ctx, const sdk::Tensor& x, const std::vector<int64_t>& dims) {
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, dims, &y));
    size_t bytes = size_t(x.size()) * sdk::dtype_size(x.dtype);
    if (y.raw != x.raw && bytes > 0) std::memcpy(y.raw, x.raw, bytes);
    return nullptr;
  }
};

class FlattenKernel : public ViewKernel {
 public:
  explicit FlattenKernel(int64_t axis) : axis_(axis) {}

  OnyxStatus* compute(ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    int64_t rank = int64_t(x.rank());
    int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    if (axis < 0 || axis > rank)
      return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "Flatten: axis %lld out of range for rank %lld",
                              (long long)axis_, (long long)rank);
    int64_t outer = 1, inner = 1;
    for (int64_t k = 0; k < rank; ++k) (k < axis ? outer : inner) *= x.dims[size_t(k)];
    return view(ctx, x, {outer, inner});
  }

 private:
  int64_t axis_;
};

// Reshape (opset 5 on: the shape is input 1, int64): 0 copies the input's
// dim at that place (unless allowzero), -1 takes what is left.
class ReshapeKernel : public ViewKernel {
 public:
  explicit ReshapeKernel(bool allow_zero) : allow_zero_(allow_zero) {}

  OnyxStatus* compute(ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), shape = ctx.in(1);
    if (shape.dtype != ONYX_DTYPE_INT64 || shape.rank() != 1)
      return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "Reshape: the shape must be a 1-D int64 tensor");
    std::vector<int64_t> dims(shape.data<int64_t>(), shape.data<int64_t>() + shape.size());
    int64_t known = 1, infer = -1;
    for (size_t k = 0; k < dims.size(); ++k) {
      if (dims[k] == 0 && !allow_zero_) {
        if (k >= x.dims.size())
          return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "Reshape: shape[%zu] is 0 but the input has rank %zu",
                                  k, x.dims.size());
        dims[k] = x.dims[k];
      }
      if (dims[k] == -1) {
        if (infer >= 0) return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "Reshape: more than one -1 in the shape");
        infer = int64_t(k);
        continue;
      }
      if (dims[k] < 0)
        return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "Reshape: shape[%zu] is %lld", k, (long long)dims[k]);
      if (dims[k] > 0 && known > INT64_MAX / dims[k])
        return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "Reshape: the shape's element count overflows");
      known *= dims[k];
    }
    const int64_t count = x.size();
    if (infer >= 0) {
      if (known == 0 || count % known != 0)
        return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "Reshape: %lld elements do not fill the shape's -1",
                                (long long)count);
      dims[size_t(infer)] = count / known;
    } else if (known != count) {
      return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "Reshape: %lld elements into a shape of %lld",
                              (long long)count, (long long)known);
    }
    return view(ctx, x, dims);
  }

 private:
  bool allow_zero_;
};

std::string reshape_supports(const NodeInfo& n) {
  RETURN_IF_REASON(require_f32(n, {0}));
  if (!n.input_present(1) || n.inputs[1].dtype != ONYX_DTYPE_INT64) return "the shape (input 1) is not int64";
  return {};
}

std::string flatten_supports(const NodeInfo& n) {
  RETURN_IF_REASON(require_f32(n, {0}));
  if (n.inputs[0].rank < 0) return "rank of input 0 unknown at session creation";
  int64_t axis = n.get_int("axis", 1), rank = n.inputs[0].rank;
  if (axis < -rank || axis > rank) return "axis out of range";
  return {};
}

struct TransposePrepared {
  dnnl::memory::desc from, to;
  dnnl::reorder prim;
  mutable BoundPool<BoundArgs> calls;
};

class TransposeKernel : public sdk::Kernel {
 public:
  TransposeKernel(std::vector<int64_t> perm, const DeviceConfig& config) : perm_(std::move(perm)), engine_(config.engine) {}

  OnyxStatus* compute(ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    size_t rank = x.rank();
    std::vector<int64_t> perm = perm_;
    if (perm.empty())  // ONNX's default: reverse the axes
      for (size_t k = 0; k < rank; ++k) perm.push_back(int64_t(rank - 1 - k));
    if (perm.size() != rank)
      return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "Transpose: perm has %zu axes, the input %zu",
                              perm.size(), rank);
    std::vector<int64_t> x_strides(rank, 1), y_dims(rank), view_strides(rank);
    for (size_t k = rank; k-- > 1;) x_strides[k - 1] = x_strides[k] * std::max<int64_t>(x.dims[k], 1);
    std::vector<bool> seen(rank, false);
    for (size_t k = 0; k < rank; ++k) {
      int64_t axis = perm[k] < 0 ? perm[k] + int64_t(rank) : perm[k];
      if (axis < 0 || axis >= int64_t(rank) || seen[size_t(axis)])
        return sdk::make_status(ONYX_STATUS_INVALID_ARGUMENT, "Transpose: perm is not a permutation of the axes");
      seen[size_t(axis)] = true;
      y_dims[k] = x.dims[size_t(axis)];
      view_strides[k] = x_strides[size_t(axis)];
    }
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_FLOAT32, y_dims, &y));
    if (y.size() == 0) return nullptr;
    if (rank == 0) {
      *y.data<float>() = *x.data<float>();
      return nullptr;
    }
    use_threads_for(ctx, 8.0 * double(y.size()));  // memory-bound: as eltwise.cpp
    auto p = cache_.get(x.shape(), [&] {
      auto made = std::make_shared<TransposePrepared>();
      made->from = strided_md(y_dims, view_strides);
      made->to = plain_md(y_dims);
      made->prim = make_reorder(made->from, made->to, engine_);
      return made;
    });
    std::unique_ptr<BoundArgs> call = p->calls.take([&] {
      auto made = std::make_unique<BoundArgs>();
      made->add(DNNL_ARG_FROM, p->from, engine_);
      made->add(DNNL_ARG_TO, p->to, engine_);
      return made;
    });
    call->point(0, x.raw);
    call->point(1, y.raw);
    dnnl::stream& stream = thread_stream();
    call->execute(p->prim, stream);
    stream.wait();
    p->calls.give_back(std::move(call));
    return nullptr;
  }

 private:
  std::vector<int64_t> perm_;
  dnnl::engine engine_;
  ShapeCache<TransposePrepared> cache_;
};

std::string transpose_supports(const NodeInfo& n) {
  RETURN_IF_REASON(require_f32(n, {0}));
  if (n.inputs[0].rank > DNNL_MAX_NDIMS) return "rank above oneDNN's " + std::to_string(DNNL_MAX_NDIMS);
  return {};
}

}  // namespace

void add_view_ops(OpRegistry& ops) {
  ops.add(OpBuilder("Transpose").check(transpose_supports).create([](const NodeInfo& n, const DeviceConfig& c) {
    return std::unique_ptr<sdk::Kernel>(new TransposeKernel(n.get_ints("perm"), c));
  }));
  ops.add(OpBuilder("Reshape").since(5).check(reshape_supports).create([](const NodeInfo& n, const DeviceConfig&) {
    return std::unique_ptr<sdk::Kernel>(new ReshapeKernel(n.get_int("allowzero", 0) != 0));
  }));
  ops.add(OpBuilder("Flatten").check(flatten_supports).create([](const NodeInfo& n, const DeviceConfig&) {
    return std::unique_ptr<sdk::Kernel>(new FlattenKernel(n.get_int("axis", 1)));
  }));
}

}  // namespace onyx::onednn
