// tensor_make.cpp: ops that create tensors: Constant, ConstantOfShape,
// Range, EyeLike, OneHot.
#include <cmath>

#include "kernels/registry.h"
#include "kernels/shape/shape_util.h"

namespace onyx::cpu {
namespace {

// Constant: the tensor is built at creation from whichever value* attribute
// the node has; compute copies it out.
class ConstantKernel final : public sdk::Kernel {
 public:
  explicit ConstantKernel(const sdk::NodeInfo& node) {
    if (const sdk::Attribute* a = node.attr("value"); a && a->tensor) {
      value_ = *a->tensor;
    } else if (node.has("value_float")) {
      set(ONYX_DTYPE_FLOAT32, {}, std::vector<float>{float(node.get_float("value_float", 0))});
    } else if (node.has("value_floats")) {
      std::vector<float> v = node.get_floats("value_floats");
      set(ONYX_DTYPE_FLOAT32, {int64_t(v.size())}, v);
    } else if (node.has("value_int")) {
      set(ONYX_DTYPE_INT64, {}, std::vector<int64_t>{node.get_int("value_int", 0)});
    } else {
      std::vector<int64_t> v = node.get_ints("value_ints");
      set(ONYX_DTYPE_INT64, {int64_t(v.size())}, v);
    }
  }

  // "" when the node's value is something this kernel can produce.
  static std::string check(const sdk::NodeInfo& node) {
    for (const char* name : {"value_string", "value_strings"})
      if (node.has(name)) return std::string("Constant: attribute ") + name + " (string tensors) is not supported";
    if (node.has("sparse_value")) return "Constant: attribute sparse_value (sparse tensors) is not supported";
    if (const sdk::Attribute* a = node.attr("value")) {
      if (!a->tensor) return "Constant: attribute value holds no tensor";
      size_t size = sdk::dtype_size(a->tensor->dtype);
      if (size == 0) return std::string("Constant: value of type ") + sdk::dtype_name(a->tensor->dtype) + " is not supported";
      return {};
    }
    for (const char* name : {"value_float", "value_floats", "value_int", "value_ints"})
      if (node.has(name)) return {};
    return "Constant: the node has no value attribute";
  }

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, value_.dtype, value_.dims, &y));
    if (!value_.bytes.empty()) std::memcpy(y.raw, value_.bytes.data(), value_.bytes.size());
    return nullptr;
  }

 private:
  template <typename T>
  void set(int32_t dtype, std::vector<int64_t> dims, const std::vector<T>& values) {
    value_.dtype = dtype;
    value_.dims = std::move(dims);
    size_t bytes = values.size() * sizeof(T);
    value_.bytes.resize(bytes);
    if (bytes) std::memcpy(value_.bytes.data(), values.data(), bytes);
  }

  sdk::ConstantTensor value_;
};

// ConstantOfShape: input 0 is the shape; attribute value (one element,
// default float32 0) fills it.
class ConstantOfShapeKernel final : public sdk::Kernel {
 public:
  explicit ConstantOfShapeKernel(const sdk::NodeInfo& node) : label_(util::node_label(node)) {
    if (const sdk::Attribute* a = node.attr("value"); a && a->tensor) {
      dtype_ = a->tensor->dtype;
      value_ = a->tensor->bytes;
    }
  }

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    std::vector<int64_t> dims;
    bool present = false;
    std::string why;
    if (!shape::read_int_input(ctx, 0, &dims, &present, &why)) return util::fail(label_, "%s", why.c_str());
    for (int64_t d : dims)
      if (d < 0) return util::fail(label_, "shape %s has a negative dim", util::dims_str(dims).c_str());
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, dtype_, dims, &y));
    size_t esize = value_.size();
    for (int64_t i = 0; i < y.size(); ++i) std::memcpy(static_cast<unsigned char*>(y.raw) + size_t(i) * esize, value_.data(), esize);
    return nullptr;
  }

 private:
  std::string label_;
  int32_t dtype_ = ONYX_DTYPE_FLOAT32;
  std::vector<unsigned char> value_ = std::vector<unsigned char>(4, 0);
};

// Range: max(ceil((limit - start) / delta), 0) elements start + i * delta.
class RangeKernel final : public sdk::Kernel {
 public:
  explicit RangeKernel(const sdk::NodeInfo& node) : label_(util::node_label(node)) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor start = ctx.in(0), limit = ctx.in(1), delta = ctx.in(2);
    for (const sdk::Tensor* t : {&start, &limit, &delta})
      if (t->size() != 1 || t->dtype != start.dtype)
        return util::fail(label_, "start, limit and delta must be scalars of one type");
    if (util::is_half(start.dtype)) return compute_half(ctx, start, limit, delta);
    OnyxStatus* status = nullptr;
    bool known = util::visit<util::kFloat | util::kSigned>(start.dtype, [&](auto tag) {
      using T = decltype(tag);
      T s = *start.data<T>(), l = *limit.data<T>(), d = *delta.data<T>();
      if (d == T(0)) {
        status = util::fail(label_, "delta is 0");
        return;
      }
      double n = std::ceil((double(l) - double(s)) / double(d));
      if (n > 0x1p48) {
        status = util::fail(label_, "start, limit and delta describe %g elements", n);
        return;
      }
      int64_t count = n > 0 ? int64_t(n) : 0;
      sdk::Tensor y;
      status = ctx.output(0, start.dtype, std::span<const int64_t>(&count, 1), &y);
      if (status) return;
      for (int64_t i = 0; i < count; ++i) y.data<T>()[i] = T(s + T(i) * d);
    });
    if (!known) return util::fail(label_, "type %s is not supported", sdk::dtype_name(start.dtype));
    return status;
  }

 private:
  // float16/bfloat16: computed in float32, each element rounded once.
  OnyxStatus* compute_half(sdk::ComputeContext& ctx, const sdk::Tensor& start, const sdk::Tensor& limit,
                           const sdk::Tensor& delta) {
    int32_t dtype = start.dtype;
    float s = util::half_value(dtype, *start.data<uint16_t>()), l = util::half_value(dtype, *limit.data<uint16_t>()),
          d = util::half_value(dtype, *delta.data<uint16_t>());
    if (d == 0) return util::fail(label_, "delta is 0");
    double n = std::ceil((double(l) - double(s)) / double(d));
    if (n > 0x1p48) return util::fail(label_, "start, limit and delta describe %g elements", n);
    int64_t count = n > 0 ? int64_t(n) : 0;
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, dtype, std::span<const int64_t>(&count, 1), &y));
    for (int64_t i = 0; i < count; ++i) y.data<uint16_t>()[i] = util::half_bits(dtype, s + float(i) * d);
    return nullptr;
  }

  std::string label_;
};

// The bytes of a 0 and a 1 of `dtype` (EyeLike).
void zero_one(int32_t dtype, unsigned char* zero, unsigned char* one) {
  std::memset(zero, 0, 16);
  std::memset(one, 0, 16);
  if (util::is_half(dtype)) {
    uint16_t bits = util::half_bits(dtype, 1.f);
    std::memcpy(one, &bits, 2);
    return;
  }
  util::visit<util::kNumeric | util::kBool>(dtype, [&](auto tag) {
    using T = decltype(tag);
    T v = T(1);
    std::memcpy(one, &v, sizeof v);
  });
}

// EyeLike: a 2-D tensor of input 0's shape with ones on diagonal k.
class EyeLikeKernel final : public sdk::Kernel {
 public:
  explicit EyeLikeKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)),
        dtype_(int32_t(node.get_int("dtype", node.input_dtype(0)))),
        k_(node.get_int("k", 0)) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    if (x.rank() != 2) return util::fail(label_, "input 0 must be 2-D, got shape %s", util::dims_str(x.dims).c_str());
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, dtype_, x.dims, &y));
    unsigned char zero[16], one[16];
    zero_one(dtype_, zero, one);
    size_t esize = sdk::dtype_size(dtype_);
    for (int64_t i = 0; i < x.dim(0); ++i)
      for (int64_t j = 0; j < x.dim(1); ++j)
        std::memcpy(static_cast<unsigned char*>(y.raw) + size_t(i * x.dim(1) + j) * esize, j - i == k_ ? one : zero, esize);
    return nullptr;
  }

 private:
  std::string label_;
  int32_t dtype_;
  int64_t k_;
};

// OneHot: depth inserted at `axis`; values = [off, on]; indices outside
// [-depth, depth) give a row of off values.
class OneHotKernel final : public sdk::Kernel {
 public:
  explicit OneHotKernel(const sdk::NodeInfo& node) : label_(util::node_label(node)), axis_(node.get_int("axis", -1)) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor idx = ctx.in(0), depth_t = ctx.in(1), values = ctx.in(2);
    double depth_value = 0;
    if (depth_t.size() != 1 || !read_number(depth_t, 0, &depth_value))
      return util::fail(label_, "input 1 (depth) must be a numeric scalar");
    int64_t depth = int64_t(depth_value);
    if (depth < 1) return util::fail(label_, "depth %lld must be positive", (long long)depth);
    if (values.size() != 2) return util::fail(label_, "input 2 (values) must hold 2 elements, got %lld", (long long)values.size());
    int64_t rank = int64_t(idx.rank()), axis = axis_ < 0 ? axis_ + rank + 1 : axis_;
    if (axis < 0 || axis > rank)
      return util::fail(label_, "axis %lld is out of range for output rank %lld", (long long)axis_, (long long)rank + 1);
    std::vector<int64_t> out_dims = idx.shape();
    out_dims.insert(out_dims.begin() + axis, depth);
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, values.dtype, out_dims, &y));
    int64_t inner = 1;
    for (int64_t d = axis; d < rank; ++d) inner *= idx.dim(size_t(d));
    int64_t outer = idx.size() / std::max<int64_t>(inner, 1);
    size_t esize = sdk::dtype_size(values.dtype);
    const unsigned char* off = static_cast<const unsigned char*>(values.raw);
    const unsigned char* on = off + esize;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        double v = 0;
        read_number(idx, o * inner + i, &v);
        int64_t hot = int64_t(v);
        if (hot < 0) hot += depth;
        for (int64_t d = 0; d < depth; ++d)
          std::memcpy(static_cast<unsigned char*>(y.raw) + size_t((o * depth + d) * inner + i) * esize,
                      d == hot ? on : off, esize);
      }
    return nullptr;
  }

 private:
  static bool read_number(const sdk::Tensor& t, int64_t k, double* out) {
    if (util::is_half(t.dtype)) {
      *out = util::half_value(t.dtype, t.data<uint16_t>()[k]);
      return true;
    }
    return util::read_scalar(t.dtype, static_cast<const unsigned char*>(t.raw) + size_t(k) * sdk::dtype_size(t.dtype), out);
  }

  std::string label_;
  int64_t axis_;
};

std::string check_constant_of_shape(const sdk::NodeInfo& node) {
  const sdk::Attribute* a = node.attr("value");
  if (a && (!a->tensor || a->tensor->size() != 1 || sdk::dtype_size(a->tensor->dtype) == 0))
    return "ConstantOfShape: attribute value must be a one-element tensor of a numeric or bool type";
  return {};
}
std::string check_eye_like(const sdk::NodeInfo& node) {
  int32_t dtype = int32_t(node.get_int("dtype", node.input_dtype(0)));
  return util::in_set(dtype, util::kNumeric | util::kBool | util::kHalf)
             ? std::string()
             : std::string("EyeLike: output type ") + sdk::dtype_name(dtype) + " is not supported";
}
}  // namespace

void register_tensor_make_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("Constant").inputs(0).check(ConstantKernel::check).create<ConstantKernel>());
  registry.add(sdk::KernelDefBuilder("ConstantOfShape")
                   .since(9)
                   .inputs(1)
                   .input_type(0, sdk::DTypeSet{ONYX_DTYPE_INT64})
                   .check(check_constant_of_shape)
                   .create<ConstantOfShapeKernel>());
  registry.add(sdk::KernelDefBuilder("Range")
                   .since(11)
                   .inputs(3)
                   .type_constraint("T", {0, 1, 2}, sdk::dtypes::kFloat | sdk::dtypes::kSigned | sdk::dtypes::kHalf)
                   .create<RangeKernel>());
  registry.add(sdk::KernelDefBuilder("EyeLike").since(9).inputs(1).check(check_eye_like).create<EyeLikeKernel>());
  registry.add(sdk::KernelDefBuilder("OneHot")
                   .since(9)
                   .inputs(3)
                   .input_types({0, 1}, sdk::dtypes::kNumeric | sdk::dtypes::kHalf)
                   .check([](const sdk::NodeInfo& node) { return shape::require_sized(node, {2}); })
                   .create<OneHotKernel>());
}

}  // namespace onyx::cpu
