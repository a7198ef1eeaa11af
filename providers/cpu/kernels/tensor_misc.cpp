// tensor_misc.cpp: Trilu, NonZero, CumSum, CumProd, TopK.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/shape_ops.h"

namespace onyx::cpu {
namespace {

// Trilu: keeps the upper (j - i >= k) or lower (j - i <= k) triangle of
// every matrix in the last two dims and zeroes the rest (all-zero bytes are
// 0 in every numeric type and false in bool).
class TriluKernel final : public sdk::Kernel {
 public:
  explicit TriluKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)), upper_(node.get_int("upper", 1) != 0) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    if (x.rank() < 2) return util::fail(label_, "input 0 must have rank >= 2, got %zu", x.rank());
    int64_t k = 0;
    if (auto kt = ctx.input(1)) {
      std::vector<int64_t> v;
      if (!util::read_ints(*kt, &v) || v.size() != 1) return util::fail(label_, "input 1 (k) must be an int64 scalar");
      k = v[0];
    }
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, x.dims, &y));
    if (y.raw != x.raw && shape::byte_size(x)) std::memcpy(y.raw, x.raw, shape::byte_size(x));
    int64_t rows = x.dim(x.rank() - 2), cols = x.dim(x.rank() - 1);
    int64_t matrices = rows * cols != 0 ? x.size() / (rows * cols) : 0;
    size_t esize = sdk::dtype_size(x.dtype);
    for (int64_t m = 0; m < matrices; ++m)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          bool keep = upper_ ? j - i >= k : j - i <= k;
          if (!keep) std::memset(static_cast<unsigned char*>(y.raw) + size_t((m * rows + i) * cols + j) * esize, 0, esize);
        }
    return nullptr;
  }

  void output_memory(std::span<OnyxOutputMemoryInfo> out) const override {
    if (!out.empty()) {
      out[0].kind = ONYX_OUTPUT_MAY_OVERWRITE_INPUT;
      out[0].input_index = 0;
    }
  }

 private:
  std::string label_;
  bool upper_;
};

// NonZero: int64 [rank, count] of the indices of the non-zero elements in
// row-major order (a scalar counts as rank 1, like numpy).
class NonZeroKernel final : public sdk::Kernel {
 public:
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    std::vector<int64_t> hits;
    size_t esize = sdk::dtype_size(x.dtype);
    const unsigned char* p = static_cast<const unsigned char*>(x.raw);
    for (int64_t i = 0; i < x.size(); ++i) {
      const unsigned char* e = p + size_t(i) * esize;
      bool nonzero = false;
      if (util::is_half(x.dtype)) {
        uint16_t bits;
        std::memcpy(&bits, e, 2);
        nonzero = (bits & 0x7FFF) != 0;  // -0 is zero
      } else if (x.dtype == ONYX_DTYPE_FLOAT32 || x.dtype == ONYX_DTYPE_FLOAT64) {
        double v = 0;
        util::read_scalar(x.dtype, e, &v);
        nonzero = v != 0;  // NaN is non-zero
      } else {
        for (size_t b = 0; b < esize; ++b) nonzero |= e[b] != 0;
      }
      if (nonzero) hits.push_back(i);
    }
    size_t rank = std::max<size_t>(x.rank(), 1);
    int64_t dims[2] = {int64_t(rank), int64_t(hits.size())};
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_INT64, dims, &y));
    for (size_t h = 0; h < hits.size(); ++h) {
      int64_t rest = hits[h];
      for (size_t d = x.rank(); d-- > 0;) {
        y.data<int64_t>()[d * hits.size() + h] = rest % x.dim(d);
        rest /= x.dim(d);
      }
      if (x.rank() == 0) y.data<int64_t>()[h] = 0;
    }
    return nullptr;
  }
};

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

template <typename Make>
void add(sdk::KernelRegistry& registry, const char* op, int64_t since, size_t min_inputs, size_t max_inputs,
         unsigned types, Make make) {
  sdk::KernelDef def;
  def.op_type = op;
  def.since_version = since;
  def.supports = [=](const sdk::NodeInfo& node) {
    std::string why = util::require_inputs(node, min_inputs, max_inputs);
    if (why.empty()) why = util::require_types(node, types, {0});
    if (why.empty()) why = shape::require_index_type(node, 1, true);
    return why;
  };
  def.create = make;
  registry.add(std::move(def));
}

}  // namespace

void register_misc_kernels(sdk::KernelRegistry& registry) {
  constexpr unsigned kAll = util::kNumeric | util::kBool | util::kHalf;
  add(registry, "Trilu", 14, 1, 2, kAll, [](const sdk::NodeInfo& n) { return std::make_unique<TriluKernel>(n); });
  add(registry, "NonZero", 9, 1, 1, kAll, [](const sdk::NodeInfo&) { return std::make_unique<NonZeroKernel>(); });
  add(registry, "CumSum", 11, 2, 2, util::kNumeric | util::kHalf,
      [](const sdk::NodeInfo& n) { return std::make_unique<CumSumKernel>(n, false); });
  add(registry, "CumProd", 26, 2, 2, util::kNumeric | util::kHalf,
      [](const sdk::NodeInfo& n) { return std::make_unique<CumSumKernel>(n, true); });
  sdk::KernelDef topk;
  topk.op_type = "TopK";
  topk.supports = [](const sdk::NodeInfo& node) {
    std::string why = util::require_inputs(node, node.opset < 10 ? 1 : 2, node.opset < 10 ? 1 : 2);
    if (why.empty()) why = util::require_types(node, util::kNumeric | util::kHalf, {0});
    if (why.empty()) why = shape::require_index_type(node, 1);
    return why;
  };
  topk.create = [](const sdk::NodeInfo& n) { return std::make_unique<TopKKernel>(n); };
  registry.add(std::move(topk));
}

}  // namespace onyx::cpu
