// cumulative.cpp: CumSum (opset 11) and CumProd (opset 26) along an axis,
// optionally exclusive and/or reversed.
#include "kernels/registry.h"
#include "kernels/shape/shape_util.h"

namespace onyx::cpu {
namespace {

// CumSum (or CumProd, `product`) along `axis` (input 1), optionally
// exclusive and/or reversed.
class CumSumKernel final : public sdk::Kernel {
 public:
  CumSumKernel(const sdk::NodeInfo& node, bool product)
      : label_(util::node_label(node)),
        product_(product),
        exclusive_(node.get_int("exclusive", 0) != 0),
        reverse_(node.get_int("reverse", 0) != 0) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    std::vector<int64_t> a;
    if (!util::read_ints(ctx.in(1), &a) || a.size() != 1)
      return util::fail(label_, "input 1 (axis) must be an int32 or int64 scalar");
    int64_t rank = int64_t(x.rank()), axis = 0;
    if (!util::normalize_axis(a[0], rank, &axis))
      return util::fail(label_, "axis %lld is out of range for input 0 of rank %lld", (long long)a[0], (long long)rank);
    int64_t outer = 1, n = x.dim(size_t(axis)), inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.dim(size_t(d));
    for (int64_t d = axis + 1; d < rank; ++d) inner *= x.dim(size_t(d));
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, x.dims, &y));
    auto scan = [&](auto load, auto store, auto zero) {
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          auto acc = product_ ? decltype(zero)(1) : zero;
          for (int64_t s = 0; s < n; ++s) {
            int64_t j = reverse_ ? n - 1 - s : s, at = (o * n + j) * inner + i;
            auto v = load(at);
            if (exclusive_) {
              store(at, acc);
              acc = product_ ? acc * v : acc + v;
            } else {
              acc = product_ ? acc * v : acc + v;
              store(at, acc);
            }
          }
        }
    };
    if (util::is_half(x.dtype)) {
      int32_t dt = x.dtype;
      scan([&](int64_t at) { return util::half_value(dt, x.data<uint16_t>()[at]); },
           [&](int64_t at, float v) { y.data<uint16_t>()[at] = util::half_bits(dt, v); }, 0.0f);
      return nullptr;
    }
    bool known = util::visit<util::kNumeric>(x.dtype, [&](auto tag) {
      using T = decltype(tag);
      // Integers accumulate in uint64 so that overflow wraps.
      using A = std::conditional_t<std::is_floating_point_v<T>, T, uint64_t>;
      scan([&](int64_t at) { return A(x.data<T>()[at]); },
           [&](int64_t at, A v) { y.data<T>()[at] = T(v); }, A(0));
    });
    return known ? nullptr : util::fail(label_, "type %s is not supported", sdk::dtype_name(x.dtype));
  }

 private:
  std::string label_;
  bool product_, exclusive_, reverse_;
};

}  // namespace

void register_cumulative_kernels(sdk::KernelRegistry& registry) {
  for (bool product : {false, true})
    registry.add(sdk::KernelDefBuilder(product ? "CumProd" : "CumSum")
                     .since(product ? 26 : 11)
                     .inputs(2)
                     .input_type(0, sdk::dtypes::kNumeric | sdk::dtypes::kHalf)
                     .input_type(1, shape::kIndexTypes)
                     .create([product](const sdk::NodeInfo& n) { return std::make_unique<CumSumKernel>(n, product); }));
}

}  // namespace onyx::cpu
