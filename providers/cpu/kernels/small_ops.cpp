// small_ops.cpp: SwiGLU (28), TensorScatter (24), OptionalHasElement and
// OptionalGetElement on plain tensors or absent inputs (15, 18), and the
// ai.onnx.ml Binarizer and ArrayFeatureExtractor (1).
#include <cinttypes>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/extra_ops.h"
#include "kernels/narrow_types.h"

namespace onyx::cpu {
namespace {

// SwiGLU: y = a * sigmoid(alpha * a) * b, b of a's shape or one element.
class SwiGluKernel final : public sdk::Kernel {
 public:
  explicit SwiGluKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)), alpha_(node.get_float("alpha", 1.0)) {}
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor a = ctx.in(0), b = ctx.in(1), y;
    if (b.size() != a.size() && b.size() != 1)
      return util::fail(label_, "b %s must match a %s or hold one element", util::dims_str(b.dims).c_str(),
                        util::dims_str(a.dims).c_str());
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, a.dtype, a.dims, &y));
    for (int64_t i = 0; i < a.size(); ++i) {
      double av = narrow::load(a.dtype, a.raw, i), bv = narrow::load(b.dtype, b.raw, b.size() == 1 ? 0 : i);
      narrow::store(y.dtype, y.raw, i, av / (1 + std::exp(-alpha_ * av)) * bv, true);
    }
    return nullptr;
  }

 private:
  std::string label_;
  double alpha_;
};

// TensorScatter: present = past_cache with update written along `axis` at
// write_indices[b] (or 0) for each batch entry b; "circular" wraps around.
class TensorScatterKernel final : public sdk::Kernel {
 public:
  explicit TensorScatterKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)),
        axis_(node.get_int("axis", -2)),
        circular_(node.get_string("mode", "linear") == "circular") {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor cache = ctx.in(0), update = ctx.in(1);
    int64_t axis = 0, rank = int64_t(cache.rank());
    if (!util::normalize_axis(axis_, rank, &axis) || axis == 0 || update.rank() != cache.rank())
      return util::fail(label_, "axis %" PRId64 " and update %s do not fit cache %s", axis_,
                        util::dims_str(update.dims).c_str(), util::dims_str(cache.dims).c_str());
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && update.dim(size_t(d)) != cache.dim(size_t(d)))
        return util::fail(label_, "update %s differs from cache %s outside the axis", util::dims_str(update.dims).c_str(),
                          util::dims_str(cache.dims).c_str());
    const int64_t batch = cache.dim(0), max_seq = cache.dim(size_t(axis)), seq = update.dim(size_t(axis));
    std::vector<int64_t> start(size_t(batch), 0);
    if (auto t = ctx.input(2); t && t->size() > 0)
      if (!util::read_ints(*t, &start) || int64_t(start.size()) != batch)
        return util::fail(label_, "write_indices must hold one int per batch entry");
    int64_t mid = 1, inner = 1;  // dims between batch and axis, after axis
    for (int64_t d = 1; d < axis; ++d) mid *= cache.dim(size_t(d));
    for (int64_t d = axis + 1; d < rank; ++d) inner *= cache.dim(size_t(d));
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, cache.dtype, cache.dims, &y));
    const size_t es = sdk::dtype_size(cache.dtype), row = size_t(inner) * es;
    if (y.raw != cache.raw) std::memcpy(y.raw, cache.raw, size_t(cache.size()) * es);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t m = 0; m < mid; ++m)
        for (int64_t s = 0; s < seq; ++s) {
          int64_t pos = start[size_t(b)] + s;
          if (circular_) pos = ((pos % max_seq) + max_seq) % max_seq;
          if (pos < 0 || pos >= max_seq)
            return util::fail(label_, "write position %" PRId64 " of batch %" PRId64 " is outside the cache of %" PRId64, pos, b,
                              max_seq);
          std::memcpy(static_cast<unsigned char*>(y.raw) + size_t(((b * mid + m) * max_seq + pos)) * row,
                      static_cast<const unsigned char*>(update.raw) + size_t(((b * mid + m) * seq + s)) * row, row);
        }
    return nullptr;
  }

 private:
  std::string label_;
  int64_t axis_;
  bool circular_;
};

// OptionalHasElement: true when the input is given (a plain tensor here).
class HasElementKernel final : public sdk::Kernel {
 public:
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, ONYX_DTYPE_BOOL, {}, &y));
    y.data<bool>()[0] = ctx.input(0).has_value();
    return nullptr;
  }
};

// OptionalGetElement of a plain tensor: the tensor itself.
class GetElementKernel final : public sdk::Kernel {
 public:
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, x.dims, &y));
    size_t bytes = size_t(x.size()) * sdk::dtype_size(x.dtype);
    if (y.raw != x.raw && bytes) std::memcpy(y.raw, x.raw, bytes);
    return nullptr;
  }
};

// Binarizer: 1 where x > threshold, else 0, in x's type.
class BinarizerKernel final : public sdk::Kernel {
 public:
  explicit BinarizerKernel(const sdk::NodeInfo& node) : threshold_(node.get_float("threshold", 0)) {}
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, x.dims, &y));
    for (int64_t i = 0; i < x.size(); ++i)
      narrow::store(y.dtype, y.raw, i, narrow::load(x.dtype, x.raw, i) > threshold_ ? 1.0 : 0.0, true);
    return nullptr;
  }

 private:
  double threshold_;
};

// ArrayFeatureExtractor: the entries Y of X's last axis ([..., N] -> [..., k];
// a 1-D X gives [1, k]).
class FeatureExtractorKernel final : public sdk::Kernel {
 public:
  explicit FeatureExtractorKernel(const sdk::NodeInfo& node) : label_(util::node_label(node)) {}
  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0);
    std::vector<int64_t> pick;
    if (!util::read_ints(ctx.in(1), &pick)) return util::fail(label_, "Y must be int64");
    if (x.rank() == 0) return util::fail(label_, "X must have at least one dim");
    const int64_t n = x.dim(x.rank() - 1), rows = n ? x.size() / n : 0, k = int64_t(pick.size());
    for (int64_t p : pick)
      if (p < 0 || p >= n) return util::fail(label_, "index %" PRId64 " is outside X's last dim of %" PRId64, p, n);
    std::vector<int64_t> dims(x.dims.begin(), x.dims.end());
    if (dims.size() == 1) dims.insert(dims.begin(), 1);
    dims.back() = k;
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, dims, &y));
    const size_t es = sdk::dtype_size(x.dtype);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < k; ++j)
        std::memcpy(static_cast<unsigned char*>(y.raw) + size_t(r * k + j) * es,
                    static_cast<const unsigned char*>(x.raw) + size_t(r * n + pick[size_t(j)]) * es, es);
    return nullptr;
  }

 private:
  std::string label_;
};

}  // namespace

void register_small_kernels(sdk::KernelRegistry& registry) {
  sdk::KernelDef binarizer;
  binarizer.domain = "ai.onnx.ml";
  binarizer.op_type = "Binarizer";
  binarizer.supports = [](const sdk::NodeInfo& n) { return util::require_types(n, util::kNumeric | util::kHalf, {0}); };
  binarizer.create = [](const sdk::NodeInfo& n) { return std::make_unique<BinarizerKernel>(n); };
  registry.add(std::move(binarizer));

  sdk::KernelDef extractor;
  extractor.domain = "ai.onnx.ml";
  extractor.op_type = "ArrayFeatureExtractor";
  extractor.supports = [](const sdk::NodeInfo& n) {
    std::string why = util::require_inputs(n, 2, 2);
    if (why.empty() && !sdk::dtype_size(n.input_dtype(0))) why = "element type has no fixed size";
    return why;
  };
  extractor.create = [](const sdk::NodeInfo& n) { return std::make_unique<FeatureExtractorKernel>(n); };
  registry.add(std::move(extractor));

  sdk::KernelDef swiglu;
  swiglu.op_type = "SwiGLU";
  swiglu.since_version = 28;
  swiglu.supports = [](const sdk::NodeInfo& n) {
    std::string why = util::require_inputs(n, 2, 2);
    return why.empty() ? util::require_types(n, util::kFloat | util::kHalf) : why;
  };
  swiglu.create = [](const sdk::NodeInfo& n) { return std::make_unique<SwiGluKernel>(n); };
  registry.add(std::move(swiglu));

  sdk::KernelDef scatter;
  scatter.op_type = "TensorScatter";
  scatter.since_version = 24;
  scatter.supports = [](const sdk::NodeInfo& n) {
    std::string why = util::require_inputs(n, 2, 3);
    if (why.empty() && !sdk::dtype_size(n.input_dtype(0))) why = "element type has no fixed size";
    if (why.empty() && n.input_dtype(1) != n.input_dtype(0)) why = "past_cache and update differ in type";
    return why;
  };
  scatter.create = [](const sdk::NodeInfo& n) { return std::make_unique<TensorScatterKernel>(n); };
  registry.add(std::move(scatter));

  sdk::KernelDef has;
  has.op_type = "OptionalHasElement";
  has.since_version = 15;
  has.create = [](const sdk::NodeInfo&) { return std::make_unique<HasElementKernel>(); };
  registry.add(std::move(has));

  sdk::KernelDef get;
  get.op_type = "OptionalGetElement";
  get.since_version = 15;
  get.supports = [](const sdk::NodeInfo& n) {
    std::string why = util::require_inputs(n, 1, 1);
    if (why.empty() && !sdk::dtype_size(n.input_dtype(0))) why = "element type has no fixed size";
    return why;
  };
  get.create = [](const sdk::NodeInfo&) { return std::make_unique<GetElementKernel>(); };
  registry.add(std::move(get));
}

}  // namespace onyx::cpu
