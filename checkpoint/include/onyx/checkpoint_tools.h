// checkpoint_tools.h: operations on whole checkpoints: nominal copies,
// ZeRO stage 1 sharding and aggregation, and comparison. The `onyx checkpoint` CLI is built on these.
//
// Thread-safety: as checkpoint.h (pure functions of their arguments).
#pragma once

#include <algorithm>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "onyx/checkpoint.h"

namespace onyx::checkpoint {

// The same schema (names, dtypes, shapes, groups, properties, metadata)
// with every tensor's data dropped.
Checkpoint make_nominal(const Checkpoint& checkpoint);

// Splits a complete (unsharded) checkpoint for `world_size` ranks the way
// ZeRO stage 1 partitions state: the trainable parameters, flattened and
// concatenated in order, are cut into world_size equal ranges (a multiple of
// kShardAlignment elements each); rank r's file holds its range's slices of
// the parameters and of their optimizer state tensors (those shaped like the
// parameter), and every other value whole. world_size 1 returns a copy.
inline constexpr int64_t kShardAlignment = 32;
StatusOr<std::vector<Checkpoint>> shard(const Checkpoint& complete, uint32_t world_size);

// The partition's rule, shared with the training session's ZeRO stage 1 so
// that a rank's optimizer state is exactly its shard's: each of world_size
// ranks owns this many elements of the `total` flattened ones (a multiple of
// kShardAlignment, at least one alignment unit).
inline int64_t shard_piece(int64_t total, uint32_t world_size) {
  const int64_t unit = int64_t(world_size) * kShardAlignment;
  return std::max<int64_t>(1, (total + unit - 1) / unit) * kShardAlignment;
}

struct AggregateOptions {
  bool weights_only = false;  // drop optimizer state even when the shards have it
};

// Merges one shard per rank (any order) into the complete checkpoint: slices
// are joined in rank order and must tile each tensor exactly; unsharded
// tensors, groups' steps and learning rates, properties and model identity
// must agree across ranks. Shards without optimizer state give a checkpoint
// without it. Errors name the tensor and the ranks.
StatusOr<Checkpoint> aggregate(std::span<const Checkpoint> shards, const AggregateOptions& options = {});

// Every difference between two checkpoints (model identity and shard
// position, tensors bit for bit, groups, properties; not the producer or the
// format version of the files they came from), one line each; empty when
// they are equal.
std::vector<std::string> diff(const Checkpoint& a, const Checkpoint& b);

}  // namespace onyx::checkpoint
