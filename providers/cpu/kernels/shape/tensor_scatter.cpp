// tensor_scatter.cpp: TensorScatter (opset 24): a KV-cache update, the
// update written into past_cache along an axis at a per-batch position.
#include <cinttypes>
#include <cstring>
#include <vector>

#include "kernels/kernel_util.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

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

}  // namespace

void register_tensor_scatter_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("TensorScatter")
                   .since(24)
                   .inputs(2, 3)
                   .type_constraint("T", {0, 1}, {})  // past_cache and update
                   .check([](const sdk::NodeInfo& n) {
                     return sdk::dtype_size(n.input_dtype(0)) ? std::string() : std::string("element type has no fixed size");
                   })
                   .create<TensorScatterKernel>());
}

}  // namespace onyx::cpu
