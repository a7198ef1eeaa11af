// qlinear_concat.cpp: com.microsoft QLinearConcat on uint8/int8:
//   inputs  Y_scale, Y_zero_point, then (X_k, X_k scale, X_k zero point)
//           for each tensor k; attribute axis
//   Y = concat(quantize(dequantize(X_k)) for each k) along axis
// An input already quantized like Y is copied; any other is requantized
// through a 256-entry table built from the float64 reference formula, so
// every code is the reference's exactly.
#include <array>
#include <cmath>
#include <cstring>
#include <memory>

#include "kernels/kernel_util.h"
#include "kernels/quantize/qlinear_common.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

constexpr size_t kFirst = 2;  // inputs before the first (X, scale, zero point) triple

class QLinearConcatKernel final : public sdk::Kernel {
 public:
  explicit QLinearConcatKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)), axis_(node.get_int("axis", 0)) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    const size_t count = (ctx.input_count() - kFirst) / 3;
    const int32_t y_type = ctx.in(1).dtype;
    quant::QParam yq;
    if (std::string e = quant::read_qparam(ctx, {0, 1, "Y_scale", "Y_zero_point"}, y_type, "Y", &yq); !e.empty())
      return util::fail(label_, "%s", e.c_str());
    std::vector<sdk::Tensor> xs;
    std::vector<quant::QParam> qs(count);
    for (size_t k = 0; k < count; ++k) {
      const size_t at = kFirst + 3 * k;
      xs.push_back(ctx.in(at));
      const sdk::Tensor& x = xs.back();
      const std::string name = "input " + std::to_string(at);
      if (x.dtype != y_type)
        return util::fail(label_, "%s has type %s but Y_zero_point has type %s; every tensor has Y's type",
                          name.c_str(), sdk::dtype_name(x.dtype), sdk::dtype_name(y_type));
      const std::string scale = name + "'s scale (input " + std::to_string(at + 1) + ")";
      const std::string zero = name + "'s zero point (input " + std::to_string(at + 2) + ")";
      if (std::string e = quant::read_qparam(ctx, {at + 1, at + 2, scale.c_str(), zero.c_str()}, x.dtype,
                                             name.c_str(), &qs[k]);
          !e.empty())
        return util::fail(label_, "%s", e.c_str());
    }
    const int64_t rank = int64_t(xs[0].rank());
    int64_t axis = 0;
    if (!util::normalize_axis(axis_, rank, &axis))
      return util::fail(label_, "axis %lld is out of range for inputs of rank %lld", (long long)axis_, (long long)rank);
    std::vector<int64_t> out_dims = xs[0].shape();
    out_dims[size_t(axis)] = 0;
    for (size_t k = 0; k < count; ++k) {
      const sdk::Tensor& x = xs[k];
      bool fits = int64_t(x.rank()) == rank;
      for (int64_t d = 0; fits && d < rank; ++d) fits = d == axis || x.dim(size_t(d)) == out_dims[size_t(d)];
      if (!fits)
        return util::fail(label_, "input %zu of shape %s does not match input %zu of shape %s outside axis %lld",
                          kFirst + 3 * k, util::dims_str(x.dims).c_str(), kFirst, util::dims_str(xs[0].dims).c_str(),
                          (long long)axis);
      out_dims[size_t(axis)] += x.dim(size_t(axis));
    }
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, y_type, out_dims, &y));
    if (y.size() == 0) return nullptr;

    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < rank; ++d)
      if (d < axis) outer *= out_dims[size_t(d)];
      else if (d > axis) inner *= out_dims[size_t(d)];
    const int64_t out_row = out_dims[size_t(axis)] * inner;  // elements of Y per outer index
    quant::visit_8bit(y_type, [&](auto tag) {
      using T = decltype(tag);
      // Per input: its run length per outer index, where it starts in Y's
      // row, and its table (none: copied as is).
      struct Part {
        const uint8_t* x;
        int64_t len, offset;
        bool copy;
        std::array<T, 256> table;
      };
      std::vector<Part> parts(count);
      int64_t offset = 0;
      for (size_t k = 0; k < count; ++k) {
        Part& p = parts[k];
        p.x = static_cast<const uint8_t*>(xs[k].raw);
        p.len = xs[k].dim(size_t(axis)) * inner, p.offset = offset;
        offset += p.len;
        p.copy = qs[k].scale == yq.scale && qs[k].zero == yq.zero;
        if (p.copy) continue;
        for (int v = int(quant::kLowest<T>); v <= int(quant::kHighest<T>); ++v) {
          const double real = double(v - qs[k].zero) * qs[k].scale;
          p.table[uint8_t(v)] = quant::saturate_round<T>(std::nearbyint(real / yq.scale) + double(yq.zero));
        }
      }
      T* yp = y.data<T>();
      const size_t grain = size_t(std::max<int64_t>(1, int64_t(util::kGrain) / std::max<int64_t>(out_row, 1)));
      ctx.parallel_for(size_t(outer), grain, [&](size_t b, size_t e) {
        for (size_t o = b; o < e; ++o)
          for (const Part& p : parts) {
            const uint8_t* src = p.x + int64_t(o) * p.len;
            T* dst = yp + int64_t(o) * out_row + p.offset;
            if (p.copy) {
              if (p.len) std::memcpy(dst, src, size_t(p.len));
            } else {
              for (int64_t i = 0; i < p.len; ++i) dst[i] = p.table[src[i]];
            }
          }
      });
    });
    return nullptr;
  }

 private:
  std::string label_;
  int64_t axis_;
};

// At least one triple, and the X and scale of each present.
std::string check_inputs(const sdk::NodeInfo& node) {
  const size_t n = node.inputs.size();
  if (n < kFirst + 3 || (n - kFirst) % 3 != 0)
    return "QLinearConcat: expects Y_scale, Y_zero_point and (tensor, scale, zero point) triples, the node has " +
           std::to_string(n) + " inputs";
  if (!node.has("axis")) return "QLinearConcat: attribute axis is required";
  for (size_t at = kFirst; at < n; at += 3)
    if (std::string e = quant::missing_input(node, {at, at + 1}); !e.empty()) return e;
  return quant::missing_input(node, {0, 1});
}

}  // namespace

void register_qlinear_concat_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("QLinearConcat", "com.microsoft")
                   .input_type(0, sdk::dtypes::kFloat32)
                   .input_type(1, sdk::DTypeSet{ONYX_DTYPE_UINT8, ONYX_DTYPE_INT8})
                   .check(check_inputs)
                   .create([](const sdk::NodeInfo& node) { return std::make_unique<QLinearConcatKernel>(node); }));
}

}  // namespace onyx::cpu
