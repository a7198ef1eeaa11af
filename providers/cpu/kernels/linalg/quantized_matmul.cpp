// quantized_matmul.cpp: MatMulInteger and QLinearMatMul: uint8/int8
// products accumulated in int32, QLinearMatMul's requantized to its output
// zero point and scale.
#include <algorithm>
#include <cmath>
#include <optional>

#include "kernels/linalg/matmul_shape.h"
#include "kernels/nn_util.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

using linalg::matmul_shape;
using linalg::MatMulShape;

// ---------------------------------------------------------------------------
// MatMulInteger and QLinearMatMul: (a - a_zero) x (b - b_zero) in int32.
// Zero points and scales are per tensor (one element), per row of A ([M])
// or per column of B ([N]).
// ---------------------------------------------------------------------------

// A per-tensor / per-row / per-column parameter: `count` entries, or one.
struct Vec {
  std::vector<double> values;
  double at(int64_t i) const { return values.size() == 1 ? values[0] : values[size_t(i)]; }
};

double int_element(const sdk::Tensor& t, int64_t i) {
  switch (t.dtype) {
    case ONYX_DTYPE_UINT8:
      return t.data<uint8_t>()[i];
    case ONYX_DTYPE_INT8:
      return t.data<int8_t>()[i];
    case ONYX_DTYPE_INT32:
      return t.data<int32_t>()[i];
    case ONYX_DTYPE_FLOAT16:
    case ONYX_DTYPE_BFLOAT16:
      return util::half_value(t.dtype, t.data<uint16_t>()[i]);
    default:
      return t.data<float>()[i];  // scales: float32 or 16-bit floats (checked in supports)
  }
}

// Reads optional input `k` (absent: `fallback`); `count` is M or N.
OnyxStatus* read_vec(const std::string& label, sdk::ComputeContext& ctx, size_t k, int64_t count,
                     const char* what, double fallback, Vec* out) {
  std::optional<sdk::Tensor> t = ctx.input(k);
  if (!t) {
    out->values = {fallback};
    return nullptr;
  }
  if (t->size() != 1 && t->size() != count)
    return nn::fail(label, "input %zu (%s) has shape %s; expected 1 or %lld elements", k, what,
                    nn::dims_str(t->dims).c_str(), (long long)count);
  out->values.resize(size_t(t->size()));
  for (int64_t i = 0; i < t->size(); ++i) out->values[size_t(i)] = int_element(*t, i);
  return nullptr;
}

template <typename TA, typename TB>
void int_gemm(const TA* a, const TB* b, int32_t* acc, const MatMulShape& s, const Vec& za,
              const Vec& zb, int64_t t) {
  a += s.a_index[size_t(t)] * s.m * s.k;
  b += s.b_index[size_t(t)] * s.k * s.n;
  std::vector<int32_t> bz(static_cast<size_t>(s.n));
  for (int64_t j = 0; j < s.n; ++j) bz[size_t(j)] = int32_t(zb.at(j));
  // Each product fits in int32 (|(a - za)(b - zb)| <= 255^2); the sum wraps
  // modulo 2^32 like an int32 accumulator, without signed overflow.
  std::vector<uint32_t> row(static_cast<size_t>(s.n));
  for (int64_t i = 0; i < s.m; ++i) {
    std::fill(row.begin(), row.end(), 0u);
    int32_t az = int32_t(za.at(i));
    for (int64_t p = 0; p < s.k; ++p) {
      int32_t av = int32_t(a[i * s.k + p]) - az;
      const TB* bp = b + p * s.n;
      for (int64_t j = 0; j < s.n; ++j)
        row[size_t(j)] += uint32_t(av * (int32_t(bp[j]) - bz[size_t(j)]));
    }
    for (int64_t j = 0; j < s.n; ++j) acc[i * s.n + j] = int32_t(row[size_t(j)]);
  }
}

class QuantMatMulKernel final : public sdk::Kernel {
 public:
  QuantMatMulKernel(const sdk::NodeInfo& node, bool qlinear)
      : label_(nn::node_label(node)), qlinear_(qlinear) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    // MatMulInteger: A, B, a_zero, b_zero. QLinearMatMul: a, a_scale,
    // a_zero, b, b_scale, b_zero, y_scale, y_zero.
    const size_t ib = qlinear_ ? 3 : 1, izb = qlinear_ ? 5 : 3, iza = 2;
    sdk::Tensor a = ctx.in(0), b = ctx.in(ib), y;
    MatMulShape s;
    if (std::string e = matmul_shape(a.dims, b.dims, &s); !e.empty())
      return nn::fail(label_, "%s", e.c_str());
    Vec za, zb, sa, sb, sy, zy;
    ONYX_SDK_RETURN_IF_ERROR(read_vec(label_, ctx, iza, s.m, "a_zero_point", 0, &za));
    ONYX_SDK_RETURN_IF_ERROR(read_vec(label_, ctx, izb, s.n, "b_zero_point", 0, &zb));
    int32_t y_type = ONYX_DTYPE_INT32;
    if (qlinear_) {
      ONYX_SDK_RETURN_IF_ERROR(read_vec(label_, ctx, 1, s.m, "a_scale", 1, &sa));
      ONYX_SDK_RETURN_IF_ERROR(read_vec(label_, ctx, 4, s.n, "b_scale", 1, &sb));
      ONYX_SDK_RETURN_IF_ERROR(read_vec(label_, ctx, 6, s.m, "y_scale", 1, &sy));
      ONYX_SDK_RETURN_IF_ERROR(read_vec(label_, ctx, 7, s.m, "y_zero_point", 0, &zy));
      std::optional<sdk::Tensor> yz = ctx.input(7);
      y_type = yz ? yz->dtype : ONYX_DTYPE_UINT8;
    }
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, y_type, s.y_dims, &y));
    if (y.size() == 0) return nullptr;
    ctx.parallel_for(size_t(s.batch()), nn::grain_for(double(s.m * s.n * s.k), 1 << 18),
                     [&](size_t lo, size_t hi) {
                       std::vector<int32_t> acc(qlinear_ ? size_t(s.m * s.n) : 0);
                       for (size_t t = lo; t < hi; ++t) {
                         int32_t* out =
                             qlinear_ ? acc.data() : y.data<int32_t>() + int64_t(t) * s.m * s.n;
                         run_int(a, b, out, s, za, zb, int64_t(t));
                         if (qlinear_) requantize(acc.data(), y, s, sa, sb, sy, zy, int64_t(t));
                       }
                     });
    return nullptr;
  }

 private:
  static void run_int(const sdk::Tensor& a, const sdk::Tensor& b, int32_t* acc,
                      const MatMulShape& s, const Vec& za, const Vec& zb, int64_t t) {
    bool a8 = a.dtype == ONYX_DTYPE_INT8, b8 = b.dtype == ONYX_DTYPE_INT8;
    if (a8 && b8)
      int_gemm(a.data<int8_t>(), b.data<int8_t>(), acc, s, za, zb, t);
    else if (a8)
      int_gemm(a.data<int8_t>(), b.data<uint8_t>(), acc, s, za, zb, t);
    else if (b8)
      int_gemm(a.data<uint8_t>(), b.data<int8_t>(), acc, s, za, zb, t);
    else
      int_gemm(a.data<uint8_t>(), b.data<uint8_t>(), acc, s, za, zb, t);
  }

  // y = saturate(round_half_even(acc * a_scale * b_scale / y_scale) + y_zero).
  static void requantize(const int32_t* acc, const sdk::Tensor& y, const MatMulShape& s,
                         const Vec& sa, const Vec& sb, const Vec& sy, const Vec& zy, int64_t t) {
    bool i8 = y.dtype == ONYX_DTYPE_INT8;
    double lo = i8 ? -128 : 0, hi = i8 ? 127 : 255;
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) {
        double real = double(acc[i * s.n + j]) * sa.at(i) * sb.at(j) / sy.at(i);
        double q = std::clamp(std::nearbyint(real) + zy.at(i), lo, hi);
        int64_t at = (t * s.m + i) * s.n + j;
        if (i8)
          y.data<int8_t>()[at] = int8_t(q);
        else
          y.data<uint8_t>()[at] = uint8_t(q);
      }
  }

  std::string label_;
  bool qlinear_;
};

}  // namespace

void register_quantized_matmul_kernels(sdk::KernelRegistry& registry) {
  // The types of the quantized tensors and zero points.
  constexpr sdk::DTypeSet k8Bit{ONYX_DTYPE_UINT8, ONYX_DTYPE_INT8};
  registry.add(sdk::KernelDefBuilder("MatMulInteger")
                   .input_types({0, 1, 2, 3}, k8Bit)
                   .create([](const sdk::NodeInfo& node) { return std::make_unique<QuantMatMulKernel>(node, false); }));
  registry.add(sdk::KernelDefBuilder("QLinearMatMul")
                   .input_types({0, 2, 3, 5, 7}, k8Bit)
                   .input_types({1, 4, 6}, sdk::dtypes::kFloat32 | sdk::dtypes::kHalf)
                   .create([](const sdk::NodeInfo& node) { return std::make_unique<QuantMatMulKernel>(node, true); }));
}

}  // namespace onyx::cpu
