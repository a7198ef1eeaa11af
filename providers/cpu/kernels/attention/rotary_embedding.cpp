// rotary_embedding.cpp: RotaryEmbedding (opset 23): rotary position
// embeddings applied to each head. Float math in double.
#include <cinttypes>
#include <optional>
#include <vector>

#include "kernels/kernel_util.h"
#include "kernels/narrow_types.h"
#include "kernels/registry.h"

namespace onyx::cpu {
namespace {

// RotaryEmbedding: rotates the first rotary_dim features of each head by the
// cached cos/sin of its position, halves (x1 | x2) or interleaved pairs.
class RotaryKernel final : public sdk::Kernel {
 public:
  explicit RotaryKernel(const sdk::NodeInfo& node)
      : label_(util::node_label(node)),
        interleaved_(node.get_int("interleaved", 0) != 0),
        rotary_dim_(node.get_int("rotary_embedding_dim", 0)),
        heads_(node.get_int("num_heads", 0)) {}

  OnyxStatus* compute(sdk::ComputeContext& ctx) override {
    sdk::Tensor x = ctx.in(0), cos_t = ctx.in(1), sin_t = ctx.in(2);
    std::optional<sdk::Tensor> ids = ctx.input(3);
    if (x.rank() != 3 && x.rank() != 4) return util::fail(label_, "input must be 3-D or 4-D");
    const int64_t batch = x.dim(0);
    int64_t heads, seq, size;
    const bool packed = x.rank() == 3;  // [B, S, heads * size]
    if (packed) {
      heads = heads_, seq = x.dim(1);
      if (heads <= 0 || x.dim(2) % heads) return util::fail(label_, "3-D input needs num_heads dividing its hidden size");
      size = x.dim(2) / heads;
    } else {
      heads = x.dim(1), seq = x.dim(2), size = x.dim(3);
    }
    const int64_t rot = rotary_dim_ > 0 ? rotary_dim_ : size, half = rot / 2;
    if (rot > size || rot % 2) return util::fail(label_, "rotary_embedding_dim %" PRId64 " does not fit head size %" PRId64, rot, size);
    std::vector<int64_t> pos_ids;
    if (ids && !util::read_ints(*ids, &pos_ids)) return util::fail(label_, "position_ids must be int64");
    const int64_t cache_width = cos_t.dim(cos_t.rank() - 1);
    if (cache_width < half) return util::fail(label_, "cos_cache is narrower than rotary_dim / 2");
    sdk::Tensor y;
    ONYX_SDK_RETURN_IF_ERROR(ctx.output(0, x.dtype, x.dims, &y));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t s = 0; s < seq; ++s) {
          const int64_t base = packed ? ((b * seq + s) * heads + h) * size : ((b * heads + h) * seq + s) * size;
          // Row of the cache: the position id, or (b, s) when there are none.
          int64_t row = ids ? pos_ids[size_t(ids->rank() == 1 ? s : b * seq + s)] : b * seq + s;
          for (int64_t k = 0; k < size; ++k)
            if (k >= rot) narrow::store(y.dtype, y.raw, base + k, narrow::load(x.dtype, x.raw, base + k), true);
          for (int64_t k = 0; k < half; ++k) {
            double c = narrow::load(cos_t.dtype, cos_t.raw, row * cache_width + k);
            double sn = narrow::load(sin_t.dtype, sin_t.raw, row * cache_width + k);
            int64_t i1 = interleaved_ ? 2 * k : k, i2 = interleaved_ ? 2 * k + 1 : k + half;
            double x1 = narrow::load(x.dtype, x.raw, base + i1), x2 = narrow::load(x.dtype, x.raw, base + i2);
            narrow::store(y.dtype, y.raw, base + i1, x1 * c - x2 * sn, true);
            narrow::store(y.dtype, y.raw, base + i2, x2 * c + x1 * sn, true);
          }
        }
    return nullptr;
  }

 private:
  std::string label_;
  bool interleaved_;
  int64_t rotary_dim_, heads_;
};

}  // namespace

void register_rotary_embedding_kernels(sdk::KernelRegistry& registry) {
  registry.add(sdk::KernelDefBuilder("RotaryEmbedding").since(23).input_type(0, sdk::dtypes::kFloat | sdk::dtypes::kHalf).create<RotaryKernel>());
}

}  // namespace onyx::cpu
