// shard.cpp: shard(), ZeRO stage 1 style (aggregate.cpp undoes it). The
// trainable parameters, flattened and concatenated in order, form one range of T
// elements; each rank owns a contiguous piece of P elements (P a multiple of
// kShardAlignment, W * P >= T), and stores, per parameter overlapping its
// piece, a 1-D slice of that parameter and of its optimizer state.
#include <algorithm>
#include <memory>

#include "onyx/checkpoint_tools.h"

namespace onyx::checkpoint {
namespace {

// Parameters that can be sliced: byte-sized elements and at least one element.
bool sliceable(const TensorRecord& t) { return dtype_size(t.dtype) > 0 && element_count(t.shape) > 0; }

// Elements [begin, begin + count) of `t` (flattened) as a slice record.
// The data is a view sharing the original's storage.
TensorRecord slice_of(const TensorRecord& t, int64_t begin, int64_t count) {
  TensorRecord s;
  s.name = t.name;
  s.dtype = t.dtype;
  s.shape = {count};
  s.slice = ShardSlice{t.shape, begin};
  if (t.has_data()) {
    auto owner = std::make_shared<Tensor>(t.data);
    void* data = static_cast<std::byte*>(t.data.data()) + size_t(begin) * dtype_size(t.dtype);
    s.data = Tensor::wrap(t.dtype, s.shape, data, owner);
  }
  return s;
}

}  // namespace

StatusOr<std::vector<Checkpoint>> shard(const Checkpoint& complete, uint32_t world_size) {
  ONYX_RETURN_IF_ERROR(validate(complete));
  if (world_size == 0) return invalid_argument("world size must be at least 1");
  if (complete.metadata.shard_count != 1)
    return invalid_argument("the checkpoint is already shard " + std::to_string(complete.metadata.shard_index) +
                            " of " + std::to_string(complete.metadata.shard_count) + ": aggregate the shards first");

  if (world_size == 1) {  // one rank holds everything whole: the complete checkpoint
    std::vector<Checkpoint> one{complete};
    one[0].metadata.producer.clear();
    return one;
  }

  // Each sliceable trainable parameter's first element in the flat range.
  std::vector<int64_t> start(complete.module.trainable.size(), -1);
  int64_t total = 0;
  for (size_t k = 0; k < start.size(); ++k) {
    const TensorRecord& t = complete.module.trainable[k];
    if (t.slice) return invalid_argument("trainable parameter '" + t.name + "' is already a shard slice");
    if (!sliceable(t)) continue;
    start[k] = total;
    total += element_count(t.shape);
  }
  const int64_t piece = shard_piece(total, world_size);

  std::vector<Checkpoint> shards(world_size);
  for (uint32_t rank = 0; rank < world_size; ++rank) {
    Checkpoint& out = shards[rank];
    out.metadata = complete.metadata;
    out.metadata.producer.clear();
    out.metadata.shard_index = rank;
    out.metadata.shard_count = world_size;
    out.properties = complete.properties;
    out.module.frozen = complete.module.frozen;
    const int64_t lo = int64_t(rank) * piece, hi = lo + piece;

    // For each trainable parameter this rank holds: its slice [begin, end), or whole (-1).
    std::vector<std::pair<int64_t, int64_t>> held(start.size(), {-1, -1});
    for (size_t k = 0; k < start.size(); ++k) {
      const TensorRecord& t = complete.module.trainable[k];
      if (start[k] < 0) {
        out.module.trainable.push_back(t);
        held[k] = {0, -1};
        continue;
      }
      int64_t begin = std::max(lo, start[k]) - start[k];
      int64_t end = std::min(hi, start[k] + element_count(t.shape)) - start[k];
      if (begin >= end) continue;
      out.module.trainable.push_back(slice_of(t, begin, end - begin));
      held[k] = {begin, end};
    }

    for (const OptimizerGroup& group : complete.optimizer) {
      OptimizerGroup& g = out.optimizer.emplace_back();
      g.name = group.name;
      g.step = group.step;
      g.initial_learning_rate = group.initial_learning_rate;
      for (const ParameterState& state : group.parameters) {
        size_t k = 0;
        while (complete.module.trainable[k].name != state.parameter) ++k;  // validate() ensured it exists
        auto [begin, end] = held[k];
        if (begin < 0) continue;  // this rank holds none of the parameter
        ParameterState& s = g.parameters.emplace_back();
        s.parameter = state.parameter;
        const Shape& parameter_shape = complete.module.trainable[k].shape;
        for (const TensorRecord& t : state.tensors) {
          bool like_parameter = end >= 0 && t.shape == parameter_shape && dtype_size(t.dtype) > 0;
          s.tensors.push_back(like_parameter ? slice_of(t, begin, end - begin) : t);
        }
      }
    }
  }
  return shards;
}

}  // namespace onyx::checkpoint
