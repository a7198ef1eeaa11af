// quantized_gemm.cpp: the com.microsoft integer matrix multiplies ONNX
// Runtime's quantizers write, on the integer GEMM (gemm/qgemm.h):
//   QGemm: Y = alpha * a_scale * b_scale[j] * ((A' - a_zero)(B' - b_zero[j]) + C),
//     C an int32 bias broadcast to [M, N]; Y float32, or quantized by
//     y_scale / y_zero_point when given.
//   DynamicQuantizeMatMul: A (float) quantized to uint8 over its whole range
//     as DynamicQuantizeLinear does, then
//     Y = a_scale * b_scale[j] * (A_q - a_zero)(B - b_zero[j]) + bias[j].
// Semantics from ONNX Runtime's contrib operator documentation. Constant B
// (the weights) is packed once.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>

#include "kernels/quantize/dynamic_quantize.h"
#include "gemm/qgemm.h"
#include "kernels/linalg/matmul_shape.h"
#include "kernels/linalg/quantized_params.h"
#include "kernels/narrow_types.h"
#include "kernels/nn_util.h"
#include "kernels/quantize/requantize.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

using linalg::QuantParam;

std::shared_ptr<PackedQB> pack_weights(const sdk::Tensor& b, bool trans, const QuantParam& zero) {
  const int64_t k = trans ? b.dim(1) : b.dim(0), n = trans ? b.dim(0) : b.dim(1);
  std::vector<int32_t> z = zero.ints();
  return pack_qb({b.raw, b.dtype == ONYX_DTYPE_INT8, b.dim(1), trans}, k, n, z.data(), int64_t(z.size()));
}

class QGemmKernel final : public sdk::Kernel {
 public:
  // Inputs: A, a_scale, a_zero, B, b_scale, b_zero, C?, y_scale?, y_zero?.
  explicit QGemmKernel(const sdk::NodeInfo& node)
      : label_(nn::node_label(node)),
        alpha_(node.get_float("alpha", 1.0f)),
        trans_a_(node.get_int("transA", 0) != 0),
        trans_b_(node.get_int("transB", 0) != 0) {
    std::optional<sdk::Tensor> b = linalg::constant_input(node, 3);
    if (!b || b->rank() != 2 || !linalg::absent_or_constant(node, 5)) return;
    QuantParam zb;
    if (linalg::read_param(linalg::constant_input(node, 5), trans_b_ ? b->dim(0) : b->dim(1), "b_zero_point", 0, &zb)
            .empty())
      packed_b_ = pack_weights(*b, trans_b_, zb);
  }

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor a = ctx.in(0), b = ctx.in(3), y;
    if (a.rank() != 2 || b.rank() != 2)
      return nn::fail(label_, "A %s and B %s must be matrices", nn::dims_str(a.dims).c_str(), nn::dims_str(b.dims).c_str());
    const int64_t m = trans_a_ ? a.dim(1) : a.dim(0), k = trans_a_ ? a.dim(0) : a.dim(1);
    const int64_t kb = trans_b_ ? b.dim(1) : b.dim(0), n = trans_b_ ? b.dim(0) : b.dim(1);
    if (k != kb) return nn::fail(label_, "A %s and B %s do not multiply", nn::dims_str(a.dims).c_str(), nn::dims_str(b.dims).c_str());
    QuantParam sa, za, sb, zb, sy, zy;
    std::string e = linalg::read_param(ctx.input(1), 1, "a_scale", 1, &sa);
    if (e.empty()) e = linalg::read_param(ctx.input(2), 1, "a_zero_point", 0, &za);
    if (e.empty()) e = linalg::read_param(ctx.input(4), n, "b_scale", 1, &sb);
    if (e.empty()) e = linalg::read_param(ctx.input(5), n, "b_zero_point", 0, &zb);
    std::optional<sdk::Tensor> c = ctx.input(6), y_scale = ctx.input(7), y_zero = ctx.input(8);
    if (e.empty() && y_scale) e = linalg::read_param(y_scale, 1, "y_scale", 1, &sy);
    if (e.empty()) e = linalg::read_param(y_zero, 1, "y_zero_point", 0, &zy);
    if (!e.empty()) return nn::fail(label_, "%s", e.c_str());
    // C broadcasts to [M, N] from [], [N], [1, N], [M, 1] or [M, N].
    int64_t c_row = 0, c_col = 0;
    if (c && c->size() > 0) {
      const auto& d = c->dims;
      const int64_t rows = d.size() == 2 ? d[0] : 1, cols = d.empty() ? 1 : d.back();
      if (d.size() > 2 || (rows != 1 && rows != m) || (cols != 1 && cols != n))
        return nn::fail(label_, "C %s does not broadcast to [%lld, %lld]", nn::dims_str(d).c_str(), (long long)m, (long long)n);
      c_row = rows == 1 ? 0 : cols, c_col = cols == 1 ? 0 : 1;
    }
    const int32_t y_type = !y_scale ? ONYX_DTYPE_FLOAT32 : y_zero ? y_zero->dtype : ONYX_DTYPE_UINT8;
    const int64_t y_dims[2] = {m, n};
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, y_type, y_dims, &y));
    if (y.size() == 0) return nullptr;

    std::vector<double> scale(static_cast<size_t>(n));  // alpha * a_scale * b_scale[j] (/ y_scale)
    for (int64_t j = 0; j < n; ++j) scale[size_t(j)] = double(alpha_) * sa.at(0) * sb.at(j) / (y_scale ? sy.at(0) : 1.0);
    std::shared_ptr<PackedQB> packed = packed_b_ ? packed_b_ : pack_weights(b, trans_b_, zb);
    std::vector<int32_t> acc(size_t(m * n));
    const int32_t a_zero = int32_t(za.at(0));
    const bool y_signed = y_type == ONYX_DTYPE_INT8, has_c = c && c->size() > 0;
    QTileDone done = [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
      for (int64_t i = r0; i < r1; ++i)
        for (int64_t j = c0; j < c1; ++j) {
          const double sum = double(acc[size_t(i * n + j)]) + (has_c ? double(c->data<int32_t>()[i * c_row + j * c_col]) : 0.0);
          const double real = sum * scale[size_t(j)];
          if (y_type == ONYX_DTYPE_FLOAT32) {
            y.data<float>()[i * n + j] = float(real);
            continue;
          }
          const double q = std::clamp(quant::Requantizer::round_even(real) + zy.at(0), y_signed ? -128.0 : 0.0,
                                      y_signed ? 127.0 : 255.0);
          narrow::store(y_type, y.raw, i * n + j, q, true);
        }
    };
    qgemm(m, n, k, {a.raw, a.dtype == ONYX_DTYPE_INT8, a.dim(1), trans_a_}, &a_zero, 1, *packed, acc.data(), n, done,
          nn::host_parallel_for(ctx));
    return nullptr;
  }

 private:
  std::string label_;
  float alpha_;
  bool trans_a_, trans_b_;
  std::shared_ptr<PackedQB> packed_b_;
};

class DynamicQuantizeMatMulKernel final : public sdk::Kernel {
 public:
  // Inputs: A (float), B, b_scale, b_zero?, bias?.
  explicit DynamicQuantizeMatMulKernel(const sdk::NodeInfo& node) : label_(nn::node_label(node)) {
    std::optional<sdk::Tensor> b = linalg::constant_input(node, 1);
    if (!b || b->rank() != 2 || !linalg::absent_or_constant(node, 3)) return;
    QuantParam zb;
    if (linalg::read_param(linalg::constant_input(node, 3), b->dim(1), "b_zero_point", 0, &zb).empty())
      packed_b_ = pack_weights(*b, false, zb);
  }

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor a = ctx.in(0), b = ctx.in(1), y;
    if (b.rank() != 2)
      return nn::fail(label_, "B %s must be a matrix (the quantized weights)", nn::dims_str(b.dims).c_str());
    linalg::MatMulShape s;
    if (std::string e = linalg::matmul_shape(a.dims, b.dims, &s); !e.empty()) return nn::fail(label_, "%s", e.c_str());
    QuantParam sb, zb;
    std::string e = linalg::read_param(ctx.input(2), s.n, "b_scale", 1, &sb);
    if (e.empty()) e = linalg::read_param(ctx.input(3), s.n, "b_zero_point", 0, &zb);
    std::optional<sdk::Tensor> bias = ctx.input(4);
    if (e.empty() && bias && bias->size() != s.n)
      e = "bias has shape " + nn::dims_str(bias->dims) + "; expected " + std::to_string(s.n) + " elements";
    if (!e.empty()) return nn::fail(label_, "%s", e.c_str());
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_FLOAT32, s.y_dims, &y));
    if (y.size() == 0) return nullptr;

    // A quantized as DynamicQuantizeLinear does it, and the output
    // dequantized in float32 as Cast, Mul(a_scale * b_scale) and Add do it:
    // bit for bit the op-by-op chain ONNX Runtime's quantize_dynamic writes.
    const int64_t count = a.size();
    const ParallelFor pf = nn::host_parallel_for(ctx);
    // Scratch kept across runs on this thread and grown only (fresh pages
    // every run cost more than the product's tail): every byte is written
    // before it is read.
    thread_local std::vector<uint8_t> aq_scratch;
    thread_local std::vector<int32_t> acc_scratch;
    std::vector<uint8_t>& aq = aq_scratch;
    std::vector<int32_t>& acc = acc_scratch;
    if (int64_t(aq.size()) < count) aq.resize(size_t(count));
    const DynamicQuantization q = dynamic_quantize(a.data<float>(), count, aq.data(), pf);
    if (!std::isfinite(q.scale)) return nn::fail(label_, "A holds a non-finite value");
    const auto a_zero = int32_t(q.zero);
    std::vector<float> col_scale(size_t(s.n)), col_bias(size_t(s.n), 0.0f);
    for (int64_t j = 0; j < s.n; ++j) {
      col_scale[size_t(j)] = q.scale * float(sb.at(j));
      if (bias) col_bias[size_t(j)] = float(narrow::load(bias->dtype, bias->raw, j));
    }

    std::shared_ptr<PackedQB> packed = packed_b_ ? packed_b_ : pack_weights(b, false, zb);
    const int64_t rows = s.batch() * s.m;  // one B: A's matrices fold into rows
    if (int64_t(acc.size()) < rows * s.n) acc.resize(size_t(rows * s.n));
    float* out = y.data<float>();
    QTileDone done = [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
      for (int64_t i = r0; i < r1; ++i)
        dequantize_row(acc.data() + i * s.n + c0, c1 - c0, col_scale.data() + c0, col_bias.data() + c0,
                       out + i * s.n + c0);
    };
    qgemm(rows, s.n, s.k, {aq.data(), false, s.k, false}, &a_zero, 1, *packed, acc.data(), s.n, done, pf);
    return nullptr;
  }

 private:
  std::string label_;
  std::shared_ptr<PackedQB> packed_b_;
};

}  // namespace

void register_quantized_gemm_kernels(sdk::KernelRegistry& registry) {
  constexpr sdk::DTypeSet k8Bit{ONYX_DTYPE_UINT8, ONYX_DTYPE_INT8};
  registry.add(sdk::KernelDefBuilder("QGemm", "com.microsoft")
                   .inputs(6, 9)
                   .input_types({0, 2, 3, 5, 8}, k8Bit)
                   .input_types({1, 4, 7}, sdk::dtypes::kFloat32)
                   .input_type(6, sdk::DTypeSet{ONYX_DTYPE_INT32})
                   .create([](const sdk::NodeInfo& n) { return std::make_unique<QGemmKernel>(n); }));
  registry.add(sdk::KernelDefBuilder("DynamicQuantizeMatMul", "com.microsoft")
                   .inputs(3, 5)
                   .input_types({0, 2, 4}, sdk::dtypes::kFloat32)
                   .input_types({1, 3}, k8Bit)
                   .create([](const sdk::NodeInfo& n) { return std::make_unique<DynamicQuantizeMatMulKernel>(n); }));
}

}  // namespace onyx::cpu
