// quantize.cpp: QuantizeLinear and DequantizeLinear (opsets 10-24) for
// 8/16-bit integers, 4-bit and 2-bit integers, float8 and float4, with per-tensor,
// per-axis and blocked (block_size) scales, and DynamicQuantizeLinear.
//
//   QuantizeLinear:   y = saturate(round_half_even(x / scale) + zero_point)
//                     (float8/float4: y = cast(x / scale), saturating by
//                     the `saturate` attribute)
//   DequantizeLinear: y = (x - zero_point) * scale
// Computed in double, except x / scale, in x's precision (as the reference).
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <vector>

#include "gemm/qgemm.h"
#include "kernels/quantize/dynamic_quantize.h"
#include "kernels/kernel_util.h"
#include "kernels/narrow_types.h"
#include "kernels/nn_util.h"
#include "kernels/quantize/qlinear_common.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

bool is_float_code(int32_t dtype) {
  return dtype == ONYX_DTYPE_FLOAT8E4M3FN || dtype == ONYX_DTYPE_FLOAT8E4M3FNUZ || dtype == ONYX_DTYPE_FLOAT8E5M2 ||
         dtype == ONYX_DTYPE_FLOAT8E5M2FNUZ || dtype == ONYX_DTYPE_FLOAT4E2M1;
}

// The range of an integer quantized type.
bool int_range(int32_t dtype, double* lo, double* hi) {
  switch (dtype) {
    case ONYX_DTYPE_INT8: *lo = -128, *hi = 127; return true;
    case ONYX_DTYPE_UINT8: *lo = 0, *hi = 255; return true;
    case ONYX_DTYPE_INT16: *lo = -32768, *hi = 32767; return true;
    case ONYX_DTYPE_UINT16: *lo = 0, *hi = 65535; return true;
    case ONYX_DTYPE_INT32: *lo = -2147483648.0, *hi = 2147483647.0; return true;
    case ONYX_DTYPE_INT4: *lo = -8, *hi = 7; return true;
    case ONYX_DTYPE_UINT4: *lo = 0, *hi = 15; return true;
    case ONYX_DTYPE_INT2: *lo = -2, *hi = 1; return true;
    case ONYX_DTYPE_UINT2: *lo = 0, *hi = 3; return true;
    default: return false;
  }
}

// Maps each element of x to its scale/zero-point index: per tensor (scale
// has one element), per axis (1-D scale along `axis`) or blocked (scale of
// x's rank with ceil(dim / block) along `axis`).
class ParamIndex {
 public:
  std::string init(std::span<const int64_t> x, std::span<const int64_t> scale, int64_t axis_attr, int64_t block) {
    int64_t count = 1;
    for (int64_t d : scale) count *= d;
    if (count == 1 && block == 0) return {};  // per tensor
    int64_t rank = int64_t(x.size());
    if (!util::normalize_axis(axis_attr, rank, &axis_))
      return "axis " + std::to_string(axis_attr) + " is out of range for an input of rank " + std::to_string(rank);
    per_tensor_ = false;
    outer_ = inner_ = 1;
    for (int64_t d = 0; d < rank; ++d) (d < axis_ ? outer_ : d > axis_ ? inner_ : n_) *= x[size_t(d)];
    if (block == 0) {
      if (scale.size() != 1 || scale[0] != n_) return "a per-axis scale needs one value per element of the axis";
      return {};
    }
    block_ = block;
    if (int64_t(scale.size()) != rank) return "a blocked scale must have the input's rank";
    for (int64_t d = 0; d < rank; ++d) {
      int64_t want = d == axis_ ? (x[size_t(d)] + block - 1) / block : x[size_t(d)];
      if (scale[size_t(d)] != want) return "the blocked scale's shape does not match the input and block_size";
    }
    blocks_ = (n_ + block - 1) / block;
    return {};
  }
  int64_t operator()(int64_t i) const {
    if (per_tensor_) return 0;
    int64_t in = i % inner_, k = (i / inner_) % n_, o = i / (inner_ * n_);
    if (!block_) return k;
    return (o * blocks_ + k / block_) * inner_ + in;
  }

 private:
  bool per_tensor_ = true;
  int64_t axis_ = 0, outer_ = 1, n_ = 1, inner_ = 1, block_ = 0, blocks_ = 1;
};

// y = saturate(round_half_even(x / s) + z) for float32 x and a per-tensor
// scale: x / s in float32 as the spec computes it, rounded by adding and
// subtracting 1.5 * 2^23 (exact ties to even for |v| < 2^22, which the clamp
// guarantees) so that the loop vectorizes instead of calling nearbyintf per
// element. NaN becomes lo.
template <typename T>
void quantize_floats(const float* x, int64_t n, float s, float z, float lo, float hi, T* y) {
  constexpr float kMagic = 12582912.0f;
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i] / s;
    v = v > -1.0e6f ? (v < 1.0e6f ? v : 1.0e6f) : -1.0e6f;
    v = (v + kMagic) - kMagic + z;
    y[i] = T(v < lo ? lo : v > hi ? hi : v);
  }
}

// y = (x - z) * s for 8-bit x into float32: x - z is exact in float32 and the
// product of two floats rounds once either way, so this equals the float64
// formula rounded to float32.
template <typename T>
void dequantize_to_floats(const T* x, int64_t n, float s, float z, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = (float(x[i]) - z) * s;
}

class QuantizeKernel final : public sdk::Kernel {
 public:
  QuantizeKernel(const sdk::NodeInfo& node, bool quantize)
      : label_(util::node_label(node)),
        quantize_(quantize),
        axis_(node.get_int("axis", 1)),
        block_(node.get_int("block_size", 0)),
        saturate_(node.get_int("saturate", 1) != 0),
        output_dtype_(int32_t(node.get_int("output_dtype", 0))) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), scale = ctx.in(1);
    std::optional<sdk::Tensor> zp = ctx.input(2);
    if (std::string e = check_params(x, scale, zp); !e.empty()) return util::fail(label_, "%s", e.c_str());
    ParamIndex index;
    if (std::string e = index.init(x.dims, scale.dims, axis_, block_); !e.empty())
      return util::fail(label_, "%s (input %s, scale %s)", e.c_str(), util::dims_str(x.dims).c_str(),
                        util::dims_str(scale.dims).c_str());
    int32_t out_type = output_dtype_ ? output_dtype_
                       : quantize_   ? (zp ? zp->dtype : ONYX_DTYPE_UINT8)
                                     : scale.dtype;
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, out_type, x.dims, &y));
    if (!sdk::dtype_size(out_type)) std::memset(y.raw, 0, onyx_dtype_storage_bytes(out_type, y.size()));  // packed padding
    double lo = 0, hi = 0;
    if (quantize_ && !is_float_code(out_type) && !int_range(out_type, &lo, &hi))
      return util::fail(label_, "cannot quantize to %s", sdk::dtype_name(out_type));
    if (fast_path(ctx, x, scale, zp, out_type, lo, hi, y)) return nullptr;
    for (int64_t i = 0; i < x.size(); ++i) {
      int64_t p = index(i);
      double s = narrow::load(scale.dtype, scale.raw, p), z = zp ? narrow::load(zp->dtype, zp->raw, p) : 0.0;
      double v = narrow::load(x.dtype, x.raw, i);
      if (!quantize_) {
        narrow::store(out_type, y.raw, i, (v - z) * s, true);
      } else {
        // x / scale in x's own precision (float32 unless float64), as ONNX's
        // reference divides: rounding then sees the same quotient.
        double q = x.dtype == ONYX_DTYPE_FLOAT64 ? v / s : double(float(v) / float(s));
        if (is_float_code(out_type)) narrow::store(out_type, y.raw, i, q + z, saturate_);
        else narrow::store(out_type, y.raw, i, std::clamp(std::nearbyint(q) + z, lo, hi), true);
      }
    }
    return nullptr;
  }

 private:
  // Per-tensor float32 <-> 8-bit, the form of every activation in a
  // quantized network: vectorized loops with the general path's results.
  bool fast_path(sdk::ComputeContext& ctx, const sdk::Tensor& x, const sdk::Tensor& scale, const std::optional<sdk::Tensor>& zp, int32_t out_type,
                 double lo, double hi, const sdk::Tensor& y) const {
    if (scale.size() != 1 || block_ != 0 || scale.dtype != ONYX_DTYPE_FLOAT32) return false;
    const float s = scale.data<float>()[0];
    const float z = zp ? float(narrow::load(zp->dtype, zp->raw, 0)) : 0.0f;
    if (quantize_ && x.dtype == ONYX_DTYPE_FLOAT32 && out_type == ONYX_DTYPE_UINT8)  // the same steps, vectorized
      ctx.parallel_for(size_t(x.size()), size_t(1) << 15, [&](size_t i0, size_t i1) {
        quantize_to_u8(x.data<float>() + i0, int64_t(i1 - i0), s, z, y.data<uint8_t>() + i0);
      });
    else if (quantize_ && x.dtype == ONYX_DTYPE_FLOAT32 && out_type == ONYX_DTYPE_INT8)
      quantize_floats(x.data<float>(), x.size(), s, z, float(lo), float(hi), y.data<int8_t>());
    else if (!quantize_ && out_type == ONYX_DTYPE_FLOAT32 && x.dtype == ONYX_DTYPE_UINT8)
      dequantize_to_floats(x.data<uint8_t>(), x.size(), s, z, y.data<float>());
    else if (!quantize_ && out_type == ONYX_DTYPE_FLOAT32 && x.dtype == ONYX_DTYPE_INT8)
      dequantize_to_floats(x.data<int8_t>(), x.size(), s, z, y.data<float>());
    else
      return false;
    return true;
  }

  // The scale and zero point on their own and against each other: "" or
  // the problem, in the schema's names.
  std::string check_params(const sdk::Tensor& x, const sdk::Tensor& scale, const std::optional<sdk::Tensor>& zp) const {
    const char* scale_name = quantize_ ? "y_scale" : "x_scale";
    const char* zero_name = quantize_ ? "y_zero_point" : "x_zero_point";
    if (std::string e = quant::scale_problem(scale, scale_name); !e.empty()) return e;
    if (!zp) return {};
    // Shapes agree when equal, or when both hold one value ([] and [1]).
    if (!(zp->size() == 1 && scale.size() == 1) &&
        !std::equal(zp->dims.begin(), zp->dims.end(), scale.dims.begin(), scale.dims.end()))
      return std::string(zero_name) + " has shape " + util::dims_str(zp->dims) + " but " + scale_name +
             " has shape " + util::dims_str(scale.dims) + "; they must match";
    // The zero point's type is the quantized type: x's for DequantizeLinear,
    // output_dtype's (when set) for QuantizeLinear.
    const int32_t want = quantize_ ? output_dtype_ : x.dtype;
    if (want && zp->dtype != want)
      return std::string(zero_name) + " has type " + sdk::dtype_name(zp->dtype) + " but " +
             (quantize_ ? "output_dtype is " : "x has type ") + sdk::dtype_name(want) +
             "; the zero point must have the quantized type";
    return {};
  }

  std::string label_;
  bool quantize_;
  int64_t axis_, block_;
  bool saturate_;
  int32_t output_dtype_;
};

// The scale is a float32 value; the zero point is computed from it.
DynamicQuantization quantization_of(float lo, float hi) {
  const float s = float((double(hi) - double(lo)) / 255.0);
  const double z = s == 0 ? 0.0 : std::clamp(std::nearbyint(-double(lo) / double(s)), 0.0, 255.0);
  return {s, uint8_t(z)};
}

// DynamicQuantizeLinear: uint8 y, its scale and zero point from x's range
// (extended to include 0): scale = (max - min) / 255, zp = round(-min / scale).
class DynamicQuantizeKernel final : public sdk::Kernel {
 public:
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), y, scale, zp;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_UINT8, x.dims, &y));
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(1, ONYX_DTYPE_FLOAT32, {}, &scale));
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(2, ONYX_DTYPE_UINT8, {}, &zp));
    uint8_t* out = y.data<uint8_t>();
    DynamicQuantization q;
    if (x.dtype == ONYX_DTYPE_FLOAT32) {
      q = dynamic_quantize(x.data<float>(), x.size(), out, nn::host_parallel_for(ctx));
    } else {
      float lo = 0, hi = 0;
      for (int64_t i = 0; i < x.size(); ++i) {
        const auto v = float(narrow::load(x.dtype, x.raw, i));
        lo = v < lo ? v : lo, hi = v > hi ? v : hi;
      }
      q = quantization_of(lo, hi);
      for (int64_t i = 0; i < x.size(); ++i) {
        const float v = float(narrow::load(x.dtype, x.raw, i));
        if (q.scale == 0) out[i] = q.zero;
        else quantize_floats(&v, 1, q.scale, float(q.zero), 0.0f, 255.0f, out + i);
      }
    }
    scale.data<float>()[0] = q.scale;
    zp.data<uint8_t>()[0] = q.zero;
    return nullptr;
  }
};

}  // namespace

DynamicQuantization dynamic_quantize(const float* x, int64_t n, uint8_t* y, const ParallelFor& parallel) {
  // Chunks of at least 64K elements, one range per chunk, then combined.
  constexpr int64_t kChunk = 1 << 16;
  const int64_t chunks = parallel.run && parallel.threads > 1 ? std::max<int64_t>(1, n / kChunk) : 1;
  auto each_chunk = [&](const std::function<void(int64_t, int64_t, int64_t)>& fn) {
    auto body = [&](size_t c0, size_t c1) {
      for (auto c = int64_t(c0); c < int64_t(c1); ++c) fn(c, c * n / chunks, (c + 1) * n / chunks);
    };
    if (chunks > 1)
      parallel.run(size_t(chunks), body);
    else
      body(0, 1);
  };
  // The range widened to include 0 (NaN elements are skipped).
  std::vector<float> lo(size_t(chunks), 0.0f), hi(size_t(chunks), 0.0f);
  each_chunk([&](int64_t c, int64_t i0, int64_t i1) { float_range(x + i0, i1 - i0, &lo[size_t(c)], &hi[size_t(c)]); });
  const DynamicQuantization q =
      quantization_of(*std::min_element(lo.begin(), lo.end()), *std::max_element(hi.begin(), hi.end()));
  each_chunk([&](int64_t, int64_t i0, int64_t i1) {
    if (q.scale == 0)
      std::fill(y + i0, y + i1, q.zero);
    else
      quantize_to_u8(x + i0, i1 - i0, q.scale, float(q.zero), y + i0);
  });
  return q;
}

void register_quantize_kernels(sdk::KernelRegistry& registry) {
  constexpr sdk::DTypeSet kFloats = sdk::dtypes::kFloat | sdk::dtypes::kHalf;
  for (bool quantize : {true, false}) {
    sdk::KernelDefBuilder def(quantize ? "QuantizeLinear" : "DequantizeLinear");
    def.since(10).inputs(2, 3).input_type(1, kFloats);
    if (quantize) def.input_type(0, kFloats);
    def.check([quantize](const sdk::NodeInfo& node) {
      for (size_t k : {size_t(0), size_t(2)}) {  // the quantized tensors
        if ((quantize && k == 0) || !node.input_present(k)) continue;
        int32_t t = node.input_dtype(k);
        double lo, hi;
        if (!int_range(t, &lo, &hi) && !is_float_code(t))
          return std::string("input ") + std::to_string(k) + " has type " + sdk::dtype_name(t) +
                 ", which is not a quantized type";
      }
      return std::string();
    });
    registry.add(def.create([quantize](const sdk::NodeInfo& node) { return std::make_unique<QuantizeKernel>(node, quantize); }));
  }
  registry.add(sdk::KernelDefBuilder("DynamicQuantizeLinear")
                   .since(11)
                   .input_type(0, kFloats)
                   .create([](const sdk::NodeInfo&) { return std::make_unique<DynamicQuantizeKernel>(); }));
}

}  // namespace onyx::cpu
