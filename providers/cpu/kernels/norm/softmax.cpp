// softmax.cpp: Softmax, LogSoftmax and Hardmax (float32, float64; float16
// and bfloat16 widened to float32).
//
// Before opset 13 the input is coerced to 2-D [prod(dims[:axis]),
// prod(dims[axis:])] and the op runs along the second dim; from opset 13 it
// runs along the single dim `axis`. Both cases are "outer x n x inner" with
// inner == 1 for the coerced form.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "kernels/elementwise/vec_math.h"
#include "kernels/nn_util.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

enum class SoftmaxKind { kSoftmax, kLogSoftmax, kHardmax };

// Lanes of `inner` processed together: contiguous loads for an axis that is
// not the last one, and per-lane accumulators that fit on the stack.
constexpr int64_t kLanes = 64;

template <typename T>
void softmax_tile(SoftmaxKind kind, const T* x, T* y, int64_t n, int64_t inner, int64_t lanes) {
  T max[kLanes];
  double sum[kLanes];
  int64_t arg[kLanes];
  for (int64_t l = 0; l < lanes; ++l) {
    max[l] = x[l];
    sum[l] = 0;
    arg[l] = 0;
  }
  // Subtracting the max keeps exp() in range (numerically stable); Hardmax
  // keeps the first maximum.
  for (int64_t j = 1; j < n; ++j)
    for (int64_t l = 0; l < lanes; ++l) {
      T v = x[j * inner + l];
      if (v > max[l]) {
        max[l] = v;
        arg[l] = j;
      }
    }
  if (kind == SoftmaxKind::kHardmax) {
    for (int64_t j = 0; j < n; ++j)
      for (int64_t l = 0; l < lanes; ++l) y[j * inner + l] = T(arg[l] == j ? 1 : 0);
    return;
  }
  for (int64_t j = 0; j < n; ++j)
    for (int64_t l = 0; l < lanes; ++l) {
      T e = std::exp(x[j * inner + l] - max[l]);
      sum[l] += double(e);
      if (kind == SoftmaxKind::kSoftmax) y[j * inner + l] = T(e);
    }
  if (kind == SoftmaxKind::kSoftmax) {
    T scale[kLanes];
    for (int64_t l = 0; l < lanes; ++l) scale[l] = T(1.0 / sum[l]);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t l = 0; l < lanes; ++l) y[j * inner + l] *= scale[l];
  } else {
    for (int64_t l = 0; l < lanes; ++l) sum[l] = double(max[l]) + std::log(sum[l]);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t l = 0; l < lanes; ++l) y[j * inner + l] = T(double(x[j * inner + l]) - sum[l]);
  }
}

class SoftmaxKernel final : public sdk::Kernel {
 public:
  SoftmaxKernel(const sdk::NodeInfo& node, SoftmaxKind kind)
      : label_(nn::node_label(node)),
        kind_(kind),
        coerce_2d_(node.opset < 13),
        axis_(node.get_int("axis", node.opset < 13 ? 1 : -1)) {}

  // A tile reads all its inputs (max, sums) before writing outputs it never reads again.
  void output_memory(std::span<OnyxOutputMemoryInfo> out) const override {
    util::output0_may_overwrite_input(out);
  }

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    int64_t rank = int64_t(x.rank()), axis = 0;
    if (!nn::normalize_axis(axis_, rank, &axis))
      return nn::fail(label_, "axis %lld is out of range for input 0 of rank %lld",
                      (long long)axis_, (long long)rank);
    int64_t outer = 1, n = 1, inner = 1;
    for (int64_t k = 0; k < rank; ++k) {
      int64_t d = x.dim(size_t(k));
      if (k < axis)
        outer *= d;
      else if (k == axis || coerce_2d_)
        n *= d;
      else
        inner *= d;
    }
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, x.dims, &y));
    if (x.size() == 0) return nullptr;
    if (x.dtype == ONYX_DTYPE_FLOAT64) {
      run<double>(ctx, x, y, outer, n, inner);
    } else if (util::is_half(x.dtype)) {
      std::vector<float> xf(size_t(x.size())), yf(size_t(x.size()));
      util::halves_to_floats(x.dtype, x.data<uint16_t>(), xf.data(), xf.size());
      sdk::Tensor x32 = x, y32 = y;
      x32.raw = xf.data(), y32.raw = yf.data();
      run<float>(ctx, x32, y32, outer, n, inner);
      util::floats_to_halves(y.dtype, yf.data(), y.data<uint16_t>(), yf.size());
    } else {
      run<float>(ctx, x, y, outer, n, inner);
    }
    return nullptr;
  }

 private:
  template <typename T>
  void run(sdk::ComputeContext& ctx, const sdk::Tensor& x, const sdk::Tensor& y, int64_t outer,
           int64_t n, int64_t inner) {
    int64_t tiles = (inner + kLanes - 1) / kLanes;
    int64_t lanes_per_tile = std::min(inner, kLanes);
    const T* xd = x.data<T>();
    T* yd = y.data<T>();
    SoftmaxKind kind = kind_;
    ctx.parallel_for(size_t(outer * tiles), nn::grain_for(double(n * lanes_per_tile) * 8),
                     [&](size_t begin, size_t end) {
                       for (size_t t = begin; t < end; ++t) {
                         if constexpr (std::is_same_v<T, float>) {
                           if (inner == 1 && kind == SoftmaxKind::kSoftmax) {  // a contiguous row
                             vec::softmax_row(xd + int64_t(t) * n, yd + int64_t(t) * n, size_t(n));
                             continue;
                           }
                         }
                         int64_t o = int64_t(t) / tiles, l0 = int64_t(t) % tiles * kLanes;
                         int64_t offset = o * n * inner + l0;
                         softmax_tile(kind, xd + offset, yd + offset, n, inner,
                                      std::min(kLanes, inner - l0));
                       }
                     });
  }

  std::string label_;
  SoftmaxKind kind_;
  bool coerce_2d_;
  int64_t axis_;
};

}  // namespace

void register_softmax_kernels(sdk::KernelRegistry& registry) {
  for (auto [op, kind] : {std::pair{"Softmax", SoftmaxKind::kSoftmax}, std::pair{"LogSoftmax", SoftmaxKind::kLogSoftmax},
                          std::pair{"Hardmax", SoftmaxKind::kHardmax}})
    registry.add(sdk::KernelDefBuilder(op)
                     .input_type(0, sdk::dtypes::kFloat | sdk::dtypes::kHalf)
                     .create([kind = kind](const sdk::NodeInfo& node) { return std::make_unique<SoftmaxKernel>(node, kind); }));
}

}  // namespace onyx::cpu
