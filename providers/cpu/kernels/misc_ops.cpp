// misc_ops.cpp: RMSNormalization, LpNormalization, Shrink, Swish, BitCast
// and Compress. The float ops compute in double for every float type
// (float16/bfloat16 included) through narrow::load/store.
#include <cinttypes>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/extra_ops.h"
#include "kernels/narrow_types.h"

namespace onyx::cpu {
namespace {

constexpr unsigned kFloats = util::kFloat | util::kHalf;

// Splits dims at `axis` into [outer, n, inner] sizes.
void split_at(std::span<const int64_t> dims, int64_t axis, int64_t* outer, int64_t* n, int64_t* inner) {
  *outer = *n = *inner = 1;
  for (int64_t d = 0; d < int64_t(dims.size()); ++d)
    (d < axis ? *outer : d == axis ? *n : *inner) *= dims[size_t(d)];
}

// RMSNormalization (opset 23): Y = X / sqrt(mean(X^2 over axes >= axis) +
// epsilon) * scale, scale broadcast against the normalized dims.
class RmsNormKernel final : public sdk::Kernel {
 public:
  explicit RmsNormKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)), axis_(node.get_int("axis", -1)), epsilon_(node.get_float("epsilon", 1e-5)) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), scale = ctx.in(1);
    int64_t rank = int64_t(x.rank()), axis = 0;
    if (!util::normalize_axis(axis_, rank, &axis))
      return util::fail(label_, "axis %" PRId64 " is out of range for rank %" PRId64, axis_, rank);
    int64_t outer = 1, block = 1;
    for (int64_t d = 0; d < rank; ++d) (d < axis ? outer : block) *= x.dim(size_t(d));
    // Scale's index for each position of a normalized block (numpy broadcast
    // of scale's dims against the trailing dims of X).
    if (scale.rank() > size_t(rank - axis))
      return util::fail(label_, "scale %s has more dims than the normalized part of X %s", util::dims_str(scale.dims).c_str(),
                        util::dims_str(x.dims).c_str());
    std::vector<int64_t> scale_index(static_cast<size_t>(block));
    for (int64_t e = 0; e < block; ++e) {
      int64_t rest = e, index = 0, stride = 1;
      for (int64_t d = rank - 1, s = int64_t(scale.rank()) - 1; d >= axis; --d, --s) {
        int64_t pos = rest % x.dim(size_t(d));
        rest /= x.dim(size_t(d));
        if (s < 0) continue;
        int64_t size = scale.dim(size_t(s));
        if (size != 1 && size != x.dim(size_t(d)))
          return util::fail(label_, "scale %s does not broadcast to X %s", util::dims_str(scale.dims).c_str(),
                            util::dims_str(x.dims).c_str());
        index += (size == 1 ? 0 : pos) * stride;
        stride *= size;
      }
      scale_index[size_t(e)] = index;
    }
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, x.dims, &y));
    for (int64_t o = 0; o < outer; ++o) {
      double sum = 0;
      for (int64_t e = 0; e < block; ++e) {
        double v = narrow::load(x.dtype, x.raw, o * block + e);
        sum += v * v;
      }
      double inv = 1.0 / std::sqrt(sum / double(block) + epsilon_);
      for (int64_t e = 0; e < block; ++e) {
        double v = narrow::load(x.dtype, x.raw, o * block + e) * inv;
        narrow::store(y.dtype, y.raw, o * block + e, v * narrow::load(scale.dtype, scale.raw, scale_index[size_t(e)]), true);
      }
    }
    return nullptr;
  }

 private:
  std::string label_;
  int64_t axis_;
  double epsilon_;
};

// LpNormalization: x / ||x||_p along `axis` (p is 1 or 2); 0 where the norm is 0.
class LpNormKernel final : public sdk::Kernel {
 public:
  explicit LpNormKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)), axis_(node.get_int("axis", -1)), p_(node.get_int("p", 2)) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    int64_t axis = 0, outer, n, inner;
    if (!util::normalize_axis(axis_, int64_t(x.rank()), &axis))
      return util::fail(label_, "axis %" PRId64 " is out of range for rank %zu", axis_, x.rank());
    if (p_ != 1 && p_ != 2) return util::fail(label_, "p must be 1 or 2, got %" PRId64, p_);
    split_at(x.dims, axis, &outer, &n, &inner);
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, x.dims, &y));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        double norm = 0;
        for (int64_t k = 0; k < n; ++k) {
          double v = narrow::load(x.dtype, x.raw, (o * n + k) * inner + i);
          norm += p_ == 1 ? std::fabs(v) : v * v;
        }
        if (p_ == 2) norm = std::sqrt(norm);
        for (int64_t k = 0; k < n; ++k) {
          int64_t at = (o * n + k) * inner + i;
          narrow::store(y.dtype, y.raw, at, norm == 0 ? 0.0 : narrow::load(x.dtype, x.raw, at) / norm, true);
        }
      }
    return nullptr;
  }

 private:
  std::string label_;
  int64_t axis_, p_;
};

// Element-wise maps computed in double: Shrink and Swish.
class MapKernel final : public sdk::Kernel {
 public:
  using Fn = double (*)(double, double, double);
  MapKernel(Fn fn, double a, double b) : fn_(fn), a_(a), b_(b) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, x.dims, &y));
    for (int64_t i = 0; i < x.size(); ++i)
      narrow::store(y.dtype, y.raw, i, fn_(narrow::load(x.dtype, x.raw, i), a_, b_), true);
    return nullptr;
  }
  void output_memory(std::span<OnyxOutputMemoryInfo> out) const override {
    if (out.empty()) return;
    out[0].kind = ONYX_OUTPUT_MAY_OVERWRITE_INPUT;
    out[0].input_index = 0;
  }

 private:
  Fn fn_;
  double a_, b_;
};

double shrink(double x, double lambd, double bias) { return x < -lambd ? x + bias : x > lambd ? x - bias : 0.0; }
double swish(double x, double alpha, double) { return x / (1.0 + std::exp(-alpha * x)); }

// BitCast: the same bytes seen as another type of the same element size.
class BitCastKernel final : public sdk::Kernel {
 public:
  explicit BitCastKernel(int32_t to) : to_(to) {}
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, to_, x.dims, &y));
    size_t bytes = size_t(x.size()) * sdk::dtype_size(x.dtype);
    if (y.raw != x.raw && bytes) std::memcpy(y.raw, x.raw, bytes);
    return nullptr;
  }
  void output_memory(std::span<OnyxOutputMemoryInfo> out) const override {
    if (out.empty()) return;
    out[0].kind = ONYX_OUTPUT_MAY_OVERWRITE_INPUT;
    out[0].input_index = 0;
  }

 private:
  int32_t to_;
};

// Compress: the slices along `axis` (or of the flattened input) where the
// bool condition is true; a condition shorter than the axis drops the rest.
class CompressKernel final : public sdk::Kernel {
 public:
  explicit CompressKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)), has_axis_(node.has("axis")), axis_(node.get_int("axis", 0)) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), cond = ctx.in(1);
    int64_t outer = 1, n = x.size(), inner = 1, axis = 0;
    if (has_axis_) {
      if (!util::normalize_axis(axis_, int64_t(x.rank()), &axis))
        return util::fail(label_, "axis %" PRId64 " is out of range for rank %zu", axis_, x.rank());
      split_at(x.dims, axis, &outer, &n, &inner);
    }
    if (cond.size() > n)
      return util::fail(label_, "condition has %" PRId64 " elements; the axis has only %" PRId64, cond.size(), n);
    std::vector<int64_t> kept;
    for (int64_t k = 0; k < cond.size(); ++k)
      if (cond.data<bool>()[k]) kept.push_back(k);
    std::vector<int64_t> dims;
    if (has_axis_) {
      dims.assign(x.dims.begin(), x.dims.end());
      dims[size_t(axis)] = int64_t(kept.size());
    } else {
      dims = {int64_t(kept.size())};
    }
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, dims, &y));
    size_t esize = sdk::dtype_size(x.dtype), row = size_t(inner) * esize;
    auto* out = static_cast<unsigned char*>(y.raw);
    const auto* in = static_cast<const unsigned char*>(x.raw);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k : kept) {
        std::memcpy(out, in + size_t(o * n + k) * row, row);
        out += row;
      }
    return nullptr;
  }

 private:
  std::string label_;
  bool has_axis_;
  int64_t axis_;
};

sdk::KernelDef def_of(const char* op, int64_t since, std::function<std::string(const sdk::NodeInfo&)> supports,
                      std::function<std::unique_ptr<sdk::Kernel>(const sdk::NodeInfo&)> create) {
  sdk::KernelDef def;
  def.op_type = op;
  def.since_version = since;
  def.supports = std::move(supports);
  def.create = std::move(create);
  return def;
}

std::string floats_only(const sdk::NodeInfo& node, size_t min_inputs, size_t max_inputs) {
  std::string why = util::require_inputs(node, min_inputs, max_inputs);
  return why.empty() ? util::require_types(node, kFloats) : why;
}

}  // namespace

void register_misc_ops_kernels(sdk::KernelRegistry& registry) {
  registry.add(def_of(
      "RMSNormalization", 23, [](const sdk::NodeInfo& n) { return floats_only(n, 2, 2); },
      [](const sdk::NodeInfo& n) { return std::make_unique<RmsNormKernel>(n); }));
  registry.add(def_of(
      "LpNormalization", 1, [](const sdk::NodeInfo& n) { return floats_only(n, 1, 1); },
      [](const sdk::NodeInfo& n) { return std::make_unique<LpNormKernel>(n); }));
  registry.add(def_of(
      "Shrink", 9,
      [](const sdk::NodeInfo& n) {
        std::string why = util::require_inputs(n, 1, 1);
        return why.empty() ? util::require_types(n, kFloats | util::kInt) : why;
      },
      [](const sdk::NodeInfo& n) {
        return std::make_unique<MapKernel>(&shrink, n.get_float("lambd", 0.5), n.get_float("bias", 0.0));
      }));
  registry.add(def_of(
      "Swish", 24, [](const sdk::NodeInfo& n) { return floats_only(n, 1, 1); },
      [](const sdk::NodeInfo& n) { return std::make_unique<MapKernel>(&swish, n.get_float("alpha", 1.0), 0.0); }));
  registry.add(def_of(
      "BitCast", 26,
      [](const sdk::NodeInfo& n) {
        std::string why = util::require_inputs(n, 1, 1);
        int32_t to = int32_t(n.get_int("to", 0));
        size_t from_size = sdk::dtype_size(n.input_dtype(0)), to_size = sdk::dtype_size(to);
        if (why.empty() && (!from_size || from_size != to_size))
          why = std::string("BitCast from ") + sdk::dtype_name(n.input_dtype(0)) + " to " + sdk::dtype_name(to) +
                ": both types need the same whole-byte element size";
        return why;
      },
      [](const sdk::NodeInfo& n) { return std::make_unique<BitCastKernel>(int32_t(n.get_int("to", 0))); }));
  registry.add(def_of(
      "Compress", 9,
      [](const sdk::NodeInfo& n) {
        std::string why = util::require_inputs(n, 2, 2);
        if (why.empty() && !sdk::dtype_size(n.input_dtype(0)))
          why = std::string("Compress of ") + sdk::dtype_name(n.input_dtype(0)) + " is not implemented";
        if (why.empty() && n.input_dtype(1) != ONYX_DTYPE_BOOL) why = "condition (input 1) must be bool";
        return why;
      },
      [](const sdk::NodeInfo& n) { return std::make_unique<CompressKernel>(n); }));
}

}  // namespace onyx::cpu
