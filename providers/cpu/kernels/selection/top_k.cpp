// top_k.cpp: TopK (k an attribute before opset 10, an input after): the k
// largest or smallest values along an axis, with their indices.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/registry.h"
#include "kernels/shape/shape_util.h"

namespace onyx::cpu {
namespace {

// TopK along `axis`: the k largest (or smallest) values in order, ties by
// lower index first; NaN ranks above every number.
class TopKKernel final : public sdk::Kernel {
 public:
  explicit TopKKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)),
        k_from_attribute_(node.opset < 10),
        attr_k_(node.get_int("k", 0)),
        axis_(node.get_int("axis", -1)),
        largest_(node.get_int("largest", 1) != 0) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    int64_t k = attr_k_;
    if (!k_from_attribute_) {
      std::vector<int64_t> v;
      if (!util::read_ints(ctx.in(1), &v) || v.size() != 1) return util::fail(label_, "input 1 (K) must hold one int64");
      k = v[0];
    }
    int64_t rank = int64_t(x.rank()), axis = 0;
    if (!util::normalize_axis(axis_, rank, &axis))
      return util::fail(label_, "axis %lld is out of range for input 0 of rank %lld", (long long)axis_, (long long)rank);
    int64_t n = x.dim(size_t(axis));
    if (k < 0 || k > n) return util::fail(label_, "k = %lld is outside [0, %lld] (axis %lld)", (long long)k, (long long)n, (long long)axis);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.dim(size_t(d));
    for (int64_t d = axis + 1; d < rank; ++d) inner *= x.dim(size_t(d));
    std::vector<int64_t> out_dims = x.shape();
    out_dims[size_t(axis)] = k;
    sdk::Tensor values, indices;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, out_dims, &values));
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(1, ONYX_DTYPE_INT64, out_dims, &indices));
    size_t esize = sdk::dtype_size(x.dtype);
    std::vector<double> keys(static_cast<size_t>(n));
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        for (int64_t j = 0; j < n; ++j) keys[size_t(j)] = key(x, (o * n + j) * inner + i);
        std::iota(order.begin(), order.end(), 0);
        auto before = [&](int64_t a, int64_t b) {
          double va = keys[size_t(a)], vb = keys[size_t(b)];
          bool na = std::isnan(va), nb = std::isnan(vb);
          if (na || nb) return na && !nb ? largest_ : (!na && nb ? !largest_ : a < b);
          if (va != vb) return largest_ ? va > vb : va < vb;
          return a < b;
        };
        std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
        for (int64_t r = 0; r < k; ++r) {
          int64_t at = (o * k + r) * inner + i, from = (o * n + order[size_t(r)]) * inner + i;
          std::memcpy(static_cast<unsigned char*>(values.raw) + size_t(at) * esize,
                      static_cast<const unsigned char*>(x.raw) + size_t(from) * esize, esize);
          indices.data<int64_t>()[at] = order[size_t(r)];
        }
      }
    return nullptr;
  }

 private:
  // Element k as a sort key. int64 beyond 2^53 loses precision as double;
  // such ties are broken by index, which keeps the order well defined.
  static double key(const sdk::Tensor& x, int64_t k) {
    if (util::is_half(x.dtype)) return util::half_value(x.dtype, x.data<uint16_t>()[k]);
    double v = 0;
    util::read_scalar(x.dtype, static_cast<const unsigned char*>(x.raw) + size_t(k) * sdk::dtype_size(x.dtype), &v);
    return v;
  }

  std::string label_;
  bool k_from_attribute_;
  int64_t attr_k_, axis_;
  bool largest_;
};

}  // namespace

void register_top_k_kernels(sdk::KernelRegistry& registry) {
  // k is an attribute before opset 10, input 1 from it on.
  registry.add(sdk::KernelDefBuilder("TopK").opsets(1, 9).inputs(1).input_type(0, sdk::dtypes::kNumeric | sdk::dtypes::kHalf).create<TopKKernel>());
  registry.add(sdk::KernelDefBuilder("TopK")
                   .since(10)
                   .inputs(2)
                   .input_type(0, sdk::dtypes::kNumeric | sdk::dtypes::kHalf)
                   .input_type(1, sdk::DTypeSet{ONYX_DTYPE_INT64})
                   .create<TopKKernel>());
}

}  // namespace onyx::cpu
