// quantized_matmul.cpp: MatMulInteger and QLinearMatMul on the integer GEMM
// (gemm/qgemm.h): uint8/int8 products accumulated exactly in int32,
// QLinearMatMul's requantized to its output zero point and scale. A constant
// B (the weights of a quantized linear layer) is packed once.
#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>

#include "gemm/qgemm.h"
#include "kernels/linalg/matmul_shape.h"
#include "kernels/linalg/quantized_params.h"
#include "kernels/narrow_types.h"
#include "kernels/nn_util.h"
#include "kernels/quantize/requantize.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

using linalg::matmul_shape;
using linalg::MatMulShape;

using Vec = linalg::QuantParam;

class QuantMatMulKernel final : public sdk::Kernel {
 public:
  // Input positions: MatMulInteger (A, B, a_zero, b_zero); QLinearMatMul (a,
  // a_scale, a_zero, b, b_scale, b_zero, y_scale, y_zero).
  QuantMatMulKernel(const sdk::NodeInfo& node, bool qlinear)
      : label_(nn::node_label(node)), qlinear_(qlinear), ib_(qlinear ? 3 : 1), izb_(qlinear ? 5 : 3) {
    std::optional<sdk::Tensor> b = linalg::constant_input(node, ib_);
    if (!b || b->rank() != 2 || !linalg::absent_or_constant(node, izb_)) return;
    Vec zb;
    if (linalg::read_param(linalg::constant_input(node, izb_), b->dim(1), "b_zero_point", 0, &zb).empty())
      packed_b_ = pack(*b, 0, zb);
  }

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor a = ctx.in(0), b = ctx.in(ib_), y;
    MatMulShape s;
    if (std::string e = matmul_shape(a.dims, b.dims, &s); !e.empty()) return nn::fail(label_, "%s", e.c_str());
    Vec za, zb, sa, sb, sy, zy;
    std::string e = linalg::read_param(ctx.input(2), s.m, "a_zero_point", 0, &za);
    if (e.empty()) e = linalg::read_param(ctx.input(izb_), s.n, "b_zero_point", 0, &zb);
    int32_t y_type = ONYX_DTYPE_INT32;
    if (qlinear_) {
      if (e.empty()) e = linalg::read_param(ctx.input(1), s.m, "a_scale", 1, &sa);
      if (e.empty()) e = linalg::read_param(ctx.input(4), s.n, "b_scale", 1, &sb);
      if (e.empty()) e = linalg::read_param(ctx.input(6), s.m, "y_scale", 1, &sy);
      if (e.empty()) e = linalg::read_param(ctx.input(7), s.m, "y_zero_point", 0, &zy);
      std::optional<sdk::Tensor> yz = ctx.input(7);
      y_type = yz ? yz->dtype : ONYX_DTYPE_UINT8;
    }
    if (!e.empty()) return nn::fail(label_, "%s", e.c_str());
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, y_type, s.y_dims, &y));
    if (y.size() == 0) return nullptr;

    // Per-tensor scales (the usual case): one multiplier per column of B.
    quant::Requantizer rq;
    const bool per_row = !(sa.scalar() && sy.scalar() && zy.scalar());
    if (qlinear_ && !per_row) {
      for (int64_t j = 0; j < int64_t(sb.values.size()); ++j) rq.multiplier.push_back(sa.at(0) * sb.at(j) / sy.at(0));
      rq.zero = zy.at(0), rq.is_signed = y_type == ONYX_DTYPE_INT8;
    }
    const ParallelFor pf = nn::host_parallel_for(ctx);
    const int64_t mn = s.m * s.n;
    // One B and A's matrices in order: all of A is one [batch * M, K] GEMM.
    const int64_t gemms = s.fold_a ? 1 : s.batch(), rows = s.fold_a ? s.batch() * s.m : s.m;
    std::vector<int32_t> a_zero = za.ints();
    if (s.fold_a && !za.scalar())
      for (int64_t t = 1; t < s.batch(); ++t) a_zero.insert(a_zero.end(), a_zero.begin(), a_zero.begin() + s.m);
    std::vector<int32_t> acc(qlinear_ ? size_t(rows * s.n) : 0);
    for (int64_t t = 0; t < gemms; ++t) {
      std::shared_ptr<PackedQB> packed = packed_b_ ? packed_b_ : pack(b, s.b_index[size_t(t)] * s.k * s.n, zb, s);
      int32_t* c = qlinear_ ? acc.data() : y.data<int32_t>() + t * mn;
      QTileDone done;
      if (qlinear_)
        done = [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
          const int64_t y0 = t * mn;
          if (!per_row) {
            for (int64_t j = c0; j < c1; ++j) {
              if (rq.is_signed)
                rq.row(c + r0 * s.n + j, s.n, r1 - r0, j, y.data<int8_t>() + y0 + r0 * s.n + j, s.n);
              else
                rq.row(c + r0 * s.n + j, s.n, r1 - r0, j, y.data<uint8_t>() + y0 + r0 * s.n + j, s.n);
            }
            return;
          }
          const double lo = y_type == ONYX_DTYPE_INT8 ? -128 : 0, hi = y_type == ONYX_DTYPE_INT8 ? 127 : 255;
          for (int64_t i = r0; i < r1; ++i)
            for (int64_t j = c0; j < c1; ++j) {
              const int64_t row = i % s.m;  // per-row parameters repeat per matrix of A
              const double real = double(c[i * s.n + j]) * (sa.at(row) * sb.at(j) / sy.at(row));
              const double q = std::clamp(quant::Requantizer::round_even(real) + zy.at(row), lo, hi);
              narrow::store(y_type, y.raw, y0 + i * s.n + j, q, true);
            }
        };
      const QMatrix am{static_cast<const uint8_t*>(a.raw) + (s.fold_a ? 0 : s.a_index[size_t(t)] * s.m * s.k),
                       a.dtype == ONYX_DTYPE_INT8, s.k, false};
      qgemm(rows, s.n, s.k, am, a_zero.data(), int64_t(a_zero.size()), *packed, c, s.n, done, pf);
    }
    return nullptr;
  }

 private:
  // B's matrix at element `offset`, k x n, minus its zero points.
  static std::shared_ptr<PackedQB> pack(const sdk::Tensor& b, int64_t offset, const Vec& zb, const MatMulShape& s) {
    std::vector<int32_t> zero = zb.ints();
    return pack_qb({static_cast<const uint8_t*>(b.raw) + offset, b.dtype == ONYX_DTYPE_INT8, s.n, false}, s.k, s.n,
                   zero.data(), int64_t(zero.size()));
  }
  static std::shared_ptr<PackedQB> pack(const sdk::Tensor& b, int64_t offset, const Vec& zb) {
    MatMulShape s;
    s.k = b.dim(0), s.n = b.dim(1);
    return pack(b, offset, zb, s);
  }

  std::string label_;
  bool qlinear_;
  size_t ib_, izb_;
  std::shared_ptr<PackedQB> packed_b_;  // a constant 2-D B, packed at creation
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
