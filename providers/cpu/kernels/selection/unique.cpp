// unique.cpp: Unique (opset 11): the distinct elements or slices, with their
// first indices, inverse indices and counts.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <optional>
#include <vector>

#include "kernels/kernel_util.h"
#include "kernels/narrow_types.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

// Unique: the distinct elements (or slices along `axis`), sorted or in order
// of first appearance, with first indices, inverse indices and counts.
class UniqueKernel final : public sdk::Kernel {
 public:
  explicit UniqueKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)),
        has_axis_(node.has("axis")),
        axis_(node.get_int("axis", 0)),
        sorted_(node.get_int("sorted", 1) != 0) {
    for (const auto& o : node.outputs) wanted_.push_back(o.present);
  }

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    int64_t axis = 0, outer = 1, n = x.size(), inner = 1;
    if (has_axis_) {
      if (!util::normalize_axis(axis_, int64_t(x.rank()), &axis)) return util::fail(label_, "axis is out of range");
      n = x.dim(size_t(axis));
      for (int64_t d = 0; d < axis; ++d) outer *= x.dim(size_t(d));
      for (int64_t d = axis + 1; d < int64_t(x.rank()); ++d) inner *= x.dim(size_t(d));
    }
    // Slice k as doubles (element order: outer, then inner).
    auto slice = [&](int64_t k) {
      std::vector<double> v;
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) v.push_back(narrow::load(x.dtype, x.raw, (o * n + k) * inner + i));
      return v;
    };
    std::vector<std::vector<double>> slices;
    for (int64_t k = 0; k < n; ++k) slices.push_back(slice(k));
    std::vector<int64_t> first;  // first index of each unique slice, in first-appearance order
    std::vector<int64_t> group(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) {
      auto it = std::find_if(first.begin(), first.end(), [&](int64_t f) { return slices[size_t(f)] == slices[size_t(k)]; });
      group[size_t(k)] = int64_t(it - first.begin());
      if (it == first.end()) first.push_back(k);
    }
    std::vector<int64_t> order(first.size());
    std::iota(order.begin(), order.end(), 0);
    if (sorted_)
      std::sort(order.begin(), order.end(),
                [&](int64_t l, int64_t r) { return slices[size_t(first[size_t(l)])] < slices[size_t(first[size_t(r)])]; });
    std::vector<int64_t> rank_of(first.size());
    for (size_t p = 0; p < order.size(); ++p) rank_of[size_t(order[p])] = int64_t(p);
    const int64_t u = int64_t(first.size());

    std::vector<int64_t> y_dims = has_axis_ ? std::vector<int64_t>(x.dims.begin(), x.dims.end()) : std::vector<int64_t>{u};
    if (has_axis_) y_dims[size_t(axis)] = u;
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, y_dims, &y));
    const size_t es = sdk::dtype_size(x.dtype);
    for (int64_t p = 0; p < u; ++p) {
      int64_t k = first[size_t(order[size_t(p)])];
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(static_cast<unsigned char*>(y.raw) + size_t((o * u + p) * inner) * es,
                    static_cast<const unsigned char*>(x.raw) + size_t((o * n + k) * inner) * es, size_t(inner) * es);
    }
    std::vector<int64_t> indices(static_cast<size_t>(u)), inverse(static_cast<size_t>(n)), counts(static_cast<size_t>(u), 0);
    for (int64_t p = 0; p < u; ++p) indices[size_t(p)] = first[size_t(order[size_t(p)])];
    for (int64_t k = 0; k < n; ++k) {
      inverse[size_t(k)] = rank_of[size_t(group[size_t(k)])];
      ++counts[size_t(inverse[size_t(k)])];
    }
    const std::vector<int64_t>* extra[3] = {&indices, &inverse, &counts};
    for (size_t k = 1; k < 4 && k < wanted_.size(); ++k) {
      if (!wanted_[k]) continue;
      int64_t len = int64_t(extra[k - 1]->size());
      sdk::Tensor t;
      ONYX_SDK_RETURN_IF_ERROR(ctx.output(k, ONYX_DTYPE_INT64, std::span<const int64_t>(&len, 1), &t));
      if (len) std::memcpy(t.raw, extra[k - 1]->data(), size_t(len) * sizeof(int64_t));
    }
    return nullptr;
  }

 private:
  std::string label_;
  bool has_axis_;
  int64_t axis_;
  bool sorted_;
  std::vector<bool> wanted_;
};

}  // namespace

void register_unique_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("Unique").since(11).input_type(0, sdk::dtypes::kNumeric | sdk::dtypes::kHalf | sdk::dtypes::kBool).create<UniqueKernel>());
}

}  // namespace onyx::cpu
