// reshape.cpp: the ops that only relabel a tensor's shape (Reshape, Flatten,
// Squeeze, Unsqueeze, Identity, Dropout at inference) or read it (Shape,
// Size). The relabelling ops declare their output an alias of input 0: they
// write nothing, the host hands the input's buffer out as the output.
#include <algorithm>
#include <random>

#include "kernels/registry.h"
#include "kernels/shape/shape_util.h"

namespace onyx::cpu {
namespace {

using shape::declare_alias;
using shape::output_alias;

// Reshape: 0 copies the input's dim (unless allowzero), -1 is inferred.
class ReshapeKernel final : public sdk::Kernel {
 public:
  explicit ReshapeKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)),
        from_attribute_(node.opset < 5),
        attr_shape_(node.get_ints("shape")),
        allowzero_(node.get_int("allowzero", 0) != 0) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    std::vector<int64_t> shape = attr_shape_;
    if (!from_attribute_) {
      bool present = false;
      std::string why;
      if (!shape::read_int_input(ctx, 1, &shape, &present, &why) || !present)
        return util::fail(label_, "%s", present ? why.c_str() : "input 1 (shape) is missing");
    }
    std::vector<int64_t> dims(shape.size());
    int64_t known = 1, infer = -1;
    for (size_t i = 0; i < shape.size(); ++i) {
      int64_t s = shape[i];
      if (s == -1) {
        if (infer >= 0) return util::fail(label_, "shape %s has more than one -1", util::dims_str(shape).c_str());
        infer = int64_t(i);
        continue;
      }
      if (s == 0 && !allowzero_) {
        if (i >= x.rank())
          return util::fail(label_, "shape %s copies dim %zu (a 0) from input 0 of rank %zu",
                            util::dims_str(shape).c_str(), i, x.rank());
        s = x.dim(i);
      }
      if (s < 0) return util::fail(label_, "shape %s has a negative dim", util::dims_str(shape).c_str());
      dims[i] = s;
      if (__builtin_mul_overflow(known, s, &known))  // from data: any size may arrive
        return util::fail(label_, "shape %s has more elements than any tensor can hold",
                          util::dims_str(shape).c_str());
    }
    if (infer >= 0) {
      if (known == 0 || x.size() % known != 0)
        return util::fail(label_, "cannot infer the -1 in shape %s for input 0 of shape %s",
                          util::dims_str(shape).c_str(), util::dims_str(x.dims).c_str());
      dims[size_t(infer)] = x.size() / known;
    } else if (known != x.size()) {
      return util::fail(label_, "cannot reshape input 0 of shape %s (%lld elements) to %s",
                        util::dims_str(x.dims).c_str(), (long long)x.size(), util::dims_str(dims).c_str());
    }
    return output_alias(ctx, 0, x, dims);
  }
  void output_memory(std::span<OnyxOutputMemoryInfo> out) const override { declare_alias(out); }

 private:
  std::string label_;
  bool from_attribute_;
  std::vector<int64_t> attr_shape_;
  bool allowzero_;
};

// Flatten to 2-D: [prod(dims[:axis]), prod(dims[axis:])].
class FlattenKernel final : public sdk::Kernel {
 public:
  explicit FlattenKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)), axis_(node.get_int("axis", 1)) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    int64_t rank = int64_t(x.rank()), axis = axis_ < 0 ? axis_ + rank : axis_;
    if (axis < 0 || axis > rank)
      return util::fail(label_, "axis %lld is out of range for input 0 of rank %lld",
                        (long long)axis_, (long long)rank);
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.dim(size_t(d));
    int64_t inner = 1;
    for (int64_t d = axis; d < rank; ++d) inner *= x.dim(size_t(d));
    int64_t dims[2] = {outer, inner};
    return output_alias(ctx, 0, x, dims);
  }
  void output_memory(std::span<OnyxOutputMemoryInfo> out) const override { declare_alias(out); }

 private:
  std::string label_;
  int64_t axis_;
};

// Squeeze / Unsqueeze: axes from the attribute before opset 13, from input 1 after.
class SqueezeKernel final : public sdk::Kernel {
 public:
  SqueezeKernel(const sdk::NodeInfo& node, bool unsqueeze)
      : label_(util::node_label(node)),
        unsqueeze_(unsqueeze),
        from_attribute_(node.opset < 13),
        attr_axes_(node.get_ints("axes")) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    std::vector<int64_t> axes = attr_axes_;
    bool present = from_attribute_ && !axes.empty();
    std::string why;
    if (!from_attribute_ && !shape::read_int_input(ctx, 1, &axes, &present, &why))
      return util::fail(label_, "%s", why.c_str());
    if (unsqueeze_ && !present)
      return util::fail(label_, "%s", from_attribute_ ? "attribute axes is missing" : "input 1 (axes) is missing");
    int64_t rank = int64_t(x.rank()), out_rank = unsqueeze_ ? rank + int64_t(axes.size()) : rank;
    std::vector<bool> marked(size_t(out_rank), false);
    for (int64_t a : axes) {
      int64_t axis = 0;
      if (!util::normalize_axis(a, out_rank, &axis))
        return util::fail(label_, "axis %lld is out of range for rank %lld", (long long)a, (long long)out_rank);
      if (marked[size_t(axis)]) return util::fail(label_, "axis %lld is repeated", (long long)a);
      marked[size_t(axis)] = true;
    }
    std::vector<int64_t> dims;
    if (unsqueeze_) {
      for (int64_t d = 0, src = 0; d < out_rank; ++d) dims.push_back(marked[size_t(d)] ? 1 : x.dim(size_t(src++)));
    } else {
      for (int64_t d = 0; d < rank; ++d) {
        int64_t n = x.dim(size_t(d));
        if (marked[size_t(d)] && n != 1)
          return util::fail(label_, "cannot squeeze axis %lld of size %lld (input 0 of shape %s)",
                            (long long)d, (long long)n, util::dims_str(x.dims).c_str());
        bool drop = present ? marked[size_t(d)] : n == 1;
        if (!drop) dims.push_back(n);
      }
    }
    return output_alias(ctx, 0, x, dims);
  }
  void output_memory(std::span<OnyxOutputMemoryInfo> out) const override { declare_alias(out); }

 private:
  std::string label_;
  bool unsqueeze_, from_attribute_;
  std::vector<int64_t> attr_axes_;
};

class IdentityKernel final : public sdk::Kernel {
 public:
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    return output_alias(ctx, 0, x, x.dims);
  }
  void output_memory(std::span<OnyxOutputMemoryInfo> out) const override { declare_alias(out); }
};

// Dropout: at inference Y = X and the mask is all ones. Training mode
// (input training_mode true from opset 12, attribute is_test = 0 before
// opset 7) drops elements with probability `ratio` and scales the kept ones
// by 1 / (1 - ratio), drawing from a generator seeded with attribute seed.
class DropoutKernel final : public sdk::Kernel {
 public:
  explicit DropoutKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)),
        opset_(node.opset),
        attr_ratio_(node.get_float("ratio", 0.5)),
        attr_training_(node.opset < 7 && node.get_int("is_test", 0) == 0),
        has_seed_(node.has("seed")),
        seed_(uint64_t(node.get_int("seed", 0))) {
    // Alias only when inference is certain at creation.
    const sdk::ValueDesc* mode = node.input_present(2) ? &node.inputs[2] : nullptr;
    alias_ = !attr_training_ &&
             (!mode || (mode->constant && mode->constant->bytes.size() == 1 && mode->constant->bytes[0] == 0));
  }

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    double ratio = attr_ratio_;
    bool training = attr_training_;
    if (opset_ >= 12) {
      if (auto r = ctx.input(1)) {
        if (r->size() != 1 || !read_float(*r, &ratio))
          return util::fail(label_, "input 1 (ratio) must be a float scalar");
      }
      if (auto t = ctx.input(2)) {
        if (t->dtype != ONYX_DTYPE_BOOL || t->size() != 1)
          return util::fail(label_, "input 2 (training_mode) must be a bool scalar");
        training = *t->data<bool>();
      }
    }
    if (training && (ratio < 0 || ratio > 1))
      return util::fail(label_, "ratio %g is outside [0, 1]", ratio);
    bool want_mask = ctx.output_count() > 1;
    int32_t mask_type = opset_ < 10 ? x.dtype : ONYX_DTYPE_BOOL;
    if (!training || ratio == 0) {
      ONYX_SDK_RETURN_IF_ERROR(output_alias(ctx, 0, x, x.dims));
      if (want_mask) return fill_mask(ctx, x, mask_type, nullptr);
      return nullptr;
    }
    if (!util::in_set(x.dtype, util::kFloat | util::kHalf))
      return util::fail(label_, "training mode needs a floating-point input, got %s", sdk::dtype_name(x.dtype));
    std::vector<bool> keep(size_t(x.size()));
    std::mt19937_64 gen(has_seed_ ? seed_ : std::random_device{}());
    for (size_t i = 0; i < keep.size(); ++i) keep[i] = double(gen() >> 11) * 0x1.0p-53 >= ratio;
    double scale = 1.0 / (1.0 - ratio);
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, x.dims, &y));
    for (size_t i = 0; i < keep.size(); ++i) {
      if (x.dtype == ONYX_DTYPE_FLOAT32) y.data<float>()[i] = keep[i] ? float(x.data<float>()[i] * scale) : 0.f;
      else if (x.dtype == ONYX_DTYPE_FLOAT64) y.data<double>()[i] = keep[i] ? x.data<double>()[i] * scale : 0.0;
      else
        y.data<uint16_t>()[i] = util::half_bits(
            x.dtype, keep[i] ? float(util::half_value(x.dtype, x.data<uint16_t>()[i]) * scale) : 0.f);
    }
    return want_mask ? fill_mask(ctx, x, mask_type, &keep) : nullptr;
  }

  void output_memory(std::span<OnyxOutputMemoryInfo> out) const override {
    if (alias_) declare_alias(out);
  }

 private:
  static bool read_float(const sdk::Tensor& t, double* out) {
    if (util::is_half(t.dtype)) {
      *out = util::half_value(t.dtype, *t.data<uint16_t>());
      return true;
    }
    return util::in_set(t.dtype, util::kFloat) && util::read_scalar(t.dtype, t.raw, out);
  }

  // The mask: ones (true), or `keep`; in the input's type before opset 10.
  OnyxStatus* fill_mask(sdk::ComputeContext& ctx, const sdk::Tensor& x, int32_t dtype,
                        const std::vector<bool>* keep) {
    sdk::Tensor m;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(1, dtype, x.dims, &m));
    for (size_t i = 0; i < size_t(x.size()); ++i) {
      bool on = !keep || (*keep)[i];
      if (dtype == ONYX_DTYPE_BOOL) m.data<bool>()[i] = on;
      else if (dtype == ONYX_DTYPE_FLOAT32) m.data<float>()[i] = on ? 1.f : 0.f;
      else if (dtype == ONYX_DTYPE_FLOAT64) m.data<double>()[i] = on ? 1.0 : 0.0;
      else m.data<uint16_t>()[i] = util::half_bits(dtype, on ? 1.f : 0.f);
    }
    return nullptr;
  }

  std::string label_;
  int64_t opset_;
  double attr_ratio_;
  bool attr_training_, has_seed_;
  uint64_t seed_;
  bool alias_ = false;
};

// Shape (with start/end from opset 15) and Size: int64 outputs.
class ShapeKernel final : public sdk::Kernel {
 public:
  ShapeKernel(const sdk::NodeInfo& node, bool size)
      : size_(size), start_(node.get_int("start", 0)), end_(node.get_int("end", INT64_MAX)) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    sdk::Tensor y;
    if (size_) {
      ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_INT64, {}, &y));
      *y.data<int64_t>() = x.size();
      return nullptr;
    }
    int64_t rank = int64_t(x.rank());
    auto clamp = [&](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t(0), rank); };
    int64_t start = clamp(start_), end = std::max(start, clamp(end_));
    int64_t n = end - start;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_INT64, std::span<const int64_t>(&n, 1), &y));
    for (int64_t i = 0; i < n; ++i) y.data<int64_t>()[i] = x.dim(size_t(start + i));
    return nullptr;
  }

 private:
  bool size_;
  int64_t start_, end_;
};

}  // namespace

void register_reshape_kernels(sdk::KernelRegistry& registry) {
  using shape::kInt64;
  using shape::sized_input;
  registry.add(sdk::KernelDefBuilder("Reshape").inputs(1, 2).input_type(1, kInt64).check(sized_input(0)).create<ReshapeKernel>());
  registry.add(sdk::KernelDefBuilder("Flatten").inputs(1).check(sized_input(0)).create<FlattenKernel>());
  for (bool unsqueeze : {false, true})
    registry.add(sdk::KernelDefBuilder(unsqueeze ? "Unsqueeze" : "Squeeze")
                     .inputs(1, 2)
                     .input_type(1, kInt64)
                     .check(sized_input(0))
                     .create([unsqueeze](const sdk::NodeInfo& n) { return std::make_unique<SqueezeKernel>(n, unsqueeze); }));
  registry.add(sdk::KernelDefBuilder("Identity")
                   .inputs(1)
                   .check(sized_input(0))
                   .create([](const sdk::NodeInfo&) { return std::make_unique<IdentityKernel>(); }));
  registry.add(sdk::KernelDefBuilder("Dropout")
                   .inputs(1, 3)
                   .input_type(2, sdk::dtypes::kBool)  // training_mode
                   .check(sized_input(0))
                   .create<DropoutKernel>());
  for (bool size : {false, true})
    registry.add(sdk::KernelDefBuilder(size ? "Size" : "Shape")
                     .inputs(1)
                     .check(sized_input(0))
                     .create([size](const sdk::NodeInfo& n) { return std::make_unique<ShapeKernel>(n, size); }));
}

}  // namespace onyx::cpu
